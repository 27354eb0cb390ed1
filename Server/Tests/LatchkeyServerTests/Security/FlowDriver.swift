import LatchkeyTestSupport
import Foundation
import Testing

/// One flow execution driven over `POST /flow/execute` exactly as a client (or an attacker's script) would: raw JSON
/// on loopback HTTP, the challenge token carried from each response to the next request.
final class FlowDriver {
    let server: TestServer
    private(set) var executionId: String?
    private var challengeToken: String?

    init(_ server: TestServer) { self.server = server }

    @discardableResult
    func start(_ flowType: String, applicationId: String = "latchkey-demo") async throws -> HTTPResult {
        try await post(["applicationId": applicationId, "flowType": flowType])
    }

    @discardableResult
    func submit(_ action: String, _ inputs: [String: String] = [:]) async throws -> HTTPResult {
        var body: [String: Any] = ["action": action, "inputs": inputs]
        body["executionId"] = executionId
        body["challengeToken"] = challengeToken
        return try await post(body)
    }

    private func post(_ body: [String: Any]) async throws -> HTTPResult {
        let result = try await TestBrowser().postJSON(server.base + "/flow/execute", body)
        if let id = try? result.string("executionId") { executionId = id }
        challengeToken = try? result.string("challengeToken")
        return result
    }
}

extension HTTPResult {
    /// `INCOMPLETE`, `COMPLETE` or `ERROR`.
    var flowStatus: String? { try? string("flowStatus") }
    /// The flow error's code (`FET-1008` …) and catalog key (`flows.executor.errors.invalid_otp` …).
    var flowErrorCode: String? { try? string("error.code") }
    var flowErrorKey: String? { try? string("error.message.key") }
}

/// A 6-digit code that is certainly not `code`.
func wrongCode(_ code: String) -> String { String(format: "%06d", ((Int(code) ?? 0) + 500_000) % 1_000_000) }
