import Crypto
import Foundation
import LatchkeyJOSE
import Testing

/// A PKCE pair (RFC 7636, S256) as the server tests' hand-made client sends it (not the SDK's `PKCEPair`).
package struct TestPKCE {
    package let verifier: String
    package let challenge: String
    package init() {
        verifier = Base64URL.encode((0..<48).map { _ in UInt8.random(in: 0...255) })
        challenge = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
    }
}

package struct AuthorizeOptions {
    package var clientId = "latchkey-demo"
    package var redirectUri = "http://127.0.0.1:7777/callback"
    package var scope = "openid profile email offline_access"
    package var state = UUID().uuidString
    package var nonce: String? = UUID().uuidString
    package var prompt: String?
    package var maxAge: Int?
    package var loginHint: String?
    package var pkce: TestPKCE? = TestPKCE()
    package var extra: [String: String] = [:]

    package init() {}
}

/// What a token endpoint answered, as the server tests read it (not the SDK's `TokenSet`).
package struct IssuedTokens {
    package let accessToken: String
    package let refreshToken: String?
    package let idToken: String?
    package let raw: [String: Any]
}

extension TestServer {
    package func authorizeURL(_ o: AuthorizeOptions) -> String {
        var items: [String: String] = [
            "response_type": "code", "client_id": o.clientId, "redirect_uri": o.redirectUri,
            "scope": o.scope, "state": o.state
        ]
        if let nonce = o.nonce { items["nonce"] = nonce }
        if let prompt = o.prompt { items["prompt"] = prompt }
        if let maxAge = o.maxAge { items["max_age"] = String(maxAge) }
        if let hint = o.loginHint { items["login_hint"] = hint }
        if let pkce = o.pkce { items["code_challenge"] = pkce.challenge; items["code_challenge_method"] = "S256" }
        items.merge(o.extra) { _, new in new }
        return base + "/oauth2/authorize?" + TestBrowser.formEncode(items)
    }

    /// Follows authorize to the hosted form; returns the form page response.
    package func openLoginPage(_ browser: TestBrowser, _ o: AuthorizeOptions) async throws -> HTTPResult {
        let authorize = try await browser.get(authorizeURL(o))
        #expect(authorize.status == 302)
        let location = try #require(authorize.location)
        #expect(location.hasPrefix("/login?request="), "expected the hosted login page, got \(location)")
        return try await browser.get(base + location)
    }

    /// Submits the hosted form as a person would.
    package func submitLogin(_ browser: TestBrowser, page: HTTPResult, username: String, password: String) async throws -> HTTPResult {
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        return try await browser.postForm(base + "/login", ["request": request, "csrf": csrf, "username": username, "password": password])
    }

    /// authorize → form → credentials → redirect back; returns the callback query.
    package func signIn(
        _ browser: TestBrowser, _ o: AuthorizeOptions = AuthorizeOptions(),
        username: String = "demo@example.com", password: String = "correct horse battery staple"
    ) async throws -> [String: String] {
        let page = try await openLoginPage(browser, o)
        #expect(page.status == 200)
        var done = try await submitLogin(browser, page: page, username: username, password: password)
        #expect(done.status == 303, "login failed: \(done.status) \(done.text.prefix(300))")
        // A third-party application's consent page: the person allows it (the consent tests answer it themselves).
        if let consent = done.location, consent.hasPrefix("/consent?request=") { done = try await allowConsent(browser, at: consent) }
        let location = try #require(done.location)
        #expect(location.hasPrefix(o.redirectUri + "?"))
        return done.locationQuery
    }

    /// Opens the consent page at `location` and allows the application; returns the redirect back to it.
    package func allowConsent(_ browser: TestBrowser, at location: String) async throws -> HTTPResult {
        let page = try await browser.get(base + location)
        #expect(page.status == 200, "consent page: \(page.status) \(page.text.prefix(300))")
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        return try await browser.postForm(base + "/consent", ["request": request, "csrf": csrf, "decision": "allow"])
    }

    package func exchangeCode(_ code: String, _ o: AuthorizeOptions, verifier: String? = nil) async throws -> HTTPResult {
        var form = ["grant_type": "authorization_code", "code": code, "redirect_uri": o.redirectUri, "client_id": o.clientId]
        if let v = verifier ?? o.pkce?.verifier { form["code_verifier"] = v }
        return try await TestBrowser().postForm(base + "/oauth2/token", form)
    }

    /// A complete sign-in ending with tokens.
    package func tokens(
        _ browser: TestBrowser = TestBrowser(), _ o: AuthorizeOptions = AuthorizeOptions(), username: String = "demo@example.com",
        password: String = "correct horse battery staple"
    ) async throws -> IssuedTokens {
        let query = try await signIn(browser, o, username: username, password: password)
        let code = try #require(query["code"])
        let response = try await exchangeCode(code, o)
        #expect(response.status == 200, "token exchange failed: \(response.text)")
        let json = try response.json()
        return IssuedTokens(
            accessToken: try #require(json["access_token"] as? String), refreshToken: json["refresh_token"] as? String,
            idToken: json["id_token"] as? String, raw: json)
    }

    package func refresh(_ refreshToken: String, clientId: String = "latchkey-demo") async throws -> HTTPResult {
        try await TestBrowser().postForm(
            base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": refreshToken, "client_id": clientId])
    }

    package func userinfo(_ accessToken: String) async throws -> HTTPResult {
        try await TestBrowser().get(base + "/oauth2/userinfo", headers: ["Authorization": "Bearer \(accessToken)"])
    }

    /// Verified claims of a JWT issued by this server.
    package func verifiedClaims(_ token: String) async throws -> [String: JSONValue] {
        let jws = try CompactJWS(parsing: token)
        let jwks = try JSONDecoder().decode(JWKSet.self, from: try await TestBrowser().get(base + "/oauth2/jwks").body)
        try jws.verify(with: jwks)
        return try jws.claims(as: [String: JSONValue].self)
    }
}

package func basicAuth(_ id: String, _ secret: String) -> String { "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString() }
