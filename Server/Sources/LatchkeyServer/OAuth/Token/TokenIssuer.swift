import Crypto
import Foundation
import LatchkeyJOSE

/// What the token endpoint returns (RFC 6749 §5.1, RFC 8693 §2.2.1).
struct TokenResponse: Encodable {
    var accessToken: String
    /// `Bearer`, or `DPoP` for a DPoP-bound access token (RFC 9449 §5).
    var tokenType = "Bearer"
    var expiresIn: Int
    var refreshToken: String?
    var idToken: String?
    var scope: String
    var issuedTokenType: String?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", expiresIn = "expires_in", refreshToken = "refresh_token"
        case idToken = "id_token", scope, issuedTokenType = "issued_token_type"
    }
}

/// Mints access tokens (ES256, `at+jwt`), ID tokens (RS256, the OIDC default every RP supports) and refresh tokens,
/// and records each in the store so revocation reaches them.
struct TokenIssuer: Sendable {
    let issuer: String
    let store: any TokenStore
    let keys: KeyRing
    let lifetimes: TokenLifetimes
    let clock: ServerClock
    let subjects: SubjectIdentifiers

    struct Grant {
        var user: UserRecord?
        /// `sub` of the access token (user id, or client id for client credentials).
        var subject: String
        var clientId: String
        var scope: [String]
        var audience: [String]? = nil
        var nonce: String? = nil
        var authTime: Date? = nil
        var sessionId: String? = nil
        var familyId: String? = nil
        var actor: String? = nil
        /// How the user authenticated (RFC 8176), from the session, code or refresh token; empty for client credentials.
        var amr: [String] = []
        /// The DPoP key the request proved (RFC 9449): the access token is bound to it (`cnf.jkt`), and so is the
        /// refresh token when the binding says so.
        var dpop: DPoPBinding? = nil
        /// The authorization request's `claims` (and `acr_values`), for the ID token and userinfo.
        var claims: ClaimsRequest? = nil
    }

    /// The key a token request proved, and whether its refresh token is bound too (public clients, RFC 9449 §5: their
    /// refresh tokens would otherwise work anywhere).
    struct DPoPBinding {
        var jkt: String
        var bindsRefreshToken: Bool
    }

    /// The `sub` `client` is given for the grant's account (`SubjectIdentifiers`); a client acting for itself is its own
    /// subject. `client` nil: the server's own console, a first-party application of public subjects.
    private func publishedSubject(of grant: Grant, client: ClientConfiguration?) -> String {
        guard grant.user != nil, let client else { return grant.subject }
        return subjects.subject(of: grant.subject, for: client)
    }

    /// An access token for `client` (nil: the server's own console). Its `sub` is what the client is given for the
    /// account; its row keeps the account id, which `TokenValidator` reads back.
    func accessToken(for grant: Grant, client: ClientConfiguration?) async throws -> (token: String, expiresIn: Int) {
        let now = clock.now
        let jti = Secrets.identifier()
        let audience = grant.audience ?? [issuer]
        let claims = AccessTokenClaims(
            iss: issuer, sub: publishedSubject(of: grant, client: client),
            aud: audience.count == 1 ? .string(audience[0]) : .array(audience.map(JSONValue.string)),
            exp: Int(now.timeIntervalSince1970) + lifetimes.accessToken, iat: Int(now.timeIntervalSince1970), jti: jti,
            clientId: grant.clientId, scope: grant.scope.joined(separator: " "),
            authTime: grant.authTime.map { Int($0.timeIntervalSince1970) }, sid: grant.sessionId,
            act: grant.actor.map { ["sub": $0] },
            amr: grant.amr.isEmpty ? nil : AuthenticationMethods.published(grant.amr), acr: AuthenticationMethods.acr(for: grant.amr),
            idp: AuthenticationMethods.provider(grant.amr),
            cnf: grant.dpop.map { AccessTokenClaims.Confirmation(jkt: $0.jkt) },
            userinfoClaims: grant.claims.flatMap { $0.userinfo.isEmpty ? nil : $0.userinfo.keys.sorted() },
            reused: AuthenticationMethods.isReused(grant.amr) ? true : nil)
        let token = try await keys.signingKey(.es256).sign(claims: claims, type: "at+jwt")
        try await store.insertAccessToken(
            AccessTokenRecord(
                jti: jti, familyId: grant.familyId, clientId: grant.clientId, subject: grant.subject,
                expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.accessToken)), revokedAt: nil))
        return (token, lifetimes.accessToken)
    }

    /// The ID token of `grant`, with `at_hash` for the access token issued beside it and `c_hash` for the code (the
    /// hybrid flow's, OpenID Connect Core §3.3.2.11); nil without the `openid` scope or a user.
    func idToken(for grant: Grant, client: ClientConfiguration, accessToken: String?, code: String? = nil) async throws -> String? {
        guard grant.scope.contains("openid"), let user = grant.user else { return nil }
        let now = Int(clock.now.timeIntervalSince1970)
        var claims = ScopeClaims.claims(of: user, scopes: grant.scope)
        // Claims the request asked for by name come too (OpenID Connect Core §5.5), whatever the scopes.
        if let requested = grant.claims {
            claims.merge(ClaimsRequest.userClaims(requested.idToken, of: user)) { scoped, _ in scoped }
        }
        claims["iss"] = .string(issuer)
        claims["sub"] = .string(subjects.subject(of: user.id, for: client))
        claims["aud"] = .string(grant.clientId)
        claims["azp"] = .string(grant.clientId)
        claims["iat"] = .number(Double(now))
        claims["exp"] = .number(Double(now + lifetimes.idToken))
        if let authTime = grant.authTime { claims["auth_time"] = .number(Double(Int(authTime.timeIntervalSince1970))) }
        if let nonce = grant.nonce { claims["nonce"] = .string(nonce) }
        if let sid = grant.sessionId { claims["sid"] = .string(sid) }
        if !grant.amr.isEmpty { claims["amr"] = .array(AuthenticationMethods.published(grant.amr).map(JSONValue.string)) }
        if let acr = AuthenticationMethods.acr(for: grant.amr) {
            claims["acr"] = .string(acr)
        } else if grant.claims?.wantsACR == true {
            // Asked for (acr_values or claims): say what was done (OpenID Connect Core §3.1.2.1).
            claims["acr"] = .string(AuthenticationMethods.singleFactorACR)
        }
        if let idp = AuthenticationMethods.provider(grant.amr) { claims["idp"] = .string(idp) }
        if let accessToken { claims["at_hash"] = .string(Self.atHash(accessToken)) }
        if let code { claims["c_hash"] = .string(Self.atHash(code)) }
        return try await keys.signingKey(client.idTokenSignedResponseAlg).sign(claims: claims, type: "JWT")
    }

    /// OIDC Core §3.1.3.6 (and §3.3.2.11 for `c_hash`): base64url of the left half of SHA-256 of the access token or
    /// code (RS256 and ES256 both use SHA-256).
    static func atHash(_ accessToken: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8))).prefix(16))
    }

    /// A new refresh token in `familyId`; the caller persists the record (insert, or rotate atomically).
    func refreshToken(for grant: Grant, familyId: String) -> (token: String, record: RefreshTokenRecord) {
        let now = clock.now
        let token = Secrets.token()
        return (
            token,
            RefreshTokenRecord(
                tokenHash: Secrets.digest(token), familyId: familyId, clientId: grant.clientId, userId: grant.subject,
                scope: grant.scope, sessionId: grant.sessionId, authTime: grant.authTime ?? now, createdAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.refreshToken)), usedAt: nil, amr: grant.amr,
                jkt: grant.dpop.map { $0.bindsRefreshToken ? $0.jkt : RefreshTokenRecord.anyDPoPKey })
        )
    }
}
