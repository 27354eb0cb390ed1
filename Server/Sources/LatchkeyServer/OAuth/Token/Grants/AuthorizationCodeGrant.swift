import Foundation

/// `authorization_code` (RFC 6749 §4.1.3, RFC 7636): a single-use code for the client it was issued to, with its
/// redirect URI, PKCE verifier and DPoP key, redeemed into a new token family.
struct AuthorizationCodeGrant: GrantHandler {
    let store: any AuthorizationCodeStore & UserStore
    let tokens: GrantTokens

    func tokens(for request: GrantRequest) async throws -> TokenResponse {
        let params = request.parameters, client = request.client, dpop = request.dpop
        let code = try params.required("code")
        let now = tokens.clock.now
        let codeHash = Secrets.digest(code)
        let familyId = Secrets.identifier()
        let record: AuthorizationCodeRecord
        switch try await store.redeemAuthorizationCode(hash: codeHash, familyId: familyId, now: now) {
        case .notFound: throw OAuthError(.invalidGrant, "the authorization code is not valid")
        case .replayed(let family):
            request.logger.warning(
                "authorization code replayed", metadata: ["client": .string(client.clientId), "family_revoked": .string("\(family != nil)")])
            throw OAuthError(.invalidGrant, "the authorization code was already used; tokens issued with it have been revoked")
        case .redeemed(let r): record = r
        }
        guard record.expiresAt > now else { throw OAuthError(.invalidGrant, "the authorization code has expired") }
        guard record.clientId == client.clientId else { throw OAuthError(.invalidGrant, "the authorization code was issued to another client") }
        guard try params.single("redirect_uri") == record.redirectUri else {
            throw OAuthError(.invalidGrant, "redirect_uri does not match the authorization request")
        }
        let verifier = try params.single("code_verifier")
        if let challenge = record.codeChallenge {
            guard let verifier else { throw OAuthError(.invalidGrant, "code_verifier is required (PKCE)") }
            guard PKCE.verify(verifier: verifier, challenge: challenge) else {
                throw OAuthError(.invalidGrant, "code_verifier does not match the code_challenge")
            }
        } else if verifier != nil {
            throw OAuthError(.invalidGrant, "code_verifier sent but the authorization request had no code_challenge")
        }
        // RFC 9449 §10: a code bound to a DPoP key is redeemed only with a proof by that key.
        if let bound = record.dpopJkt {
            guard let dpop, Secrets.constantTimeEquals(dpop.jkt, bound) else {
                throw OAuthError(
                    .invalidDPoPProof,
                    dpop == nil
                        ? "the authorization code is bound to a DPoP key: send a DPoP proof by that key"
                        : "the DPoP proof was made with another key than the authorization code is bound to (dpop_jkt)")
            }
        }
        guard let user = try await store.user(id: record.userId), !user.disabled else {
            throw OAuthError(.invalidGrant, "the user can no longer sign in")
        }
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: client.clientId, scope: record.scope, nonce: record.nonce,
            authTime: record.authTime, sessionId: record.sessionId, familyId: familyId, amr: record.amr, dpop: dpop,
            claims: ClaimsRequest.from(stored: record.claims))
        return try await tokens.issue(grant, client: client, newRefreshInFamily: familyId)
    }
}
