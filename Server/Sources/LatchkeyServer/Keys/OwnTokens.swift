import Foundation
import LatchkeyJOSE
import Logging

/// The claims every short-lived token this server signs for its own later use carries (flow assertion, reachFive
/// login ticket, MFA step-up token): a `token_use` that says which one it is, and a JOSE `typ` of its own, so none can
/// stand in for another, nor for an ID token (`JWT`) or an access token (`at+jwt`) anywhere a token is verified.
protocol OwnTokenClaims: Codable {
    static var tokenUse: String { get }
    /// The JOSE header `typ` (RFC 8725 §3.11 explicit typing), e.g. `login-ticket+jwt`.
    static var jwtType: String { get }
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

/// Signs, verifies and spends the server's own short-lived tokens (`OwnTokenClaims`): reachFive login tickets, flow
/// assertions and step-up tokens.
struct OwnTokens: Sendable {
    let kit: TokenKit
    /// Flow assertions open the session their tokens will belong to.
    let sessions: SignInSessions

    private var keys: KeyRing { kit.keys }
    private var store: any SingleUseStore { kit.store }
    var clock: ServerClock { kit.clock }
    var issuer: String { kit.issuer }
    var lifetimes: TokenLifetimes { kit.lifetimes }

    /// Verifies one of our own tokens: signature against our published keys, `token_use`, `iss`, `aud` (when given)
    /// and expiry; with `consume`, spends its `jti` so it works once.
    func verifyOwnToken<C: OwnTokenClaims>(
        _ token: String, as type: C.Type, audience: String?,
        consume: Bool
    ) async throws(OwnTokenFailure) -> C {
        let claims: C
        do {
            let jws = try CompactJWS(parsing: token)
            guard jws.header.typ?.lowercased() == C.jwtType else { throw OwnTokenFailure.notOurs }
            try jws.verify(with: try await keys.verificationKeys(kid: jws.header.kid))
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

    /// Signs one of our own tokens with the current RS256 key and its own `typ`.
    func signOwnToken<C: OwnTokenClaims>(_ claims: C) async throws -> String {
        try await keys.signingKey(.rs256).sign(claims: claims, type: C.jwtType)
    }

    /// Spends a verified token's `jti` (for callers that check more before spending it); `.used` the second time.
    func consumeOwnToken(_ claims: some OwnTokenClaims) async throws(OwnTokenFailure) {
        let fresh: Bool
        do {
            fresh = try await store.consumeTokenId(claims.jti, expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)))
        } catch {
            throw .notOurs
        }
        guard fresh else { throw .used }
    }
}
