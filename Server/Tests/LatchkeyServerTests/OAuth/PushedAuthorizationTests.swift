import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// Pushed authorization requests (RFC 9126) over loopback HTTP: the request goes to `/oauth2/par`, the browser carries
/// only `client_id` and a short-lived, single-use `request_uri` bound to that client.
@Suite("PAR: pushed authorization requests (RFC 9126)")
struct PushedAuthorizationTests {
    /// The authorization request of `o` as a form (what the browser would otherwise carry).
    static func form(_ o: AuthorizeOptions) -> [String: String] {
        var items = ["response_type": "code", "client_id": o.clientId, "redirect_uri": o.redirectUri, "scope": o.scope, "state": o.state]
        if let nonce = o.nonce { items["nonce"] = nonce }
        if let pkce = o.pkce { items["code_challenge"] = pkce.challenge; items["code_challenge_method"] = "S256" }
        items.merge(o.extra) { _, new in new }
        return items
    }

    static func push(_ server: TestServer, _ form: [String: String], headers: [String: String] = [:]) async throws -> HTTPResult {
        try await TestBrowser().postForm(server.base + "/oauth2/par", form, headers: headers)
    }

    static func authorizeURL(_ server: TestServer, requestURI: String, clientId: String = "latchkey-demo") -> String {
        server.base + "/oauth2/authorize?" + TestBrowser.formEncode(["client_id": clientId, "request_uri": requestURI])
    }

    @Test("push, then sign in with only client_id and request_uri in the URL; state, nonce and PKCE come from the pushed request")
    func pushThenSignIn() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["pushed_authorization_request_endpoint"] as? String == server.issuer + "/oauth2/par")
        let o = AuthorizeOptions()
        let pushed = try await Self.push(server, Self.form(o))
        let body = try pushed.json()
        let requestURI = try #require(body["request_uri"] as? String)
        #expect(pushed.status == 201 && requestURI.hasPrefix("urn:ietf:params:oauth:request_uri:") && body["expires_in"] as? Int == 60)
        #expect(pushed.header("Cache-Control")?.contains("no-store") == true)

        let callback = try await server.browse(URL(string: Self.authorizeURL(server, requestURI: requestURI))!)
        let query = URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "state" }?.value == o.state)
        let code = try #require(query.first { $0.name == "code" }?.value)
        let tokens = try await server.exchangeCode(code, o)
        #expect(tokens.status == 200)
        let idToken = try #require(try tokens.json()["id_token"] as? String)
        #expect(try await server.verifiedClaims(idToken)["nonce"] == .string(o.nonce ?? ""))
        // Without the pushed verifier the code is refused: PKCE came from the pushed request.
        #expect(try await server.exchangeCode(code, o, verifier: TestPKCE().verifier).status == 400)
    }

    @Test("a request_uri is single use, expires after 60 s, belongs to the client that pushed it, and another client cannot burn it")
    func requestURIRules() async throws {
        let server = try await TestServer.start { config in
            config.clients.append(ClientConfiguration(clientId: "other-app", redirectUris: ["http://127.0.0.1:7777/callback"]))
        }
        defer { Task { await server.stop() } }
        func requestURI() async throws -> String {
            try #require(try await Self.push(server, Self.form(AuthorizeOptions())).json()["request_uri"] as? String)
        }
        let once = try await requestURI()
        #expect(try await TestBrowser().get(Self.authorizeURL(server, requestURI: once)).status == 302)
        #expect(try await TestBrowser().get(Self.authorizeURL(server, requestURI: once)).status == 400, "used once")

        let late = try await requestURI()
        server.advanceClock(61)
        #expect(try await TestBrowser().get(Self.authorizeURL(server, requestURI: late)).status == 400, "expired")

        let foreign = try await requestURI()
        #expect(
            try await TestBrowser().get(Self.authorizeURL(server, requestURI: foreign, clientId: "other-app")).status == 400,
            "another client's request_uri")
        #expect(
            try await TestBrowser().get(Self.authorizeURL(server, requestURI: foreign)).status == 302,
            "…and the attempt did not burn it: its own client still uses it")
        #expect(try await TestBrowser().get(Self.authorizeURL(server, requestURI: foreign)).status == 400, "once")
        #expect(try await TestBrowser().get(Self.authorizeURL(server, requestURI: "urn:ietf:params:oauth:request_uri:made-up")).status == 400)
    }

    @Test("the push is checked like an authorization request, and client authentication applies")
    func pushIsChecked() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var noPKCE = AuthorizeOptions()
        noPKCE.pkce = nil
        var badRedirect = AuthorizeOptions()
        badRedirect.redirectUri = "https://attacker.example/cb"
        var nested = AuthorizeOptions()
        nested.extra = ["request_uri": "urn:ietf:params:oauth:request_uri:x"]
        var badScope = AuthorizeOptions()
        badScope.scope = "openid admin"
        // One-time sign-in proofs are never kept in a pushed request.
        var ticket = AuthorizeOptions()
        ticket.extra = ["tkn": "a-login-ticket"]
        var appleToken = AuthorizeOptions()
        appleToken.extra = ["provider": "apple", "id_token": "an-identity-token"]
        for (why, options) in [
            ("no PKCE", noPKCE), ("unregistered redirect", badRedirect), ("nested request_uri", nested), ("scope", badScope),
            ("tkn", ticket), ("id_token", appleToken)
        ] {
            let refused = try await Self.push(server, Self.form(options))
            #expect(try refused.status == 400 && (try refused.json()["error"] as? String) != nil, "\(why)")
        }
        // A confidential client authenticates as at the token endpoint; its secret is never stored with the request.
        var backend = AuthorizeOptions()
        backend.clientId = "backend"
        let wrongSecret = try await Self.push(server, Self.form(backend), headers: ["Authorization": basicAuth("backend", "wrong")])
        #expect(wrongSecret.status == 401)
    }

    @Test("an application that requires PAR refuses a plain authorization request and takes a pushed one")
    func requiredByApplication() async throws {
        let server = try await TestServer.start { config in
            config.clients = config.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.requirePushedAuthorizationRequests = true }
                return client
            }
        }
        defer { Task { await server.stop() } }
        let o = AuthorizeOptions()
        #expect(try await TestBrowser().get(server.authorizeURL(o)).status == 400)
        let requestURI = try #require(try await Self.push(server, Self.form(o)).json()["request_uri"] as? String)
        let callback = try await server.browse(URL(string: Self.authorizeURL(server, requestURI: requestURI))!)
        #expect(callback.query?.contains("code=") == true)
    }
}
