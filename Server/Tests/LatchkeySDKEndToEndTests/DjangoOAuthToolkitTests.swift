import LatchkeyTestSupport
import Foundation
@testable import Latchkey
import LatchkeyJOSE
import Testing

/// The SDK against a second third-party provider: django-oauth-toolkit (Jazzband's OAuth 2.0 / OpenID Connect provider
/// for Django, from PyPI), started on loopback by `scripts/test.sh` through `Tests/dot/start.sh`, which exports
/// `LATCHKEY_DOT_ENV`. It has the traits found at a widely used provider: revocation published only in its
/// RFC 8414 metadata (under an issuer with a path), and an end-session endpoint that is a page behind CSRF
/// protection (a POST from the app is refused with 403).
@Suite(
    "SDK ↔ django-oauth-toolkit (third-party OpenID Connect provider)",
    .enabled(if: ProcessInfo.processInfo.environment["LATCHKEY_DOT_ENV"] != nil, "run by scripts/test.sh, which starts django-oauth-toolkit"))
struct DjangoOAuthToolkitTests {
    let env = ProviderEnvironment.load("LATCHKEY_DOT_ENV")

    @Test func signInRefreshAndSignOutByRequestThenInTheBrowser() async throws {
        let issuer = try #require(env["DOT_ISSUER"]), base = try #require(env["DOT_BASE"])
        let user = try #require(env["DOT_TEST_USER"]), password = try #require(env["DOT_TEST_PASSWORD"])
        let clientId = try #require(env["DOT_CLIENT_ID"]), redirect = try #require(env["DOT_REDIRECT_URI"])
        let browser = TestBrowser()
        // The person: Django's login form (with its CSRF token) when the provider asks for it, then back to authorize.
        var agent = ScriptedBrowserUserAgent(browser: browser) { url, browser in
            var next = url.absoluteString
            for _ in 0..<6 {
                let answer = try await browser.get(next)
                guard let location = answer.location else {
                    throw TestFailure("django-oauth-toolkit showed a page: \(answer.status) \(answer.text.prefix(300))")
                }
                let absolute = location.hasPrefix("/") ? base + location : location
                if absolute.hasPrefix(redirect), let callback = URL(string: absolute) { return callback }
                if absolute.contains("/accounts/login/") {
                    let page = try await browser.get(absolute)
                    let csrf = try #require(TestBrowser.hiddenField("csrfmiddlewaretoken", in: page.text), "no CSRF field on the login page")
                    let after = URLComponents(string: absolute)?.queryItems?.first { $0.name == "next" }?.value ?? "/"
                    let login = try await browser.postForm(
                        absolute, ["username": user, "password": password, "csrfmiddlewaretoken": csrf, "next": after])
                    next = (login.location ?? "").hasPrefix("/") ? base + (login.location ?? "") : (login.location ?? "")
                    continue
                }
                next = absolute
            }
            throw TestFailure("django-oauth-toolkit did not come back to the app")
        }
        agent.signOutRedirectURI = try #require(env["DOT_POST_LOGOUT_REDIRECT_URI"])
        let http = ProgrammableHTTPClient()
        let client = LatchkeyClient(http: http, userAgent: agent)
        try await client.initialize(
            config: LatchkeyConfig(
                baseUrl: issuer, clientId: clientId, scopes: ["openid", "profile", "email"],
                afterSignInUrl: redirect, afterSignOutUrl: agent.signOutRedirectURI))
        let metadata = try #require(await client.context().metadata())
        #expect(metadata.revocationEndpoint?.absoluteString == issuer + "/revoke_token/", "revocation from RFC 8414 metadata only")
        /// Whether the browser still has the provider's session: an authorization request goes straight back with a
        /// code while it does, and to the login page once it ended. (`prompt=none` is what a client would send; this
        /// version of the provider answers it 500.)
        @Sendable func browserSession() async throws -> String {
            let challenge = Base64URL.encode(Data(repeating: 9, count: 32))
            let answer = try await browser.get(
                issuer + "/authorize/?response_type=code&client_id=\(clientId)&scope=openid"
                    + "&redirect_uri=\(FormCoding.escape(redirect))&code_challenge=\(challenge)&code_challenge_method=S256&state=s")
            let location = answer.location ?? ""
            if location.contains("/accounts/login/") { return "ended" }
            return location.hasPrefix(redirect) && location.contains("code=") ? "open" : "unknown (\(answer.status) \(location))"
        }

        // 1. Signed in in the browser, out by a request from the app: refused as POST (CSRF), accepted as GET, yet the
        //    browser's session lives on, and the report does not claim otherwise.
        let signedIn = try await client.signInWithBrowser()
        #expect(!signedIn.sub.isEmpty, "a verified ID token names the user")
        #expect(try await client.getUser(options: ["source": "userinfo"]).sub == signedIn.sub)
        let before = try await client.context().tokens.tokens(nil)
        let refreshed = try await client.context().tokens.refreshed(nil)
        #expect(refreshed.refreshToken != before?.refreshToken, "django-oauth-toolkit rotates refresh tokens")
        let byRequest = try await client.signOutReporting(options: SignOutOptions(providerSession: .request))
        #expect(byRequest.refreshToken == .done && byRequest.accessToken == .done, "\(byRequest)")
        guard case .unconfirmed = byRequest.providerSession else { Issue.record("\(byRequest)"); return }
        #expect(http.statuses(pathEndingWith: "/logout").first == 403, "the POST was refused (CSRF): \(http.statuses(pathEndingWith: "/logout"))")
        let session = try await browserSession()
        #expect(session == "open", "as reported: the browser's session is still open: \(session)")
        let reuse = try await TestBrowser().postForm(
            issuer + "/token/",
            [
                "grant_type": "refresh_token", "refresh_token": refreshed.refreshToken ?? "",
                "client_id": clientId
            ])
        #expect(reuse.status == 400, "the refresh token is dead at the provider (\(reuse.status))")
        let userinfo = try await TestBrowser().get(issuer + "/userinfo/", headers: ["Authorization": "Bearer \(refreshed.accessToken)"])
        #expect(userinfo.status == 401, "the access token is dead at the provider (\(userinfo.status))")

        // 2. Signed in again (the provider still knows the browser), out in that browser: everything ended.
        _ = try await client.signInWithBrowser()
        let access = try await client.getAccessToken()
        let inBrowser = try await client.signOutReporting()
        #expect(
            inBrowser.refreshToken == .done && inBrowser.accessToken == .done && inBrowser.providerSession == .done && inBrowser.isComplete,
            "\(inBrowser)")
        #expect(try await browserSession() == "ended", "the provider's session ended")
        #expect(try await TestBrowser().get(issuer + "/userinfo/", headers: ["Authorization": "Bearer \(access)"]).status == 401)
    }
}
