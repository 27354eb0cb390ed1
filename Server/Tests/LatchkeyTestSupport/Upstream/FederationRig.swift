import Foundation
import Latchkey
import LatchkeyServer

// A server whose demo application offers an OpenID provider double, and a browser that follows it: for the SDK's
// federation tests and the SwiftUI linked-accounts model's.

/// A server whose demo application offers the identity provider "corp", an OpenID provider double.
package struct FederationRig: Sendable {
    package let server: TestServer
    package let upstream: UpstreamProviderDouble

    package static func start() async throws -> FederationRig {
        let upstream = try await UpstreamProviderDouble.start(.oidc)
        let server: TestServer
        do {
            server = try await TestServer.start { configuration in
                configuration.identityProviders = [
                    IdentityProviderConfiguration(
                        id: "corp", kind: .oidc, name: "Corp SSO", issuer: upstream.base, clientId: upstream.clientId,
                        clientSecret: upstream.clientSecret, linkByVerifiedEmail: true)
                ]
                if let demo = configuration.clients.firstIndex(where: { $0.clientId == DevelopmentDefaults.demoClientId }) {
                    configuration.clients[demo].identityProviders = ["corp"]
                }
            }
        } catch {
            await upstream.stop()
            throw error
        }
        upstream.setBehavior { $0.registeredRedirectURI = server.issuer + "/federation/corp/callback" }
        return FederationRig(server: server, upstream: upstream)
    }

    package func stop() async {
        await server.stop()
        await upstream.stop()
    }

    /// An SDK client of the demo application whose user agent is a fresh test browser (no cookies: no session yet).
    package func client(
        storage: (any StorageAdapter)? = nil, http: any HTTPClient = productionHTTPClient()
    ) async throws -> (LatchkeyClient, FederatingUserAgent) {
        let agent = FederatingUserAgent(serverBase: server.base)
        let client = LatchkeyClient(http: http, userAgent: agent)
        try await client.initialize(config: server.sdkConfig(), storage: storage)
        return (client, agent)
    }
}

/// A user agent that is a test browser following every redirect (cookies kept, each hop recorded) through the
/// server and the provider, and posting a provider's self-submitting form (Apple's `form_post`), until it reaches the
/// redirect URI. A page that neither redirects nor posts itself is where the person would stop: it is kept
/// (`lastPage`) and the page counts as closed (`.canceled`).
package final class FederatingUserAgent: AuthorizationUserAgent, @unchecked Sendable {
    package struct Hop: Sendable, CustomStringConvertible {
        package var method: String
        package var url: String
        package var status: Int
        package var description: String { "\(method) \(url.prefix(90)) → \(status)" }
    }

    package let browser: TestBrowser
    /// The server's own pages are never submitted by themselves (its login page is a form too).
    let serverBase: String
    private let lock = NSLock()
    private var recorded: [Hop] = []
    private var stoppedAt: HTTPResult?
    private var arrived: String?

    package init(browser: TestBrowser = TestBrowser(), serverBase: String) {
        self.browser = browser
        self.serverBase = serverBase
    }

    /// Every request of the last `authorize`, in order.
    package var hops: [Hop] { lock.withLock { recorded } }
    /// The page the browser last stopped at (a failure shown instead of a redirect).
    package var lastPage: HTTPResult? { lock.withLock { stoppedAt } }
    /// The last URL the browser was sent to at the redirect URI (what the app received).
    package var lastArrival: String? { lock.withLock { arrived } }

    package func prepareRedirectURI() async throws -> String? { nil }

    package func authorize(url: URL) async throws -> URL {
        try await follow(url, until: "http://127.0.0.1:7777/callback")
    }

    package func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL {
        try await follow(url, until: presentation.redirectURI)
    }

    package func follow(_ start: URL, until redirectURI: String) async throws -> URL {
        lock.withLock {
            recorded = []
            stoppedAt = nil
        }
        var next = start.absoluteString
        var form: [String: String]?
        for _ in 0..<16 {
            if Self.arrives(next, at: redirectURI), let callback = URL(string: next) {
                lock.withLock { arrived = next }
                return callback
            }
            let answer: HTTPResult
            if let fields = form {
                answer = try await browser.postForm(next, fields)
            } else {
                answer = try await browser.get(next)
            }
            let hop = Hop(method: form == nil ? "GET" : "POST", url: next, status: answer.status)
            lock.withLock { recorded.append(hop) }
            if let location = answer.location {
                guard let resolved = URL(string: location, relativeTo: URL(string: next))?.absoluteString else {
                    throw LatchkeyError(.canceled, "the browser cannot follow \(location)")
                }
                next = resolved
                form = nil
                continue
            }
            if !next.hasPrefix(serverBase), answer.status == 200, let post = UpstreamProviderDouble.formPost(in: answer.text) {
                next = post.action
                form = post.fields
                continue
            }
            lock.withLock { stoppedAt = answer }
            throw LatchkeyError(.canceled, "the person closed the page the browser stopped at (HTTP \(answer.status))")
        }
        throw LatchkeyError(.canceled, "too many redirects")
    }

    /// Whether `url` is the redirect URI (scheme, host, port and path), whatever its query.
    package static func arrives(_ url: String, at redirectURI: String) -> Bool {
        guard let a = URLComponents(string: url), let b = URLComponents(string: redirectURI) else { return false }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && a.port == b.port
            && a.path == b.path
    }
}
