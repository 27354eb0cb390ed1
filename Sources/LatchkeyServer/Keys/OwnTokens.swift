import Foundation
import LatchkeyJOSE

/// The claims every short-lived token this server signs for its own later use carries (flow assertion, reachFive
/// login ticket, MFA step-up token): a `token_use` that says which one it is, so none can stand in for another.
protocol OwnTokenClaims: Decodable {
    static var tokenUse: String { get }
    var iss: String { get }
    var aud: String { get }
    var exp: Int { get }
    var jti: String { get }
    var tokenUse: String { get }
}

/// Why one of our own tokens was refused; each caller words it for its dialect.
enum OwnTokenFailure: Error, Equatable {
    /// Not signed by us, not this kind of token, or not parseable.
    case notOurs
    case otherAudience
    case expired
    /// Its `jti` was already consumed.
    case used
}

extension IdentityServer {
    /// Verifies one of our own tokens: signature against our published keys, `token_use`, `iss`, `aud` (when given)
    /// and expiry; with `consume`, spends its `jti` so it works once.
    func verifyOwnToken<C: OwnTokenClaims>(_ token: String, as type: C.Type, audience: String?,
                                           consume: Bool) async throws(OwnTokenFailure) -> C {
        let claims: C
        do {
            let jws = try CompactJWS(parsing: token)
            try jws.verify(with: try await keys.jwks())
            claims = try jws.claims(as: C.self)
        } catch {
            throw .notOurs
        }
        guard claims.tokenUse == C.tokenUse, claims.iss == issuer else { throw .notOurs }
        if let audience, claims.aud != audience { throw .otherAudience }
        guard TimeInterval(claims.exp) > clock.now.timeIntervalSince1970 else { throw .expired }
        if consume { try await consumeOwnToken(claims) }
        return claims
    }

    /// Spends a verified token's `jti` (for callers that check more before spending it); `.used` the second time.
    func consumeOwnToken(_ claims: some OwnTokenClaims) async throws(OwnTokenFailure) {
        let fresh: Bool
        do {
            fresh = try await store.consumeTokenId(claims.jti, expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)), now: clock.now)
        } catch {
            throw .notOurs
        }
        guard fresh else { throw .used }
    }
}
