import Foundation

/// Caches the provider's JWKS. A token naming an unknown `kid` triggers one refetch (key rotation), at most once per
/// `minimumRefetchInterval`, so a stream of forged tokens cannot turn the SDK into a request amplifier. Concurrent
/// callers share one fetch; the keys are kept until a token names one they do not hold (`RemoteKeySet`, whose rules the
/// server's key sets follow too).
public actor JWKSCache {
    private let keySet: RemoteKeySet
    /// The clock the refetch limit is measured on: the device's by default; tests set and advance it, so the rule never
    /// depends on how fast the machine runs.
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - url: the provider's `jwks_uri`.
    ///   - http: how the keys are fetched.
    ///   - minimumRefetchInterval: seconds between two refetches forced by an unknown `kid`.
    ///   - now: the current time (the device's clock unless given).
    public init(url: URL, http: any HTTPClient, minimumRefetchInterval: TimeInterval = 60, now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
        keySet = RemoteKeySet(policy: .init(lifetime: nil, refetchInterval: minimumRefetchInterval)) {
            let response = try await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"]))
            guard response.status == 200, let set = try? JSONDecoder().decode(JWKSet.self, from: response.body) else {
                throw LatchkeyError(.invalidConfiguration, "JWKS at \(url.absoluteString) is unavailable (HTTP \(response.status))")
            }
            return set
        }
    }

    /// Verifies `jws` against the cached keys, refetching once if no key matches.
    public nonisolated func verify(_ jws: CompactJWS) async throws {
        try await keySet.verify(jws, now: now())
    }
}
