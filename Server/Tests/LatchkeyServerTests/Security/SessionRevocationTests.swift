import LatchkeyTestSupport
import Foundation
import Latchkey
@testable import LatchkeyServer
import Testing

/// Replayed over HTTP: a password change or reset and a logout end the other
/// sessions and their token families; a refresh token without `offline_access` lives no longer than its session.
@Suite("Security: credential changes and logout revoke; refresh bounded by the session")
struct SessionRevocationTests {
    @Test("a password change ends the attacker's session and refresh family, and keeps the changer's own")
    func passwordChangeEvictsOtherSessions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let attacker = try await server.tokens(TestBrowser())
        let owner = try await server.tokens(TestBrowser())
        let change = try await server.call(
            "POST", "/users/me/update-credentials", token: owner.accessToken,
            json: [
                "attributes": ["currentPassword": "correct horse battery staple", "password": "a completely new passphrase"]
            ], contentType: "application/json")
        #expect(change.status == 204, "\(change.text)")

        #expect(try await server.userinfo(attacker.accessToken).status == 401, "the other session's access token is revoked")
        let stolenRefresh = try await server.refresh(try #require(attacker.refreshToken))
        #expect(try stolenRefresh.status == 400 && (try stolenRefresh.json()["error"] as? String) == "invalid_grant")
        #expect(try await server.userinfo(owner.accessToken).status == 200, "the caller stays signed in")
        #expect(try await server.refresh(try #require(owner.refreshToken)).status == 200)
    }

    /// Runs the RECOVERY flow for `username` through the SDK, reading the code from the development outbox.
    func recover(_ server: TestServer, _ username: String, newPassword: String) async throws {
        let client = LatchkeyClient(http: productionHTTPClient())
        var config = server.sdkConfig()
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        try await client.initialize(config: config)
        let recovery = EmbeddedFlowRequestConfig(flowType: .recovery)
        func step(_ id: String?, _ action: String?, _ inputs: [String: String] = [:]) async throws -> EmbeddedFlowResponse {
            try await client.signIn(payload: .init(flowId: id, actionId: action, inputs: inputs), request: recovery)
        }
        let first = try await step(nil, nil)
        _ = try await step(first.flowId, "action_recover", ["username": username])
        let code = try #require(try await server.server.outboxMessages(recipient: username).first?.code)
        _ = try await step(first.flowId, "action_verify", ["confirmationCode": code])
        let done = try await step(first.flowId, "action_reset", ["password": newPassword])
        #expect(done.flowStatus == .complete, "\(String(describing: done.error))")
    }

    func passkey(for userId: String) -> PasskeyRecord {
        PasskeyRecord(
            id: "attacker-credential-\(userId)", userId: userId, publicKey: Data([1, 2, 3]), algorithm: -7, signCount: 0,
            aaguid: Data(count: 16), friendlyName: "attacker's key", attestationFormat: "none", backupEligible: false,
            backedUp: false, createdAt: Date(), lastUsedAt: nil)
    }

    /// (Recovery codes go only to a verified address, `EmailChangeVerificationTests`, so a pre-hijacker who registered
    /// someone else's address can never have it "proven" by the owner's reset either.)
    @Test("a password reset by recovery ends every session of the account; the owner's passkeys stay")
    func recoveryEndsEverySession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let attacker = try await server.tokens(TestBrowser())
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        try await server.server.store.insertPasskey(passkey(for: demo.id))
        try await recover(server, "demo@example.com", newPassword: "the owner's new passphrase")

        #expect(try await server.userinfo(attacker.accessToken).status == 401)
        #expect(try await server.refresh(try #require(attacker.refreshToken)).status == 400, "the attacker's refresh family is over")
        #expect(try await server.server.store.user(id: demo.id)?.passwordHash != demo.passwordHash)
        #expect(try await server.server.store.passkeys(userId: demo.id).count == 1, "a verified owner's passkeys are theirs")
    }

    @Test("a password reset lifts every lock of the account, the per-address ones included, in the same step")
    func resetLiftsLocks() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        func login(_ password: String) async throws -> HTTPResult {
            try await server.call(
                "POST", "/identity/v1/password/login", token: nil,
                json: [
                    "email": "demo@example.com", "password": password, "client_id": "latchkey-demo"
                ], contentType: "application/json")
        }
        for _ in 0..<5 { _ = try await login("a wrong guess") }  // locks the account for this address
        #expect(try await login(DevelopmentDefaults.demoPassword).status == 401, "locked: even the right password is refused")
        try await recover(server, "demo@example.com", newPassword: "the owner's new passphrase")
        let after = try await login("the owner's new passphrase")
        #expect(after.status == 200, "the new password works at once from the same network: \(after.text)")
    }

    @Test("RP-initiated logout revokes the refresh tokens of the session it ends")
    func logoutRevokesRefreshFamilies() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let other = try await server.tokens(TestBrowser())  // another session of the same user is not affected
        let logout = try await browser.get(server.base + "/oauth2/logout?" + TestBrowser.formEncode(["id_token_hint": try #require(tokens.idToken)]))
        #expect(logout.status < 400)
        let refreshed = try await server.refresh(try #require(tokens.refreshToken))
        #expect(try refreshed.status == 400 && (try refreshed.json()["error"] as? String) == "invalid_grant", "\(refreshed.text)")
        #expect(try await server.userinfo(tokens.accessToken).status == 401)
        #expect(try await server.refresh(try #require(other.refreshToken)).status == 200)
    }

    @Test("logout by POST without a cookie (as the SDK sends it, after revoking its tokens) ends the hinted session")
    func logoutByPost() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        try await server.revoke(try #require(tokens.refreshToken))
        let logout = try await TestBrowser().postForm(
            server.base + "/oauth2/logout",
            [
                "id_token_hint": try #require(tokens.idToken), "client_id": "latchkey-demo",
                "post_logout_redirect_uri": "http://127.0.0.1:7777/logout"
            ])
        #expect(
            (300..<400).contains(logout.status) && logout.location?.hasPrefix("http://127.0.0.1:7777/logout") == true,
            "\(logout.status) \(logout.location ?? "")")
        var none = AuthorizeOptions()
        none.prompt = "none"
        #expect(
            try await browser.get(server.authorizeURL(none)).locationQuery["error"] == "login_required",
            "the session is over, in the browser that holds its cookie too")
    }

    @Test("a leaked ID token without the session's cookie signs nobody out while the session holds live tokens")
    func leakedIDTokenEndsNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let idToken = try #require(tokens.idToken)
        let attacker = TestBrowser()
        let byGet = try await attacker.get(server.base + "/oauth2/logout?" + TestBrowser.formEncode(["id_token_hint": idToken]))
        #expect(byGet.status == 200 && byGet.text.contains("csrf"), "a confirmation page, not a sign-out: \(byGet.status)")
        let byPost = try await attacker.postForm(
            server.base + "/oauth2/logout",
            [
                "id_token_hint": idToken, "client_id": "latchkey-demo", "post_logout_redirect_uri": "http://127.0.0.1:7777/logout"
            ])
        #expect(byPost.status == 200 && byPost.location == nil, "no redirect that says it is done: \(byPost.status)")
        // Confirming needs only a CSRF cookie the attacker gets from the page itself: it still ends nothing.
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: byGet.text))
        let confirmed = try await attacker.postForm(server.base + "/oauth2/logout", ["id_token_hint": idToken, "confirm": "yes", "csrf": csrf])
        #expect(confirmed.status < 400, "\(confirmed.status)")

        let refreshed = try await server.refresh(try #require(tokens.refreshToken))
        #expect(refreshed.status == 200, "the refresh token still works: \(refreshed.text)")
        var none = AuthorizeOptions()
        none.prompt = "none"
        let silent = try await browser.get(server.authorizeURL(none))
        #expect(silent.locationQuery["code"] != nil, "the browser's session still signs in silently: \(silent.location ?? "")")
    }

    @Test("without offline_access a refresh token ends with its session; with it, it outlives the session's expiry")
    func refreshWithoutOfflineAccessIsBoundToTheSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var online = AuthorizeOptions()
        online.scope = "openid profile"
        let onlineTokens = try await server.tokens(TestBrowser(), online)
        let offlineTokens = try await server.tokens(TestBrowser())  // asks for offline_access
        let onlineRefresh = try await server.refresh(try #require(onlineTokens.refreshToken))
        #expect(onlineRefresh.status == 200, "while the session lives, refresh works: \(onlineRefresh.text)")
        let rotated = try #require(try onlineRefresh.json()["refresh_token"] as? String)

        server.advanceClock(13 * 3600)  // past the 12-hour session, well inside the 30-day refresh lifetime
        let expired = try await server.refresh(rotated)
        #expect(try expired.status == 400 && (try expired.json()["error"] as? String) == "invalid_grant", "\(expired.text)")
        let offline = try await server.refresh(try #require(offlineTokens.refreshToken))
        #expect(offline.status == 200, "\(offline.text)")
    }

    @Test("the code's redemption creates and attaches its family in one step, bound to the session")
    func codeRedemptionAttachesTheFamilyAtomically() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let store = server.server.store
        let redemption = try await store.redeemAuthorizationCode(hash: Secrets.digest(code), familyId: "family-under-test", now: Date())
        guard case .redeemed(let record) = redemption else { Issue.record("not redeemed: \(redemption)"); return }
        #expect(record.familyId == "family-under-test")
        let family = try #require(try await store.family(id: "family-under-test"))
        #expect(family.sessionId == record.sessionId && family.sessionId != nil && family.userId == record.userId)
        // The replay that follows finds the family and revokes it.
        guard
            case .replayed(let replayedFamily) = try await store.redeemAuthorizationCode(hash: Secrets.digest(code), familyId: "unused", now: Date())
        else {
            Issue.record("a second redemption must be a replay"); return
        }
        #expect(replayedFamily == "family-under-test")
        #expect(try await store.family(id: "family-under-test")?.revokedAt != nil)
        #expect(try await store.family(id: "unused") == nil, "a replay creates nothing")
    }
}
