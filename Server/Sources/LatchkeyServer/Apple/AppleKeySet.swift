import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// Apple's published signing keys (`https://appleid.apple.com/auth/keys`, or a stand-in issuer's in tests), cached
/// for `keyCacheSeconds`. A token with an unknown `kid` refetches at most once a minute, so forged tokens cannot turn
/// the server into a request amplifier against the key URL.
actor AppleKeySet {
    private let url: URL
    private let cacheSeconds: TimeInterval
    private var cached: (keys: JWKSet, fetchedAt: Date)?
    private var lastForcedFetch: Date?
    private let session: URLSession
    private let metrics: ServerMetrics

    init(settings: AppleSettings, metrics: ServerMetrics) {
        self.metrics = metrics
        url = settings.jwksURL
        cacheSeconds = TimeInterval(settings.keyCacheSeconds)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        session = URLSession(configuration: configuration)
    }

    func verify(_ jws: CompactJWS, now: Date) async throws {
        let keys = try await keySet(now: now, force: false)
        do {
            _ = try jws.verify(with: keys)
        } catch JOSEError.noMatchingKey {
            if let last = lastForcedFetch, now.timeIntervalSince(last) < 60 { throw JOSEError.noMatchingKey(kid: jws.header.kid) }
            lastForcedFetch = now
            _ = try jws.verify(with: try await keySet(now: now, force: true))
        }
    }

    private func keySet(now: Date, force: Bool) async throws -> JWKSet {
        if !force, let cached, now.timeIntervalSince(cached.fetchedAt) < cacheSeconds { return cached.keys }
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let data: Data, response: URLResponse
        do { (data, response) = try await session.cancellationSafeData(for: request) } catch {
            metrics.jwksFetch(succeeded: false)
            throw AppleSignInFailure.keysUnavailable
        }
        guard (response as? HTTPURLResponse)?.statusCode == 200, let keys = try? JSONDecoder().decode(JWKSet.self, from: data) else {
            metrics.jwksFetch(succeeded: false)
            throw AppleSignInFailure.keysUnavailable
        }
        metrics.jwksFetch(succeeded: true)
        cached = (keys, now)
        return keys
    }
}
