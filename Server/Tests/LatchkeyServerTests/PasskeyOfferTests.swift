import Foundation
import Hummingbird
import Latchkey
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The hosted pages' passkey offer: after a password sign-in, an account without a passkey is asked "Sign in faster
/// next time" before the browser goes back to the application. Its endpoints are authorised by the browser session and
/// the page's CSRF token; the passkey is recorded like any other (`passkey.added`, `how: upgrade`); "Not now" is
/// remembered in the browser for that account; and nothing else changes where the offer does not apply.
@Suite("Hosted pages: a passkey offered after a password sign-in")
struct PasskeyOfferTests {
    static func start(_ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.webAuthn.offerAfterPassword = true
            configure(&configuration)
        }
    }

    /// The offer page's hidden fields, after checking it is the offer page.
    static func openOffer(_ server: TestServer, _ browser: TestBrowser, at location: String) async throws -> [String: String] {
        #expect(location.hasPrefix("/passkey-offer?request="), "expected the offer page, got \(location)")
        let page = try await browser.get(server.base + location)
        #expect(page.status == 200, "\(page.text.prefix(300))")
        #expect(page.text.contains("Sign in faster next time") && page.text.contains("<strong>demo@example.com</strong>"))
        #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
        #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
        return [
            "request": try #require(TestBrowser.hiddenField("request", in: page.text)),
            "csrf": try #require(TestBrowser.hiddenField("csrf", in: page.text))
        ]
    }

    /// Authorize, the password form; returns where the browser is sent.
    static func password(
        _ server: TestServer, _ browser: TestBrowser, _ options: AuthorizeOptions = AuthorizeOptions(),
        username: String = "demo@example.com", password: String = "correct horse battery staple"
    ) async throws -> String {
        let page = try await server.openLoginPage(browser, options)
        let done = try await server.submitLogin(browser, page: page, username: username, password: password)
        #expect(done.status == 303, "\(done.text.prefix(300))")
        return try #require(done.location)
    }

    /// What the page's script does: options, the authenticator, the credential.
    static func createPasskey(_ server: TestServer, _ browser: TestBrowser, _ fields: [String: String]) async throws -> HTTPResult {
        let options = try await browser.postForm(server.base + "/passkey-offer/options", fields)
        #expect(options.status == 200, "\(options.text)")
        #expect(options.header("Cache-Control") == "no-store")
        let parsed = try PublicKeyCredentialCreationOptions(json: options.body, style: .w3c)
        let credential = try await SoftwareAuthenticator().createCredential(for: parsed, origin: server.base)
        return try await browser.postForm(
            server.base + "/passkey-offer/credential",
            fields.merging([
                "raw_id": Base64URL.encode(credential.rawId), "client_data_json": Base64URL.encode(credential.clientDataJSON),
                "attestation_object": Base64URL.encode(credential.attestationObject)
            ]) { $1 })
    }

    static func demoUser(_ server: TestServer) async throws -> UserRecord {
        try #require(try await server.server.store.user(username: "demo@example.com"))
    }

    @Test("accepted: the passkey is the account's (passkey.added, how: upgrade) and the browser goes on to the application")
    func acceptingCreatesThePasskeyAndGoesOn() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let options = AuthorizeOptions()
        let fields = try await Self.openOffer(server, browser, at: try await Self.password(server, browser, options))

        let created = try await Self.createPasskey(server, browser, fields)
        #expect(created.status == 200, "\(created.text)")
        let user = try await Self.demoUser(server)
        #expect(try await server.server.store.passkeys(userId: user.id).count == 1)
        let events = try await server.server.store.auditEvents(AuditQuery(types: [.passkeyAdded], limit: 10))
        #expect(events.map { $0.details["how"] ?? "-" } == ["upgrade"])
        #expect(events.first?.subject == user.id)
        // Mailed like every other way of adding a passkey: a passkey nobody asked for must not arrive silently.
        let notices = try await server.server.outboxMessages(recipient: "demo@example.com").map(\.subject)
        #expect(notices == ["A passkey was added to your account"], "\(notices)")

        let onward = try await browser.postForm(server.base + "/passkey-offer", fields.merging(["decision": "created"]) { $1 })
        #expect(onward.status == 303)
        let location = try #require(onward.location)
        #expect(location.hasPrefix(options.redirectUri + "?"), "\(location)")
        #expect(onward.locationQuery["state"] == options.state)
        let code = try #require(onward.locationQuery["code"])
        #expect(try await server.exchangeCode(code, options).status == 200)
        #expect(onward.header("Set-Cookie")?.contains("lk_passkey_later") != true, "only Not now is remembered")

        // One answer per login request: the page is gone once it was answered.
        let again = try await browser.postForm(server.base + "/passkey-offer", fields.merging(["decision": "later"]) { $1 })
        #expect(again.status == 400 && again.location == nil)
        // The account has a passkey now: the next password sign-in, in any browser, goes straight back.
        let next = try await Self.password(server, TestBrowser())
        #expect(next.hasPrefix(options.redirectUri + "?"), "\(next)")
    }

    @Test("Not now: on to the application, not asked again in this browser for this account; another browser is")
    func notNowIsRememberedPerBrowserAndAccount() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let options = AuthorizeOptions()
        let fields = try await Self.openOffer(server, browser, at: try await Self.password(server, browser, options))
        let later = try await browser.postForm(server.base + "/passkey-offer", fields.merging(["decision": "later"]) { $1 })
        #expect(later.status == 303)
        #expect(later.location?.hasPrefix(options.redirectUri + "?") == true, "\(later.location ?? "")")
        #expect(later.locationQuery["code"] != nil)
        let cookie = try #require(later.header("Set-Cookie").flatMap { $0.contains("lk_passkey_later=") ? $0 : nil })
        #expect(cookie.contains("HttpOnly") && cookie.contains("Max-Age=2592000"))
        let user = try await Self.demoUser(server)
        #expect(!cookie.contains(user.id) && !cookie.contains("demo"), "the cookie names no account")
        #expect(try await server.server.store.passkeys(userId: user.id).isEmpty)

        // Signed out and in again in the same browser: no offer.
        browser.setCookie("lk_session", nil)
        let same = try await Self.password(server, browser, options)
        #expect(same.hasPrefix(options.redirectUri + "?"), "\(same)")
        // Another browser is asked.
        let other = try await Self.password(server, TestBrowser(), options)
        #expect(other.hasPrefix("/passkey-offer?request="), "\(other)")
        // The same browser with another account's marker (a shared computer) is asked too.
        let shared = TestBrowser()
        shared.setCookie("lk_passkey_later", PasskeyOfferGate.declined("someone-else"))
        #expect(try await Self.password(server, shared, options).hasPrefix("/passkey-offer?request="))
    }

    @Test("the offer's endpoints need this browser's session and the page's CSRF token, for the account the offer is for")
    func endpointsAreBoundToTheSessionAndThePage() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let fields = try await Self.openOffer(server, browser, at: try await Self.password(server, browser))
        let request = try #require(fields["request"])

        // No CSRF token, or another one: refused before anything is made.
        for form in [["request": request], ["request": request, "csrf": "forged"]] {
            let options = try await browser.postForm(server.base + "/passkey-offer/options", form)
            #expect(options.status == 403, "\(options.text)")
            #expect(try options.json()["error"] as? String == "access_denied")
            let onward = try await browser.postForm(server.base + "/passkey-offer", form.merging(["decision": "later"]) { $1 })
            #expect(onward.status == 403 && onward.location == nil)
        }
        // Another browser with the page's fields and its CSRF cookie, but not the session: nothing for it.
        let stranger = TestBrowser()
        stranger.setCookie("lk_csrf", browser.cookies["lk_csrf"])
        let strangerOptions = try await stranger.postForm(server.base + "/passkey-offer/options", fields)
        #expect(strangerOptions.status == 403)
        let strangerPage = try await stranger.get(server.base + "/passkey-offer?request=" + request)
        #expect(strangerPage.status == 302 && strangerPage.location == "/login?request=" + request, "signed out: sign in again")
        // A login request the offer was not handed (an ordinary sign-in page's) answers nothing.
        let fresh = try await server.openLoginPage(TestBrowser(), AuthorizeOptions())
        let freshId = try #require(TestBrowser.hiddenField("request", in: fresh.text))
        #expect(try await browser.get(server.base + "/passkey-offer?request=" + freshId).status == 400)
        // Another account signed in in another browser, holding this page's fields and CSRF cookie: the offer is not
        // for that account, so it gets neither options nor the page.
        _ = try await server.server.createUser(username: "ada", password: "analytical engine", claims: ["email": "ada@example.com"])
        let ada = TestBrowser()
        #expect(try await Self.password(server, ada, username: "ada", password: "analytical engine").hasPrefix("/passkey-offer?request="))
        ada.setCookie("lk_csrf", browser.cookies["lk_csrf"])
        let adaOptions = try await ada.postForm(server.base + "/passkey-offer/options", fields)
        #expect(adaOptions.status == 403, "\(adaOptions.text)")
        #expect(try adaOptions.json()["error"] as? String == "access_denied")
        #expect(try await ada.get(server.base + "/passkey-offer?request=" + request).status == 400)
        let adaOnward = try await ada.postForm(server.base + "/passkey-offer", fields.merging(["decision": "later"]) { $1 })
        #expect(adaOnward.status == 400 && adaOnward.location == nil, "no code for another account's request")
        // A credential made for another page's challenge, or garbage, is refused without a passkey.
        let garbage = try await browser.postForm(
            server.base + "/passkey-offer/credential",
            fields.merging(["raw_id": "AA", "client_data_json": "e30", "attestation_object": "oA"]) { $1 })
        #expect(garbage.status == 400)
        #expect(try garbage.json()["error_user_msg"] as? String == "The passkey wasn't created. Try again, or continue without one.")
        let missing = try await browser.postForm(server.base + "/passkey-offer/credential", fields)
        #expect(missing.status == 400)
        #expect(try await server.server.store.passkeys(userId: try await Self.demoUser(server).id).isEmpty)
    }

    @Test("not offered: setting off, an application without this server's passkeys, an account with a passkey, a passkey sign-in")
    func notOfferedWhereItDoesNotApply() async throws {
        // The deployment turned it off.
        let off = try await TestServer.start()
        defer { Task { await off.stop() } }
        #expect(try await Self.password(off, TestBrowser()).hasPrefix(AuthorizeOptions().redirectUri + "?"))

        // An application that does not accept passkeys made for this server's pages.
        let server = try await Self.start { configuration in
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.passkeyOrigins = ["https://app.example.com"] }
                return client
            }
        }
        defer { Task { await server.stop() } }
        #expect(try await Self.password(server, TestBrowser()).hasPrefix(AuthorizeOptions().redirectUri + "?"))

        // A passkey sign-in (the page's `tkn`) never leads to the offer, even for an account the offer would be for.
        let gate = PasskeyOfferGate(
            enabled: true, store: server.server.store, cookies: CookiePolicy(secure: false), passkeys: server.server.passkeys)
        var client = try #require(try await server.server.store.client(id: "latchkey-demo")?.configuration)
        client.passkeyOrigins = ["self"]
        let user = try await Self.demoUser(server)
        let request = Request(head: .init(method: .get, scheme: "http", authority: "127.0.0.1", path: "/"), body: .init(buffer: .init()))
        #expect(try await gate.shouldOffer(userId: user.id, amr: ["pwd"], client: client, request: request), "the control")
        #expect(try await gate.shouldOffer(userId: user.id, amr: ["hwk", "user"], client: client, request: request) == false)
        #expect(try await gate.shouldOffer(userId: user.id, amr: ["fed"], client: client, request: request) == false)
    }

    @Test("a third-party application: the offer first, then its consent page, then the code")
    func theOfferComesBeforeConsent() async throws {
        let redirect = "http://127.0.0.1:7777/partner"
        let server = try await Self.start { configuration in
            var partner = ClientConfiguration(
                clientId: "partner", name: "Partner App", redirectUris: [redirect], grantTypes: [.authorizationCode], scopes: ["openid"])
            partner.thirdParty = true
            partner.passkeyOrigins = ["self"]
            configuration.clients.append(partner)
        }
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.clientId = "partner"
        options.redirectUri = redirect
        options.scope = "openid"
        let browser = TestBrowser()
        let fields = try await Self.openOffer(server, browser, at: try await Self.password(server, browser, options))
        let later = try await browser.postForm(server.base + "/passkey-offer", fields.merging(["decision": "later"]) { $1 })
        let consent = try #require(later.location)
        #expect(consent.hasPrefix("/consent?request="), "\(consent)")
        let allowed = try await server.allowConsent(browser, at: consent)
        #expect(allowed.location?.hasPrefix(redirect + "?") == true, "\(allowed.location ?? "")")
        #expect(allowed.locationQuery["code"] != nil)
    }
}
