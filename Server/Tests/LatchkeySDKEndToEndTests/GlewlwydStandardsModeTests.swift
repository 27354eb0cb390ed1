import LatchkeyTestSupport
import Foundation
@testable import Latchkey
import Testing

/// The SDK in standards mode against a third-party OpenID Provider (Debian's glewlwyd), started on loopback by
/// `scripts/test.sh` through `Tests/glewlwyd/start.sh`, which exports `LATCHKEY_GLEWLWYD_ENV`.
@Suite(
    "SDK ↔ glewlwyd (third-party OpenID Connect provider)",
    .enabled(if: ProcessInfo.processInfo.environment["LATCHKEY_GLEWLWYD_ENV"] != nil, "run by scripts/test.sh, which starts glewlwyd"))
struct GlewlwydStandardsModeTests {
    let env = ProviderEnvironment.load("LATCHKEY_GLEWLWYD_ENV")

    @Test func signInRefreshUserinfoRevokeAndEndSession() async throws {
        let issuer = try #require(env["GLEWLWYD_ISSUER"]), base = try #require(env["GLEWLWYD_BASE"])
        let user = try #require(env["GLEWLWYD_TEST_USER"]), password = try #require(env["GLEWLWYD_TEST_PASSWORD"])
        let clientId = try #require(env["GLEWLWYD_CLIENT_ID"])
        let scopes = ["openid", "profile", "email", "offline_access"]
        // glewlwyd (libmicrohttpd) drops connections when the parallel suites saturate the machine; resend those.
        let browser = TestBrowser(retriesOfDroppedConnections: 3)
        let json = ["Content-Type": "application/json"]
        @Sendable func body(_ object: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: object) }
        // The person in the browser: glewlwyd's login and consent are REST calls (password, then the password scheme
        // the profile scope asks for); its sign-out page asks them to confirm, which its script does by deleting the
        // OpenID session and the login session.
        var agent = ScriptedBrowserUserAgent(browser: browser) { url, browser in
            var r = try await browser.send(
                base + "/api/auth/", method: "POST", body: try body(["username": user, "password": password]), headers: json)
            #expect(r.status == 200, "glewlwyd login: \(r.status)")
            r = try await browser.send(
                base + "/api/auth/", method: "POST",
                body: try body([
                    "username": user, "scheme_type": "retype-password", "scheme_name": "password", "value": ["password": password]
                ]), headers: json)
            #expect(r.status == 200, "glewlwyd scheme login: \(r.status)")
            r = try await browser.send(
                base + "/api/auth/grant/" + clientId, method: "PUT", body: try body(["scope": scopes.joined(separator: " ")]),
                headers: json)
            #expect(r.status == 200, "glewlwyd consent: \(r.status)")
            let authorize = try await browser.get(url.absoluteString + "&g_continue")
            return try #require(authorize.location.flatMap(URL.init(string:)), "glewlwyd did not redirect back: \(authorize.status)")
        }
        agent.signOutRedirectURI = try #require(env["GLEWLWYD_POST_LOGOUT_REDIRECT_URI"])
        agent.onSignOutPage = { page, browser in
            guard page.contains("prompt=end_session") else { return nil }
            if let sid = URLComponents(string: page)?.queryItems?.first(where: { $0.name == "sid" })?.value {
                _ = try await browser.send(base + "/api/oidc/session/" + sid, method: "DELETE", body: nil, headers: [:])
            }
            _ = try await browser.send(base + "/api/auth/", method: "DELETE", body: nil, headers: [:])
            return nil  // glewlwyd then says "session closed" on its own page; the person closes it
        }
        let http = ProgrammableHTTPClient()
        let client = LatchkeyClient(http: http, userAgent: agent)
        try await client.initialize(
            config: LatchkeyConfig(
                baseUrl: issuer, clientId: clientId, scopes: scopes,
                afterSignInUrl: env["GLEWLWYD_REDIRECT_URI"], afterSignOutUrl: env["GLEWLWYD_POST_LOGOUT_REDIRECT_URI"]))
        #expect(try client.buildSignInURL().absoluteString.hasPrefix(issuer), "authorization endpoint from discovery")
        let glewlwydSessionIsOpen: @Sendable () async throws -> Bool = { try await browser.get(base + "/api/profile_list").status == 200 }

        // 1. Signed in in the browser, out by a request from the app: the tokens die, glewlwyd's session does not, and
        //    the report says exactly that.
        let signedIn = try await client.signInWithBrowser()  // PKCE exchange + verified RS256 ID token
        #expect(signedIn.email == "alice@example.test")
        let viaUserinfo = try await client.getUser(options: ["source": "userinfo"])
        #expect(viaUserinfo.sub == signedIn.sub && viaUserinfo.email == signedIn.email)
        let before = try await client.getAccessToken()
        let refreshed = try await client.context().tokens.refreshed(nil)
        #expect(refreshed.accessToken != before)
        #expect(refreshed.refreshToken != nil, "glewlwyd does not rotate; the SDK keeps the refresh token it has")
        #expect(try await client.getUser(options: ["source": "userinfo"]).sub == signedIn.sub)
        let refreshToken = try #require(refreshed.refreshToken)
        let byRequest = try await client.signOutReporting(options: SignOutOptions(providerSession: .request))
        #expect(byRequest.refreshToken == .done && byRequest.accessToken == .done, "\(byRequest)")
        guard case .unconfirmed = byRequest.providerSession else { Issue.record("a request cannot end glewlwyd's session: \(byRequest)"); return }
        #expect(!byRequest.isComplete)
        #expect(try await !client.isSignedIn())
        #expect(
            http.statuses(pathEndingWith: "/revoke").filter { $0 == 200 }.count == 2,
            "both tokens revoked (glewlwyd wants the bearer fallback): \(http.statuses(pathEndingWith: "/revoke"))")
        let reuse = try await TestBrowser(retriesOfDroppedConnections: 3).postForm(
            issuer + "/token",
            [
                "grant_type": "refresh_token", "refresh_token": refreshToken, "client_id": clientId
            ])
        #expect(reuse.status >= 400, "the refresh token was revoked at glewlwyd (\(reuse.status))")
        let userinfo = try await TestBrowser(retriesOfDroppedConnections: 3).get(
            issuer + "/userinfo", headers: ["Authorization": "Bearer \(refreshed.accessToken)"])
        #expect(userinfo.status == 401, "the access token was revoked at glewlwyd (\(userinfo.status))")
        #expect(try await glewlwydSessionIsOpen(), "and, as reported, glewlwyd's own session is still open")

        // 2. Signed in again (glewlwyd still knows the person), out in the browser: the person confirms on glewlwyd's
        //    page, which never comes back to the app; the report cannot confirm it, and glewlwyd's session is over.
        _ = try await client.signInWithBrowser()
        let inBrowser = try await client.signOutReporting()
        #expect(inBrowser.refreshToken == .done && inBrowser.accessToken == .done, "\(inBrowser)")
        guard case .unconfirmed = inBrowser.providerSession else { Issue.record("glewlwyd never comes back: \(inBrowser)"); return }
        #expect(try await !glewlwydSessionIsOpen(), "glewlwyd's session ended in the browser")
    }
}
