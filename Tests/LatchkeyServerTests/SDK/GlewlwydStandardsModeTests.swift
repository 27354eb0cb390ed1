import Foundation
@testable import Latchkey
import Testing

/// The SDK in standards mode against a third-party OpenID Provider (Debian's glewlwyd), started on loopback by
/// `scripts/test.sh` through `Tests/glewlwyd/start.sh`, which exports `LATCHKEY_GLEWLWYD_ENV`.
@Suite("SDK ↔ glewlwyd (third-party OpenID Connect provider)",
       .enabled(if: ProcessInfo.processInfo.environment["LATCHKEY_GLEWLWYD_ENV"] != nil, "run by scripts/test.sh, which starts glewlwyd"))
struct GlewlwydStandardsModeTests {
    let env: [String: String] = {
        guard let path = ProcessInfo.processInfo.environment["LATCHKEY_GLEWLWYD_ENV"],
              let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        return Dictionary(text.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }, uniquingKeysWith: { _, b in b })
    }()

    @Test func signInRefreshUserinfoRevokeAndEndSession() async throws {
        let issuer = try #require(env["GLEWLWYD_ISSUER"]), base = try #require(env["GLEWLWYD_BASE"])
        let user = try #require(env["GLEWLWYD_TEST_USER"]), password = try #require(env["GLEWLWYD_TEST_PASSWORD"])
        let scopes = ["openid", "profile", "email", "offline_access"]
        let http = ObservedHTTPClient()
        let client = LatchkeyClient(http: http)
        try await client.initialize(config: LatchkeyConfig(
            baseUrl: issuer, clientId: try #require(env["GLEWLWYD_CLIENT_ID"]), scopes: scopes,
            afterSignInUrl: env["GLEWLWYD_REDIRECT_URI"], afterSignOutUrl: env["GLEWLWYD_POST_LOGOUT_REDIRECT_URI"]))
        let url = try client.buildSignInURL()
        #expect(url.absoluteString.hasPrefix(issuer), "authorization endpoint from discovery")

        // glewlwyd's login and consent are REST calls: password, then the password scheme the profile scope asks for.
        // glewlwyd (libmicrohttpd) drops connections when the parallel suites saturate the machine; resend those.
        let browser = TestBrowser(retriesOfDroppedConnections: 3)
        let json = ["Content-Type": "application/json"]
        func body(_ object: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: object) }
        var r = try await browser.send(base + "/api/auth/", method: "POST", body: try body(["username": user, "password": password]), headers: json)
        #expect(r.status == 200, "glewlwyd login: \(r.status)")
        r = try await browser.send(base + "/api/auth/", method: "POST", body: try body([
            "username": user, "scheme_type": "retype-password", "scheme_name": "password", "value": ["password": password]]), headers: json)
        #expect(r.status == 200, "glewlwyd scheme login: \(r.status)")
        r = try await browser.send(base + "/api/auth/grant/" + (env["GLEWLWYD_CLIENT_ID"] ?? ""), method: "PUT",
                                   body: try body(["scope": scopes.joined(separator: " ")]), headers: json)
        #expect(r.status == 200, "glewlwyd consent: \(r.status)")
        let authorize = try await browser.get(url.absoluteString + "&g_continue")
        let callback = try #require(authorize.location.flatMap(URL.init(string:)), "glewlwyd did not redirect back: \(authorize.status)")

        let signedIn = try await client.handleRedirectCallback(url: callback)  // PKCE exchange + verified RS256 ID token
        #expect(signedIn.email == "alice@example.test")
        let viaUserinfo = try await client.getUser(options: ["source": "userinfo"])
        #expect(viaUserinfo.sub == signedIn.sub && viaUserinfo.email == signedIn.email)

        let before = try await client.getAccessToken()
        let refreshed = try await client.context().tokens.refreshed(nil)
        #expect(refreshed.accessToken != before)
        #expect(refreshed.refreshToken != nil, "glewlwyd does not rotate; the SDK keeps the refresh token it has")
        #expect(try await client.getUser(options: ["source": "userinfo"]).sub == signedIn.sub)

        let refreshToken = try #require(refreshed.refreshToken)
        _ = try await client.signOut()  // revoke (bearer fallback) + end-session with id_token_hint
        #expect(try await !client.isSignedIn())
        #expect(http.statuses(pathEndingWith: "/revoke").last == 200, "revoked (glewlwyd wants the bearer fallback)")
        let endSession = http.statuses(pathEndingWith: "/end_session")
        // The SDK posts first (the ID token stays out of URLs); glewlwyd takes end_session by GET only, so the SDK's
        // one fallback is a GET, which glewlwyd answers with its redirect.
        #expect((1...2).contains(endSession.count) && (300..<400).contains(endSession.last ?? 0), "end_session accepted the hint: \(endSession)")
        if endSession.count == 2 { #expect([404, 405, 501].contains(endSession[0]), "POST refused as unsupported: \(endSession)") }
        let reuse = try await TestBrowser(retriesOfDroppedConnections: 3).postForm(issuer + "/token", ["grant_type": "refresh_token", "refresh_token": refreshToken,
                                                                       "client_id": env["GLEWLWYD_CLIENT_ID"] ?? ""])
        #expect(reuse.status >= 400, "the refresh token was revoked at glewlwyd (\(reuse.status))")
    }
}
