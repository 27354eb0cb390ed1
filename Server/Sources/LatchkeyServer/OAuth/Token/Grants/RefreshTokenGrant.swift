import Foundation

/// `refresh_token` (RFC 6749 §6): rotation with replay detection (a reuse revokes the family, except the successor
/// handed out again within the reuse interval), the DPoP key a token is bound to, the sign-in session it lives by, and
/// FAPI 2.0's unrotated tokens.
struct RefreshTokenGrant: GrantHandler {
    let store: any TokenStore & UserStore & SessionStore
    let tokens: GrantTokens
    /// What a rotated refresh token presented again soon after gets (`refresh_token_reuse_seconds`).
    let refreshReuse: RefreshTokenReuse
    let metrics: ServerMetrics
    let audit: AuditTrail

    func tokens(for request: GrantRequest) async throws -> TokenResponse {
        let client = request.client, dpop = request.dpop, logger = request.logger
        let clock = tokens.clock
        let presented = try request.parameters.required("refresh_token")
        let hash = Secrets.digest(presented)
        guard let current = try await store.refreshToken(hash: hash), current.clientId == client.clientId else {
            throw OAuthError(.invalidGrant, "the refresh token is not valid")
        }
        // A bound refresh token is worth nothing without its key (RFC 9449 §5): checked before it is spent, so a thief
        // cannot even burn it. A confidential client's is not bound to the key (its authentication is the sender
        // constraint, and it may rotate keys), but a session that began with DPoP does not drop it at a refresh: that
        // would turn a leaked secret and refresh token into bearer access tokens.
        if let bound = current.jkt {
            guard let dpop else {
                throw OAuthError(
                    .invalidDPoPProof,
                    bound == RefreshTokenRecord.anyDPoPKey
                        ? "the refresh token was issued with DPoP: send a DPoP proof with the refresh request"
                        : "the refresh token is bound to a DPoP key: send a proof made with it")
            }
            guard bound == RefreshTokenRecord.anyDPoPKey || Secrets.constantTimeEquals(dpop.jkt, bound) else {
                throw OAuthError(.invalidGrant, "the refresh token is bound to another DPoP key")
            }
        }
        var scope = current.scope
        if let requested = try request.parameters.single("scope")?.split(separator: " ").map(String.init) {
            guard requested.allSatisfy(current.scope.contains) else { throw OAuthError(.invalidScope, "scope exceeds the original grant") }
            scope = requested
        }
        guard let user = try await store.user(id: current.userId), !user.disabled else {
            try await store.revokeFamily(id: current.familyId, reason: "user disabled", now: clock.now)
            throw OAuthError(.invalidGrant, "the user can no longer sign in")
        }
        try await requireLiveSession(for: current)
        // A bound refresh token's successor stays bound (to the same key, checked above).
        var binding = dpop
        if let bound = current.jkt, bound != RefreshTokenRecord.anyDPoPKey { binding?.bindsRefreshToken = true }
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: client.clientId, scope: scope,
            authTime: current.authTime, sessionId: current.sessionId, familyId: current.familyId,
            amr: current.amr, dpop: binding)
        if client.securityProfile == .fapi2 {
            // FAPI 2.0 Security Profile §5.3.2.1: no rotation. The token is sender-constrained (the client's
            // `private_key_jwt` authentication, and a public client's DPoP key), so a stolen copy is useless, and a
            // client whose answer was lost can simply retry. It lives until it expires or its family is revoked.
            guard current.usedAt == nil else { throw OAuthError(.invalidGrant, "the refresh token was replaced (rotated before)") }
            guard current.expiresAt > clock.now else { throw OAuthError(.invalidGrant, "the refresh token has expired") }
            guard let family = try await store.family(id: current.familyId), family.revokedAt == nil else {
                throw OAuthError(.invalidGrant, "the refresh token has been revoked")
            }
            return try await tokens.issue(grant, client: client, newRefreshInFamily: nil)  // no refresh_token: the client keeps its own
        }
        let now = clock.now
        let next = tokens.issuing.refreshToken(for: grant, familyId: current.familyId)
        let reuse = try refreshReuse.keeping(successor: next.token, presented: hash, now: now)
        var successor = next.token
        switch try await store.rotateRefreshToken(presented: hash, next: next.record, reuse: reuse, now: now) {
        case .rotated: metrics.refreshRotated()
        case .reissued(_, let sealed, let sealedOn):
            // A retry of a rotation whose answer was lost, or a second process of the app, or a killed process's
            // request arriving late: the family's one live token, so that whichever copy the app keeps is it.
            successor = try refreshReuse.successor(sealed, presented: sealedOn)
            metrics.refreshReissued()
            logger.info(
                "rotated refresh token presented again within the reuse interval; successor handed out again",
                metadata: ["client": .string(client.clientId)])
        case .replayed:
            metrics.refreshReplayDetected()
            logger.warning("refresh token replayed; family revoked", metadata: ["client": .string(client.clientId)])
            await audit.record(
                .refreshTokenReplayed, .failure, subject: current.userId, actor: AuditEvent.clientActor(client.clientId),
                details: ["family": current.familyId, "action": "family_revoked"], origin: request.origin)
            throw OAuthError(.invalidGrant, "the refresh token was already used; the session has been revoked for safety")
        case .revoked: throw OAuthError(.invalidGrant, "the refresh token has been revoked")
        case .expired: throw OAuthError(.invalidGrant, "the refresh token has expired")
        case .notFound: throw OAuthError(.invalidGrant, "the refresh token is not valid")
        }
        var response = try await tokens.issue(grant, client: client, newRefreshInFamily: nil)
        response.refreshToken = successor
        return response
    }

    /// A refresh token granted without `offline_access` lives no longer than the sign-in session it came from: once the
    /// session has ended (logout, sign-out, a password change elsewhere) or expired, it is refused and its family revoked.
    /// With `offline_access` the token outlives the session's expiry (not its explicit end, which revokes the family).
    private func requireLiveSession(for token: RefreshTokenRecord) async throws {
        guard !token.scope.contains("offline_access") else { return }
        let now = tokens.clock.now
        if let sessionId = token.sessionId, let session = try await store.session(id: sessionId),
            session.endedAt == nil, session.expiresAt > now
        {
            return
        }
        try await store.revokeFamily(id: token.familyId, reason: "session over", now: now)
        throw OAuthError(.invalidGrant, "the sign-in session has ended; sign in again (request offline_access for longer-lived refresh tokens)")
    }
}
