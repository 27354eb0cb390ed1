import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// A profile write made from a copy of the account read before a password change or a disable must not write
/// the old password hash or `disabled = 0` back. Profile writes touch only the profile, are conditional on the
/// version they read, and are skipped when nothing changed.
@Suite("Security: stale profile writes cannot undo a password change or a disable")
struct ProfileLostUpdateTests {
    @Test("a profile update from a copy read before a password change keeps the new password (refused as stale)")
    func staleProfileWriteAfterPasswordChange() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword).accessToken
        // The attacker's in-flight `PUT /users/me` has read the account...
        let stale = try #require(try await server.server.store.user(username: "ada@example.com"))
        // ...then Ada changes her password through another path...
        let newPassword = "a brand new passphrase 42"
        let change = try await server.call(
            "POST", "/users/me/update-credentials", token: token,
            json: ["attributes": ["password": newPassword, "currentPassword": TestServer.adaPassword]],
            contentType: "application/json")
        #expect(change.status == 204, "\(change.text)")
        let afterReset = try #require(try await server.server.store.user(username: "ada@example.com"))
        #expect(afterReset.passwordHash != stale.passwordHash)
        // ...and the in-flight request writes its copy.
        let result = try await server.server.accounts.updateProfile(of: stale, changes: ["given_name": "Augusta"], logger: server.server.logger)
        guard case .failure(.stale) = result else { Issue.record("a stale write was accepted: \(result)"); return }
        let now = try #require(try await server.server.store.user(username: "ada@example.com"))
        #expect(now.passwordHash == afterReset.passwordHash, "the password change was not undone")
        #expect(now.claims["given_name"] == "Ada")
        // The store refuses a whole-row write from the stale copy too.
        await #expect(throws: StoreError.conflict("version")) { try await server.server.store.updateUser(stale) }
        #expect(try await server.server.store.user(username: "ada@example.com")?.passwordHash == afterReset.passwordHash)
        // The old password no longer signs in, the new one does.
        let fresh = try await server.userTokens(username: "ada@example.com", password: newPassword)
        #expect(!fresh.accessToken.isEmpty)
    }

    @Test("a profile update from a copy read before an administrator disabled the account does not re-enable it")
    func staleProfileWriteAfterDisable() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let stale = try #require(try await server.server.store.user(username: "ada@example.com"))
        let admin = try await server.clientToken(scope: "scim.admin")
        let disable = try await server.call(
            "PATCH", "/scim2/Users/\(stale.id)", token: admin,
            json: [
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [["op": "replace", "path": "active", "value": false]]
            ])
        #expect(disable.status == 200, "\(disable.text)")
        let result = try await server.server.accounts.updateProfile(of: stale, changes: ["given_name": "Augusta"], logger: server.server.logger)
        guard case .failure(.stale) = result else { Issue.record("a stale write was accepted: \(result)"); return }
        #expect(try await server.server.store.user(id: stale.id)?.disabled == true)
        // The password path writes only the hash: it cannot re-enable the account either.
        _ = try await server.server.accounts.setPassword(of: stale, to: "another long passphrase 7")
        #expect(try await server.server.store.user(id: stale.id)?.disabled == true)
    }

    @Test("PUT /users/me with an unchanged profile writes nothing (no new version, no lastModified)")
    func unchangedProfileIsNotWritten() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let before = try #require(try await server.server.store.user(username: "demo@example.com"))
        let attributes = try #require(try await server.call("GET", "/users/me", token: token).value("attributes") as? [String: Any])
        for _ in 0..<3 {
            let put = try await server.call("PUT", "/users/me", token: token, json: ["attributes": attributes], contentType: "application/json")
            #expect(put.status == 200, "\(put.text)")
        }
        let after = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(after.version == before.version && after.updatedAt == before.updatedAt)
    }
}
