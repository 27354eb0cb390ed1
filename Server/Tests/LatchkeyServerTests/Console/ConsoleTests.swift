import Foundation
import HummingbirdOTP
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The admin console over real HTTP, as a browser uses it: the sign-in through the server's own hosted page (the
/// admin role and a second factor required), each section's pages and changes, and every refusal: no sign-in, no
/// admin role, no second factor, a stale sign-in, a form without its CSRF token.
@Suite("Admin console /admin")
struct ConsoleTests {
    static let password = "correct horse battery staple"

    /// A browser signed in to the console as `username` (password, then the TOTP code of `secret`).
    static func signIn(
        _ server: TestServer, username: String = "demo@example.com", password: String = password, secret: String?
    ) async throws -> (TestBrowser, HTTPResult) {
        let browser = TestBrowser()
        let start = try await browser.get(server.base + "/admin/applications")
        #expect(start.status == 302)
        let authorize = try #require(start.location)
        #expect(authorize.hasPrefix("/oauth2/authorize?") && authorize.contains("client_id=latchkey-console"))
        #expect(authorize.contains("code_challenge_method=S256") && authorize.contains("nonce=") && authorize.contains("state="))
        let toLogin = try await browser.get(server.base + authorize)
        let page = try await browser.get(server.base + (try #require(toLogin.location)))
        var answer = try await server.submitLogin(browser, page: page, username: username, password: password)
        if let secret, answer.status == 200, answer.text.contains("name=\"otp\"") {
            answer = try await browser.postForm(
                server.base + "/login",
                [
                    "request": try #require(TestBrowser.hiddenField("request", in: answer.text)),
                    "csrf": try #require(TestBrowser.hiddenField("csrf", in: answer.text)),
                    "otp": server.totpCode(secret)
                ])
        }
        guard answer.status == 303, let callback = answer.location else { return (browser, answer) }
        let done = try await browser.get(callback)
        return (browser, done)
    }

    static func adminWithTOTP() async throws -> (TestServer, String) {
        let server = try await TestServer.startForProfiles()
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: demo.id).secret
        return (server, secret)
    }

    /// Posts a console form with repeated fields (checkboxes).
    static func post(_ browser: TestBrowser, _ url: String, _ pairs: [(String, String)]) async throws -> HTTPResult {
        let body = pairs.map { name, value in
            let encode = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
            return encode(name) + "=" + encode(value)
        }.joined(separator: "&")
        return try await browser.send(
            url, method: "POST", body: Data(body.utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"])
    }

    @Test func anAdministratorWithASecondFactorManagesApplications() async throws {
        let (server, secret) = try await Self.adminWithTOTP()
        defer { Task { await server.stop() } }
        let (browser, landed) = try await Self.signIn(server, secret: secret)
        #expect(landed.status == 302 && landed.location == "/admin/applications", "\(landed.status) \(landed.text.prefix(300))")
        #expect(browser.cookies["lk_console"] != nil && browser.cookies["lk_console_login"]?.isEmpty != false)

        let list = try await browser.get(server.base + "/admin/applications")
        #expect(list.status == 200)
        #expect(list.text.contains("latchkey-demo") && list.text.contains("<caption>") && list.text.contains("aria-current=\"page\""))
        #expect(list.header("Content-Security-Policy")?.contains("default-src 'none'") == true && !list.text.contains("<script"))

        // Create a public native application; it signs people in at once.
        let form = try await browser.get(server.base + "/admin/applications/new")
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: form.text))
        let created = try await Self.post(
            browser, server.base + "/admin/applications",
            [
                ("csrf", csrf), ("name", "Field notes"), ("app_type", "native"), ("redirect_uris", "http://127.0.0.1:7777/callback"),
                ("grant_types", "authorization_code"), ("grant_types", "refresh_token"), ("scope", "openid profile offline_access")
            ])
        #expect(created.status == 201, "\(created.text.prefix(500))")
        let clientId = try #require(Self.code("client-id", in: created.text))
        var options = AuthorizeOptions()
        options.clientId = clientId
        options.scope = "openid profile offline_access"
        let tokens = try await server.tokens(TestBrowser(), options, username: "ada@example.com", password: TestServer.adaPassword)
        #expect(try await server.userinfo(tokens.accessToken).status == 200)
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationRegistered], limit: 1)).first)
        #expect(event.clientId == clientId && event.actor != "anonymous")

        // Settings the form does not show (registered through the API) survive an edit in the console.
        var record = try #require(try await server.server.store.client(id: clientId))
        record.configuration.backchannelLogoutUri = "https://notes.example/logout"
        record.configuration.logoUri = "https://notes.example/logo.png"
        record.configuration.requireDPoP = true
        record.configuration.userinfoSignedResponseAlg = .es256
        #expect(try await server.server.store.updateClient(record))

        // Edit it to confidential: its first secret is shown once; then rotate with a grace period; then delete.
        let detail = try await browser.get(server.base + "/admin/applications/\(clientId)")
        #expect(detail.status == 200 && detail.text.contains("Field notes"))
        let confidential = try await Self.post(
            browser, server.base + "/admin/applications/\(clientId)",
            [
                ("csrf", csrf), ("name", "Field notes"), ("app_type", "native"), ("confidential", "yes"),
                ("redirect_uris", "http://127.0.0.1:7777/callback"), ("grant_types", "authorization_code"), ("scope", "openid")
            ])
        #expect(confidential.status == 200 && Self.code("client-secret", in: confidential.text) != nil, "\(confidential.text.prefix(400))")
        let edited = try #require(try await server.server.store.client(id: clientId)?.configuration)
        #expect(edited.backchannelLogoutUri == "https://notes.example/logout" && edited.logoUri == "https://notes.example/logo.png")
        #expect(edited.requireDPoP && edited.userinfoSignedResponseAlg == .es256 && edited.tokenEndpointAuthMethod == .clientSecretBasic)
        let rotated = try await Self.post(
            browser, server.base + "/admin/applications/\(clientId)/secret", [("csrf", csrf), ("grace_period_seconds", "3600")])
        #expect(rotated.status == 200 && Self.code("client-secret", in: rotated.text) != nil)
        let unconfirmed = try await Self.post(browser, server.base + "/admin/applications/\(clientId)/delete", [("csrf", csrf)])
        #expect(unconfirmed.status == 400)
        let deleted = try await Self.post(
            browser, server.base + "/admin/applications/\(clientId)/delete", [("csrf", csrf), ("confirm", "yes")])
        #expect(deleted.status == 303 && deleted.location == "/admin/applications?done=deleted")
        #expect(try await server.userinfo(tokens.accessToken).status == 401, "a deleted application's tokens stop working")
        // Every change is audited as the console's (docs/server.md: `via: console`), with the operator as actor.
        let changes = try await server.server.store.auditEvents(
            AuditQuery(types: [.applicationRegistered, .applicationUpdated, .applicationSecretRotated, .applicationDeleted], limit: 20))
        #expect(Set(changes.map(\.type)).count == 4, "\(changes.map(\.type))")
        for change in changes {
            #expect(change.details["via"] == "console" && change.clientId == clientId && change.actor == event.actor, "\(change.type)")
        }
        // A configured application is shown read-only; an invalid form is refused with the form again.
        let configured = try await browser.get(server.base + "/admin/applications/latchkey-demo")
        #expect(configured.status == 200 && !configured.text.contains("/admin/applications/latchkey-demo/delete"))
        let invalid = try await Self.post(
            browser, server.base + "/admin/applications",
            [
                ("csrf", csrf), ("name", "Bad"), ("app_type", "browser"), ("redirect_uris", "http://evil.example/cb"),
                ("grant_types", "authorization_code")
            ])
        #expect(invalid.status == 400 && invalid.text.contains("role=\"alert\"") && invalid.text.contains("name=\"redirect_uris\""))
    }

    @Test func anAdministratorFindsAUserLiftsTheLockoutAndEndsSessions() async throws {
        let (server, secret) = try await Self.adminWithTOTP()
        defer { Task { await server.stop() } }
        let ada = try #require(try await server.server.user(username: "ada@example.com"))
        // Ada locks herself out, and has a session elsewhere.
        let adaTokens = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let guesser = TestBrowser()
        for _ in 0..<5 {
            let page = try await server.openLoginPage(guesser, AuthorizeOptions())
            _ = try await server.submitLogin(guesser, page: page, username: "ada@example.com", password: "wrong")
        }
        let (browser, _) = try await Self.signIn(server, secret: secret)
        let found = try await browser.get(server.base + "/admin/users?q=ada%40example.com")
        #expect(found.status == 200 && found.text.contains("/admin/users/\(ada.id)"))
        // The audit trail shows why.
        let trail = try await browser.get(server.base + "/admin/audit?type=account.locked&subject=\(ada.id)")
        #expect(trail.status == 200 && trail.text.contains("account.locked"))
        let detail = try await browser.get(server.base + "/admin/users/\(ada.id)")
        #expect(detail.text.contains("/admin/users/\(ada.id)/unlock"))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: detail.text))
        let unlocked = try await browser.postForm(server.base + "/admin/users/\(ada.id)/unlock", ["csrf": csrf])
        #expect(unlocked.status == 303)
        #expect(try await server.server.store.lockout(userId: ada.id, now: Date())?.isLocked == false)
        // End her sessions: her refresh token is refused from now on.
        let ended = try await browser.postForm(server.base + "/admin/users/\(ada.id)/end-sessions", ["csrf": csrf])
        #expect(ended.status == 303)
        #expect(try await server.refresh(try #require(adaTokens.refreshToken)).status == 400)
        // Disable, enable, reset the password.
        #expect(try await browser.postForm(server.base + "/admin/users/\(ada.id)/disable", ["csrf": csrf]).status == 303)
        #expect(try await server.server.user(username: "ada@example.com")?.disabled == true)
        #expect(try await browser.postForm(server.base + "/admin/users/\(ada.id)/enable", ["csrf": csrf]).status == 303)
        #expect(try await browser.postForm(server.base + "/admin/users/\(ada.id)/reset-password", ["csrf": csrf]).status == 303)
        let afterReset = try await server.submitLogin(
            TestBrowser(), page: try await server.openLoginPage(TestBrowser(), AuthorizeOptions()), username: "ada@example.com",
            password: TestServer.adaPassword)
        #expect(afterReset.status != 303, "the old password no longer works")
        let kinds = try await server.server.store.auditEvents(AuditQuery(subject: ada.id, limit: 50)).filter { $0.details["via"] == "console" }
        #expect(Set(kinds.map(\.type)).isSuperset(of: [.accountUnlocked, .userUpdated, .passwordReset]))
        // An administrator cannot disable itself.
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        #expect(try await browser.postForm(server.base + "/admin/users/\(demo.id)/disable", ["csrf": csrf]).status == 403)
    }

    @Test func theConsoleRefusesWhoMayNotUseIt() async throws {
        let (server, secret) = try await Self.adminWithTOTP()
        defer { Task { await server.stop() } }
        // No sign-in: a page starts one, a form is refused.
        #expect(try await TestBrowser().get(server.base + "/admin/users").status == 302)
        #expect(try await TestBrowser().postForm(server.base + "/admin/users/x/disable", ["csrf": "x"]).status == 401)
        // An account without the admin role, even with a second factor.
        let ada = try #require(try await server.server.user(username: "ada@example.com"))
        let adaSecret = try await server.server.enrollTOTP(userId: ada.id).secret
        let (_, notAdmin) = try await Self.signIn(server, username: "ada@example.com", password: TestServer.adaPassword, secret: adaSecret)
        #expect(notAdmin.status == 403 && notAdmin.text.contains("admin role"), "\(notAdmin.status) \(notAdmin.text.prefix(300))")
        // An administrator without a second factor: the hosted page refuses the console's sign-in (require_mfa).
        let withoutFactors = try await TestServer.startForProfiles()
        defer { Task { await withoutFactors.stop() } }
        let (noFactorBrowser, noFactor) = try await Self.signIn(withoutFactors, secret: nil)
        #expect(noFactor.status == 403 && noFactor.location == nil, "\(noFactor.status) \(noFactor.text.prefix(300))")
        #expect(noFactorBrowser.cookies["lk_console"] == nil, "a password alone never opens the console")

        // A signed-in administrator: a form without its CSRF token is refused; after recent_auth_seconds a change needs
        // a new sign-in while reading still works.
        let (browser, _) = try await Self.signIn(server, secret: secret)
        let forged = try await browser.postForm(server.base + "/admin/users/\(ada.id)/disable", [:])
        #expect(forged.status == 403)
        let wrong = try await browser.postForm(server.base + "/admin/users/\(ada.id)/disable", ["csrf": "not-the-token"])
        #expect(wrong.status == 403)
        #expect(try await server.server.user(username: "ada@example.com")?.disabled == false)
        let page = try await browser.get(server.base + "/admin/users/\(ada.id)")
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        server.advanceClock(301)
        let stale = try await browser.postForm(server.base + "/admin/users/\(ada.id)/disable", ["csrf": csrf])
        #expect(stale.status == 401 && stale.text.contains("/admin/login?fresh=1"))
        #expect(try await server.server.user(username: "ada@example.com")?.disabled == false)
        #expect(try await browser.get(server.base + "/admin/audit").status == 200)
        let fresh = try await browser.get(server.base + "/admin/login?fresh=1")
        #expect(fresh.location?.contains("prompt=login") == true)
        // Signing out revokes the console's token.
        let signedOut = try await browser.postForm(server.base + "/admin/signout", ["csrf": csrf])
        #expect(signedOut.status == 200)
        #expect(try await browser.get(server.base + "/admin/users").status == 302)
    }

    @Test func everyPageSpeaksTheOperatorsLanguage() async throws {
        let (server, secret) = try await Self.adminWithTOTP()
        defer { Task { await server.stop() } }
        let (browser, _) = try await Self.signIn(server, secret: secret)
        for path in ["/admin/applications", "/admin/applications/new", "/admin/users", "/admin/audit", "/admin/applications/latchkey-demo"] {
            let arabic = try await browser.get(server.base + path, headers: ["Accept-Language": "ar"])
            #expect(arabic.status == 200, "\(path)")
            #expect(arabic.text.contains("<html lang=\"ar\" dir=\"rtl\">"), "\(path)")
            #expect(!arabic.text.contains(">console."), "\(path): every text is in the catalog")
            let arabicNav = try #require(MessageCatalog.text("console.nav.applications", locale: .ar))
            #expect(arabicNav != "Applications" && arabic.text.contains(">\(arabicNav)</a>"), "\(path): the navigation in Arabic")
            let english = try await browser.get(server.base + path)
            #expect(english.text.contains(">Applications</a>") && !english.text.contains(arabicNav), "\(path)")
        }
    }

    /// The callback takes a code only for the sign-in this browser started: the state of its sign-in cookie, this
    /// server's `iss`, and the code itself single use.
    @Test func theCallbackTakesOnlyThisBrowsersSignIn() async throws {
        let (server, secret) = try await Self.adminWithTOTP()
        defer { Task { await server.stop() } }
        // A browser that signs in but stops before the callback: its callback URL, and its sign-in cookie.
        let browser = TestBrowser()
        let start = try await browser.get(server.base + "/admin/applications")
        let toLogin = try await browser.get(server.base + (try #require(start.location)))
        let page = try await browser.get(server.base + (try #require(toLogin.location)))
        let codePage = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: Self.password)
        let done = try await HostedLoginSecondFactorTests.submitCode(
            server, browser, page: codePage, code: HostedLoginSecondFactorTests.currentCode(secret, server))
        let callback = try #require(done.location)
        let query = done.locationQuery
        // Another browser (no sign-in cookie), another state, another issuer: refused, no console cookie. (A refused
        // callback starts a new sign-in, which replaces the sign-in cookie: each attempt gets a copy of this one's.)
        let loginCookie = try #require(browser.cookies["lk_console_login"])
        func attempt(_ url: String, withCookie: Bool = true) async throws -> (HTTPResult, TestBrowser) {
            let other = TestBrowser()
            if withCookie { other.setCookie("lk_console_login", loginCookie) }
            return (try await other.get(url), other)
        }
        let (stranger, strangerBrowser) = try await attempt(callback, withCookie: false)
        #expect(stranger.location != "/admin/applications" && strangerBrowser.cookies["lk_console"] == nil)
        var forged = URLComponents(string: callback)
        forged?.queryItems = [
            URLQueryItem(name: "code", value: query["code"]), URLQueryItem(name: "state", value: "another-state"),
            URLQueryItem(name: "iss", value: query["iss"])
        ]
        let (otherState, otherStateBrowser) = try await attempt(try #require(forged?.string))
        #expect(otherState.location != "/admin/applications" && otherStateBrowser.cookies["lk_console"] == nil)
        forged?.queryItems = [
            URLQueryItem(name: "code", value: query["code"]), URLQueryItem(name: "state", value: query["state"]),
            URLQueryItem(name: "iss", value: "http://127.0.0.1:1")
        ]
        let (otherIssuer, otherIssuerBrowser) = try await attempt(try #require(forged?.string))
        #expect(otherIssuer.location != "/admin/applications" && otherIssuerBrowser.cookies["lk_console"] == nil)
        // The real one works once; the same code again does not.
        let real = try await browser.get(callback)
        #expect(real.location == "/admin/applications" && browser.cookies["lk_console"] != nil)
        let (replay, replayBrowser) = try await attempt(callback)
        #expect(replay.location != "/admin/applications" && replayBrowser.cookies["lk_console"] == nil)
    }

    @Test func theConsoleCanBeTurnedOff() async throws {
        let server = try await TestServer.start { $0.consoleEnabled = false }
        defer { Task { await server.stop() } }
        #expect(try await TestBrowser().get(server.base + "/admin/applications").status == 404)
        #expect(try await server.server.store.client(id: ConsoleClient.id) == nil)
    }

    /// The text of `<code id="…">` in a page.
    static func code(_ id: String, in html: String) -> String? {
        guard let start = html.range(of: "<code id=\"\(id)\">") else { return nil }
        let rest = html[start.upperBound...]
        guard let end = rest.range(of: "</code>") else { return nil }
        return String(rest[..<end.lowerBound])
    }
}
