import Foundation
@testable import LatchkeyServer
import Testing

@Suite("Flow graphs are data: validation, configuration, persistence")
struct FlowGraphTests {
    @Test func builtInFlowsAreWellFormed() throws {
        for type in FlowType.allCases {
            let graph = DefaultFlows.graph(type)
            #expect(graph.type == type)
            try graph.validate()
        }
    }

    @Test func malformedGraphsAreRefused() {
        let unknownExecutor = FlowGraph(
            id: "bad", type: .authentication,
            nodes: [
                FlowNode(id: "start", kind: .start, next: "t"), FlowNode(id: "t", kind: .task, executor: "RunShell", next: "end"),
                FlowNode(id: "end", kind: .end)
            ])
        #expect(throws: ConfigurationError.self) { try unknownExecutor.validate() }
        let dangling = FlowGraph(id: "bad", type: .authentication, nodes: [FlowNode(id: "start", kind: .start, next: "nowhere")])
        #expect(throws: ConfigurationError.self) { try dangling.validate() }
        let noStart = FlowGraph(id: "bad", type: .authentication, nodes: [FlowNode(id: "end", kind: .end)])
        #expect(throws: ConfigurationError.self) { try noStart.validate() }
        let mismatched = ClientConfiguration(clientId: "x", flows: [.registration: DefaultFlows.authentication])
        #expect(throws: ConfigurationError.self) { try mismatched.validate() }
    }

    @Test func applicationSettingsAndFlowsRoundTripThroughJSONAndTheStore() async throws {
        let json = """
            {"client_id": "shop", "app_type": "mobile", "registration": "invite_only", "recovery_enabled": false, "require_mfa": true,
             "grant_types": ["urn:ietf:params:oauth:grant-type:token-exchange", "refresh_token"],
             "flows": {"SIGNOUT": {"id": "custom-signout", "type": "SIGNOUT", "nodes": [
                {"id": "start", "kind": "start", "next": "t"}, {"id": "t", "kind": "task", "executor": "SessionTerminator", "next": "end"},
                {"id": "end", "kind": "end"}]}}}
            """
        let client = try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8))
        #expect(client.appType == .mobile && client.registration == .inviteOnly && !client.recoveryEnabled && client.requireMFA)
        #expect(client.flows[.signOut]?.id == "custom-signout")
        try client.validate()
        let bad = json.replacingOccurrences(of: "\"SIGNOUT\": {", with: "\"LOGOUT\": {")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ClientConfiguration.self, from: Data(bad.utf8)) }

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("flows-\(UUID().uuidString).sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.upsertClient(ClientRecord(configuration: client, secretHash: nil))
        #expect(try await store.client(id: "shop")?.configuration == client)
    }

    @Test func inputRulesAreCheckedOnTheServer() {
        let inputs = [
            FlowInputSpec(
                ref: "a", identifier: "code", type: "TEXT_INPUT",
                validation: [
                    FlowValidationRule(type: "regex", value: .string("^[0-9]+$")),
                    FlowValidationRule(type: "maxLength", value: .number(4))
                ]),
            FlowInputSpec(ref: "b", identifier: "team", type: "SELECT", required: false, options: ["red"]),
            FlowInputSpec(
                ref: "c", identifier: "bad", type: "TEXT_INPUT", required: false,
                validation: [FlowValidationRule(type: "minLength", value: .number(.infinity))])
        ]
        #expect(FlowEngine.validate(inputs, ["code": "12"]).isEmpty)
        #expect(FlowEngine.validate(inputs, [:]).map(\.identifier) == ["code"])
        #expect(FlowEngine.validate(inputs, ["code": "12a"]).map(\.message) == ["The value is not in the expected format"])
        #expect(FlowEngine.validate(inputs, ["code": "12345"]).map(\.message) == ["Must be at most 4 characters"])
        #expect(FlowEngine.validate(inputs, ["code": "1", "team": "blue"]).map(\.identifier) == ["team"])
        #expect(FlowEngine.validate(inputs, ["code": "1", "bad": "x"]).isEmpty, "a malformed rule neither crashes nor blocks")
    }
}
