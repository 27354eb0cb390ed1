import Foundation
import LatchkeyJOSE

/// The server's signing keys: one current ES256 and one current RS256 key, plus retired keys that stay in the JWKS
/// until every token they signed has expired. Keys live in the store so restarts and several instances agree.
actor KeyRing {
    private let store: any Store
    private let clock: ServerClock
    /// How long a retired key remains published (the longest token lifetime plus margin).
    private let retentionAfterRetirement: TimeInterval
    private var cached: (loadedAt: Date, current: [JWSAlgorithm: SigningKey], published: JWKSet)?

    init(store: any Store, clock: ServerClock, retentionAfterRetirement: TimeInterval) {
        self.store = store
        self.clock = clock
        self.retentionAfterRetirement = retentionAfterRetirement
    }

    /// Creates the first keys when the store has none (first start).
    func bootstrap() async throws {
        let keys = try await store.signingKeys()
        for alg in [JWSAlgorithm.es256, .rs256] where !keys.contains(where: { $0.algorithm == alg.rawValue && $0.retiredAt == nil }) {
            try await addKey(alg)
        }
        cached = nil
    }

    /// Generates new current keys and retires the previous ones (they remain verifiable until they age out).
    func rotate() async throws -> [String] {
        let now = clock.now
        try await store.retireSigningKeys(before: now.addingTimeInterval(1), now: now)
        let added = [try await addKey(.es256), try await addKey(.rs256)]
        cached = nil
        return added
    }

    @discardableResult
    private func addKey(_ alg: JWSAlgorithm) async throws -> String {
        let key = try SigningKey.generate(alg)
        try await store.insertSigningKey(
            SigningKeyRecord(
                kid: key.kid, algorithm: alg.rawValue, pem: key.pemRepresentation,
                createdAt: clock.now, retiredAt: nil))
        return key.kid
    }

    func signingKey(_ alg: JWSAlgorithm) async throws -> SigningKey {
        guard let key = try await load().current[alg] else { throw ServerError.internal("no current \(alg.rawValue) signing key") }
        return key
    }

    func jwks() async throws -> JWKSet { try await load().published }

    /// The keys to verify a token signed with `kid`. A kid this instance has not loaded yet may be a key another
    /// instance just made (`latchkey keys rotate`, a first start racing this one): then the store is read again at once
    /// rather than after the 30 s reload, so no instance refuses a sibling's fresh token. At most one such early reload
    /// a second, so made-up kids cannot turn every request into a database read.
    func verificationKeys(kid: String?) async throws -> JWKSet {
        let published = try await load().published
        guard let kid, !published.keys.contains(where: { $0.kid == kid }), let cached,
            clock.now.timeIntervalSince(cached.loadedAt) >= 1
        else { return published }
        self.cached = nil
        return try await load().published
    }

    /// Reloads at most every 30 s so a `latchkey keys rotate` against the same database is picked up by running servers.
    private func load() async throws -> (current: [JWSAlgorithm: SigningKey], published: JWKSet) {
        let now = clock.now
        if let cached, now.timeIntervalSince(cached.loadedAt) < 30 { return (cached.current, cached.published) }
        var current: [JWSAlgorithm: SigningKey] = [:]
        var published: [JWK] = []
        for record in try await store.signingKeys() {
            guard let alg = JWSAlgorithm(rawValue: record.algorithm) else { continue }
            if let retired = record.retiredAt, now.timeIntervalSince(retired) > retentionAfterRetirement { continue }
            let key = try SigningKey(algorithm: alg, pem: record.pem)
            published.append(try key.publicJWK())
            if record.retiredAt == nil { current[alg] = key }  // ordered by creation: the newest wins
        }
        cached = (now, current, JWKSet(keys: published))
        return (current, JWKSet(keys: published))
    }
}
