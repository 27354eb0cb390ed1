import Foundation
import LatchkeyJOSE
import Logging

/// The keys an application's client assertions and request objects are verified with: its `jwks` when it registered
/// them by value, else the set published at its `jwks_uri` (RFC 7591 §2, OpenID Connect Core §10.1.1), fetched and
/// kept by `ClientKeySetCache`.
///
/// A JWS no key matches (a `kid` the set does not hold: the application rotated its keys) makes the set be fetched
/// again once, at most every `ClientKeySetCache.refetchSeconds` per application, so JWSs naming made-up `kid`s cannot
/// turn the server into a stream of requests to the application's URL.
struct ClientKeySets: Sendable {
    let cache: ClientKeySetCache

    init(fetcher: ClientDocumentFetcher, logger: Logger) {
        cache = ClientKeySetCache(fetcher: fetcher, logger: logger)
    }

    /// The set at the application's `jwks_uri` could not be fetched or is not acceptable (`reason`: technical
    /// English, no key material).
    struct Unavailable: Error, Sendable {
        let reason: String
    }

    /// Verifies `jws` with `client`'s keys. Throws `JOSEError` as `CompactJWS.verify` does, `Unavailable` when the
    /// keys at its `jwks_uri` cannot be had, and `JOSEError.noMatchingKey` for an application with no keys at all.
    func verify(_ jws: CompactJWS, client: ClientConfiguration, now: Date) async throws {
        if let jwks = client.jwks {
            _ = try jws.verify(with: jwks)
            return
        }
        guard let keySet = await cache.keySet(for: client) else { throw JOSEError.noMatchingKey(kid: jws.header.kid) }
        // A key the application published since is fetched again (when the last such fetch is old enough).
        try await keySet.verify(jws, now: now)
    }
}

/// The key sets fetched from applications' `jwks_uri`s, by application (and URL and the settings they were checked
/// against, so a changed registration is fetched anew), each a `RemoteKeySet`: kept for `lifetimeSeconds`, fetched
/// again for an unknown `kid` at most every `refetchSeconds`, and a failure remembered that long (an unreachable URL does
/// not cost every request a timeout). Concurrent requests share one fetch.
actor ClientKeySetCache {
    static let lifetimeSeconds: TimeInterval = 300
    static let refetchSeconds: TimeInterval = 30
    /// Far more applications than use `jwks_uri` in a deployment; past it the memory starts over rather than grow.
    static let capacity = 1024
    static let policy = RemoteKeySet.Policy(lifetime: lifetimeSeconds, refetchInterval: refetchSeconds, retryAfterFailure: refetchSeconds)

    private let fetcher: ClientDocumentFetcher
    private let logger: Logger
    private var entries: [String: RemoteKeySet] = [:]

    init(fetcher: ClientDocumentFetcher, logger: Logger) {
        self.fetcher = fetcher
        self.logger = logger
    }

    /// `client`'s key set from its `jwks_uri`, or nil when it has none.
    func keySet(for client: ClientConfiguration) -> RemoteKeySet? {
        guard let uri = client.jwksURI else { return nil }
        let key = [client.clientId, uri, client.tokenEndpointAuthSigningAlg?.rawValue ?? "", client.securityProfile?.rawValue ?? ""]
            .joined(separator: "\u{0}")
        if let known = entries[key] { return known }
        if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
        let (fetcher, logger) = (self.fetcher, self.logger)
        let made = RemoteKeySet(policy: Self.policy) { () async throws -> JWKSet in
            try await Self.fetch(uri, client: client, fetcher: fetcher, logger: logger).get()
        }
        entries[key] = made
        return made
    }

    /// One fetch of the set, read and checked as a `jwks` by value is (`ClientKeys.parse`, `ClientKeys.check`).
    private static func fetch(_ uri: String, client: ClientConfiguration, fetcher: ClientDocumentFetcher, logger: Logger) async
        -> Result<JWKSet, ClientKeySets.Unavailable>
    {
        func refuse(_ why: String) -> Result<JWKSet, ClientKeySets.Unavailable> {
            logger.warning(
                "an application's jwks_uri did not give a usable key set",
                metadata: ["client": .string(client.clientId), "reason": .string(why)])
            return .failure(ClientKeySets.Unavailable(reason: why))
        }
        guard let url = URL(string: uri) else { return refuse("jwks_uri is not a URL") }
        let body: Data
        do { body = try await fetcher.fetch(url, accept: "application/jwk-set+json, application/json", client: client.clientId) } catch {
            // The fetcher logged why; the application learns only that it failed (`ClientDocumentFetcher.Failure`).
            return .failure(ClientKeySets.Unavailable(reason: ClientDocumentFetcher.Failure.publicReason))
        }
        guard let json = try? JSONValue.parse(body) else { return refuse("the answer at jwks_uri is not JSON") }
        do {
            let keys = try ClientKeys.parse(json)
            try ClientKeys.check(keys, for: client)
            logger.debug("fetched an application's key set", metadata: ["client": .string(client.clientId), "keys": "\(keys.keys.count)"])
            return .success(keys)
        } catch {
            return refuse("the key set at jwks_uri: \(error.reason)")
        }
    }
}
