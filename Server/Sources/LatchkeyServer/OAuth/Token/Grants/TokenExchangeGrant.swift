import Foundation
import LatchkeyJOSE

/// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693). Only explicitly typed subject tokens are accepted: a
/// live access token of ours (`typ: at+jwt`) whose audience the exchanging client may use, or the flow assertion
/// (`…:jwt`, routed by its `token_use` and verified with its own `typ`). ID tokens, login tickets and step-up tokens are
/// never exchanged: they prove a sign-in to one party, not a grant. The result is an access token only, with at most the
/// subject's scope, in the subject's token family and session, so family revocation, logout and a password change
/// reach it.
struct TokenExchangeGrant: GrantHandler {
    let store: any TokenStore & UserStore & ClientStore & ConsentStore
    let tokens: GrantTokens
    /// Flow assertions are redeemed here.
    let ownTokens: OwnTokens

    static let tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
    static let tokenTypeJWT = "urn:ietf:params:oauth:token-type:jwt"
    static let tokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"

    func tokens(for request: GrantRequest) async throws -> TokenResponse {
        let params = request.parameters, client = request.client, dpop = request.dpop
        let issuer = tokens.issuer
        let subjectToken = try params.required("subject_token")
        let subjectType = try params.required("subject_token_type")
        if let requestedType = try params.single("requested_token_type"), requestedType != Self.tokenTypeAccessToken {
            throw OAuthError(.invalidRequest, "only access tokens can be requested")
        }
        if try params.single("actor_token") != nil { throw OAuthError(.invalidRequest, "actor_token is not supported") }
        switch subjectType {
        case Self.tokenTypeJWT:
            guard Self.isFlowAssertion(subjectToken) else {
                throw OAuthError(.invalidGrant, "the only JWT accepted as subject_token is a flow assertion")
            }
            return try await flowAssertionExchange(subjectToken, request)
        case Self.tokenTypeAccessToken:
            break
        case Self.tokenTypeIDToken:
            throw OAuthError(.invalidRequest, "ID tokens are not accepted as subject tokens; exchange the access token")
        default:
            throw OAuthError(.invalidRequest, "unsupported subject_token_type")
        }
        let claims: AccessTokenClaims
        do { claims = try await tokens.validator.accessToken(subjectToken) } catch {
            throw OAuthError(.invalidGrant, "subject_token: \(error.description)")
        }
        // A token for another API is exchanged only by a client allowed that API; a public client exchanges only its own
        // tokens (it cannot authenticate, so it could otherwise launder any token it found).
        let subjectAudiences = claims.aud.stringArray ?? []
        guard subjectAudiences.contains(where: { $0 == issuer || client.allowedAudiences.contains($0) }) else {
            throw OAuthError(.invalidGrant, "subject_token was issued for an audience this client may not use")
        }
        if client.isPublic && claims.clientId != client.clientId {
            throw OAuthError(.invalidGrant, "a public client may exchange only its own tokens")
        }
        // A DPoP-bound token is exchanged only by the holder of its key: otherwise a stolen bound token would come out
        // of the exchange as one that works anywhere.
        if let bound = claims.cnf?.jkt, !Secrets.constantTimeEquals(dpop?.jkt ?? "", bound) {
            throw OAuthError(.invalidGrant, "subject_token is bound to a DPoP key: the exchange needs a proof made with it")
        }
        let record = try await store.accessToken(jti: claims.jti)
        var subjectUser: UserRecord?
        if claims.sub != claims.clientId || record?.familyId != nil {
            // A user's token: the user must still be allowed to sign in.
            guard let user = try await store.user(id: claims.sub), !user.disabled else {
                throw OAuthError(.invalidGrant, "unknown or disabled subject")
            }
            subjectUser = user
        }
        let audience = try params.single("audience") ?? issuer
        guard audience == issuer || client.allowedAudiences.contains(audience) else {
            throw OAuthError(.invalidTarget, "the client may not request tokens for audience \(audience)")
        }
        // An application that requires MFA does not take a single-factor sign-in in through another application's token.
        if client.requireMFA && !AuthenticationMethods.isMultiFactor(claims.amr ?? []) {
            throw OAuthError(.invalidGrant, "the application requires a multi-factor sign-in; the subject token's was not")
        }
        let subjectScope = claims.scopes.filter { $0 != "offline_access" }
        let scope = try params.single("scope")?.split(separator: " ").map(String.init) ?? subjectScope
        guard scope.allSatisfy(subjectScope.contains) else { throw OAuthError(.invalidScope, "scope exceeds the subject token's") }
        // The new token names the account as this client is given it (`SubjectIdentifiers`), whatever the subject
        // token's client was given.
        let access = try await tokens.issuing.accessToken(
            for: .init(
                user: subjectUser, subject: claims.sub, clientId: client.clientId, scope: scope, audience: [audience],
                authTime: claims.authTime.map { Date(timeIntervalSince1970: TimeInterval($0)) }, sessionId: claims.sid,
                familyId: record?.familyId, actor: claims.clientId == client.clientId ? nil : client.clientId,
                amr: (claims.amr ?? []) + (claims.idp.map { [AuthenticationMethods.providerMarker + $0] } ?? []),
                dpop: dpop), client: client)
        return TokenResponse(
            accessToken: access.token, expiresIn: access.expiresIn, scope: scope.joined(separator: " "),
            issuedTokenType: Self.tokenTypeAccessToken)
    }

    /// Peeks (unverified) at a JWT's `token_use` to route it; `redeemFlowAssertion` does the verifying.
    static func isFlowAssertion(_ token: String) -> Bool {
        guard let claims = try? CompactJWS(parsing: token).claims(as: [String: JSONValue].self) else { return false }
        return claims["token_use"]?.stringValue == FlowAssertionClaims.tokenUse
    }

    /// A COMPLETE flow's assertion becomes a real session (the vendor issues an access token only): a new token
    /// family with access token, refresh token and ID token, bound to the flow's sign-in session so the SIGNOUT
    /// flow and refresh-token revocation reach it.
    private func flowAssertionExchange(_ token: String, _ request: GrantRequest) async throws -> TokenResponse {
        let params = request.parameters, client = request.client
        let claims = try await ownTokens.redeemFlowAssertion(token, clientId: client.clientId, logger: request.logger)
        if let audience = try params.single("audience"), audience != tokens.issuer {
            throw OAuthError(.invalidTarget, "a flow assertion is exchanged for tokens of this server only")
        }
        if let requestedType = try params.single("requested_token_type"), requestedType != Self.tokenTypeAccessToken {
            throw OAuthError(.invalidRequest, "only access tokens can be requested")
        }
        let scope = try params.single("scope")?.split(separator: " ").map(String.init) ?? client.scopes
        guard scope.allSatisfy(client.scopes.contains) else { throw OAuthError(.invalidScope, "scope exceeds what the client may request") }
        guard let user = try await store.user(id: claims.sub), !user.disabled else {
            throw OAuthError(.invalidGrant, "the user can no longer sign in")
        }
        // Every flow (a custom graph without the MFA step, a registration) ends here: one place holds `require_mfa`.
        if client.requireMFA && !AuthenticationMethods.isMultiFactor(claims.internalAMR) {
            throw OAuthError(.invalidGrant, "the application requires a multi-factor sign-in; this flow's was not")
        }
        // …and a third-party application's consent, which a flow has no page to ask for.
        try await ConsentGate.requireConsent(clientId: client.clientId, userId: user.id, scope: scope, store: store)
        let familyId = Secrets.identifier()
        try await store.insertFamily(
            TokenFamilyRecord(
                id: familyId, clientId: client.clientId, userId: user.id, sessionId: claims.sid,
                createdAt: tokens.clock.now))
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: client.clientId, scope: scope,
            authTime: Date(timeIntervalSince1970: TimeInterval(claims.authTime)), sessionId: claims.sid,
            familyId: familyId, amr: claims.internalAMR, dpop: request.dpop)
        var response = try await tokens.issue(grant, client: client, newRefreshInFamily: familyId)
        response.issuedTokenType = Self.tokenTypeAccessToken
        return response
    }
}
