import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// Replayed over HTTP: token exchange must accept only explicitly typed subject tokens
/// (a live access token with an audience the client may use, or the flow assertion), never a login ticket, a step-up
/// token or an ID token, and what it mints must stay inside the subject's scope, family and session.
@Suite("Security: token exchange takes only typed subject tokens")
struct TokenExchangeAttackTests {
    static let exchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let jwtType = "urn:ietf:params:oauth:token-type:jwt"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"

    func exchange(
        _ server: TestServer, subject: String, type: String, client: String = "latchkey-demo",
        extra: [String: String] = [:]
    ) async throws -> HTTPResult {
        var form = ["grant_type": Self.exchangeGrant, "subject_token": subject, "subject_token_type": type]
        form.merge(extra) { _, new in new }
        if client == "backend" {
            return try await TestBrowser().postForm(
                server.base + "/oauth2/token", form,
                headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        }
        form["client_id"] = client
        return try await TestBrowser().postForm(server.base + "/oauth2/token", form)
    }

    func passwordLogin(_ server: TestServer) async throws -> [String: Any] {
        let login = try await server.call(
            "POST", "/identity/v1/password/login", token: nil,
            json: [
                "email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo", "scope": "openid"
            ], contentType: "application/json")
        #expect(login.status == 200, "\(login.text)")
        return try login.json()
    }

    @Test("the MFA bypass: a login ticket that still owes a second factor is not a subject token, under any type")
    func loginTicketIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        try await server.server.enrollTOTP(userId: demo.id)
        let login = try await passwordLogin(server)
        #expect(login["mfa_required"] as? Bool == true)
        let ticket = try #require(login["tkn"] as? String)
        #expect(try CompactJWS(parsing: ticket).header.typ == "login-ticket+jwt", "every internal token has its own typ")

        for type in [Self.jwtType, Self.accessTokenType, Self.idTokenType] {
            let response = try await exchange(server, subject: ticket, type: type)
            #expect(response.status == 400, "\(type): \(response.text)")
            #expect(try response.json()["access_token"] == nil)
        }
        // Not spent by the refused attempts, and still refused by /oauth/authorize while the factor is owed.
        var options = AuthorizeOptions()
        options.extra = ["tkn": ticket]
        let authorize = try await TestBrowser().get(server.authorizeURL(options).replacingOccurrences(of: "/oauth2/", with: "/oauth/"))
        #expect(authorize.locationQuery["error"] == "access_denied")
    }

    @Test("a step-up token is not a subject token")
    func stepUpTokenIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        try await server.server.enrollTOTP(userId: demo.id)
        let ticket = try #require(try await passwordLogin(server)["tkn"] as? String)
        let options = AuthorizeOptions()
        let stepUp = try await server.call(
            "POST", "/identity/v1/mfa/stepup", token: nil,
            json: [
                "tkn": ticket, "client_id": "latchkey-demo", "redirect_uri": options.redirectUri, "code_challenge": options.pkce!.challenge,
                "code_challenge_method": "S256", "scope": "openid"
            ], contentType: "application/json")
        #expect(stepUp.status == 200, "\(stepUp.text)")
        let token = try #require(try stepUp.json()["token"] as? String)
        #expect(try CompactJWS(parsing: token).header.typ == "mfa-step-up+jwt")
        for type in [Self.jwtType, Self.accessTokenType] {
            let response = try await exchange(server, subject: token, type: type)
            #expect(response.status == 400, "\(type): \(response.text)")
            #expect(try response.json()["error"] as? String == "invalid_grant")
        }
    }

    @Test("an ID token is never exchanged: no access token, let alone one with scopes the user did not grant")
    func idTokenIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.scope = "openid"
        let tokens = try await server.tokens(TestBrowser(), options)
        let idToken = try #require(tokens.idToken)
        for (type, error) in [(Self.idTokenType, "invalid_request"), (Self.jwtType, "invalid_grant"), (Self.accessTokenType, "invalid_grant")] {
            let response = try await exchange(server, subject: idToken, type: type)
            #expect(response.status == 400, "\(type): \(response.text)")
            #expect(try response.json()["error"] as? String == error, "\(type)")
        }
    }

    @Test(
        "audience laundering: a token for another API is exchanged only by a client allowed that API, and a public client only exchanges its own tokens"
    )
    func audienceLaunderingIsRefused() async throws {
        let server = try await TestServer.start { config in
            config.clients.append(
                ClientConfiguration(
                    clientId: "other-public", redirectUris: ["http://127.0.0.1/callback"],
                    grantTypes: [.authorizationCode, .tokenExchange]))
        }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let forAPI = try await exchange(
            server, subject: tokens.accessToken, type: Self.accessTokenType, client: "backend",
            extra: ["audience": "https://api.example", "scope": "openid profile"])
        #expect(forAPI.status == 200, "\(forAPI.text)")
        let apiToken = try #require(try forAPI.json()["access_token"] as? String)

        // The public demo client (no allowed audiences) cannot turn the API token back into an issuer token.
        let laundered = try await exchange(server, subject: apiToken, type: Self.accessTokenType)
        #expect(try laundered.status == 400 && (try laundered.json()["error"] as? String) == "invalid_grant", "\(laundered.text)")
        // Another public client cannot exchange the demo client's token at all.
        let foreign = try await exchange(server, subject: tokens.accessToken, type: Self.accessTokenType, client: "other-public")
        #expect(try foreign.status == 400 && (try foreign.json()["error"] as? String) == "invalid_grant", "\(foreign.text)")
        // Its own token still exchanges, within its scope.
        let own = try await exchange(server, subject: tokens.accessToken, type: Self.accessTokenType, extra: ["scope": "openid email"])
        #expect(own.status == 200, "\(own.text)")
        let wider = try await exchange(
            server, subject: try #require(try own.json()["access_token"] as? String), type: Self.accessTokenType,
            extra: ["scope": "openid profile"])
        #expect(try wider.json()["error"] as? String == "invalid_scope", "the result's scope is at most the subject's")
    }

    @Test("an exchanged token belongs to the subject's family and session: logout and family revocation reach it")
    func exchangedTokensDieWithTheSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let response = try await exchange(server, subject: tokens.accessToken, type: Self.accessTokenType, extra: ["scope": "openid profile"])
        #expect(response.status == 200, "\(response.text)")
        let exchanged = try #require(try response.json()["access_token"] as? String)
        let subjectClaims = try await server.verifiedClaims(tokens.accessToken)
        #expect(try await server.verifiedClaims(exchanged)["sid"] == subjectClaims["sid"], "the session carries over")
        #expect(try await server.userinfo(exchanged).status == 200)

        // Re-exchanging before expiry cannot keep access alive past logout.
        let again = try #require(try await exchange(server, subject: exchanged, type: Self.accessTokenType).json()["access_token"] as? String)
        let logout = try await browser.get(server.base + "/oauth2/logout?" + TestBrowser.formEncode(["id_token_hint": try #require(tokens.idToken)]))
        #expect(logout.status < 400)
        #expect(try await server.userinfo(exchanged).status == 401, "logout reaches the exchanged token")
        #expect(try await server.userinfo(again).status == 401, "and the exchange of the exchange")
        #expect(try await server.refresh(try #require(tokens.refreshToken)).status == 400, "and the session's refresh token")
    }

    @Test("a disabled user's tokens are inactive at introspection and cannot be exchanged")
    func disabledUsersTokensAreDead() async throws {
        // backend introspects access tokens as the operator's resource server; a refresh token is asked about by its
        // own client (review 3, R3-9).
        let server = try await TestServer.start { $0.makeIntrospector("backend") }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let introspect = { (token: String) async throws -> [String: Any] in
            let ownClient = token == tokens.refreshToken
            return try await TestBrowser().postForm(
                server.base + "/oauth2/introspect", ownClient ? ["token": token, "client_id": "latchkey-demo"] : ["token": token],
                headers: ownClient ? [:] : ["Authorization": basicAuth("backend", "backend-secret-0123456789")]
            ).json()
        }
        #expect(try await introspect(tokens.accessToken)["active"] as? Bool == true)
        #expect(try await introspect(try #require(tokens.refreshToken))["active"] as? Bool == true)
        var demo = try #require(try await server.server.user(username: "demo@example.com"))
        demo.disabled = true
        try await server.server.store.updateUser(demo)

        #expect(try await introspect(tokens.accessToken)["active"] as? Bool == false)
        #expect(try await introspect(try #require(tokens.refreshToken))["active"] as? Bool == false)
        let exchanged = try await exchange(server, subject: tokens.accessToken, type: Self.accessTokenType, client: "backend")
        #expect(try exchanged.status == 400 && (try exchanged.json()["error"] as? String) == "invalid_grant", "\(exchanged.text)")
    }

    @Test("the flow assertion still exchanges (once), and its family is bound to its session")
    func flowAssertionStillExchanges() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let start = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION"])
        let executionId = try #require(try start.json()["executionId"] as? String)
        let challenge = try #require(try start.json()["challengeToken"] as? String)
        let done = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "executionId": executionId, "challengeToken": challenge, "action": "action_001",
                "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ])
        let assertion = try #require(try done.json()["assertion"] as? String, "\(done.text)")
        #expect(try CompactJWS(parsing: assertion).header.typ == "flow-assertion+jwt")
        let first = try await exchange(server, subject: assertion, type: Self.jwtType)
        #expect(first.status == 200, "\(first.text)")
        #expect(try await exchange(server, subject: assertion, type: Self.jwtType).status == 400, "single use")
        #expect(try await exchange(server, subject: assertion, type: Self.accessTokenType).status == 400, "only as a JWT")
    }
}
