import Foundation
import LatchkeyJOSE

/// Verifies tokens this server issued (access tokens at userinfo/introspection, subject tokens, ID-token hints).
struct TokenValidator: Sendable {
    let issuer: String
    let store: any TokenStore
    let keys: KeyRing
    let clock: ServerClock

    /// A live access token: our signature, `typ at+jwt`, our issuer, not expired, not revoked, family not revoked.
    ///
    /// The claims come back with the account id of the token's row in `sub` (a pairwise application's token names the
    /// account by a value the server cannot turn back into an id), and the token's own `sub` in `publishedSubject`.
    func accessToken(_ token: String) async throws(OAuthError) -> AccessTokenClaims {
        var claims: AccessTokenClaims
        do {
            let jws = try CompactJWS(parsing: token)
            guard jws.header.typ?.lowercased() == "at+jwt" else { throw OAuthError(.invalidToken, "not an access token") }
            try jws.verify(with: try await keys.verificationKeys(kid: jws.header.kid))
            claims = try jws.claims(as: AccessTokenClaims.self)
        } catch let error as OAuthError {
            throw error
        } catch {
            throw OAuthError(.invalidToken, "the access token is not valid")
        }
        guard claims.iss == issuer else { throw OAuthError(.invalidToken, "the access token was issued by another server") }
        guard TimeInterval(claims.exp) > clock.now.timeIntervalSince1970 else { throw OAuthError(.invalidToken, "the access token has expired") }
        do {
            guard let record = try await store.accessToken(jti: claims.jti), record.revokedAt == nil else {
                throw OAuthError(.invalidToken, "the access token has been revoked")
            }
            if let familyId = record.familyId, let family = try await store.family(id: familyId), family.revokedAt != nil {
                throw OAuthError(.invalidToken, "the access token has been revoked")
            }
            claims.publishedSubject = claims.sub
            claims.sub = record.subject
        } catch let error as OAuthError {
            throw error
        } catch {
            throw OAuthError(.serverError, "could not check the token's state")
        }
        return claims
    }

    /// A live access token meant for this server's own resources (userinfo, `/users/me`, SCIM): RFC 9068 §4, a token
    /// obtained by token exchange for another API (`aud`) does not work here.
    func resourceAccessToken(_ token: String) async throws(OAuthError) -> AccessTokenClaims {
        let claims = try await accessToken(token)
        guard claims.aud.stringArray?.contains(issuer) == true else { throw OAuthError(.invalidToken, "the access token is for another audience") }
        return claims
    }

    /// One of our ID tokens (`typ: JWT`, our signature and issuer; expiry checked unless `allowExpired`), for ID-token
    /// hints at logout. The server's own single-use tokens carry a `typ` of their own and access tokens `at+jwt`, so
    /// neither passes as an ID token.
    func idToken(_ token: String, allowExpired: Bool = false) async throws(OAuthError) -> (header: JWSHeader, claims: RegisteredClaims) {
        do {
            let jws = try CompactJWS(parsing: token)
            guard jws.header.typ == nil || jws.header.typ?.lowercased() == "jwt" else { throw OAuthError(.invalidGrant, "not an ID token") }
            try jws.verify(with: try await keys.verificationKeys(kid: jws.header.kid))
            let claims = try jws.claims(as: RegisteredClaims.self)
            guard claims.iss == issuer else { throw OAuthError(.invalidGrant, "the token was issued by another server") }
            if !allowExpired {
                guard let exp = claims.exp, exp > clock.now.timeIntervalSince1970 else { throw OAuthError(.invalidGrant, "the token has expired") }
            }
            return (jws.header, claims)
        } catch let error as OAuthError {
            throw error
        } catch {
            throw OAuthError(.invalidGrant, "the token is not a valid token of this server")
        }
    }
}
