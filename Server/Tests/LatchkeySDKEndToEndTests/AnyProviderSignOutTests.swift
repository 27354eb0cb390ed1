import LatchkeyTestSupport
import Foundation
@testable import Latchkey
import LatchkeyJOSE
import Testing

/// Sign-out against any OpenID provider, on a provider double with third-party traits (`ProviderDouble`): metadata
/// from both discovery
/// documents, a sign-out that tells the truth, the provider's session ended in the browser, and clocks that disagree.
@Suite("SDK ↔ any OpenID provider: RFC 8414 metadata, truthful sign-out, the browser's session, skewed clocks")
struct AnyProviderSignOutTests {
    static func client(
        _ provider: ProviderDouble, browser: TestBrowser, http: (any HTTPClient)? = nil,
        deviceSkew: TimeInterval = 0
    ) async throws -> LatchkeyClient {
        let agent = ScriptedBrowserUserAgent(browser: browser) { url, browser in
            let answer = try await browser.get(url.absoluteString)
            guard let location = answer.location, let callback = URL(string: location) else {
                throw TestFailure("the double did not redirect: \(answer.status)")
            }
            return callback
        }
        let client = LatchkeyClient(
            http: http ?? provider.skewedDateHTTPClient(),
            userAgent: agent, clock: .offset(by: deviceSkew))
        try await client.initialize(
            config: LatchkeyConfig(
                baseUrl: provider.issuer, clientId: ProviderDouble.clientId,
                scopes: ["openid", "email", "offline_access"],
                afterSignInUrl: ProviderDouble.redirectURI,
                afterSignOutUrl: ProviderDouble.postLogoutRedirectURI))
        return client
    }

    /// `prompt=none` in the browser: a code while the provider's session lives, `login_required` once it ended.
    static func silentSignIn(_ provider: ProviderDouble, browser: TestBrowser) async throws -> String {
        let challenge = Base64URL.encode(Data(repeating: 7, count: 32))
        let answer = try await browser.get(
            provider.issuer + "/authorize?response_type=code&client_id=\(ProviderDouble.clientId)"
                + "&redirect_uri=\(FormCoding.escape(ProviderDouble.redirectURI))&code_challenge=\(challenge)&code_challenge_method=S256"
                + "&state=s&prompt=none")
        let query = URLComponents(string: answer.location ?? "")?.queryItems ?? []
        return query.first { $0.name == "error" }?.value ?? (query.contains { $0.name == "code" } ? "code" : "nothing")
    }

    @Test("an issuer with a path, revocation only in RFC 8414 metadata: found at the path-aware URL; the issuer check stays exact")
    func metadataFromBothDocuments() async throws {
        let provider = try await ProviderDouble.start()
        defer { Task { await provider.stop() } }
        let metadata = try await ProviderMetadata.discover(issuer: provider.issuer, http: productionHTTPClient())
        #expect(metadata.revocationEndpoint?.absoluteString == provider.issuer + "/revoke")
        #expect(metadata.introspectionEndpoint?.absoluteString == provider.issuer + "/introspect")
        #expect(metadata.missingEndpoints == ["device_authorization_endpoint", "pushed_authorization_request_endpoint"])
        #expect(
            AuthorizationServerMetadata.url(issuer: "https://id.example.com/tenant/")?.absoluteString
                == "https://id.example.com/.well-known/oauth-authorization-server/tenant")
        #expect(
            AuthorizationServerMetadata.url(issuer: "https://id.example.com")?.absoluteString
                == "https://id.example.com/.well-known/oauth-authorization-server")
        // A second document naming another issuer is not believed.
        #expect(await AuthorizationServerMetadata.fetch(issuer: provider.issuer + "x", http: productionHTTPClient()) == nil)
    }

    @Test("sign-in, refresh, sign-out in the browser: both tokens dead at the provider and its session ended (prompt=none: login_required)")
    func signOutInTheBrowserEndsEverything() async throws {
        let provider = try await ProviderDouble.start()
        defer { Task { await provider.stop() } }
        let browser = TestBrowser()
        let client = try await Self.client(provider, browser: browser)
        let user = try await client.signInWithBrowser()
        #expect(user.sub == ProviderDouble.subject)
        let refreshed = try await client.context().tokens.refreshed(nil)
        let access = refreshed.accessToken, refresh = try #require(refreshed.refreshToken)
        #expect(provider.isActive(access) && provider.isActive(refresh))
        #expect(try await Self.silentSignIn(provider, browser: browser) == "code", "the provider's session is open")

        let report = try await client.signOutReporting()
        #expect(report.refreshToken == .done && report.accessToken == .done && report.providerSession == .done, "\(report)")
        #expect(report.isComplete && report.afterSignOutUrl == ProviderDouble.postLogoutRedirectURI)
        #expect(provider.endSessionMethods == ["GET"], "the browser went to the end-session page; the app posted nothing")
        #expect(!provider.isActive(access) && !provider.isActive(refresh), "both tokens revoked at the endpoint only RFC 8414 names")
        #expect(try await Self.silentSignIn(provider, browser: browser) == "login_required", "the provider's session ended")
        #expect(try await !client.isSignedIn())
    }

    @Test("sign-out by a request the provider refuses (POST 403, GET a confirmation page): reported as not confirmed, and true")
    func aRequestTheProviderRefusesIsReported() async throws {
        let provider = try await ProviderDouble.start()
        defer { Task { await provider.stop() } }
        let browser = TestBrowser()
        let client = try await Self.client(provider, browser: browser)
        _ = try await client.signInWithBrowser()
        let report = try await client.signOutReporting(options: SignOutOptions(providerSession: .request))
        #expect(report.refreshToken == .done && report.accessToken == .done)
        guard case .unconfirmed = report.providerSession else { Issue.record("expected unconfirmed: \(report)"); return }
        #expect(!report.isComplete)
        #expect(provider.endSessionMethods == ["POST", "GET"], "a refused POST falls back to GET")
        #expect(try await Self.silentSignIn(provider, browser: browser) == "code", "and indeed the session is still open")
        #expect(try await !client.isSignedIn(), "the local session is forgotten whatever the provider did")
    }

    @Test("a loopback post_logout_redirect_uri the SDK made up, refused by the GET fallback (400): asked again without it")
    func theMadeUpURIIsDroppedAfterTheGETFallbackToo() async throws {
        let http = ProgrammableHTTPClient(upstream: nil)
        let issuer = "https://id.example.com"
        let made = "http://127.0.0.1:53111/logout"
        http.answer("POST", path: "/logout") { _ in HTTPResponse(status: 403, headers: [:], body: Data()) }
        http.answer("GET", path: "/logout") { request in
            let named = request.url.query?.contains("post_logout_redirect_uri") == true
            return HTTPResponse(status: named ? 400 : 302, headers: named ? [:] : ["Location": issuer + "/signed-out"], body: Data())
        }
        let context = OAuthClient(
            config: LatchkeyConfig(baseUrl: issuer, clientId: "app", scopes: ["openid"], afterSignInUrl: "io.example:/callback"),
            http: http, storage: InMemoryStorageAdapter())
        let metadata = try JSONDecoder().decode(
            ProviderMetadata.self,
            from: Data(
                """
                {"issuer": "\(issuer)", "authorization_endpoint": "\(issuer)/authorize", "token_endpoint": "\(issuer)/token",
                 "jwks_uri": "\(issuer)/jwks", "end_session_endpoint": "\(issuer)/logout"}
                """.utf8))
        let step = await context.endSessionStep(
            idTokenHint: "hint", metadata: metadata, postLogoutRedirectURI: made, signedInWithBrowser: false, namesPreparedURI: true)
        guard case .unconfirmed = step else { Issue.record("expected unconfirmed (the provider's own page): \(step)"); return }
        let requests = http.sent.map(\.request)
        #expect(
            requests.map(\.method) == ["POST", "GET", "GET"],
            "the POST refused as such (403), a GET with the same parameters, then a GET without the made-up URI")
        #expect(requests.last?.url.query?.contains("post_logout_redirect_uri") == false)
        #expect(requests.last?.url.query?.contains("id_token_hint=hint") == true)
    }

    @Test("a provider without revocation or end-session endpoints: each step says so, and what stays valid")
    func whatCannotBeDoneIsSaid() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // The real server, its metadata stripped of revocation and end-session, as a provider that publishes neither.
        let http = ProgrammableHTTPClient()
        http.rewriteResponses(where: { $0.url.path.contains("/.well-known/") }) { _, response in
            guard var object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any] else { return response }
            for name in ["revocation_endpoint", "end_session_endpoint"] { object[name] = nil }
            var stripped = response
            stripped.body = (try? JSONSerialization.data(withJSONObject: object)) ?? response.body
            return stripped
        }
        let client = try await server.signedInClient(http: http)
        let report = try await client.signOutReporting()
        guard case .unsupported(let why) = report.refreshToken else { Issue.record("\(report)"); return }
        #expect(why.contains("no revocation endpoint") && why.contains("stays valid until it expires"))
        guard case .unsupported = report.providerSession else { Issue.record("\(report)"); return }
        #expect(!report.isComplete)
    }

    @Test("Latchkey's server, by a request: confirmed for a sign-in without a browser, unconfirmed for a browser's or an unknown one")
    func whatARequestCanConfirm() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // A passkey-less native sign-in (password through the credential sheet): no browser holds a session of it.
        let native = LatchkeyClient(
            http: productionHTTPClient(),
            credentialProvider: SoftwareCredentialProvider(passwords: [
                .init(username: "demo@example.com", password: "correct horse battery staple")
            ]))
        try await native.initialize(config: server.sdkConfig())
        _ = try await native.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        #expect(try await native.context().tokens.tokens(nil)?.browser == .withoutBrowser)
        let confirmed = try await native.signOutReporting()
        #expect(confirmed.providerSession == .done && confirmed.isComplete, "\(confirmed)")

        // The hosted page in a browser the app drove itself: the server ends the session the hint names, but the SDK
        // cannot see the browser's cookie, so it does not claim it.
        let redirect = try await server.signedInClient()
        guard case .unconfirmed = try await redirect.signOutReporting().providerSession else { Issue.record("expected unconfirmed"); return }

        // A session stored before the SDK recorded how it signed in: unknown, so unconfirmed too.
        let storage = InMemoryStorageAdapter()
        _ = try await server.signedInClient(storage: storage)
        let key = "latchkey.session.default"
        var stored = try StoredSession.decode(try #require(await storage.get(key)))
        stored.browser = nil
        await storage.set(key, try JSONEncoder().encode(stored))
        let restored = LatchkeyClient(http: productionHTTPClient())
        try await restored.initialize(config: server.sdkConfig(), storage: storage)
        guard case .unconfirmed = try await restored.signOutReporting().providerSession else { Issue.record("expected unconfirmed"); return }
    }

    @Test("a device clock ten minutes off either way: sign-in, refresh and sign-out work, by the offset the Date headers show")
    func skewedDeviceClocks() async throws {
        for deviceSkew in [-600.0, 600.0] {
            let provider = try await ProviderDouble.start()
            let browser = TestBrowser()
            let client = try await Self.client(provider, browser: browser, deviceSkew: deviceSkew)
            #expect(try await client.signInWithBrowser().sub == ProviderDouble.subject, "skew \(deviceSkew)")
            let context = try client.context()
            #expect(abs(context.clock.offset + deviceSkew) < 5, "learned \(context.clock.offset) for a device \(deviceSkew) s off")
            #expect(try await context.tokens.refreshed(nil).idToken != nil)
            #expect(try await client.signOutReporting().isComplete)
            await provider.stop()
        }
    }

    @Test("a provider whose clock runs ten minutes ahead: its ID tokens are not 'issued in the future' to a device in step")
    func skewedProviderClock() async throws {
        let provider = try await ProviderDouble.start(skew: 600)
        defer { Task { await provider.stop() } }
        let client = try await Self.client(provider, browser: TestBrowser())
        #expect(try await client.signInWithBrowser().sub == ProviderDouble.subject)
        #expect(abs(try client.context().clock.offset - 600) < 5)
    }

    @Test("Latchkey's server with DPoP: a device ten minutes off either way signs in and refreshes (proofs dated by the provider's clock)")
    func dpopProofsFromASkewedDevice() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for deviceSkew in [-600.0, 600.0] {
            let client = LatchkeyClient(http: productionHTTPClient(), clock: .offset(by: deviceSkew))
            var config = server.sdkConfig()
            config.useDPoP = true
            try await client.initialize(config: config)
            _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
            let refreshed = try await client.context().tokens.refreshed(nil)
            #expect(refreshed.tokenType == "DPoP", "skew \(deviceSkew)")
            #expect(try await server.userinfo(refreshed.accessToken).status == 401, "a bound token without its proof is refused")
            #expect(try await client.getUser(options: ["source": "userinfo"]).email == "demo@example.com", "with its proof it is not")
        }
    }

    @Test("without the learned offset the same ID token is refused: the skew is real")
    func theSkewIsReal() async throws {
        let provider = try await ProviderDouble.start(skew: 600)
        defer { Task { await provider.stop() } }
        // No Date rewriting: the SDK sees the machine's time in the headers, the ID token says ten minutes later.
        let client = try await Self.client(provider, browser: TestBrowser(), http: productionHTTPClient())
        await #expect { try await client.signInWithBrowser() } throws: { ($0 as? LatchkeyError)?.message.contains("future") == true }
    }
}
