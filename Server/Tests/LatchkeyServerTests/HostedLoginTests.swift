import LatchkeyTestSupport
import Foundation
import Testing

@Suite("Hosted login page: CSRF, errors, lockout, throttling")
struct HostedLoginTests {
    @Test func loginPostWithoutOrWithAForeignCSRFTokenIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let form = ["request": request, "username": "demo@example.com", "password": "correct horse battery staple"]
        let noToken = try await browser.postForm(server.base + "/login", form)
        #expect(noToken.status == 403)
        #expect(noToken.location == nil)

        // An attacker's page can know the request id and invent a token, but cannot set our SameSite=Strict cookie.
        let attacker = TestBrowser()
        var forged = form
        forged["csrf"] = "forged-token"
        let crossSite = try await attacker.postForm(server.base + "/login", forged)
        #expect(crossSite.status == 403)
        browser.setCookie("lk_csrf", "something-else")
        let mismatched = try await browser.postForm(server.base + "/login", forged)
        #expect(mismatched.status == 403)
    }

    @Test func wrongPasswordShowsAnErrorAndKeepsTheUsername() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let failed = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong")
        #expect(failed.status == 401)
        #expect(failed.text.contains("role=\"alert\""))
        #expect(failed.text.contains("The email or password is incorrect."))
        #expect(failed.text.contains("value=\"demo@example.com\""))
        #expect(!failed.text.contains("wrong\""), "the password is never echoed")
        // The re-rendered form works.
        let ok = try await server.submitLogin(browser, page: failed, username: "demo@example.com", password: "correct horse battery staple")
        #expect(ok.status == 303)

        let stranger = TestBrowser()
        let unknown = try await server.submitLogin(
            stranger, page: try await server.openLoginPage(stranger, AuthorizeOptions()),
            username: "nobody@example.com", password: "whatever")
        #expect(unknown.status == 401)
        #expect(unknown.text.contains("The email or password is incorrect."), "unknown users get the same message")
    }

    /// The lock is not announced: that would tell anyone which accounts exist (and, for the right password only,
    /// would let guessing go on while locked). The owner sees the usual wrong-password answer until it ends.
    @Test func accountLocksAfterRepeatedFailuresWithoutSayingSo() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxFailuresPerAccount = 3 }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var page = try await server.openLoginPage(browser, AuthorizeOptions())
        for attempt in 1...3 {
            page = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong \(attempt)")
        }
        #expect(page.status == 401)
        #expect(page.text.contains("The email or password is incorrect."))
        let rightPassword = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(rightPassword.status == 401, "a locked account refuses even the right password")
        #expect(rightPassword.text.contains("The email or password is incorrect."))
        #expect(rightPassword.location == nil)

        server.advanceClock(15 * 60 + 1)
        let fresh = try await server.openLoginPage(browser, AuthorizeOptions())
        let afterLock = try await server.submitLogin(browser, page: fresh, username: "demo@example.com", password: "correct horse battery staple")
        #expect(afterLock.status == 303)
    }

    @Test func failuresFromOneAddressAreThrottled() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAddress = 4
            $0.loginPolicy.maxFailuresPerAccount = 100
        }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var page = try await server.openLoginPage(browser, AuthorizeOptions())
        for i in 1...4 {
            page = try await server.submitLogin(browser, page: page, username: "user\(i)@example.com", password: "guess")
            #expect(page.status == 401)
        }
        let throttled = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(throttled.status == 429)
        #expect(throttled.text.contains("Too many failed sign-in attempts"))
    }

    @Test func disabledAccountsCannotSignIn() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let response = try await server.submitLogin(browser, page: page, username: "disabled@example.com", password: "disabled password")
        #expect(response.status == 403)
        #expect(response.text.contains("disabled"))
    }

    @Test func loginRequestsExpireAndAreSingleUse() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let ok = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(ok.status == 303)
        let reused = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(reused.status == 400)
        #expect(reused.text.contains("expired"))

        let other = TestBrowser()
        let stale = try await server.openLoginPage(other, AuthorizeOptions())
        server.advanceClock(601)
        let late = try await server.submitLogin(other, page: stale, username: "demo@example.com", password: "correct horse battery staple")
        #expect(late.status == 400)
    }
}
