import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The audit trail over real loopback HTTP: the row each action writes, read back through
/// `GET /admin/v1/audit-events` (filters, cursor pagination, authorization), retention, and no secret in any row.
@Suite("Audit trail and /admin/v1/audit-events")
struct AuditTrailTests {
    static let demoPassword = "correct horse battery staple"

    /// The events the admin API answers for `query` (one page), and the next cursor.
    static func page(_ server: TestServer, _ query: String, token: String) async throws -> (events: [[String: Any]], next: String?) {
        let result = try await server.call("GET", "/admin/v1/audit-events" + (query.isEmpty ? "" : "?" + query), token: token)
        #expect(result.status == 200, "\(result.text)")
        let json = try result.json()
        return (json["events"] as? [[String: Any]] ?? [], json["next_cursor"] as? String)
    }

    /// Every event `query` selects, following the cursors.
    static func all(_ server: TestServer, _ query: String = "", token: String) async throws -> [[String: Any]] {
        var events: [[String: Any]] = []
        var cursor: String?
        repeat {
            var parts = query.isEmpty ? [] : [query]
            parts.append("limit=200")
            if let cursor { parts.append("cursor=" + cursor) }
            let page = try await page(server, parts.joined(separator: "&"), token: token)
            events += page.events
            cursor = page.next
        } while cursor != nil
        return events
    }

    static func userId(_ server: TestServer, _ username: String) async throws -> String {
        try #require(try await server.server.user(username: username)).id
    }

    static func details(_ event: [String: Any]) -> [String: String] { event["details"] as? [String: String] ?? [:] }

    // MARK: Events written by the actions that cause them

    @Test("a failed then a successful hosted sign-in: signin.failed (password, invalid_credentials) then signin.succeeded")
    func hostedSignInOutcomes() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let wrong = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "not the password")
        #expect(wrong.status == 401)
        _ = try await server.signIn(browser)
        let admin = try await server.clientToken(scope: "scim.admin")
        let demo = try await Self.userId(server, "demo@example.com")

        let events = try await Self.page(server, "subject=\(demo)&type=signin.failed,signin.succeeded", token: admin).events
        #expect(events.count == 2, "\(events)")
        let succeeded = try #require(events.first), failed = try #require(events.last)
        #expect(succeeded["type"] as? String == "signin.succeeded" && succeeded["outcome"] as? String == "success")
        #expect(Self.details(succeeded)["method"] == "password" && Self.details(succeeded)["amr"] == "pwd")
        #expect(failed["type"] as? String == "signin.failed" && failed["outcome"] as? String == "failure")
        #expect(Self.details(failed) == ["method": "password", "reason": "invalid_credentials"])
        for event in events {
            #expect(event["subject"] as? String == demo && event["actor"] as? String == demo)
            #expect(event["client_id"] as? String == "latchkey-demo")
            #expect(event["client_address"] as? String == "127.0.0.1")
            #expect((event["request_id"] as? String)?.isEmpty == false)
            #expect((event["at"] as? String).flatMap { try? Date($0, strategy: .iso8601) } != nil)
        }
        #expect(wrong.header("X-Request-Id") == failed["request_id"] as? String, "the row names the request's id")
    }

    @Test("repeated wrong passwords: account.locked once, then signin.failed with reason locked")
    func lockout() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAccount = 3
            $0.loginPolicy.maxFailuresPerAddress = 100
        }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        for _ in 1...4 {
            let page = try await server.openLoginPage(browser, AuthorizeOptions())
            _ = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong")
        }
        let demo = try await Self.userId(server, "demo@example.com")
        let events = try await server.server.store.auditEvents(AuditQuery(subject: demo, limit: 50))
        #expect(events.filter { $0.type == .accountLocked }.count == 1)
        #expect(events.first { $0.type == .accountLocked }?.details["reason"] == "repeated_failures")
        #expect(events.first?.type == .signInFailed && events.first?.details["reason"] == "locked", "the locked account's refusal says so")
        #expect(events.filter { $0.type == .signInFailed }.count == 4)
    }

    @Test("a replayed refresh token: token.refresh_replayed with the account and the client")
    func refreshReplay() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let refresh = try #require(tokens.refreshToken)
        #expect(try await server.refresh(refresh).status == 200)
        #expect(try await server.refresh(refresh).status == 400)
        let demo = try await Self.userId(server, "demo@example.com")
        let replay = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.refreshTokenReplayed], limit: 5)).first)
        #expect(replay.subject == demo && replay.clientId == "latchkey-demo" && replay.actor == "client:latchkey-demo")
        #expect(replay.outcome == .failure && replay.details["action"] == "family_revoked")
    }

    @Test("client authentication failures: wrong secret (the client named), unknown client (no id recorded)")
    func clientAuthenticationFailure() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let wrong = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials"],
            headers: ["Authorization": basicAuth("backend", "wrong-secret-for-the-audit")])
        #expect(wrong.status == 401)
        let unknown = try await TestBrowser().postForm(
            server.base + "/oauth2/revoke", ["token": "x", "client_id": "nobody-knows-me", "client_secret": "s"])
        #expect(unknown.status == 401)
        let events = try await server.server.store.auditEvents(AuditQuery(types: [.clientAuthenticationFailed], limit: 5))
        #expect(events.count == 2)
        let unknownEvent = try #require(events.first), wrongEvent = try #require(events.last)
        #expect(wrongEvent.actor == "client:backend" && wrongEvent.clientId == "backend")
        #expect(wrongEvent.details == ["reason": "wrong_secret", "endpoint": "token"])
        #expect(unknownEvent.actor == AuditEvent.anonymous && unknownEvent.clientId == nil)
        #expect(unknownEvent.details == ["reason": "unknown_client", "endpoint": "revoke"])
    }

    @Test("an administrator's SCIM update: user.updated, who changed which account and which attributes")
    func scimUpdateByAnAdministrator() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let ada = try await Self.userId(server, "ada@example.com")
        let admin = try await server.clientToken(scope: "scim.admin")
        let patch = try await server.call(
            "PATCH", "/scim2/Users/\(ada)", token: admin,
            json: SCIMTests.patch([
                ["op": "replace", "path": "name.givenName", "value": "Augusta"], ["op": "replace", "path": "active", "value": false]
            ]))
        #expect(patch.status == 200, "\(patch.text)")
        let event = try #require(try await Self.page(server, "type=user.updated", token: admin).events.first)
        #expect(event["subject"] as? String == ada && event["actor"] as? String == "client:backend")
        #expect(event["client_id"] as? String == "backend")
        #expect(Self.details(event)["attributes"] == "given_name,active" && Self.details(event)["administrator"] == "true")
    }

    @Test("account changes: TOTP enrolled, password changed, email change requested and confirmed, token revoked")
    func accountChanges() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let demo = try await Self.userId(server, "demo@example.com")
        try await server.server.enrollTOTP(userId: try await Self.userId(server, "ada@example.com"))
        let tokens = try await server.userTokens()
        let token = tokens.accessToken
        let email = try await server.call(
            "POST", "/users/me/email", token: token, json: ["email": "new.demo@example.com"], contentType: "application/json")
        #expect(email.status == 202, "\(email.text)")
        let code = try #require(try await server.server.outboxMessages(recipient: "new.demo@example.com").compactMap(\.code).first)
        let verify = try await server.call("POST", "/users/me/email/verify", token: token, json: ["code": code], contentType: "application/json")
        #expect(verify.status == 200, "\(verify.text)")
        let change = try await server.call(
            "POST", "/users/me/update-credentials", token: token,
            json: ["attributes": ["password": "a brand new passphrase 42", "currentPassword": Self.demoPassword]], contentType: "application/json")
        #expect(change.status == 204, "\(change.text)")
        try await server.revoke(try #require(tokens.refreshToken))

        let store = server.server.store
        let mfa = try #require(try await store.auditEvents(AuditQuery(types: [.mfaEnrolled], limit: 5)).first)
        #expect(mfa.actor == AuditEvent.operatorActor && mfa.details["factor"] == "totp")
        let mine = try await store.auditEvents(AuditQuery(subject: demo, limit: 50)).map(\.type)
        for type: AuditEvent.Kind in [.emailChangeRequested, .emailChangeConfirmed, .passwordChanged, .tokenRevoked] {
            #expect(mine.contains(type), "\(type) missing from \(mine)")
        }
        let revoked = try #require(try await store.auditEvents(AuditQuery(types: [.tokenRevoked], limit: 5)).first)
        #expect(revoked.actor == "client:latchkey-demo" && revoked.details["token_type"] == "refresh_token")
    }

    // MARK: The admin API

    @Test("filters and cursor pagination: newest first, stable while new events arrive, each event once")
    func filtersAndPagination() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        func fail() async throws {
            let page = try await server.openLoginPage(browser, AuthorizeOptions())
            _ = try await server.submitLogin(browser, page: page, username: "ada@example.com", password: "wrong")
        }
        for _ in 1...3 { try await fail() }  // fewer than max_failures_per_account: no lockout event
        let admin = try await server.clientToken(scope: "scim.admin")
        let ada = try await Self.userId(server, "ada@example.com")

        let first = try await Self.page(server, "subject=\(ada)&outcome=failure&limit=1", token: admin)
        #expect(first.events.count == 1)
        let cursor = try #require(first.next)
        try await fail()  // a new event: it comes before the first page, and never shifts the later ones
        let second = try await Self.page(server, "subject=\(ada)&outcome=failure&limit=1&cursor=\(cursor)", token: admin)
        let third = try await Self.page(server, "subject=\(ada)&outcome=failure&limit=1&cursor=\(try #require(second.next))", token: admin)
        #expect(third.events.count == 1 && third.next == nil)
        let ids = (first.events + second.events + third.events).compactMap { $0["id"] as? String }
        #expect(ids.count == 3 && Set(ids).count == 3, "each of the three original events once")
        let times = (first.events + second.events + third.events).compactMap { $0["at"] as? String }
        #expect(times == times.sorted(by: >), "newest first")
        #expect(try await Self.all(server, "subject=\(ada)", token: admin).count == 4)

        // Other filters.
        #expect(try await Self.all(server, "subject=\(ada)&outcome=success", token: admin).isEmpty)
        #expect(try await Self.all(server, "type=signin.failed&client_id=latchkey-demo", token: admin).count == 4)
        #expect(try await Self.all(server, "client_id=other-app", token: admin).isEmpty)
        let future = Date().addingTimeInterval(3600).formatted(.iso8601)
        let past = Date().addingTimeInterval(-3600).formatted(.iso8601)
        #expect(try await Self.all(server, "since=\(future)", token: admin).isEmpty)
        #expect(try await Self.all(server, "until=\(past)", token: admin).isEmpty)
        #expect(try await Self.all(server, "subject=\(ada)&since=\(past)&until=\(future)", token: admin).count == 4)

        // Bad parameters are 400, never ignored.
        for query in [
            "limit=0", "limit=201", "limit=ten", "type=signin.maybe", "outcome=perhaps", "since=yesterday", "cursor=not-a-cursor",
            "since=\(future)&until=\(past)", "limit=1&limit=2"
        ] {
            let bad = try await server.call("GET", "/admin/v1/audit-events?" + query, token: admin)
            #expect(bad.status == 400, "\(query): \(bad.status) \(bad.text)")
        }
    }

    @Test("only administrators: a user without the role, a token without the scope → 403; no token → 401")
    func authorization() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword, scope: "openid scim.admin")
        #expect(try await server.call("GET", "/admin/v1/audit-events", token: ada.accessToken).status == 403)
        let noScope = try await server.clientToken(scope: "api.read")
        #expect(try await server.call("GET", "/admin/v1/audit-events", token: noScope).status == 403)
        #expect(try await server.call("GET", "/admin/v1/audit-events", token: nil).status == 401)
        // The demo user holds the admin role: with the scope, allowed.
        let demo = try await server.userTokens(scope: "openid scim.admin")
        #expect(try await server.call("GET", "/admin/v1/audit-events", token: demo.accessToken).status == 200)
    }

    @Test("retention: events older than audit_retention_days are pruned with the expired rows")
    func retention() async throws {
        let server = try await TestServer.start { $0.auditRetentionDays = 2 }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        _ = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong")
        let store = server.server.store
        #expect(try await store.auditEvents(AuditQuery(limit: 10)).count == 1)
        server.advanceClock(86400)
        try await server.server.pruneExpired()
        #expect(try await store.auditEvents(AuditQuery(limit: 10)).count == 1, "a day old: kept")
        _ = try await server.tokens()  // a new event, a day later
        server.advanceClock(86400 + 60)
        try await server.server.pruneExpired()
        let left = try await store.auditEvents(AuditQuery(limit: 10))
        #expect(left.map(\.type) == [.signInSucceeded], "the older event is gone, the newer kept")
    }

    @Test("no row holds a password, code, token or secret")
    func noSecretsInTheTrail() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        var secrets = [Self.demoPassword, "backend-secret-0123456789", "wrong-secret-for-the-audit", "a mistyped password 77"]
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        _ = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "a mistyped password 77")
        // A password typed into the name field is not recorded either.
        let again = try await server.openLoginPage(browser, AuthorizeOptions())
        _ = try await server.submitLogin(browser, page: again, username: Self.demoPassword, password: "x")
        let options = AuthorizeOptions()
        let query = try await server.signIn(browser, options)
        let code = try #require(query["code"])
        secrets.append(code)
        let exchanged = try await server.exchangeCode(code, options)
        let json = try exchanged.json()
        let refresh = try #require(json["refresh_token"] as? String)
        secrets += [try #require(json["access_token"] as? String), refresh, try #require(json["id_token"] as? String)]
        let rotated = try await server.refresh(refresh)
        let next = try #require(try rotated.json()["refresh_token"] as? String)
        secrets.append(next)
        #expect(try await server.refresh(refresh).status == 400)  // replay
        try await server.revoke(next)
        _ = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials"],
            headers: ["Authorization": basicAuth("backend", "wrong-secret-for-the-audit")])
        let admin = try await server.clientToken(scope: "scim.admin")
        secrets.append(admin)
        secrets += browser.cookies.values.filter { $0.count >= 16 }

        let events = try await Self.all(server, token: admin)
        let types = Set(events.compactMap { $0["type"] as? String })
        #expect(
            types.isSuperset(of: ["signin.failed", "signin.succeeded", "token.refresh_replayed", "token.revoked", "client.authentication_failed"]))
        for event in events {
            let text = String(decoding: try JSONSerialization.data(withJSONObject: event), as: UTF8.self)
            for secret in secrets where !secret.isEmpty {
                #expect(!text.contains(secret), "a secret in \(text)")
            }
        }
    }

    @Test("each write counts in latchkey_audit_events_total by type")
    func metric() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.tokens()
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains("latchkey_audit_events_total{type=\"signin.succeeded\",result=\"stored\"} 1"), "\(exposition)")
    }
}
