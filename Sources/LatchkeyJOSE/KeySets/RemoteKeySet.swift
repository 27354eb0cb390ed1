import Foundation

/// A JSON Web Key Set published at a URL (a provider's `jwks_uri`, an application's, Apple's keys), kept after it is
/// fetched and fetched again on the rules below. The SDK's `JWKSCache` and every key set the server fetches use it, so
/// the rules are written once:
///
/// - **Shared fetches.** Concurrent callers wait for one fetch; a stream of tokens never makes two requests at once.
/// - **Lifetime.** Keys are used for `Policy.lifetime` after they were fetched (`nil`: until a token names a key they do
///   not hold).
/// - **Rotation, rate-limited.** A JWS no key matches (its `kid` is unknown, or no key verifies it) makes the set be
///   fetched again, at most once per `Policy.refetchInterval`; past that it is refused with
///   `JOSEError.noMatchingKey`. So JWSs naming made-up `kid`s cannot turn the verifier into a stream of requests to the
///   URL.
/// - **Failures.** A failed fetch throws what the fetch threw. With `Policy.retryAfterFailure`, the failure is
///   remembered that long and thrown again without a request (an unreachable URL does not cost every caller a
///   timeout).
///
/// Time is the caller's `now`, never read here: the server passes its clock and the SDK its injected one, so no rule
/// depends on how fast the machine runs.
public actor RemoteKeySet {
    /// When the set is fetched again.
    public struct Policy: Sendable, Equatable {
        /// Seconds fetched keys are used before they are fetched again; `nil`: kept until a JWS names an unknown key.
        public var lifetime: TimeInterval?
        /// Seconds between two fetches forced by a JWS no key matches.
        public var refetchInterval: TimeInterval
        /// Seconds a failed fetch is remembered (and thrown again without a request); `nil`: the next call tries again.
        public var retryAfterFailure: TimeInterval?

        public init(lifetime: TimeInterval?, refetchInterval: TimeInterval, retryAfterFailure: TimeInterval? = nil) {
            self.lifetime = lifetime
            self.refetchInterval = refetchInterval
            self.retryAfterFailure = retryAfterFailure
        }
    }

    /// One fetch of the set: throws when there is no usable set (its error reaches the caller as it is).
    public typealias Fetch = @Sendable () async throws -> JWKSet

    private struct Fetched: Sendable {
        var keys: JWKSet
        var at: Date
    }

    private let fetchSet: Fetch
    public nonisolated let policy: Policy
    /// The keys and when they were fetched, readable without the actor: every JWS is verified against them, and the
    /// verification (tens of microseconds of RSA) need not queue behind other callers on the actor.
    private nonisolated let published = Locked<Fetched?>(nil)
    private var failure: (error: any Error, at: Date)?
    /// When a JWS no key matched last forced a fetch; the rate limit applies between such fetches.
    private var lastForcedFetch: Date?
    private var inFlight: Task<JWKSet, any Error>?

    public init(policy: Policy, fetch: @escaping Fetch) {
        self.policy = policy
        self.fetchSet = fetch
    }

    /// Verifies `jws` with the set, fetching it when there is none (or it is past its lifetime), and once more (rate
    /// limited) when no key matches. Throws `JOSEError` as `CompactJWS.verify` does, or the fetch's error.
    public nonisolated func verify(_ jws: CompactJWS, now: Date) async throws {
        if let current = published.withLock({ $0 }), isFresh(current, now: now) {
            do {
                _ = try jws.verify(with: current.keys)
                return
            } catch JOSEError.noMatchingKey {
                // The actor decides whether a fetch is allowed.
            }
        }
        try await verifyFetching(jws, now: now)
    }

    /// The set: the one kept while it is within its lifetime, else fetched (or the remembered failure thrown).
    public func keys(now: Date) async throws -> JWKSet {
        try await keySet(now: now, force: false)
    }

    private func verifyFetching(_ jws: CompactJWS, now: Date) async throws {
        let current = try await keySet(now: now, force: false)
        do {
            _ = try jws.verify(with: current)
        } catch JOSEError.noMatchingKey {
            if let last = lastForcedFetch, abs(now.timeIntervalSince(last)) < policy.refetchInterval {
                throw JOSEError.noMatchingKey(kid: jws.header.kid)
            }
            lastForcedFetch = now
            _ = try jws.verify(with: try await keySet(now: now, force: true))
        }
    }

    private nonisolated func isFresh(_ fetched: Fetched, now: Date) -> Bool {
        guard let lifetime = policy.lifetime else { return true }
        let age = now.timeIntervalSince(fetched.at)
        return age >= 0 && age < lifetime
    }

    private func keySet(now: Date, force: Bool) async throws -> JWKSet {
        if !force, let current = published.withLock({ $0 }), isFresh(current, now: now) { return current.keys }
        if let inFlight { return try await inFlight.value }
        if !force, let failure, let remembered = policy.retryAfterFailure {
            let age = now.timeIntervalSince(failure.at)
            if age >= 0 && age < remembered { throw failure.error }
        }
        let task = Task { [fetchSet] in try await fetchSet() }
        inFlight = task
        defer { inFlight = nil }
        do {
            let keys = try await task.value
            failure = nil
            published.withLock { $0 = Fetched(keys: keys, at: now) }
            return keys
        } catch {
            failure = (error, now)
            throw error
        }
    }
}
