import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// Apple's published signing keys (`https://appleid.apple.com/auth/keys`, or a stand-in issuer's in tests), kept for
/// `keyCacheSeconds` (`RemoteKeySet`: concurrent requests share one fetch). A token with an unknown `kid` refetches at
/// most once a minute, so forged tokens cannot turn the server into a request amplifier against the key URL. Fetched
/// through the server's HTTP client with the providers' limits (`UpstreamHTTP`).
struct AppleKeySet: Sendable {
    private let keys: RemoteKeySet

    init(settings: AppleSettings, http: UpstreamHTTP, metrics: ServerMetrics) {
        let url = settings.jwksURL
        keys = RemoteKeySet(policy: .init(lifetime: TimeInterval(settings.keyCacheSeconds), refetchInterval: 60)) {
            () async throws -> JWKSet in
            guard let body = try? await http.get(url), let set = try? JSONDecoder().decode(JWKSet.self, from: body) else {
                metrics.jwksFetch(succeeded: false)
                throw AppleSignInFailure.keysUnavailable
            }
            metrics.jwksFetch(succeeded: true)
            return set
        }
    }

    /// Verifies `jws` with Apple's keys. Throws `JOSEError` as `CompactJWS.verify` does, or
    /// `AppleSignInFailure.keysUnavailable`.
    func verify(_ jws: CompactJWS, now: Date) async throws {
        try await keys.verify(jws, now: now)
    }
}
