import Foundation

/// Caches the provider's JWKS. A token naming an unknown `kid` triggers one refetch (key rotation), at most once per
/// `minimumRefetchInterval`, so a stream of forged tokens cannot turn the SDK into a request amplifier.
public actor JWKSCache {
    private let url: URL
    private let http: any HTTPClient
    private let minimumRefetchInterval: TimeInterval
    private var keys: JWKSet?
    /// `keys`, readable without the actor: every ID token is verified against it, and the verification (tens of
    /// microseconds of RSA) need not queue behind other callers on the actor.
    private nonisolated let published = Locked<JWKSet?>(nil)
    /// When an unknown `kid` last forced a refetch; the rate limit applies between such refetches.
    private var lastForcedRefetch: Date?
    private var inFlight: Task<JWKSet, any Error>?
    /// The clock the refetch limit is measured on: the device's by default; tests set and advance it, so the rule never
    /// depends on how fast the machine runs.
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - url: the provider's `jwks_uri`.
    ///   - http: how the keys are fetched.
    ///   - minimumRefetchInterval: seconds between two refetches forced by an unknown `kid`.
    ///   - now: the current time (the device's clock unless given).
    public init(url: URL, http: any HTTPClient, minimumRefetchInterval: TimeInterval = 60, now: @escaping @Sendable () -> Date = { Date() }) {
        self.url = url
        self.http = http
        self.minimumRefetchInterval = minimumRefetchInterval
        self.now = now
    }

    /// Verifies `jws` against the cached keys, refetching once if no key matches.
    public nonisolated func verify(_ jws: CompactJWS) async throws {
        guard let current = published.withLock({ $0 }) else { return try await verifyFetching(jws) }
        do {
            try jws.verify(with: current)
        } catch JOSEError.noMatchingKey {
            try await verifyFetching(jws)  // the actor decides whether a refetch is allowed
        }
    }

    /// `verify` on the actor: fetches the keys when there are none, and refetches once (rate-limited) when none matches.
    private func verifyFetching(_ jws: CompactJWS) async throws {
        let current = try await keySet(forceRefresh: false)
        do {
            try jws.verify(with: current)
        } catch JOSEError.noMatchingKey {
            let time = now()
            if let last = lastForcedRefetch, time.timeIntervalSince(last) < minimumRefetchInterval {
                throw JOSEError.noMatchingKey(kid: jws.header.kid)
            }
            lastForcedRefetch = time
            try jws.verify(with: try await keySet(forceRefresh: true))
        }
    }

    /// Concurrent callers share one fetch.
    private func keySet(forceRefresh: Bool) async throws -> JWKSet {
        if !forceRefresh, let keys { return keys }
        if let inFlight { return try await inFlight.value }
        let task = Task { [url, http] in
            let response = try await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"]))
            guard response.status == 200, let set = try? JSONDecoder().decode(JWKSet.self, from: response.body) else {
                throw LatchkeyError(.invalidConfiguration, "JWKS at \(url.absoluteString) is unavailable (HTTP \(response.status))")
            }
            return set
        }
        inFlight = task
        defer { inFlight = nil }
        let set = try await task.value
        keys = set
        published.withLock { $0 = set }
        return set
    }
}
