import Foundation
import Latchkey
import LatchkeySDKTestSupport

extension HTTPRequest {
    /// A refresh-token grant (RFC 6749 §6).
    package var isRefreshGrant: Bool {
        body.map { String(decoding: $0, as: UTF8.self).contains("grant_type=refresh_token") } ?? false
    }
}

extension ProgrammableHTTPClient {
    /// How many refresh-token grants the SDK sent.
    package var refreshCount: Int { requests.filter(\.isRefreshGrant).count }
}

extension TestServer {
    package func sdkConfig(redirect: String = "http://127.0.0.1:7777/callback") -> LatchkeyConfig {
        LatchkeyConfig(
            baseUrl: issuer, clientId: "latchkey-demo", scopes: ["openid", "profile", "email", "offline_access"],
            afterSignInUrl: redirect, afterSignOutUrl: "http://127.0.0.1:7777/logout")
    }

    /// Plays the browser for an authorization URL built by the SDK: follows it to the hosted form, signs in, and
    /// returns the callback URL the browser would be sent to.
    package func browse(
        _ url: URL, browser: TestBrowser = TestBrowser(), username: String = "demo@example.com",
        password: String = "correct horse battery staple"
    ) async throws -> URL {
        let authorize = try await browser.get(url.absoluteString)
        guard var location = authorize.location else { throw TestFailure("authorize did not redirect: \(authorize.status) \(authorize.text)") }
        if location.hasPrefix("/login") {
            let page = try await browser.get(base + location)
            let done = try await submitLogin(browser, page: page, username: username, password: password)
            guard let next = done.location else { throw TestFailure("login failed: \(done.status)") }
            location = next
        }
        guard let callback = URL(string: location) else { throw TestFailure("bad callback \(location)") }
        return callback
    }

    /// A signed-in SDK client.
    package func signedInClient(http: any HTTPClient = productionHTTPClient(), storage: (any StorageAdapter)? = nil) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: http)
        try await client.initialize(config: sdkConfig(), storage: storage)
        _ = try await client.handleRedirectCallback(url: try await browse(try client.buildSignInURL()))
        return client
    }
}

/// The SDK's HTTP client as the end-to-end tests use it: the one apps get, with its 30 s of silence. It was 120 s
/// while a failed PostgreSQL connect could stall every request of a test server (`docs/operating.md`, the pool);
/// since the pool serves past that, and the suites' server start-ups queue (`PostgresGate.serverStarts`), the
/// production value holds on both stores.
package func productionHTTPClient() -> URLSessionHTTPClient { URLSessionHTTPClient() }
