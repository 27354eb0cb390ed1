import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// A new email address is verified before it receives codes. Changing it sends a code to the new address and a
/// notice to the old one; until the code is entered, recovery codes still go to the old (verified) address. Codes
/// are never sent to an address nobody verified.
@Suite("Security: email changes are verified before codes go there")
struct EmailChangeVerificationTests {
    func put(_ server: TestServer, _ token: String, _ attributes: [String: Any]) async throws -> HTTPResult {
        try await server.call("PUT", "/users/me", token: token, json: ["attributes": attributes], contentType: "application/json")
    }

    /// Starts password recovery for `identifier` over `/flow/execute`.
    func startRecovery(_ server: TestServer, _ identifier: String) async throws {
        let start = try await TestBrowser().postJSON(
            server.base + "/flow/execute",
            [
                "applicationId": "latchkey-demo", "flowType": "RECOVERY", "inputs": ["username": identifier]
            ])
        #expect(start.status == 200, "\(start.text)")
    }

    func codes(_ server: TestServer, _ recipient: String) async throws -> [String] {
        try await server.server.outboxMessages(recipient: recipient).compactMap(\.code)
    }

    @Test("PUT /users/me with a new email: code to the new address, notice to the old, recovery unchanged until verified")
    func emailChangeIsPendingUntilVerified() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        var attributes = try #require(try await server.call("GET", "/users/me", token: token).value("attributes") as? [String: Any])
        attributes["email"] = "new.demo@example.com"
        let changed = try await put(server, token, attributes)
        #expect(changed.status == 200, "\(changed.text)")
        #expect(try changed.string("attributes.email") == "demo@example.com", "the old address stays until the new one is verified")
        #expect(try changed.value("attributes.email_verified") as? Bool == true)
        #expect(try changed.string("pendingEmail") == "new.demo@example.com")

        // The new address gets a code; the old one a notice (without any code).
        let verification = try #require(try await server.server.outboxMessages(recipient: "new.demo@example.com").first)
        #expect(verification.subject == "Confirm your email address")
        let code = try #require(verification.code)
        let notice = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first)
        #expect(notice.subject == "Your email address is being changed" && notice.code == nil)

        // Recovery still goes to the verified old address, not the pending one.
        try await startRecovery(server, "demo@example.com")
        #expect(try await codes(server, "demo@example.com").count == 1)
        #expect(try await codes(server, "new.demo@example.com") == [code], "no recovery code for the unverified address")

        // A wrong code is refused; the right one applies the address, verified.
        let wrong = try await server.call(
            "POST", "/users/me/email/verify", token: token, json: ["code": code == "000000" ? "111111" : "000000"],
            contentType: "application/json")
        #expect(wrong.status == 400)
        #expect(try wrong.string("code") == "USR-1030")
        let verified = try await server.call("POST", "/users/me/email/verify", token: token, json: ["code": code], contentType: "application/json")
        #expect(verified.status == 200, "\(verified.text)")
        #expect(try verified.string("attributes.email") == "new.demo@example.com")
        #expect(try verified.value("attributes.email_verified") as? Bool == true)
        #expect(try verified.value("pendingEmail") == nil)
        let again = try await server.call("POST", "/users/me/email/verify", token: token, json: ["code": code], contentType: "application/json")
        #expect(try again.status == 400 && again.string("code") == "USR-1031", "the code is single use")

        // From now on recovery codes go to the new address.
        try await startRecovery(server, "demo@example.com")
        #expect(try await codes(server, "new.demo@example.com").count == 2)
        #expect(try await codes(server, "demo@example.com").count == 1)
    }

    @Test("SCIM PATCH /scim2/Me with a new email is held back for verification the same way")
    func scimEmailChangeIsPending() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let patch = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: [
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [["op": "replace", "path": "emails", "value": [["value": "scim.demo@example.com", "primary": true]]]]
            ])
        #expect(patch.status == 200, "\(patch.text)")
        #expect(try patch.string("emails.0.value") == "demo@example.com")
        let user = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(user.claims["email"] == "demo@example.com" && user.claims["email_verified"] == "true")
        #expect(try await server.server.store.emailChange(userId: user.id)?.email == "scim.demo@example.com")
        #expect(try await codes(server, "scim.demo@example.com").count == 1)
        #expect(try await server.server.outboxMessages(recipient: "demo@example.com").first?.subject == "Your email address is being changed")
    }

    @Test("wrong codes are limited: after five the change is dropped and the right code no longer works")
    func verificationAttemptsAreLimited() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let start = try await server.call(
            "POST", "/users/me/email", token: token, json: ["email": "other.demo@example.com"], contentType: "application/json")
        #expect(start.status == 202, "\(start.text)")
        let code = try #require(try await codes(server, "other.demo@example.com").first)
        let wrongCode = code == "000000" ? "111111" : "000000"
        for attempt in 1...5 {
            let wrong = try await server.call(
                "POST", "/users/me/email/verify", token: token, json: ["code": wrongCode], contentType: "application/json")
            #expect(try wrong.string("code") == (attempt < 5 ? "USR-1030" : "USR-1032"))
        }
        let late = try await server.call("POST", "/users/me/email/verify", token: token, json: ["code": code], contentType: "application/json")
        #expect(try late.status == 400 && late.string("code") == "USR-1031")
        #expect(try await server.server.store.user(username: "demo@example.com")?.claims["email"] == "demo@example.com")
    }

    @Test("recovery and email sign-in codes never go to an unverified address (here, one an administrator set)")
    func noCodesToUnverifiedAddresses() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        let admin = try await server.clientToken(scope: "scim.admin")
        let patch = try await server.call(
            "PATCH", "/scim2/Users/\(demo.id)", token: admin,
            json: [
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [["op": "replace", "path": "emails", "value": [["value": "attacker@evil.example", "primary": true]]]]
            ])
        #expect(patch.status == 200, "\(patch.text)")
        #expect(try await server.server.store.user(id: demo.id)?.claims["email_verified"] == "false")
        try await startRecovery(server, "demo@example.com")
        try await startRecovery(server, "attacker@evil.example")
        #expect(try await server.server.outboxMessages(recipient: "attacker@evil.example").isEmpty)

        // The email second factor: the code is not sent to the unverified address either.
        try await server.server.enrollEmailOTP(userId: demo.id)
        let signIn = try await TestBrowser().postJSON(
            server.base + "/flow/execute",
            [
                "applicationId": "latchkey-demo", "flowType": "AUTHENTICATION",
                "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ])
        _ = signIn  // the execution fails (no verified address for the factor); what matters is where codes went
        #expect(try await server.server.outboxMessages(recipient: "attacker@evil.example").isEmpty)
    }
}
