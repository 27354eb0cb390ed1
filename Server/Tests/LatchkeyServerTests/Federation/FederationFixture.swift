import Crypto
import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// A server whose identity provider `corp` (or a preset) is an upstream double, and the demo application offering it.
struct FederationFixture {
    let upstream: UpstreamProviderDouble
    let server: TestServer
    let providerId: String

    /// Starts the double and a server that trusts it; `adjust` changes the provider's configuration, `configure` the
    /// server's.
    static func start(
        _ flavor: UpstreamProviderDouble.Flavor = .oidc, id: String = "corp", user: UpstreamProviderDouble.User? = nil, frozenClock: Bool = false,
        adjust: @escaping @Sendable (inout IdentityProviderConfiguration) -> Void = { _ in },
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> FederationFixture {
        let upstream = try await UpstreamProviderDouble.start(flavor, user: user)
        var provider: IdentityProviderConfiguration
        switch flavor {
        case .oidc:
            provider = IdentityProviderConfiguration(
                id: id, kind: .oidc, name: "Corp SSO", issuer: upstream.base, clientId: upstream.clientId, clientSecret: upstream.clientSecret,
                linkByVerifiedEmail: true)
        case .google:
            provider = IdentityProviderConfiguration(
                id: id, kind: .google, authority: upstream.base, clientId: upstream.clientId, clientSecret: upstream.clientSecret)
        case .microsoft:
            provider = IdentityProviderConfiguration(
                id: id, kind: .microsoft, authority: upstream.base, tenant: "common", clientId: upstream.clientId,
                clientSecret: upstream.clientSecret)
        case .github:
            provider = IdentityProviderConfiguration(
                id: id, kind: .github, authority: upstream.base, apiBase: upstream.apiBase, clientId: upstream.clientId,
                clientSecret: upstream.clientSecret)
        case .apple(let teamId, let keyId, _):
            provider = IdentityProviderConfiguration(
                id: id, kind: .apple, authority: upstream.base, clientId: upstream.clientId, teamId: teamId, keyId: keyId,
                privateKeyPEM: FederationFixture.appleKeyPEM)
        }
        adjust(&provider)
        let configured = provider
        let server = try await TestServer.start(frozenClock: frozenClock) { configuration in
            configuration.identityProviders = [configured]
            if let index = configuration.clients.firstIndex(where: { $0.clientId == DevelopmentDefaults.demoClientId }) {
                configuration.clients[index].identityProviders = [configured.id]
            }
            configure(&configuration)
        }
        upstream.setBehavior { $0.registeredRedirectURI = server.issuer + "/federation/\(configured.id)/callback" }
        return FederationFixture(upstream: upstream, server: server, providerId: configured.id)
    }

    /// One Apple team key for the suites (the double checks the client secret with its public half).
    static let appleKeyPEM = UpstreamProviderDouble.appleTeamKey().pemPKCS8
    static var appleFlavor: UpstreamProviderDouble.Flavor {
        // The PEM parses: it was just written by the same library.
        let key = (try? P256.Signing.PrivateKey(pemRepresentation: appleKeyPEM)) ?? P256.Signing.PrivateKey()
        return .apple(teamId: "TEAM123456", keyId: "KEY1234567", publicKey: key.publicKey)
    }

    func stop() async {
        await server.stop()
        await upstream.stop()
    }

    /// The hosted page of a new authorization request.
    func loginPage(_ browser: TestBrowser, _ options: AuthorizeOptions = AuthorizeOptions()) async throws -> HTTPResult {
        try await server.openLoginPage(browser, options)
    }

    /// Chooses "Continue with …" on the page; returns the redirect to the provider.
    func chooseProvider(_ browser: TestBrowser, page: HTTPResult, id: String? = nil) async throws -> HTTPResult {
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        return try await browser.postForm(server.base + "/login", ["request": request, "csrf": csrf, "idp": id ?? providerId])
    }

    /// Follows redirects (and Apple's form_post page) from `response` until a response that is neither, or one that
    /// leaves for `stopAt`; returns it.
    func follow(_ browser: TestBrowser, from response: HTTPResult, stopAt prefix: String = "http://127.0.0.1:7777") async throws -> HTTPResult {
        var current = response
        for _ in 0..<12 {
            if let location = current.location, [301, 302, 303, 307].contains(current.status) {
                if location.hasPrefix(prefix) { return current }
                current = try await browser.get(location.hasPrefix("/") ? server.base + location : location)
            } else if current.status == 200, let form = UpstreamProviderDouble.formPost(in: current.text), form.action.hasPrefix("http") {
                current = try await browser.postForm(form.action, form.fields)
            } else {
                return current
            }
        }
        throw TestFailure("too many redirects")
    }

    /// authorize → "Continue with …" → provider → back: the client's callback query (or the response that ended it).
    func signIn(_ browser: TestBrowser = TestBrowser(), _ options: AuthorizeOptions = AuthorizeOptions()) async throws -> HTTPResult {
        let page = try await loginPage(browser, options)
        #expect(page.status == 200)
        #expect(page.text.contains("name=\"idp\" value=\"\(providerId)\""), "the page offers the provider")
        return try await follow(browser, from: try await chooseProvider(browser, page: page))
    }

    /// A whole federated sign-in to tokens; returns the ID token's verified claims and the access token's.
    func tokens(_ browser: TestBrowser = TestBrowser(), _ options: AuthorizeOptions = AuthorizeOptions()) async throws -> (
        id: [String: JSONValue], access: [String: JSONValue]
    ) {
        let back = try await signIn(browser, options)
        #expect(back.status == 302 || back.status == 303, "signed in: \(back.status) \(back.text.prefix(400))")
        #expect(back.locationQuery["state"] == options.state)
        let code = try #require(back.locationQuery["code"], "a code at the client: \(back.location ?? back.text.prefix(300).description)")
        let response = try await server.exchangeCode(code, options)
        #expect(response.status == 200, "\(response.text)")
        let json = try response.json()
        return (
            try await server.verifiedClaims(try #require(json["id_token"] as? String)),
            try await server.verifiedClaims(try #require(json["access_token"] as? String))
        )
    }
}

extension HTTPResult {
    /// The text of the page's error paragraph.
    var pageError: String? {
        guard let start = text.range(of: "class=\"error\""), let close = text[start.upperBound...].range(of: ">"),
            let end = text[close.upperBound...].range(of: "</p>")
        else { return nil }
        return String(text[close.upperBound..<end.lowerBound])
    }
}
