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
        guard client.jwksURI != nil else { throw JOSEError.noMatchingKey(kid: jws.header.kid) }
        let keys = try await cache.keys(for: client, now: now, refresh: false)
        do {
            _ = try jws.verify(with: keys)
        } catch JOSEError.noMatchingKey {
            // Perhaps a key the application published since: the set is fetched again (when the last fetch is old
            // enough), and the JWS tried once more.
            let again = try await cache.keys(for: client, now: now, refresh: true)
            _ = try jws.verify(with: again)
        }
    }
}

/// The key sets fetched from applications' `jwks_uri`s, by application (and URL and the settings they were checked
/// against, so a changed registration is fetched anew), for `lifetimeSeconds`. A fetch is attempted at most every
/// `refetchSeconds` per entry, whether it is a refresh asked for by an unknown `kid` or a retry after a failure (which
/// is remembered for that long: an unreachable URL does not cost every request a timeout). Concurrent requests share
/// one fetch.
actor ClientKeySetCache {
    static let lifetimeSeconds: TimeInterval = 300
    static let refetchSeconds: TimeInterval = 30
    /// Far more applications than use `jwks_uri` in a deployment; past it the memory starts over rather than grow.
    static let capacity = 1024

    private struct Entry {
        var keys: JWKSet?
        var failure: ClientKeySets.Unavailable?
        var fetchedAt: Date
    }

    private let fetcher: ClientDocumentFetcher
    private let logger: Logger
    private var entries: [String: Entry] = [:]
    private var inFlight: [String: Task<Result<JWKSet, ClientKeySets.Unavailable>, Never>] = [:]

    init(fetcher: ClientDocumentFetcher, logger: Logger) {
        self.fetcher = fetcher
        self.logger = logger
    }

    /// `client`'s key set from its `jwks_uri`: the one kept while it is fresh (and `refresh` is false), else fetched
    /// unless the last attempt is under `refetchSeconds` old (then what that attempt gave).
    func keys(for client: ClientConfiguration, now: Date, refresh: Bool) async throws(ClientKeySets.Unavailable) -> JWKSet {
        guard let uri = client.jwksURI else { throw ClientKeySets.Unavailable(reason: "the application has no jwks_uri") }
        let key = [client.clientId, uri, client.tokenEndpointAuthSigningAlg?.rawValue ?? "", client.securityProfile?.rawValue ?? ""]
            .joined(separator: "\u{0}")
        if let entry = entries[key] {
            let age = now.timeIntervalSince(entry.fetchedAt)
            let recent = age >= 0 && age < Self.refetchSeconds
            if let keys = entry.keys, recent || (!refresh && age >= 0 && age < Self.lifetimeSeconds) { return keys }
            // A failure is kept only until another attempt is allowed.
            if entry.keys == nil, recent { throw entry.failure ?? ClientKeySets.Unavailable(reason: "the key set could not be fetched") }
        }
        let fetch: Task<Result<JWKSet, ClientKeySets.Unavailable>, Never>
        if let running = inFlight[key] {
            fetch = running
        } else {
            let (fetcher, logger) = (self.fetcher, self.logger)
            fetch = Task { await Self.fetch(uri, client: client, fetcher: fetcher, logger: logger) }
            inFlight[key] = fetch
        }
        let result = await fetch.value
        if inFlight[key] == fetch {
            inFlight[key] = nil
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            switch result {
            case .success(let keys): entries[key] = Entry(keys: keys, failure: nil, fetchedAt: now)
            case .failure(let failure): entries[key] = Entry(keys: nil, failure: failure, fetchedAt: now)
            }
        }
        return try result.get()
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
