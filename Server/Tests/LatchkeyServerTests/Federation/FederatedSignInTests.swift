import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Federation on the hosted page: "Continue with …", the upstream leg's checks, the account it signs in to.
@Suite("Federated sign-in on the hosted page")
struct FederatedSignInTests {
    @Test func signsInThroughTheProviderAndReusesTheLinkedAccount() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        let first = try await fixture.tokens()
        #expect(first.id["amr"]?.stringArray?.contains("fed") == true)
        #expect(first.id["idp"]?.stringValue == "corp")
        #expect(first.access["idp"]?.stringValue == "corp")
        #expect(first.access["amr"]?.stringArray?.contains { $0.hasPrefix("idp:") } == false, "the marker stays inside")
        #expect(first.id["email"]?.stringValue == "ada@upstream.example")
        // The upstream leg: PKCE S256, a nonce, a state, and the callback URL an operator registers.
        let query = fixture.upstream.lastAuthorizationQuery
        #expect(query["code_challenge_method"] == "S256" && query["code_challenge"]?.count == 43)
        #expect(query["nonce"] != nil && query["state"] != nil)
        #expect(query["redirect_uri"] == fixture.server.issuer + "/federation/corp/callback")
        // A second sign-in (a fresh browser) is the same account, not a new one.
        let second = try await fixture.tokens(TestBrowser())
        #expect(second.id["sub"] == first.id["sub"])
        #expect(try await fixture.server.server.store.users(claim: "email", equals: "ada@upstream.example").count == 1)
    }

    @Test func anIdentityProviderHintSkipsThePage() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        let browser = TestBrowser()
        var options = AuthorizeOptions()
        options.extra = ["idp": "corp"]
        let authorize = try await browser.get(fixture.server.authorizeURL(options))
        #expect(authorize.status == 302)
        let login = try await browser.get(fixture.server.base + (try #require(authorize.location)))
        #expect(login.status == 302 && login.location?.hasPrefix(fixture.upstream.base) == true, "straight to the provider")
        let back = try await fixture.follow(browser, from: login)
        #expect(back.locationQuery["code"] != nil)
        // reachFive's `provider` (with a variant) without an ID token is the same hint.
        options.extra = ["provider": "corp:web"]
        let fresh = TestBrowser()
        let viaProvider = try await fresh.get(fixture.server.authorizeURL(options))
        let page = try await fresh.get(fixture.server.base + (try #require(viaProvider.location)))
        #expect(page.status == 302 && page.location?.hasPrefix(fixture.upstream.base) == true)
        // A provider the application does not offer is only a hint: the page is shown.
        options.extra = ["idp": "nope"]
        let unknown = try await fixture.loginPage(TestBrowser(), options)
        #expect(unknown.status == 200)
    }

    @Test func aHintForAnotherProviderThanTheSessionsGoesThere() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        // Signed in with a password in this browser: a plain request is answered by the session (SSO)…
        let browser = TestBrowser()
        _ = try await fixture.server.signIn(browser)
        let plain = try await browser.get(fixture.server.authorizeURL(AuthorizeOptions()))
        #expect(plain.locationQuery["code"] != nil)
        // …but asked for Corp SSO, the person goes there: the password session did not come from it.
        var options = AuthorizeOptions()
        options.extra = ["idp": "corp"]
        let hinted = try await browser.get(fixture.server.authorizeURL(options))
        #expect(hinted.location?.hasPrefix("/login?request=") == true)
        let back = try await fixture.follow(browser, from: hinted)
        let code = try #require(back.locationQuery["code"])
        let exchanged = try await fixture.server.exchangeCode(code, options).json()
        let claims = try await fixture.server.verifiedClaims(try #require(exchanged["id_token"] as? String))
        #expect(claims["idp"]?.stringValue == "corp")
        // Once signed in through Corp SSO, the same hint is answered by that session.
        let again = try await browser.get(fixture.server.authorizeURL(options))
        #expect(again.locationQuery["code"] != nil)
    }

    @Test func aFlowComesBackToARedirectURIThatNeedsNoPort() {
        #expect(!FederationExecutors.isUsableAsIs("http://127.0.0.1/callback"))
        #expect(FederationExecutors.isUsableAsIs("http://127.0.0.1:7777/callback"))
        #expect(FederationExecutors.isUsableAsIs("io.latchkey.demo:/callback"))
        #expect(FederationExecutors.isUsableAsIs("https://app.example/callback"))
    }

    @Test func aForgedOrReplayedStateIsRefused() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        let forged = try await TestBrowser().get(fixture.server.base + "/federation/corp/callback?code=abc&state=forged")
        #expect(forged.status == 400)
        #expect(forged.text.contains("expired or was already used"))
        // A real callback works once; the same callback again is refused.
        let browser = TestBrowser()
        let page = try await fixture.loginPage(browser)
        let callback = try await fixture.follow(
            browser, from: try await fixture.chooseProvider(browser, page: page), stopAt: fixture.server.issuer + "/federation/")
        let url = try #require(callback.location)
        let once = try await browser.get(url)
        #expect(once.locationQuery["code"] != nil)
        let again = try await browser.get(url)
        #expect(again.status == 400 && again.locationQuery["code"] == nil)
    }

    @Test func aCallbackInAnotherBrowserIsRefused() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        let browser = TestBrowser()
        let page = try await fixture.loginPage(browser)
        let callback = try await fixture.follow(
            browser, from: try await fixture.chooseProvider(browser, page: page), stopAt: fixture.server.issuer + "/federation/")
        // Someone else's browser (no lk_fed cookie) cannot finish it: login CSRF through the provider.
        let elsewhere = try await TestBrowser().get(try #require(callback.location))
        #expect(elsewhere.status == 401)
        #expect(elsewhere.locationQuery["code"] == nil)
        #expect(elsewhere.pageError?.contains("expired") == true)
    }

    /// Each of the ID token's checks, one at a time: the person sees the page again with an error, nobody is signed in.
    @Test(arguments: ["wrongNonce", "wrongAudience", "wrongIssuer", "badSignature", "expired", "wrongIssParameter", "tokenEndpointFails"])
    func aTokenThatFailsACheckSignsNobodyIn(_ failure: String) async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        fixture.upstream.setBehavior { behavior in
            switch failure {
            case "wrongNonce": behavior.wrongNonce = true
            case "wrongAudience": behavior.wrongAudience = true
            case "wrongIssuer": behavior.wrongIssuer = true
            case "badSignature": behavior.badSignature = true
            case "expired": behavior.expired = true
            case "wrongIssParameter": behavior.wrongIssParameter = true
            default: behavior.tokenEndpointFails = true
            }
        }
        let back = try await fixture.signIn()
        #expect(back.status == 401, "\(failure): \(back.status)")
        #expect(back.locationQuery["code"] == nil)
        #expect(back.pageError?.contains("Corp SSO") == true, "\(back.pageError ?? back.text)")
        #expect(back.text.contains("name=\"idp\" value=\"corp\""), "and the person may try again")
        #expect(try await fixture.server.server.store.users(claim: "email", equals: "ada@upstream.example").isEmpty)
        // The audit trail names the check that failed, each its own reason (a nonce and an issuer mix-up read apart).
        let reasons = [
            "wrongNonce": "nonce_mismatch", "wrongIssParameter": "issuer_mismatch", "tokenEndpointFails": "token_exchange",
            "wrongAudience": "invalid_identity", "wrongIssuer": "invalid_identity", "badSignature": "invalid_identity", "expired": "invalid_identity"
        ]
        let refused = try await fixture.server.server.store.auditEvents(AuditQuery(types: [.signInFailed], limit: 5))
        #expect(refused.map { $0.details["reason"] } == [reasons[failure]], "\(failure): \(refused.map(\.details))")
    }

    @Test func theProviderDenyingIsShownInThePersonsLanguage() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        fixture.upstream.setBehavior { $0.denyConsent = true }
        var options = AuthorizeOptions()
        options.extra = ["ui_locales": "fr"]
        let back = try await fixture.signIn(TestBrowser(), options)
        #expect(back.status == 403)
        #expect(back.text.contains("lang=\"fr\""))
        #expect(back.pageError?.contains("Corp SSO") == true)
        #expect(back.locationQuery["code"] == nil)
    }

    @Test func theProviderBeingDownIsAPageNotAStackTrace() async throws {
        // The provider's issuer is a port that refuses connections for the whole test. Not the double's port after
        // stopping it: another test's server was given the freed port, answered the discovery request with its own
        // issuer (http://127.0.0.1:<that port>, the same string), and the page redirected there (a fresh-clone run).
        let down = try LoopbackPort.refusing()
        defer { withExtendedLifetime(down) {} }
        let fixture = try await FederationFixture.start(adjust: { $0.issuer = "http://127.0.0.1:\(down.port)" })
        defer { Task { await fixture.stop() } }
        let browser = TestBrowser()
        let page = try await fixture.loginPage(browser)
        let chosen = try await fixture.chooseProvider(browser, page: page)
        #expect(chosen.status == 503)
        #expect(chosen.pageError?.contains("Corp SSO") == true)
        #expect(!chosen.text.contains("Error"), "no internals")
    }

    @Test func anUnverifiedEmailNeverLinksAndAVerifiedOneDoes() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(email: "demo@example.com", emailVerified: false),
            configure: { configuration in
                configuration.users = configuration.users.map { seed in
                    var seed = seed
                    if seed.username == "demo@example.com" { seed.claims["email"] = "demo@example.com"; seed.claims["email_verified"] = "true" }
                    return seed
                }
            })
        defer { Task { await fixture.stop() } }
        let refused = try await fixture.signIn()
        #expect(refused.status == 403)
        #expect(refused.pageError?.contains("already exists") == true)
        // The same address, verified by the provider: linked to the existing account (its sub), nothing new.
        fixture.upstream.setUser(UpstreamProviderDouble.User(sub: "upstream-user-2", email: "demo@example.com", emailVerified: true))
        let linked = try await fixture.tokens()
        let own = try await fixture.server.tokens()
        let ownClaims = try await fixture.server.verifiedClaims(try #require(own.idToken))
        #expect(linked.id["sub"] == ownClaims["sub"])
    }

    @Test func aClosedApplicationCreatesNoAccount() async throws {
        let fixture = try await FederationFixture.start(configure: { configuration in
            for index in configuration.clients.indices where configuration.clients[index].clientId == DevelopmentDefaults.demoClientId {
                configuration.clients[index].registration = .inviteOnly
            }
        })
        defer { Task { await fixture.stop() } }
        let back = try await fixture.signIn()
        #expect(back.status == 403)
        #expect(back.locationQuery["code"] == nil)
        #expect(try await fixture.server.server.store.users(claim: "email", equals: "ada@upstream.example").isEmpty)
    }

    @Test func requireMFAAsksForTheAccountsFactorUnlessTheProviderAssertedIt() async throws {
        let fixture = try await FederationFixture.start(configure: { configuration in
            for index in configuration.clients.indices where configuration.clients[index].clientId == DevelopmentDefaults.demoClientId {
                configuration.clients[index].requireMFA = true
            }
        })
        defer { Task { await fixture.stop() } }
        // A new federated account has no second factor: refused, as after a password.
        let refused = try await fixture.signIn()
        #expect(refused.status == 403 && refused.locationQuery["code"] == nil)
        // With a second factor enrolled on it, the code is asked for.
        let user = try #require(try await fixture.server.server.store.users(claim: "email", equals: "ada@upstream.example").first)
        _ = try await fixture.server.server.enrollTOTP(userId: user.id)
        let asked = try await fixture.signIn()
        #expect(asked.status == 200 && asked.text.contains("name=\"otp\""), "the second-factor page")
        // A provider that asserts MFA (and is trusted to) needs no second code.
        fixture.upstream.setUser(UpstreamProviderDouble.User(amr: ["pwd", "mfa"]))
        let asserted = try await fixture.tokens()
        #expect(asserted.id["amr"]?.stringArray?.contains("mfa") == true)
        #expect(asserted.id["acr"] != nil)
    }

    @Test func anAssertedMFAIsNotCountedWhenTheProviderIsNotTrustedWithIt() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(amr: ["pwd", "mfa"]), adjust: { $0.trustsMFA = false },
            configure: { configuration in
                for index in configuration.clients.indices where configuration.clients[index].clientId == DevelopmentDefaults.demoClientId {
                    configuration.clients[index].requireMFA = true
                }
            })
        defer { Task { await fixture.stop() } }
        let refused = try await fixture.signIn()
        #expect(refused.status == 403 && refused.locationQuery["code"] == nil, "the provider's mfa is not this server's second factor")
    }

    @Test func providerErrorCodesReachLogsOnlyAsPrintableText() {
        #expect(Federation.printable("access_denied") == "access_denied")
        #expect(Federation.printable("bad\ncode\u{1b}[31m <script>") == "badcode31mscript")
        #expect(Federation.printable(String(repeating: "a", count: 100)).count == 64)
    }

    @Test func theCallbackMayLandOnAnotherInstance() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        // A second instance on the same database and issuer (behind one load balancer, in production).
        let issuer = fixture.server.issuer
        let providers = fixture.server.server.configuration.identityProviders
        let other = try await TestServer.start(databasePath: fixture.server.databasePath) { configuration in
            configuration.issuer = URL(string: issuer)!
            configuration.identityProviders = providers
            for index in configuration.clients.indices where configuration.clients[index].clientId == DevelopmentDefaults.demoClientId {
                configuration.clients[index].identityProviders = ["corp"]
            }
        }
        defer { Task { await other.stop(keepingDatabase: true) } }
        let browser = TestBrowser()
        let page = try await fixture.loginPage(browser)
        let callback = try await fixture.follow(browser, from: try await fixture.chooseProvider(browser, page: page), stopAt: issuer + "/federation/")
        let location = try #require(callback.location).replacingOccurrences(of: issuer, with: other.base)
        let back = try await browser.get(location)
        #expect(back.locationQuery["code"] != nil, "\(back.status) \(back.text.prefix(300))")
    }
}
