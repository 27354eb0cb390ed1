import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `GET /users/me/export` over real loopback HTTP: everything the server holds about the account, in one document,
/// and never a secret, digest or code — the document is scanned for each one the account has.
@Suite("Account export (GET /users/me/export)")
struct AccountExportTests {
    @Test("the profile, links, passkeys, factors, sessions, consents, a pending email and the history; no secret of any kind")
    func exportsEverythingButSecrets() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let store = server.server.store
        let now = server.clock.now
        let totp = try await server.server.enrollTOTP(userId: user.id)
        let publicKey = Data((0..<77).map { UInt8($0) })
        try await store.insertPasskey(
            PasskeyRecord(
                id: "Y3JlZGVudGlhbA", userId: user.id, publicKey: publicKey, algorithm: -7, signCount: 3, aaguid: Data(repeating: 0xAA, count: 16),
                friendlyName: "Ada's iPhone", attestationFormat: "none", backupEligible: true, backedUp: true, createdAt: now, lastUsedAt: nil))
        try await store.linkFederatedIdentity(FederatedIdentityRecord(provider: "corp", subject: "corp-subject-1", userId: user.id, createdAt: now))
        _ = try await store.grantConsent(userId: user.id, clientId: "backend", scopes: ["openid", "email"], now: now)
        let change = try await server.call(
            "POST", "/users/me/email", token: tokens.accessToken, json: ["email": "new-demo@example.com"], contentType: "application/json")
        #expect(change.status == 202, "\(change.text)")
        let emailCode = try #require(try await server.server.outboxMessages(recipient: "new-demo@example.com").first?.code)

        let export = try await server.call("GET", "/users/me/export", token: tokens.accessToken)
        #expect(export.status == 200, "\(export.text)")
        #expect(export.header("Content-Disposition") == "attachment; filename=\"account-data.json\"")
        #expect(export.header("Cache-Control") == "no-store")
        #expect(try export.string("profile.username") == "demo@example.com")
        #expect(try export.string("profile.attributes.given_name") == "Demo")
        #expect(try export.value("profile.has_password") as? Bool == true)
        #expect(try export.string("profile.pending_email") == "new-demo@example.com")
        #expect(try export.string("linked_identities.0.provider") == "corp")
        #expect(try export.string("passkeys.0.name") == "Ada's iPhone" && export.value("passkeys.0.synced") as? Bool == true)
        #expect(try export.string("second_factors.0.kind") == "totp")
        #expect(try export.string("consents.0.client_id") == "backend")
        #expect(try export.value("sessions.sessions.0.current") as? Bool == true)
        let types = try #require(try export.value("audit_events") as? [[String: Any]]).compactMap { $0["type"] as? String }
        #expect(types.contains("signin.succeeded") && types.contains("mfa.enrolled") && types.contains("email.change_requested"))
        #expect(try export.value("audit_events_truncated") as? Bool == false)

        // Every secret the account has, in every spelling a leak could take.
        let document = export.text
        var secrets = [user.passwordHash, totp.secret, emailCode, tokens.accessToken, publicKey.base64EncodedString()]
        secrets += [tokens.refreshToken, tokens.idToken].compactMap { $0 }
        secrets.append(publicKey.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
        for secret in secrets where !secret.isEmpty {
            #expect(!document.contains(secret), "a secret is in the export: \(secret.prefix(8))…")
        }
        for key in ["password_hash", "passwordHash", "secret", "public_key", "publicKey", "code_digest", "secret_hash", "sign_count"] {
            #expect(!document.contains("\"\(key)\""), "a member named \(key)")
        }
        #expect(try await store.auditEvents(AuditQuery(subject: user.id, types: [.accountExported], limit: 5)).count == 1)
    }

    @Test("a sign-in older than recent_auth_seconds is refused; a client's own token has no account")
    func refusals() async throws {
        let server = try await TestServer.start(frozenClock: true) { $0.recentAuthenticationSeconds = 60 }
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        server.advanceClock(61)
        let stale = try await server.call("GET", "/users/me/export", token: tokens.accessToken)
        #expect(stale.status == 401)
        #expect(try stale.string("code") == "AUTH-4011")
        let client = try await server.clientToken(scope: "api.read")
        #expect(try await server.call("GET", "/users/me/export", token: client).status == 403)
        #expect(try await server.call("GET", "/users/me/export", token: nil).status == 401)
    }
}
