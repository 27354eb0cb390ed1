import Foundation
import Testing

extension TestServer {
    /// Completes a pending email change as its owner would: reads the code sent to `email` from the development
    /// outbox and posts it to `/users/me/email/verify`.
    package func verifyPendingEmail(_ email: String, token: String) async throws -> HTTPResult {
        let code = try #require(try await server.outboxMessages(recipient: email).first?.code, "no code was sent to \(email)")
        let response = try await call("POST", "/users/me/email/verify", token: token, json: ["code": code], contentType: "application/json")
        #expect(response.status == 200, "verification failed: \(response.text)")
        return response
    }
}
