import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// With an https issuer every cookie carries the `__Host-` prefix (a sibling subdomain can neither plant nor
/// overwrite it); plain-http loopback development keeps the bare names. The hosted form's CSRF token is bound to the
/// login request id, so a token shown for one login request does not work for another.
@Suite("Cookies: __Host- prefix on https; CSRF token bound to the login request")
struct HostCookiesAndCSRFBindingTests {
    /// Not the demo's published password: a server with a public issuer refuses to seed that one.
    static let password = "a private passphrase for the https tests"

    static func httpsServer() async throws -> TestServer {
        // The in-process server still listens on plain loopback HTTP; only the issuer (what browsers would see
        // through the TLS proxy) is https, which is what turns on `Secure` and the prefix.
        try await TestServer.start { config in
            config.issuer = URL(string: "https://id.example.test")!
            config.development = false  // development mode needs a loopback issuer
            config.users = config.users.map { user in
                var user = user
                if user.username == "demo@example.com" { user.password = password }
                return user
            }
        }
    }

    @Test("https issuer: __Host-lk_csrf and __Host-lk_session, Secure, Path=/, no Domain; sign-in and SSO work with them")
    func hostPrefixedCookies() async throws {
        let server = try await Self.httpsServer()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        #expect(browser.cookies["__Host-lk_csrf"] != nil)
        #expect(browser.cookies["lk_csrf"] == nil)
        let csrfCookie = try #require(page.header("Set-Cookie"))
        #expect(csrfCookie.hasPrefix("__Host-lk_csrf="))
        #expect(csrfCookie.contains("; Secure") && csrfCookie.contains("Path=/") && !csrfCookie.lowercased().contains("domain="))
        let done = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: Self.password)
        #expect(done.status == 303, "\(done.status) \(done.text.prefix(200))")
        let secret = try #require(browser.cookies["__Host-lk_session"])
        #expect(browser.cookies["lk_session"] == nil)
        let silent = try await browser.get(server.authorizeURL(AuthorizeOptions()))
        #expect(silent.locationQuery["code"] != nil, "SSO through the prefixed cookie")

        // A cookie a sibling subdomain could set (no prefix) is not ours: not even with a real session secret.
        let planted = TestBrowser()
        planted.setCookie("lk_session", secret)
        let notSSO = try await planted.get(server.authorizeURL(AuthorizeOptions()))
        #expect(notSSO.location?.hasPrefix("/login?request=") == true)
    }

    @Test("https issuer: a planted unprefixed CSRF cookie with a matching token is refused")
    func plantedCSRFCookieIsIgnored() async throws {
        let server = try await Self.httpsServer()
        defer { Task { await server.stop() } }
        let attacker = TestBrowser()
        let authorize = try await attacker.get(server.authorizeURL(AuthorizeOptions()))
        let location = try #require(authorize.location)
        let requestId = try #require(URLComponents(string: location)?.queryItems?.first { $0.name == "request" }?.value)
        // What a sibling subdomain can do: set `lk_csrf` for the parent domain and post a token derived from it.
        attacker.setCookie("lk_csrf", "planted")
        for token in ["planted", CookiePolicy.csrfToken(secret: "planted", requestId: requestId)] {
            let forged = try await attacker.postForm(
                server.base + "/login",
                [
                    "request": requestId, "csrf": token, "username": "demo@example.com", "password": Self.password
                ])
            #expect(forged.status == 403)
            #expect(forged.location == nil)
        }
    }

    @Test("plain-http loopback development keeps the bare cookie names (browsers need Secure for __Host-)")
    func developmentNames() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.signIn(browser)
        #expect(browser.cookies["lk_session"] != nil)
        #expect(browser.cookies["__Host-lk_session"] == nil)
    }

    @Test("the CSRF token of one login request does not work for another one")
    func csrfBoundToTheLoginRequest() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let pageA = try await server.openLoginPage(browser, AuthorizeOptions())
        let tokenA = try #require(TestBrowser.hiddenField("csrf", in: pageA.text))
        // A second login request in the same browser, whose page was never shown (the cookie is still page A's).
        let authorizeB = try await browser.get(server.authorizeURL(AuthorizeOptions()))
        let locationB = try #require(authorizeB.location)
        let requestB = try #require(URLComponents(string: locationB)?.queryItems?.first { $0.name == "request" }?.value)
        let crossed = try await browser.postForm(
            server.base + "/login",
            [
                "request": requestB, "csrf": tokenA, "username": "demo@example.com", "password": DevelopmentDefaults.demoPassword
            ])
        #expect(crossed.status == 403)
        #expect(crossed.location == nil)
        // The form token is not the cookie's value either.
        #expect(tokenA != browser.cookies["lk_csrf"])
        // Page A's own form still works.
        let ok = try await server.submitLogin(browser, page: pageA, username: "demo@example.com", password: DevelopmentDefaults.demoPassword)
        #expect(ok.status == 303)
    }
}
