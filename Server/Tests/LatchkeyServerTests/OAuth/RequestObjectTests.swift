import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// Signed request objects (RFC 9101, OpenID Connect Core §6.1) at the authorization endpoint and at PAR, following the
/// conformance suite's `oidcc-request-object`-style modules (`oidcc-ensure-request-object-with-redirect-uri`,
/// `oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported`) and FAPI's request object
/// negatives (`…-ensure-request-object-signature-algorithm-is-none-fails`, `…-invalid-signature-fails`,
/// `…-missing-aud-fails`, `…-expired-exp-fails`, `…-missing-exp-fails`).
@Suite("Request objects (RFC 9101)")
struct RequestObjectTests {
    typealias Key = PrivateKeyJWTTests.AssertionKey
    static let clientId = PrivateKeyJWTTests.clientId

    /// The request of `o` as a request object's claims, signed by `key` (`claims` changes or removes members).
    static func object(
        _ server: TestServer, _ o: AuthorizeOptions, key: Key, change: [String: JSONValue?] = [:], header: JWSHeader? = nil
    ) throws -> String {
        let now = Double(Int(Date().timeIntervalSince1970))
        var claims: [String: JSONValue] = [
            "iss": .string(clientId), "aud": .string(server.issuer), "client_id": .string(clientId), "exp": .number(now + 300),
            "nbf": .number(now), "response_type": .string("code"), "redirect_uri": .string(o.redirectUri), "scope": .string(o.scope),
            "state": .string(o.state), "nonce": .string(o.nonce ?? ""), "code_challenge": .string(o.pkce?.challenge ?? ""),
            "code_challenge_method": .string("S256")
        ]
        for (name, value) in change { claims[name] = value }
        return try key.assertion(claims, header: header)
    }

    static func options() -> AuthorizeOptions {
        var o = AuthorizeOptions()
        o.clientId = clientId
        o.redirectUri = PrivateKeyJWTTests.redirect
        return o
    }

    static func authorize(_ server: TestServer, _ object: String, outer: [String: String] = [:]) async throws -> HTTPResult {
        try await TestBrowser().get(
            server.base + "/oauth2/authorize?" + TestBrowser.formEncode(["client_id": clientId, "request": object].merging(outer) { $1 }))
    }

    @Test func aSignedRequestObjectIsTheRequest() async throws {
        let key = try Key.es256()
        let server = try await PrivateKeyJWTTests.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["request_parameter_supported"] as? Bool == true)
        #expect(discovery["request_object_signing_alg_values_supported"] as? [String] == ["ES256", "RS256", "EdDSA"])

        let o = Self.options()
        let browser = TestBrowser()
        // Parameters outside the object are ignored (RFC 9101 §5): this state and scope are not the request's.
        let start = try await browser.get(
            server.base + "/oauth2/authorize?"
                + TestBrowser.formEncode([
                    "client_id": Self.clientId, "request": try Self.object(server, o, key: key), "state": "outer", "scope": "openid email"
                ]))
        try await Self.signInAndRedeem(server, browser, start: start, o, key: key)
    }

    /// From the authorization endpoint's answer `start` (the login page's address): signs in, expects the request's
    /// `state` back with a code, redeems it with an assertion of `key`, and expects the request's `nonce` in the ID token.
    static func signInAndRedeem(
        _ server: TestServer, _ browser: TestBrowser, start: HTTPResult, _ o: AuthorizeOptions, key: Key,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(
            start.status == 302 && start.location?.hasPrefix("/login?request=") == true, "\(start.status) \(start.text.prefix(200))",
            sourceLocation: sourceLocation)
        let page = try await browser.get(server.base + (try #require(start.location)))
        let done = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(done.locationQuery["state"] == o.state, sourceLocation: sourceLocation)
        let code = try #require(done.locationQuery["code"])
        let tokens = try await PrivateKeyJWTTests.token(
            server, assertion: try key.assertion(PrivateKeyJWTTests.claims(server)),
            form: ["grant_type": "authorization_code", "code": code, "redirect_uri": o.redirectUri, "code_verifier": o.pkce?.verifier ?? ""])
        #expect(tokens.status == 200, "\(tokens.text)", sourceLocation: sourceLocation)
        let idToken = try #require(try tokens.json()["id_token"] as? String)
        #expect(try await server.verifiedClaims(idToken)["nonce"] == .string(o.nonce ?? ""), sourceLocation: sourceLocation)
    }

    @Test(
        arguments: [
            ("no aud", ["aud": nil]), ("wrong aud", ["aud": .string("https://elsewhere.example")]), ("no exp", ["exp": nil]),
            ("expired", ["exp": .number(Double(Int(Date().timeIntervalSince1970)) - 600)]), ("wrong iss", ["iss": .string("someone")]),
            ("other client_id", ["client_id": .string("latchkey-demo")]), ("a day long", ["exp": .number(Date().timeIntervalSince1970 + 86_400)]),
            ("nested request", ["request": .string("x")]), ("unregistered redirect", ["redirect_uri": .string("https://evil.example/cb")])
        ] as [(String, [String: JSONValue?])])
    func brokenObjectsAreRefused(_ name: String, _ change: [String: JSONValue?]) async throws {
        let key = try Key.es256()
        let server = try await PrivateKeyJWTTests.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let answer = try await Self.authorize(server, try Self.object(server, Self.options(), key: key, change: change))
        #expect(answer.status == 400 && answer.location == nil, "\(name): \(answer.status) \(answer.location ?? "")")
    }

    /// The Basic plan's request-object modules (`oidcc-ensure-request-object-with-redirect-uri`) use a client that
    /// authenticates with its secret and signs request objects with keys it registered: keys are any client's.
    @Test func aClientWithASecretSignsRequestObjectsWithItsKeys() async throws {
        let key = try Key.es256()
        var signer = PrivateKeyJWTTests.client([key.jwk])
        signer.tokenEndpointAuthMethod = .clientSecretBasic
        signer.clientSecret = "signer-secret-0123456789"
        let server = try await TestServer.start { $0.clients.append(signer) }
        defer { Task { await server.stop() } }
        let start = try await Self.authorize(server, try Self.object(server, Self.options(), key: key))
        #expect(start.status == 302 && start.location?.hasPrefix("/login?request=") == true, "\(start.text)")
        // It still authenticates with its secret only: an assertion signed with those keys is refused.
        let assertion = try key.assertion(PrivateKeyJWTTests.claims(server, client: Self.clientId))
        let refused = try await PrivateKeyJWTTests.token(server, assertion: assertion)
        let error = try refused.json()["error"] as? String
        #expect(refused.status == 401 && error == "invalid_client", "\(refused.text)")
    }

    @Test func unsignedForeignAndKeylessObjectsAreRefused() async throws {
        let key = try Key.es256()
        let other = try Key.es256()
        let server = try await PrivateKeyJWTTests.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let o = Self.options()
        // alg none: header and claims with an empty signature.
        let claims = try Self.object(server, o, key: key).split(separator: ".")[1]
        let none = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + claims + "."
        #expect(try await Self.authorize(server, none).status == 400)
        // Signed by a key the client never registered.
        #expect(try await Self.authorize(server, try Self.object(server, o, key: other)).status == 400)
        // A client without keys cannot send request objects.
        let demo = try await TestBrowser().get(
            server.base + "/oauth2/authorize?"
                + TestBrowser.formEncode(["client_id": "latchkey-demo", "request": try Self.object(server, o, key: key)]))
        #expect(demo.status == 400 && demo.location == nil)
        // request_uri other than a pushed request's is not fetched.
        let fetched = try await TestBrowser().get(
            server.base + "/oauth2/authorize?" + TestBrowser.formEncode(["client_id": Self.clientId, "request_uri": "https://client.example/r"]))
        #expect(fetched.status == 400)
    }

    @Test func aPushedRequestObject() async throws {
        let key = try Key.es256()
        let server = try await PrivateKeyJWTTests.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let o = Self.options()
        func push(_ object: String) async throws -> HTTPResult {
            try await TestBrowser().postForm(
                server.base + "/oauth2/par",
                [
                    "request": object, "client_assertion": try key.assertion(PrivateKeyJWTTests.claims(server)),
                    "client_assertion_type": PrivateKeyJWTTests.assertionType
                ])
        }
        let pushed = try await push(try Self.object(server, o, key: key))
        #expect(pushed.status == 201, "\(pushed.text)")
        let requestURI = try #require(try pushed.json()["request_uri"] as? String)
        let callback = try await server.browse(
            URL(string: PushedAuthorizationTests.authorizeURL(server, requestURI: requestURI, clientId: Self.clientId))!)
        #expect(URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value == o.state)
        let refused = try await push(try Self.object(server, o, key: key, change: ["aud": nil]))
        #expect(try refused.status == 400 && refused.json()["error"] as? String == "invalid_request_object")
    }
}
