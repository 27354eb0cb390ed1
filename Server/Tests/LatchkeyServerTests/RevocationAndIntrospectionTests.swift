import LatchkeyTestSupport
import Foundation
import Testing

@Suite("Revocation, introspection and userinfo")
struct RevocationAndIntrospectionTests {
    @Test func revokingARefreshTokenEndsTheGrant() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let revoke = try await TestBrowser().postForm(
            server.base + "/oauth2/revoke",
            ["token": tokens.refreshToken!, "token_type_hint": "refresh_token", "client_id": "latchkey-demo"])
        #expect(revoke.status == 200)
        #expect(try await server.refresh(tokens.refreshToken!).status == 400)
        #expect(try await server.userinfo(tokens.accessToken).status == 401)
    }

    @Test func revokedAccessTokenIsRefusedAtUserinfo() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        #expect(try await server.userinfo(tokens.accessToken).status == 200)
        let revoke = try await TestBrowser().postForm(server.base + "/oauth/revoke", ["token": tokens.accessToken, "client_id": "latchkey-demo"])
        #expect(revoke.status == 200)
        let after = try await server.userinfo(tokens.accessToken)
        #expect(after.status == 401)
        #expect(after.header("WWW-Authenticate")?.contains("invalid_token") == true)
        #expect(try await server.refresh(tokens.refreshToken!).status == 200, "revoking the access token leaves the refresh token")
    }

    @Test func revocationOfUnknownTokensSucceedsAndForeignTokensAreRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let unknown = try await TestBrowser().postForm(server.base + "/oauth2/revoke", ["token": "nonsense", "client_id": "latchkey-demo"])
        #expect(unknown.status == 200)
        let tokens = try await server.tokens()
        let foreign = try await TestBrowser().postForm(
            server.base + "/oauth2/revoke", ["token": tokens.refreshToken!],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(foreign.status == 400)
        #expect(try await server.refresh(tokens.refreshToken!).status == 200)
        let unauthenticated = try await TestBrowser().postForm(server.base + "/oauth2/revoke", ["token": tokens.accessToken])
        #expect(unauthenticated.status == 401)
    }

    @Test func introspectionReportsLiveAndDeadTokens() async throws {
        // backend is the resource server here: the operator marks it as an introspector (review 3, R3-9).
        let server = try await TestServer.start { $0.makeIntrospector("backend") }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let auth = ["Authorization": basicAuth("backend", "backend-secret-0123456789")]
        let live = try await TestBrowser().postForm(server.base + "/oauth2/introspect", ["token": tokens.accessToken], headers: auth).json()
        #expect(live["active"] as? Bool == true)
        #expect(live["client_id"] as? String == "latchkey-demo")
        #expect(live["username"] as? String == "demo@example.com")
        #expect(live["token_type"] as? String == "Bearer")
        #expect((live["scope"] as? String)?.contains("openid") == true)
        // A refresh token is answered only to its own client (latchkey-demo, public: its client_id).
        let refresh = try await TestBrowser().postForm(
            server.base + "/oauth2/introspect", ["token": tokens.refreshToken!, "client_id": "latchkey-demo"]
        ).json()
        #expect(refresh["active"] as? Bool == true)
        #expect(refresh["token_type"] as? String == "refresh_token")

        _ = try await TestBrowser().postForm(server.base + "/oauth2/revoke", ["token": tokens.refreshToken!, "client_id": "latchkey-demo"])
        let dead = try await TestBrowser().postForm(server.base + "/oauth2/introspect", ["token": tokens.accessToken], headers: auth).json()
        #expect(dead["active"] as? Bool == false)
        #expect(dead.count == 1, "an inactive token reveals nothing else")
        let garbage = try await TestBrowser().postForm(server.base + "/oauth2/introspect", ["token": "garbage"], headers: auth).json()
        #expect(garbage["active"] as? Bool == false)

        let backendToken =
            try await TestBrowser().postForm(server.base + "/oauth2/token", ["grant_type": "client_credentials"], headers: auth)
            .json()["access_token"] as? String
        let byPublic = try await TestBrowser().postForm(server.base + "/oauth2/introspect", ["token": backendToken!, "client_id": "latchkey-demo"])
            .json()
        #expect(byPublic["active"] as? Bool == false, "a public client sees only its own tokens")
    }

    @Test func userinfoReleasesClaimsByScope() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.scope = "openid email"
        let tokens = try await server.tokens(TestBrowser(), options)
        let claims = try await server.userinfo(tokens.accessToken).json()
        #expect(claims["email"] as? String == "demo@example.com")
        #expect(claims["email_verified"] as? Bool == true)
        #expect(claims["sub"] is String)
        #expect(claims["name"] == nil, "profile claims need the profile scope")
        #expect(claims["given_name"] == nil)

        let profile = try await server.userinfo(try await server.tokens().accessToken).json()
        #expect(profile["name"] as? String == "Demo User")

        let post = try await TestBrowser().postForm(server.base + "/oauth2/userinfo", ["access_token": tokens.accessToken])
        #expect(post.status == 200)
        let none = try await TestBrowser().get(server.base + "/oauth2/userinfo")
        #expect(none.status == 401)
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)

        let cc = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials", "scope": "api.read"],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")]
        ).json()
        let noOpenID = try await server.userinfo(cc["access_token"] as! String)
        #expect(noOpenID.status == 403)
        #expect(noOpenID.header("WWW-Authenticate")?.contains("insufficient_scope") == true)

        server.advanceClock(3601)
        #expect(try await server.userinfo(tokens.accessToken).status == 401, "expired access token")
    }
}
