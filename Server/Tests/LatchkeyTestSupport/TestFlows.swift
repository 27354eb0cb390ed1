import LatchkeyServer

extension FlowGraph {
    /// Flows are data: an application brings its own graph (a SELECT step before the password).
    package static let teamSignIn = FlowGraph(
        id: "team-signin", type: .authentication,
        nodes: [
            FlowNode(id: "start", kind: .start, next: "choose"),
            FlowNode(
                id: "choose", kind: .prompt, inputs: [FlowInputSpec(ref: "input_team", identifier: "team", type: "SELECT", options: ["red", "blue"])],
                actions: [FlowActionSpec(ref: "action_team", next: "credentials")]),
            FlowNode(
                id: "credentials", kind: .prompt,
                inputs: [
                    FlowInputSpec(ref: "u", identifier: "username", type: "TEXT_INPUT"),
                    FlowInputSpec(ref: "p", identifier: "password", type: "PASSWORD_INPUT")
                ],
                actions: [FlowActionSpec(ref: "action_login", next: "auth")]),
            FlowNode(id: "auth", kind: .task, executor: "PasswordAuthenticator", next: "assert", onFailure: "credentials"),
            FlowNode(id: "assert", kind: .task, executor: "AuthAssertExecutor", next: "end"),
            FlowNode(id: "end", kind: .end)
        ])
}
