import LatchkeyTestSupport
import Foundation
import LatchkeyJOSE
import Testing

@Suite("Token endpoint: client authentication, grants, dialects")
struct TokenEndpointTests {
    @Test func clientCredentialsWithBasicAndPostAuthentication() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let basic = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials", "scope": "api.read"],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(basic.status == 200)
        let token = try #require(try basic.json()["access_token"] as? String)
        #expect(try basic.json()["refresh_token"] == nil)
        #expect(try basic.json()["id_token"] == nil)
        let claims = try await server.verifiedClaims(token)
        #expect(claims["sub"]?.stringValue == "backend")
        #expect(claims["scope"]?.stringValue == "api.read")

        let post = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            ["grant_type": "client_credentials", "client_id": "poster", "client_secret": "poster-secret-0123456789"])
        #expect(post.status == 200)
    }

    @Test func wrongClientSecretAndWrongMethodAreRejected() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let wrong = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials"],
            headers: ["Authorization": basicAuth("backend", "not-the-secret")])
        #expect(wrong.status == 401)
        #expect(try wrong.json()["error"] as? String == "invalid_client")
        #expect(wrong.header("WWW-Authenticate")?.hasPrefix("Basic") == true)

        let wrongMethod = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            ["grant_type": "client_credentials", "client_id": "backend", "client_secret": "backend-secret-0123456789"])
        #expect(wrongMethod.status == 401, "backend registered client_secret_basic")

        let publicWithSecret = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            ["grant_type": "client_credentials", "client_id": "latchkey-demo", "client_secret": "x"])
        #expect(publicWithSecret.status == 401)

        let publicCC = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials", "client_id": "latchkey-demo"])
        #expect(try publicCC.json()["error"] as? String == "unauthorized_client")

        let unknown = try await TestBrowser().postForm(server.base + "/oauth2/token", ["grant_type": "client_credentials", "client_id": "ghost"])
        #expect(unknown.status == 401)
    }

    @Test func formBodiesAreRequiredOnOAuth2AndJSONIsAcceptedOnTheReachFivePath() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let body: [String: Any] = [
            "grant_type": "authorization_code", "code": code, "redirect_uri": options.redirectUri,
            "client_id": options.clientId, "code_verifier": options.pkce!.verifier
        ]
        let onOAuth2 = try await TestBrowser().postJSON(server.base + "/oauth2/token", body)
        #expect(onOAuth2.status == 400)
        #expect(try onOAuth2.json()["error"] as? String == "invalid_request")

        let onOAuth = try await TestBrowser().postJSON(server.base + "/oauth/token", body)
        #expect(onOAuth.status == 200, "\(onOAuth.text)")
        let refresh = try #require(try onOAuth.json()["refresh_token"] as? String)

        let replay = try await TestBrowser().postJSON(server.base + "/oauth/token", body)
        let error = try replay.json()
        #expect(error["error"] as? String == "invalid_grant")
        #expect(error["error_user_msg"] is String, "reachFive dialect adds ApiError members")
        #expect(error["error_message_key"] as? String == "oauth.invalid_grant")
        _ = refresh
    }

    @Test func repeatedParametersAreInvalid() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let response = try await TestBrowser().send(
            server.base + "/oauth2/token", method: "POST",
            body: Data("grant_type=client_credentials&grant_type=client_credentials".utf8),
            headers: [
                "Content-Type": "application/x-www-form-urlencoded",
                "Authorization": basicAuth("backend", "backend-secret-0123456789")
            ])
        #expect(try response.json()["error"] as? String == "invalid_request")
    }

    @Test func tokenExchangeIssuesADelegatedAccessTokenOnly() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let exchange = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": tokens.accessToken,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "audience": "https://api.example", "scope": "openid"
            ], headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(exchange.status == 200, "\(exchange.text)")
        let json = try exchange.json()
        #expect(json["issued_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token")
        #expect(json["refresh_token"] == nil && json["id_token"] == nil)
        let claims = try await server.verifiedClaims(try #require(json["access_token"] as? String))
        let original = try await server.verifiedClaims(tokens.accessToken)
        #expect(claims["sub"] == original["sub"])
        #expect(claims["aud"]?.stringValue == "https://api.example")
        #expect(claims["act"] == .object(["sub": .string("backend")]))
        #expect(claims["scope"]?.stringValue == "openid")
        let exchanged = try #require(json["access_token"] as? String)
        #expect(try await server.userinfo(exchanged).status == 401, "a token for https://api.example is not for userinfo")

        // The original token still works: exchange does not replace the session's tokens.
        #expect(try await server.userinfo(tokens.accessToken).status == 200)
    }

    @Test func tokenExchangeRejectsForeignAudiencesWiderScopesAndBadSubjects() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        func exchange(_ extra: [String: String]) async throws -> [String: Any] {
            var form = [
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": tokens.accessToken,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"
            ]
            form.merge(extra) { _, n in n }
            return try await TestBrowser().postForm(
                server.base + "/oauth2/token", form,
                headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")]
            ).json()
        }
        #expect(try await exchange(["audience": "https://evil.example"])["error"] as? String == "invalid_target")
        #expect(try await exchange(["scope": "api.write"])["error"] as? String == "invalid_scope")
        #expect(try await exchange(["subject_token": tokens.accessToken + "x"])["error"] as? String == "invalid_grant")
        #expect(try await exchange(["subject_token_type": "urn:example:unknown"])["error"] as? String == "invalid_request")
    }
}
