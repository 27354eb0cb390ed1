import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The account page `/account` over real HTTP, as a browser uses it: the sign-in through the server's own hosted page
/// (any account, no role or second factor demanded), each section and its changes, and every refusal: no sign-in, a
/// form without its CSRF token (or the console's), a change that needs a recent sign-in.
@Suite("Account page /account")
struct AccountPageTests {
    @Test func anyAccountSignsInAndSeesItsProfile() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let start = try await browser.get(server.base + "/account")
        #expect(start.status == 302 && start.location == "/account/profile")
        let (_, page) = try await AccountPageRig.signIn(server, browser: browser)
        #expect(page.status == 200)
        #expect(page.text.contains("value=\"Ada\"") && page.text.contains("value=\"Lovelace\""))
        #expect(page.text.contains("Signed in as ada@example.com"))
        #expect(page.text.contains("<a href=\"/account/profile\" aria-current=\"page\">Profile</a>"))
        // The session cookie: HttpOnly, Lax (links from apps and emails open the page signed in).
        let client = try #require(try await server.server.store.client(id: AccountClient.id))
        #expect(client.configuration.requireMFA == false && client.configuration.passkeyOrigins == ["self"])
        #expect(try AccountPageRig.token(browser).isEmpty == false)
    }

    @Test func theSessionCookieIsHttpOnlyAndLax() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let callback = try await AccountPageRig.untilCallback(server, browser, from: "/account/sessions")
        let done = try await browser.get(callback)
        #expect(done.location == "/account/sessions", "the sign-in comes back to the page that asked for it")
        let cookies = done.headers.filter { $0.key.lowercased() == "set-cookie" }.map(\.value).joined(separator: "\n")
        let session = try #require(cookies.firstMatch(of: #/lk_account=[^,\n]+/#).map { String($0.output) }, "\(cookies)")
        #expect(session.contains("; HttpOnly") && session.contains("; SameSite=Lax") && !session.contains("Max-Age=0"), "\(session)")
        #expect(cookies.contains("lk_account_login=; Path=/; Max-Age=0"), "the sign-in in progress is forgotten")
    }

    /// The callback takes a code only for the sign-in this browser started, once; a `return` that is not one of the
    /// page's own paths is ignored.
    @Test func theCallbackTakesOnlyThisBrowsersSignInAndOwnPaths() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let callback = try await AccountPageRig.untilCallback(server, browser, from: "/account/login?return=//evil.example/account/x")
        // Another browser, without this one's sign-in cookie: no session.
        let stranger = TestBrowser()
        let refused = try await stranger.get(callback)
        #expect(stranger.cookies["lk_account"] == nil)
        let loginCookie = try #require(browser.cookies["lk_account_login"])
        let real = try await browser.get(callback)
        #expect(real.location == "/account/profile", "a return path off the page is ignored: \(real.location ?? "")")
        #expect(refused.status == 403 && refused.location == nil, "a callback that is not the browser's is a page, not a new sign-in")
        #expect(browser.cookies["lk_account"] != nil)
        let replayer = TestBrowser()
        replayer.setCookie("lk_account_login", loginCookie)
        _ = try await replayer.get(callback)
        #expect(replayer.cookies["lk_account"] == nil, "a code is redeemed once")
    }

    /// `return` names one of the page's own sections, or nothing: other paths of this server are ignored however
    /// they are spelled; a refused or cancelled sign-in is a page with the way to try again.
    @Test(arguments: [
        "/account/../admin/users", "/account/%2e%2e/oauth2/authorize", "/account/x/../../admin", "/account\\evil.example", "/account/profile?x=1",
        "/account/", "/accountx/profile"
    ])
    func returnPathsOffTheSectionsAreIgnored(_ path: String) async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "return", value: path)]
        let callback = try await AccountPageRig.untilCallback(server, browser, from: "/account/login?" + (components.percentEncodedQuery ?? ""))
        #expect(try await browser.get(callback).location == "/account/profile")
        let cancelled = try await TestBrowser().get(server.base + "/account/callback?error=access_denied&state=x")
        #expect(cancelled.status == 403 && cancelled.text.contains("We couldn&#39;t sign you in") && cancelled.location == nil)
    }

    /// Every form: no session is 401 (not replayed after a sign-in), no CSRF token or the console's is 403, and nothing
    /// changes.
    @Test func everyFormNeedsTheSessionAndItsCSRFToken() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let (browser, _) = try await AccountPageRig.signIn(server)
        let token = try AccountPageRig.token(browser)
        let ada = try await AccountPageRig.ada(server)
        let forms: [(String, [String: String])] = [
            ("/account/signout", [:]), ("/account/profile", ["given_name": "Eve"]), ("/account/profile/email/verify", ["code": "123456"]),
            ("/account/security/password", ["current_password": AccountPageRig.adaPassword, "new_password": "a brand new passphrase"]),
            ("/account/sessions/end", ["session": "x"]), ("/account/sessions/end-others", [:]), ("/account/sessions/revoke", ["grant": "x"]),
            ("/account/applications/withdraw", ["client": "x"]), ("/account/data/export", [:]), ("/account/data/delete", ["confirm": "1"]),
            ("/account/security/totp", [:]), ("/account/security/totp/verify", ["enrollment": "x", "code": "123456"]),
            ("/account/security/email-codes", [:]), ("/account/security/recovery-codes", [:]), ("/account/security/remove", ["kind": "totp"]),
            ("/account/passkeys/options", [:]), ("/account/passkeys/credential", ["raw_id": "x"]),
            ("/account/passkeys/rename", ["id": "x", "name": "y"]),
            ("/account/passkeys/delete", ["id": "x"])
        ]
        for (path, fields) in forms {
            let anonymous = try await TestBrowser().postForm(server.base + path, fields)
            #expect(anonymous.status == 401, "\(path) without a session: \(anonymous.status)")
            let noToken = try await browser.postForm(server.base + path, fields)
            #expect(noToken.status == 403, "\(path) without its CSRF token: \(noToken.status)")
            let consoleToken = CookiePolicy.csrfToken(secret: token, requestId: ConsoleClient.application.csrfScope)
            let console = try await browser.postForm(server.base + path, fields.merging(["csrf": consoleToken]) { $1 })
            #expect(console.status == 403, "\(path) with the console's CSRF token: \(console.status)")
        }
        let after = try #require(try await server.server.store.user(id: ada.id))
        #expect(after.claims["given_name"] == "Ada" && after.passwordHash == ada.passwordHash)
        #expect(try await AccountPageRig.post(server, browser, "/account/profile", ["given_name": "Ada"]).status == 303, "the session still works")
    }

    @Test func theProfileIsSavedAndANewEmailConfirmedWithItsCode() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let (browser, _) = try await AccountPageRig.signIn(server)
        let saved = try await AccountPageRig.post(server, browser, "/account/profile", ["given_name": "Augusta Ada", "family_name": "King"])
        #expect(saved.status == 303 && saved.location?.hasPrefix("/account/profile?done=saved&seal=") == true)
        let page = try await browser.get(server.base + saved.location!)
        #expect(page.text.contains("Your profile was saved.") && page.text.contains("value=\"Augusta Ada\""))
        let ada = try await AccountPageRig.ada(server)
        #expect(ada.claims["given_name"] == "Augusta Ada" && ada.claims["family_name"] == "King")
        // A value the schema refuses: the field's own words, nothing saved.
        let tooLong = try await AccountPageRig.post(server, browser, "/account/profile", ["given_name": String(repeating: "a", count: 200)])
        #expect(tooLong.status == 400 && tooLong.text.contains("role=\"alert\"") && tooLong.text.contains("128"))
        // A new address: a code goes to it, and the code confirms it.
        let email = try await AccountPageRig.post(server, browser, "/account/profile", ["email": "ada@analytical.example"])
        #expect(email.status == 303)
        let pending = try await browser.get(server.base + "/account/profile")
        #expect(pending.text.contains("We sent a code to ada@analytical.example"))
        let wrong = try await AccountPageRig.post(server, browser, "/account/profile/email/verify", ["code": "000000"])
        #expect(wrong.status == 400 && wrong.text.contains("The code is incorrect."))
        let code = try #require(try await server.server.outboxMessages(recipient: "ada@analytical.example").first?.code)
        let confirmed = try await AccountPageRig.post(server, browser, "/account/profile/email/verify", ["code": code])
        #expect(confirmed.status == 303)
        let done = try await browser.get(server.base + (try #require(confirmed.location)))
        #expect(done.text.contains("Your email address is now ada@analytical.example."))
        #expect(try await AccountPageRig.ada(server).claims["email"] == "ada@analytical.example")
    }

    /// A new email or username needs a recent sign-in; names do not. Past `recent_auth_seconds` the page says so,
    /// offers "Confirm it's you" (`prompt=login`, back to the profile) and changes nothing.
    @Test func identifiersNeedARecentSignIn() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        server.freezeClock()
        let (browser, _) = try await AccountPageRig.signIn(server)
        server.advanceClock(301)
        let profile = try await browser.get(server.base + "/account/profile")
        #expect(profile.text.contains("/account/login?fresh=1&amp;return=/account/profile"))
        let stale = try await AccountPageRig.post(server, browser, "/account/profile", ["email": "eve@example.com"])
        #expect(stale.status == 401 && stale.text.contains("Confirm it&#39;s you"))
        #expect(try await server.server.outboxMessages(recipient: "eve@example.com").isEmpty)
        let name = try await AccountPageRig.post(server, browser, "/account/profile", ["given_name": "Ada B."])
        #expect(name.status == 303)
        let again = try await browser.get(server.base + "/account/login?fresh=1&return=/account/profile")
        #expect(again.location?.contains("prompt=login") == true)
    }

    @Test func thePasswordChangesWithTheCurrentOneAndEndsTheOtherSessions() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let elsewhere = try await server.userTokens(username: "ada@example.com", password: AccountPageRig.adaPassword)
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/security")
        #expect(page.text.contains("autocomplete=\"current-password\"") && page.text.contains("autocomplete=\"new-password\""))
        let wrong = try await AccountPageRig.post(
            server, browser, "/account/security/password", ["current_password": "not it", "new_password": "a brand new passphrase"])
        #expect(wrong.status == 400 && wrong.text.contains("The current password is incorrect."))
        let weak = try await AccountPageRig.post(
            server, browser, "/account/security/password", ["current_password": AccountPageRig.adaPassword, "new_password": "a"])
        #expect(weak.status == 400 && !weak.text.contains("Invalid credentials"), "the rule in the person's words")
        let changed = try await AccountPageRig.post(
            server, browser, "/account/security/password",
            ["current_password": AccountPageRig.adaPassword, "new_password": "a brand new passphrase"])
        #expect(changed.status == 303)
        let done = try await browser.get(server.base + (try #require(changed.location)))
        #expect(done.status == 200 && done.text.contains("Your password was changed."), "this session stays")
        let refresh = try await server.refresh(try #require(elsewhere.refreshToken))
        #expect(refresh.status == 400, "the other session's grant ended")
        let events = try await server.server.store.auditEvents(AuditQuery(types: [.passwordChanged], limit: 10))
        #expect(events.map(\.outcome) == [.success, .failure] || events.map(\.outcome) == [.failure, .success])
        #expect(events.allSatisfy { $0.clientId == AccountClient.id })
    }

    @Test func sessionsAreListedAndEnded() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let other = TestBrowser()
        _ = try await AccountPageRig.signIn(server, browser: other)
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/sessions")
        #expect(page.text.contains("Sessions: 2") && page.text.contains("<strong>This browser</strong>"))
        #expect(page.text.contains("<li>Your account</li>"), "the page itself by its name in the person's words")
        #expect(page.text.contains("aria-label=\"Sign out: the session that began"), "the accessible name holds the visible one")
        let unknown = try await AccountPageRig.post(server, browser, "/account/sessions/end", ["session": "not-a-session"])
        #expect(unknown.status == 404 && unknown.text.contains("no longer exists"))
        let others = try await AccountPageRig.post(server, browser, "/account/sessions/end-others")
        #expect(others.status == 303)
        let after = try await browser.get(server.base + (try #require(others.location)))
        #expect(
            after.text.contains("You are signed out everywhere else.") && after.text.contains("Sessions: 1"),
            "\(after.status) \(after.location ?? "") \(after.text)")
        #expect(try await other.get(server.base + "/account/profile").status == 302, "the other browser signs in again")
        // Ending this browser's own session signs the page out too.
        let ada = try await AccountPageRig.ada(server)
        let own = try #require(try await server.server.store.userSessions(userId: ada.id, now: Date()).sessions.first)
        let ownEnded = try await AccountPageRig.post(server, browser, "/account/sessions/end", ["session": own.id])
        #expect(ownEnded.status == 200 && ownEnded.text.contains("That session has ended."))
        #expect(ownEnded.header("Set-Cookie")?.contains("lk_account=; Path=/; Max-Age=0") == true)
        #expect(try await browser.get(server.base + "/account/sessions").status == 302)
        let audit = try await server.server.store.auditEvents(AuditQuery(types: [.sessionEnded], limit: 10))
        #expect(audit.count == 2 && audit.allSatisfy { $0.details["via"] == "account_page" && $0.details["administrator"] != "true" })
    }

    @Test func connectedAppsAreListedAndTheirAccessRemoved() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let ada = try await AccountPageRig.ada(server)
        try await server.server.store.grantConsent(userId: ada.id, clientId: "backend", scopes: ["openid", "email"], now: Date())
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/applications")
        #expect(page.text.contains("See your email address") && page.text.contains("Apps with access: 1"))
        let withdrawn = try await AccountPageRig.post(server, browser, "/account/applications/withdraw", ["client": "backend"])
        #expect(withdrawn.status == 303)
        let after = try await browser.get(server.base + (try #require(withdrawn.location)))
        #expect(after.text.contains("no longer has access to your account") && after.text.contains("id=\"no-apps\""))
        #expect(try await server.server.store.consents(userId: ada.id).isEmpty)
        let again = try await AccountPageRig.post(server, browser, "/account/applications/withdraw", ["client": "backend"])
        #expect(again.status == 404)
        // A notice is sealed to the session: a link cannot say that an application lost its access, or that the
        // password changed, when nothing happened.
        let sealed = try await browser.get(server.base + (try #require(withdrawn.location)))
        #expect(sealed.text.contains("role=\"status\""))
        for spoof in ["/account/applications?done=backend", "/account/applications?done=backend&seal=x", "/account/security?done=password"] {
            #expect(try await !browser.get(server.base + spoof).text.contains("role=\"status\""), "\(spoof)")
        }
    }

    /// The download and the deletion need a recent sign-in: a page opened through single sign-on (the person signed
    /// in to another application first) shows them off, with "Confirm it's you"; after it, both work.
    @Test func downloadAndDeletionNeedAFreshSignIn() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.signIn(browser, username: "ada@example.com", password: AccountPageRig.adaPassword)
        let (_, page) = try await AccountPageRig.signIn(server, path: "/account/data", browser: browser)
        #expect(page.text.contains("<fieldset disabled") && page.text.contains("/account/login?fresh=1&amp;return=/account/data"))
        let stale = try await AccountPageRig.post(server, browser, "/account/data/export")
        #expect(stale.status == 401 && stale.header("Content-Disposition") == nil)
        let ada = try await AccountPageRig.ada(server)
        #expect(try await AccountPageRig.post(server, browser, "/account/data/delete", ["confirm": "1"]).status == 401)
        #expect(try await server.server.store.user(id: ada.id) != nil)

        // "Confirm it's you": the credentials again, back on the data page.
        let fresh = try await browser.get(server.base + "/account/login?fresh=1&return=/account/data")
        let login = try await browser.get(server.base + (try #require(fresh.location)))
        let form = try await browser.get(server.base + (try #require(login.location)))
        let answer = try await server.submitLogin(browser, page: form, username: "ada@example.com", password: AccountPageRig.adaPassword)
        let back = try await browser.get(try #require(answer.location))
        #expect(back.location == "/account/data")
        let enabled = try await browser.get(server.base + "/account/data")
        #expect(!enabled.text.contains("<fieldset disabled"))
        let export = try await AccountPageRig.post(server, browser, "/account/data/export")
        #expect(export.status == 200 && export.header("Content-Disposition")?.contains("account-data.json") == true)
        #expect(try export.json()["profile"] != nil)
        let exported = try await server.server.store.auditEvents(AuditQuery(types: [.accountExported], limit: 5))
        #expect(exported.first?.clientId == AccountClient.id)

        let unticked = try await AccountPageRig.post(server, browser, "/account/data/delete")
        #expect(unticked.status == 400 && unticked.text.contains("Tick the box"))
        let deleted = try await AccountPageRig.post(server, browser, "/account/data/delete", ["confirm": "1"])
        #expect(deleted.status == 200 && deleted.text.contains("Your account was deleted"))
        #expect(deleted.header("Set-Cookie")?.contains("lk_account=; Path=/; Max-Age=0") == true)
        #expect(try await server.server.store.user(id: ada.id) == nil)
    }

    @Test func aDeletionWithAGracePeriodSaysUntilWhen() async throws {
        let server = try await TestServer.startForProfiles { $0.accountDeletionGraceDays = 7 }
        defer { Task { await server.stop() } }
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/data")
        #expect(page.text.contains("your account is kept until"))
        let scheduled = try await AccountPageRig.post(server, browser, "/account/data/delete", ["confirm": "1"])
        #expect(scheduled.status == 200 && scheduled.text.contains("Your account will be deleted on"))
        #expect(try await browser.get(server.base + "/account/profile").status == 302, "signed out everywhere")
    }

    @Test func signingOutRevokesThePagesGrantOnly() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let (browser, _) = try await AccountPageRig.signIn(server)
        let token = try AccountPageRig.token(browser)
        let out = try await AccountPageRig.post(server, browser, "/account/signout")
        #expect(out.status == 200 && out.text.contains("You have signed out"))
        #expect(try await server.call("GET", "/users/me", token: token).status == 401, "the page's token is revoked")
        // The single sign-on session stays: the page opens again without the password.
        let start = try await browser.get(server.base + "/account/profile")
        let authorize = try await browser.get(server.base + (try #require(start.location)))
        #expect(authorize.location?.hasPrefix(server.base + "/account/callback?") == true, "\(authorize.location ?? "")")
    }

    /// The cookie holds the page's own token: another application's access token for the same account, put in the
    /// cookie, opens nothing (it would make any app's leaked token a way into the account's page).
    @Test func onlyThePagesOwnTokenOpensIt() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let appToken = try await server.userTokens(username: "ada@example.com", password: AccountPageRig.adaPassword).accessToken
        let browser = TestBrowser()
        browser.setCookie("lk_account", appToken)
        let page = try await browser.get(server.base + "/account/profile")
        #expect(page.status == 302 && page.location?.hasPrefix("/oauth2/authorize?") == true)
        let csrf = CookiePolicy.csrfToken(secret: appToken, requestId: AccountClient.application.csrfScope)
        let form = try await browser.postForm(server.base + "/account/profile", ["csrf": csrf, "given_name": "Eve"])
        #expect(form.status == 401)
        #expect(try await AccountPageRig.ada(server).claims["given_name"] == "Ada")
    }

    @Test func aDisabledAccountIsSignedOutOfThePage() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let (browser, _) = try await AccountPageRig.signIn(server)
        var ada = try await AccountPageRig.ada(server)
        ada.disabled = true
        try await server.server.store.updateUser(ada)
        #expect(try await browser.get(server.base + "/account/profile").status == 302)
        #expect(try await AccountPageRig.post(server, browser, "/account/profile", ["given_name": "Eve"]).status == 401)
    }

    @Test func theAccountPageCanBeTurnedOff() async throws {
        let server = try await TestServer.start { $0.accountPageEnabled = false }
        defer { Task { await server.stop() } }
        #expect(try await TestBrowser().get(server.base + "/account/profile").status == 404)
        #expect(try await server.server.store.client(id: AccountClient.id) == nil)
        let home = try await TestBrowser().get(server.base + "/")
        #expect(home.status == 200 && !home.text.contains("href=\"/account\""))
    }

    /// The server's root page says what it is and links to the account page, in the person's language.
    @Test func theRootPageLinksToTheAccountPage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let home = try await TestBrowser().get(server.base + "/")
        #expect(home.status == 200 && home.text.contains("<a href=\"/account\">Manage your account</a>"))
        #expect(home.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
        let arabic = try await TestBrowser().get(server.base + "/", headers: ["Accept-Language": "ar"])
        #expect(arabic.text.contains("lang=\"ar\" dir=\"rtl\"") && arabic.text.contains("إدارة حسابك"))
    }
}
