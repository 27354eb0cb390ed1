import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// `security_profile: "fapi2"`: the FAPI 2.0 Security Profile in one line of an application's configuration, as the
/// conformance suite's `fapi2-security-profile-final-test-plan` (private_key_jwt + DPoP variant) exercises it: the
/// happy path (`fapi2-security-profile-final-happy-flow`: PAR with a DPoP proof, the code bound to that key, a
/// `private_key_jwt` assertion, DPoP-bound tokens, ES256 ID token), and the refusals its negative modules expect
/// (`…-par-without-…`/plain authorization request, token request without DPoP, a client secret instead of an
/// assertion), plus the configuration checks.
@Suite("FAPI 2.0 Security Profile per application")
struct FAPI2ProfileTests {
    typealias Key = PrivateKeyJWTTests.AssertionKey
    static let clientId = "bank"
    static let redirect = "https://bank.example/callback"

    static func bank(_ key: Key) throws -> ClientConfiguration {
        let json = """
            {"client_id": "\(clientId)", "token_endpoint_auth_method": "private_key_jwt", "security_profile": "fapi2",
             "redirect_uris": ["\(redirect)"], "grant_types": ["authorization_code", "refresh_token"],
             "scopes": ["openid", "profile", "offline_access"]}
            """
        var client = try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8))
        client.jwks = JWKSet(keys: [key.jwk])
        return client
    }

    @Test func theProfileSetsWhatItRequires() throws {
        let client = try Self.bank(try Key.es256())
        #expect(client.securityProfile == .fapi2 && client.requireDPoP && client.requirePushedAuthorizationRequests && client.requirePKCE)
        #expect(client.idTokenSignedResponseAlg == .es256)
        try client.validate()
    }

    @Test(
        arguments: [
            (["token_endpoint_auth_method": "client_secret_basic", "client_secret": "a-secret-of-sixteen-characters"], "private_key_jwt"),
            (["require_dpop": false], "require_dpop"),
            (["require_pushed_authorization_requests": false], "require_pushed_authorization_requests"),
            (["id_token_signed_response_alg": "RS256"], "ES256"),
            (["grant_types": ["urn:ietf:params:oauth:grant-type:device_code"]], "device_code")
        ] as [([String: any Sendable], String)])
    func contradictionsAreRefusedAtStart(_ change: [String: any Sendable], _ expected: String) throws {
        var object: [String: Any] = [
            "client_id": "bank", "security_profile": "fapi2", "token_endpoint_auth_method": "private_key_jwt",
            "redirect_uris": ["https://bank.example/callback"]
        ]
        for (key, value) in change { object[key] = value }
        var client = try JSONDecoder().decode(ClientConfiguration.self, from: try JSONSerialization.data(withJSONObject: object))
        if client.tokenEndpointAuthMethod == .privateKeyJWT { client.jwks = JWKSet(keys: [try Key.es256().jwk]) }
        do {
            try client.validate()
            Issue.record("accepted: \(change)")
        } catch {
            #expect(String(describing: error).contains(expected), "\(error)")
        }
    }

    @Test func rsaKeysAndLongCodesAreRefused() throws {
        var rsa = try Self.bank(try Key.es256())
        rsa.jwks = JWKSet(keys: [try Key.rs256().jwk])
        #expect(throws: ConfigurationError.self) { try rsa.validate() }
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: TestServer.newSQLitePath(), host: "127.0.0.1")
        configuration.clients.append(try Self.bank(try Key.es256()))
        try configuration.validate()
        configuration.lifetimes.authorizationCode = 120
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
    }

    @Test func theHappyFlowAndItsRefusals() async throws {
        let key = try Key.es256()
        let bank = try Self.bank(key)
        let server = try await TestServer.start { $0.clients.append(bank) }
        defer { Task { await server.stop() } }
        let dpopKey = try SigningKey.generate(.es256)
        func assertion() throws -> String {
            try key.assertion(PrivateKeyJWTTests.claims(server, client: Self.clientId, aud: .string(server.issuer)))
        }
        var o = AuthorizeOptions()
        o.clientId = Self.clientId
        o.redirectUri = Self.redirect
        o.scope = "openid profile offline_access"

        // A plain authorization request is refused: PAR only.
        let plain = try await TestBrowser().get(server.authorizeURL(o))
        #expect(plain.status == 400 && plain.location == nil)

        // PAR with the assertion and a DPoP proof, then the browser, then the token request proved by the same key.
        var form = PushedAuthorizationTests.form(o)
        form["client_assertion"] = try assertion()
        form["client_assertion_type"] = PrivateKeyJWTTests.assertionType
        let pushed = try await TestBrowser().postForm(
            server.base + "/oauth2/par", form, headers: ["DPoP": try DPoPTests.proof(dpopKey, method: "POST", url: server.issuer + "/oauth2/par")])
        #expect(pushed.status == 201, "\(pushed.text)")
        let requestURI = try #require(try pushed.json()["request_uri"] as? String)
        let browser = TestBrowser()
        let page = try await browser.get(
            server.base + "/oauth2/authorize?" + TestBrowser.formEncode(["client_id": Self.clientId, "request_uri": requestURI]))
        let login = try await browser.get(server.base + (try #require(page.location)))
        let done = try await server.submitLogin(browser, page: login, username: "demo@example.com", password: "correct horse battery staple")
        let code = try #require(done.location.flatMap { URLComponents(string: $0) }?.queryItems?.first { $0.name == "code" }?.value)
        var tokenForm = [
            "grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect, "code_verifier": try #require(o.pkce?.verifier),
            "client_assertion": try assertion(), "client_assertion_type": PrivateKeyJWTTests.assertionType
        ]
        // Without a DPoP proof: refused.
        let unproved = try await TestBrowser().postForm(server.base + "/oauth2/token", tokenForm)
        #expect(try unproved.status == 400 && unproved.json()["error"] as? String == "invalid_dpop_proof")
        // The code was spent by that attempt (single use); the flow again, properly.
        let again = try await TestBrowser().postForm(
            server.base + "/oauth2/par", form.merging(["client_assertion": try assertion()]) { $1 },
            headers: ["DPoP": try DPoPTests.proof(dpopKey, method: "POST", url: server.issuer + "/oauth2/par")])
        let secondURI = try #require(try again.json()["request_uri"] as? String)
        let sso = try await browser.get(
            server.base + "/oauth2/authorize?" + TestBrowser.formEncode(["client_id": Self.clientId, "request_uri": secondURI]))
        let secondCode = try #require(sso.location.flatMap { URLComponents(string: $0) }?.queryItems?.first { $0.name == "code" }?.value)
        tokenForm["code"] = secondCode
        tokenForm["client_assertion"] = try assertion()
        let tokens = try await TestBrowser().postForm(
            server.base + "/oauth2/token", tokenForm,
            headers: ["DPoP": try DPoPTests.proof(dpopKey, method: "POST", url: server.issuer + "/oauth2/token")])
        #expect(tokens.status == 200, "\(tokens.text)")
        let body = try tokens.json()
        #expect(body["token_type"] as? String == "DPoP")
        let idToken = try CompactJWS(parsing: try #require(body["id_token"] as? String))
        #expect(idToken.header.alg == "ES256")
        #expect(try #require(done.location).contains("iss="), "iss in the authorization response (RFC 9207)")

        // fapi2-security-profile-final-refresh-token: the refresh token is not rotated (§5.3.2.1): the same token
        // refreshes again (a retry after a lost answer works), with the client's assertion and the DPoP key.
        let refreshToken = try #require(body["refresh_token"] as? String)
        func refresh() async throws -> HTTPResult {
            try await TestBrowser().postForm(
                server.base + "/oauth2/token",
                [
                    "grant_type": "refresh_token", "refresh_token": refreshToken, "client_assertion": try assertion(),
                    "client_assertion_type": PrivateKeyJWTTests.assertionType
                ], headers: ["DPoP": try DPoPTests.proof(dpopKey, method: "POST", url: server.issuer + "/oauth2/token")])
        }
        for _ in 0..<2 {
            let refreshed = try await refresh()
            #expect(refreshed.status == 200, "\(refreshed.text)")
            #expect(try refreshed.json()["refresh_token"] == nil, "no new refresh token: the client keeps its own")
            #expect(try refreshed.json()["token_type"] as? String == "DPoP")
        }
        let revoked = try await TestBrowser().postForm(
            server.base + "/oauth2/revoke",
            [
                "token": refreshToken, "client_assertion": try assertion(), "client_assertion_type": PrivateKeyJWTTests.assertionType
            ])
        #expect(revoked.status == 200)
        let afterRevocation = try await refresh()
        #expect(try afterRevocation.status == 400 && afterRevocation.json()["error"] as? String == "invalid_grant")
    }

    /// fapi2-security-profile-final-par-test-array-as-audience-fails, -par-endpoint-url-as-audience-fails and
    /// -token-endpoint-url-as-audience-fails (FAPI 2.0 Security Profile §5.3.2.1 item 8): a FAPI 2.0 application's
    /// assertion names the issuer as a single string; an array holding it, or an endpoint's URL, is refused — while
    /// an application without the profile keeps the tolerant rule (`PrivateKeyJWTTests`).
    @Test func assertionsNameTheIssuerAloneAsAString() async throws {
        let key = try Key.es256()
        let bank = try Self.bank(key)
        let server = try await TestServer.start { $0.clients.append(bank) }
        defer { Task { await server.stop() } }
        var o = AuthorizeOptions()
        o.clientId = Self.clientId
        o.redirectUri = Self.redirect
        o.scope = "openid profile"
        func push(aud: JSONValue) async throws -> HTTPResult {
            var form = PushedAuthorizationTests.form(o)
            form["client_assertion"] = try key.assertion(PrivateKeyJWTTests.claims(server, client: Self.clientId, aud: aud))
            form["client_assertion_type"] = PrivateKeyJWTTests.assertionType
            return try await TestBrowser().postForm(
                server.base + "/oauth2/par", form,
                headers: ["DPoP": try DPoPTests.proof(try SigningKey.generate(.es256), method: "POST", url: server.issuer + "/oauth2/par")])
        }
        let refused: [(String, JSONValue)] = [
            ("array-as-audience", .array([.string(server.issuer), .string("https://other.example")])),
            ("array of the issuer alone", .array([.string(server.issuer)])),
            ("par-endpoint-url-as-audience", .string(server.issuer + "/oauth2/par")),
            ("token-endpoint-url-as-audience", .string(server.issuer + "/oauth2/token"))
        ]
        for (name, aud) in refused {
            let answer = try await push(aud: aud)
            #expect(answer.status == 401 || answer.status == 400, "\(name): \(answer.status) \(answer.text)")
            #expect(try answer.json()["error"] as? String == "invalid_client", "\(name)")
            #expect(try (answer.json()["error_description"] as? String ?? "").contains("issuer identifier"), "\(name)")
        }
        let accepted = try await push(aud: .string(server.issuer))
        #expect(accepted.status == 201, "\(accepted.text)")
    }
}
