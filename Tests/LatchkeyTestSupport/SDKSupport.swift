import Foundation
import Latchkey
import NIOConcurrencyHelpers

/// Wraps the SDK's real URLSession client: counts refresh requests and can hold their answers back, to test
/// single-flight refresh and sign-out races. Everything still goes over loopback HTTP to the real server.
package final class ObservedHTTPClient: HTTPClient {
    private let inner = URLSessionHTTPClient()
    private let refreshes = NIOLockedValueBox(0)
    /// While held, refresh answers wait here (after the server answered) until `releaseRefreshes()`.
    private let hold = NIOLockedValueBox<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    private let exchanges = NIOLockedValueBox<[(path: String, status: Int)]>([])

    package init() {}

    /// Statuses of the responses to requests whose path ends with `suffix`.
    package func statuses(pathEndingWith suffix: String) -> [Int] {
        exchanges.withLockedValue { $0.filter { $0.path.hasSuffix(suffix) }.map(\.status) }
    }

    package var refreshCount: Int { refreshes.withLockedValue { $0 } }
    package func holdRefreshes() { hold.withLockedValue { $0.held = true } }
    package func releaseRefreshes() {
        let waiting = hold.withLockedValue { state in
            defer { state = (false, []) }
            return state.waiting
        }
        waiting.forEach { $0.resume() }
    }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let isRefresh = request.body.map { String(decoding: $0, as: UTF8.self).contains("grant_type=refresh_token") } ?? false
        if isRefresh { refreshes.withLockedValue { $0 += 1 } }
        let response = try await inner.send(request)
        exchanges.withLockedValue { $0.append((request.url.path, response.status)) }
        // The hold comes after the server answered: the refresh succeeded there but reaches the SDK late.
        if isRefresh {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = hold.withLockedValue { state in
                    if state.held { state.waiting.append(continuation) }
                    return state.held
                }
                if !wait { continuation.resume() }
            }
        }
        return response
    }
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
    package func signedInClient(http: any HTTPClient = URLSessionHTTPClient(), storage: (any StorageAdapter)? = nil) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: http)
        try await client.initialize(config: sdkConfig(), storage: storage)
        _ = try await client.handleRedirectCallback(url: try await browse(try client.buildSignInURL()))
        return client
    }
}
