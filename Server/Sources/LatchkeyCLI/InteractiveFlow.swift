import Foundation
import Latchkey
import LatchkeySwiftUI
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs an app-native flow in the terminal on the same view model as the SwiftUI `SignIn`/`SignUp` components
/// (`AuthFlowModel`): one prompt per input (passwords and codes hidden), numbered choices for SELECT inputs and for
/// steps with several actions, the server's error above the step and field errors next to their prompt. A one-time
/// code can be read from a development server's outbox when the user types `outbox` at the code prompt — never
/// automatically.
struct InteractiveFlow {
    let client: LatchkeyClient
    let flowType: EmbeddedFlowType
    let issuer: String

    @MainActor
    func run() async throws -> User? {
        // The device's languages (LANG), kept for this run only.
        let model = AuthFlowModel(client: client, i18n: LatchkeyI18n(store: InMemoryLocaleStore()), flowType: flowType)
        await model.start()
        while true {
            switch model.phase {
            case .idle:
                await model.start()
            case .completed:
                return model.user
            case .failed:
                throw CLIError(
                    "\(model.error ?? "The flow ended with an error.") [\(model.errorCode?.rawValue ?? LatchkeyError.Code.unknownError.rawValue)]")
            case .step:
                if let title = model.title { Console.out("\n\(title)") }
                if let error = model.error { Console.out("✗ \(error)") }
                if let notice = model.notice { Console.out(notice) }
                if model.asksForPasskey {
                    await model.submitPasskey()
                    // No second try without the user: a terminal has no other way out of a passkey step.
                    if model.phase == .step, model.asksForPasskey, let error = model.error { throw CLIError(error) }
                    continue
                }
                if model.redirectURL != nil {
                    // An identity provider's page: the client's user agent opens it (or prints it) and waits for the
                    // browser to come back to its loopback listener.
                    Console.out("Continue in the browser\(model.redirectionProviderName.map { " with \($0)" } ?? "")…")
                    await model.followRedirection()
                    // Closed, or not shown: no second try without the user (the loopback listener is gone).
                    if model.phase == .step, model.redirectURL != nil {
                        throw CLIError(model.error ?? "the browser did not come back from the identity provider")
                    }
                    continue
                }
                // The primary action submits the inputs; any other (resend a code …) is picked by typing /N at a prompt.
                guard let primary = model.primaryAction else { throw CLIError("the server offered no way to continue this step") }
                let others = model.secondaryActions
                for (index, other) in others.enumerated() { Console.out("  (type /\(index + 2) to \(other.label ?? other.ref))") }
                var chosen = primary
                collect: for input in model.visibleInputs {
                    if let problem = model.fieldError(for: input.identifier) {
                        Console.out("  ! \(input.label ?? input.identifier): \(problem)")
                    }
                    let value = try await ask(input, typed: model.values)
                    if value.hasPrefix("/"), let n = Int(value.dropFirst()), n >= 2, others.indices.contains(n - 2) {
                        chosen = others[n - 2]
                        break collect
                    }
                    model.setValue(value, for: input.identifier)
                }
                await model.perform(actionId: chosen.ref)
            }
        }
    }

    private func ask(_ input: FlowInput, typed: [String: String]) async throws -> String {
        let label = input.label ?? input.identifier
        if input.isSelect {
            Console.out("\(label):\n" + input.options.enumerated().map { "  \($0.offset + 1)) \($0.element)" }.joined(separator: "\n"))
            while true {
                guard let answer = Terminal.ask("Choose [1-\(input.options.count)]: ") else { throw CLIError("input ended") }
                if let n = Int(answer), input.options.indices.contains(n - 1) { return input.options[n - 1] }
                if input.options.contains(answer) { return answer }
                Console.out("  ! Choose one of the listed options.")
            }
        }
        if input.type == "OTP_INPUT" {
            let hint = isDevelopmentServer ? " (or type 'outbox' to read it from the development outbox)" : ""
            guard let answer = Terminal.ask("\(label)\(hint): ") else { throw CLIError("input ended") }
            if answer == "outbox", isDevelopmentServer { return try await codeFromOutbox(typed: typed) }
            return answer
        }
        let suffix = input.required ? "" : " (optional)"
        let answer = input.isSecret ? Terminal.askSecret("\(label)\(suffix): ") : Terminal.ask("\(label)\(suffix): ")
        guard let answer else { throw CLIError("input ended") }
        return answer
    }

    /// The development outbox is served only by a server in development mode, which is loopback-only.
    private var isDevelopmentServer: Bool {
        guard let host = URL(string: issuer)?.host else { return false }
        return host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
    }

    private func codeFromOutbox(typed: [String: String]) async throws -> String {
        var recipient = typed.values.sorted().first { $0.contains("@") }
        if recipient == nil { recipient = Terminal.ask("Email address the code was sent to: ") }
        guard let recipient, var components = URLComponents(string: issuer + "/dev/outbox") else { throw CLIError("no recipient") }
        components.queryItems = [URLQueryItem(name: "recipient", value: recipient)]
        guard let url = components.url else { throw CLIError("bad issuer URL") }
        let response = try await URLSessionHTTPClient().send(HTTPRequest(url: url, headers: ["Accept": "application/json"]))
        struct Outbox: Decodable { struct Message: Decodable { var code: String? }; var messages: [Message] }
        guard response.status == 200, let code = (try? JSONDecoder().decode(Outbox.self, from: response.body))?.messages.first?.code else {
            throw CLIError("no code in the development outbox for \(recipient) (is the server in development mode?)")
        }
        Console.out("Code from the development outbox: \(code)")
        return code
    }
}
