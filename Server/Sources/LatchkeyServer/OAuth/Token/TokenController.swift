import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// `POST /oauth2/token` (RFC 6749 §3.2, RFC 8693). Form-encoded; `/oauth/token` also accepts JSON (reachFive).
struct TokenController: Sendable {
    let kit: TokenKit
    let clientAuthentication: ClientAuthentication
    let dpop: DPoPVerifier
    /// Flow assertions are exchanged here.
    let ownTokens: OwnTokens
    /// Token requests that carried a DPoP proof (recorded as used) and failed, per address.
    let proofThrottle: any AddressLimiter
    let pruner: Pruner
    let metrics: ServerMetrics
    let audit: AuditTrail
    /// What a rotated refresh token presented again soon after gets (`refresh_token_reuse_seconds`).
    let refreshReuse: RefreshTokenReuse

    private var store: any UserStore & DeviceAuthorizationStore & AuthorizationCodeStore & TokenStore & SessionStore { kit.store }
    private var clock: ServerClock { kit.clock }
    private var issuer: String { kit.issuer }
    private var tokens: TokenIssuer { kit.issuing }
    private var validator: TokenValidator { kit.validator }

    static let tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
    static let tokenTypeJWT = "urn:ietf:params:oauth:token-type:jwt"
    static let tokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"

    func addRoutes(to mount: OAuthMount) {
        mount.refuseMethodsOtherThanPost(at: "token")
        let takesJSON = mount.isReachFive  // reachFive's `/oauth` mount also takes JSON bodies
        mount.routes.post("token") { request, context in
            let params = try await Parameters.body(of: request, allowJSON: takesJSON)
            return try await self.token(request, params, context: context, logger: context.logger)
        }
    }

    private func token(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext, logger: Logger) async throws -> Response {
        let client = try await clientAuthentication.authenticate(request, params, context: context)
        let grantName = try params.required("grant_type")
        // `implicit` names tokens from the authorization endpoint, never a request here (RFC 6749 §4.2).
        guard let grant = GrantType(rawValue: grantName), grant != .implicit else {
            throw OAuthError(.unsupportedGrantType, "unsupported grant_type \(grantName)")
        }
        guard client.grantTypes.contains(grant) else {
            throw OAuthError(.unauthorizedClient, "the client may not use the \(grantName) grant")
        }
        // RFC 9449 §5: a proof binds what this request issues to the client's key.
        var dpop: TokenIssuer.DPoPBinding?
        var proofCountedAt: Date?
        if let proof = try self.dpop.proof(request, challenge: nil) {
            // Each proof is recorded as used before the grant is judged, and a public client_id is all it takes to get
            // here: requests with a proof count against the address until they succeed.
            let now = clock.now
            if let wait = try await proofThrottle.reserve(address: context.clientAddress, now: now) {
                throw APIError.throttled(wait: wait, what: "failed token requests with a DPoP proof")
            }
            proofCountedAt = now
            pruner.pruneIfDue()
            let jkt = try await self.dpop.verifyProof(proof, request: request, accessToken: nil, challenge: nil)
            dpop = .init(jkt: jkt, bindsRefreshToken: client.isPublic)
        } else if client.requireDPoP {
            throw OAuthError(.invalidDPoPProof, "this application requires DPoP: send a DPoP proof with the token request")
        }
        var response: TokenResponse
        switch grant {
        case .authorizationCode: response = try await authorizationCodeGrant(params, client: client, dpop: dpop, logger: logger)
        case .refreshToken:
            response = try await refreshTokenGrant(
                params, client: client, dpop: dpop, origin: AuditOrigin(client: client.clientId, address: context.clientAddress, logger: logger))
        case .clientCredentials: response = try await clientCredentialsGrant(params, client: client, dpop: dpop)
        case .tokenExchange: response = try await tokenExchangeGrant(params, client: client, dpop: dpop, logger: logger)
        case .deviceCode: response = try await deviceCodeGrant(params, client: client, dpop: dpop)
        case .implicit: throw OAuthError(.unsupportedGrantType, "unsupported grant_type implicit")
        }
        if let proofCountedAt { try await proofThrottle.release(address: context.clientAddress, at: proofCountedAt) }
        if dpop != nil { response.tokenType = "DPoP" }
        var headers: HTTPFields = [:]
        if self.dpop.settings.requireNonce, dpop != nil { headers[DPoP.nonceHeader] = self.dpop.currentNonce() }
        return try Responses.json(response, noStore: true, headers: headers)
    }

    private func authorizationCodeGrant(_ params: Parameters, client: ClientConfiguration, dpop: TokenIssuer.DPoPBinding?, logger: Logger)
        async throws
        -> TokenResponse
    {
        let code = try params.required("code")
        let now = clock.now
        let codeHash = Secrets.digest(code)
        let familyId = Secrets.identifier()
        let record: AuthorizationCodeRecord
        switch try await store.redeemAuthorizationCode(hash: codeHash, familyId: familyId, now: now) {
        case .notFound: throw OAuthError(.invalidGrant, "the authorization code is not valid")
        case .replayed(let family):
            logger.warning(
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
        return try await issue(grant, client: client, newRefreshInFamily: familyId)
    }

    private func refreshTokenGrant(_ params: Parameters, client: ClientConfiguration, dpop: TokenIssuer.DPoPBinding?, origin: AuditOrigin)
        async throws -> TokenResponse
    {
        let logger = origin.logger
        let presented = try params.required("refresh_token")
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
        if let requested = try params.single("scope")?.split(separator: " ").map(String.init) {
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
            return try await issue(grant, client: client, newRefreshInFamily: nil)  // no refresh_token: the client keeps its own
        }
        let now = clock.now
        let next = tokens.refreshToken(for: grant, familyId: current.familyId)
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
                details: ["family": current.familyId, "action": "family_revoked"], origin: origin)
            throw OAuthError(.invalidGrant, "the refresh token was already used; the session has been revoked for safety")
        case .revoked: throw OAuthError(.invalidGrant, "the refresh token has been revoked")
        case .expired: throw OAuthError(.invalidGrant, "the refresh token has expired")
        case .notFound: throw OAuthError(.invalidGrant, "the refresh token is not valid")
        }
        var response = try await issue(grant, client: client, newRefreshInFamily: nil)
        response.refreshToken = successor
        return response
    }

    /// RFC 8628 §3.4: the device's poll. Each answer but the approval is an error the device acts on
    /// (`authorization_pending`, `slow_down`, `access_denied`, `expired_token`); an approval is handed out once.
    private func deviceCodeGrant(_ params: Parameters, client: ClientConfiguration, dpop: TokenIssuer.DPoPBinding?) async throws -> TokenResponse {
        let deviceCode = try params.required("device_code")
        let authorization: DeviceAuthorizationRecord
        switch try await store.pollDeviceAuthorization(deviceCodeHash: Secrets.digest(deviceCode), clientId: client.clientId, now: clock.now) {
        case .notFound: throw OAuthError(.invalidGrant, "the device code is not valid")
        case .expired: throw OAuthError(.expiredToken, "the device code has expired; start again")
        case .slowDown(let interval): throw OAuthError(.slowDown, "polling too fast; wait \(interval) seconds between requests")
        case .pending: throw OAuthError(.authorizationPending, "the sign-in has not been allowed yet")
        case .denied: throw OAuthError(.accessDenied, "the sign-in was denied")
        case .approved(let record): authorization = record
        }
        guard let userId = authorization.userId, let user = try await store.user(id: userId), !user.disabled else {
            throw OAuthError(.invalidGrant, "the user can no longer sign in")
        }
        // The approval is worth what the session that gave it is: signing out (or a password change) since withdraws it.
        guard let sessionId = authorization.sessionId, let session = try await store.session(id: sessionId),
            session.endedAt == nil, session.expiresAt > clock.now
        else {
            throw OAuthError(.accessDenied, "the session that allowed this device has ended")
        }
        let familyId = Secrets.identifier()
        try await store.insertFamily(
            TokenFamilyRecord(
                id: familyId, clientId: client.clientId, userId: user.id,
                sessionId: authorization.sessionId, createdAt: clock.now))
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: client.clientId, scope: authorization.scope,
            authTime: authorization.authTime, sessionId: authorization.sessionId, familyId: familyId,
            amr: authorization.amr, dpop: dpop)
        return try await issue(grant, client: client, newRefreshInFamily: familyId)
    }

    /// A refresh token granted without `offline_access` lives no longer than the sign-in session it came from: once the
    /// session has ended (logout, sign-out, a password change elsewhere) or expired, it is refused and its family revoked.
    /// With `offline_access` the token outlives the session's expiry (not its explicit end, which revokes the family).
    private func requireLiveSession(for token: RefreshTokenRecord) async throws {
        guard !token.scope.contains("offline_access") else { return }
        let now = clock.now
        if let sessionId = token.sessionId, let session = try await store.session(id: sessionId),
            session.endedAt == nil, session.expiresAt > now
        {
            return
        }
        try await store.revokeFamily(id: token.familyId, reason: "session over", now: now)
        throw OAuthError(.invalidGrant, "the sign-in session has ended; sign in again (request offline_access for longer-lived refresh tokens)")
    }

    private func clientCredentialsGrant(_ params: Parameters, client: ClientConfiguration, dpop: TokenIssuer.DPoPBinding?) async throws
        -> TokenResponse
    {
        guard !client.isPublic else { throw OAuthError(.unauthorizedClient, "client_credentials requires a confidential client") }
        let allowed = client.scopes.filter { !["openid", "offline_access"].contains($0) }
        let requested = try params.single("scope")?.split(separator: " ").map(String.init) ?? allowed
        guard requested.allSatisfy(allowed.contains) else { throw OAuthError(.invalidScope, "scope not allowed for client_credentials") }
        let access = try await tokens.accessToken(
            for: .init(
                user: nil, subject: client.clientId, clientId: client.clientId, scope: requested,
                dpop: dpop), client: client)
        return TokenResponse(accessToken: access.token, expiresIn: access.expiresIn, scope: requested.joined(separator: " "))
    }

    /// RFC 8693. Only explicitly typed subject tokens are accepted: a live access token of ours (`typ: at+jwt`) whose
    /// audience the exchanging client may use, or the flow assertion (`…:jwt`, routed by its `token_use` and verified
    /// with its own `typ`). ID tokens, login tickets and step-up tokens are never exchanged: they prove a sign-in to one
    /// party, not a grant. The result is an access token only, with at most the subject's scope, in the subject's
    /// token family and session, so family revocation, logout and a password change reach it.
    private func tokenExchangeGrant(_ params: Parameters, client: ClientConfiguration, dpop: TokenIssuer.DPoPBinding?, logger: Logger) async throws
        -> TokenResponse
    {
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
            return try await flowAssertionExchange(subjectToken, params, client: client, dpop: dpop, logger: logger)
        case Self.tokenTypeAccessToken:
            break
        case Self.tokenTypeIDToken:
            throw OAuthError(.invalidRequest, "ID tokens are not accepted as subject tokens; exchange the access token")
        default:
            throw OAuthError(.invalidRequest, "unsupported subject_token_type")
        }
        let claims: AccessTokenClaims
        do { claims = try await validator.accessToken(subjectToken) } catch {
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
        let access = try await tokens.accessToken(
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
    private func flowAssertionExchange(
        _ token: String, _ params: Parameters, client: ClientConfiguration, dpop: TokenIssuer.DPoPBinding?, logger: Logger
    )
        async throws -> TokenResponse
    {
        let claims = try await ownTokens.redeemFlowAssertion(token, clientId: client.clientId, logger: logger)
        if let audience = try params.single("audience"), audience != issuer {
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
        try await ConsentGate.requireConsent(clientId: client.clientId, userId: user.id, scope: scope, store: kit.store)
        let familyId = Secrets.identifier()
        try await store.insertFamily(
            TokenFamilyRecord(
                id: familyId, clientId: client.clientId, userId: user.id, sessionId: claims.sid,
                createdAt: clock.now))
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: client.clientId, scope: scope,
            authTime: Date(timeIntervalSince1970: TimeInterval(claims.authTime)), sessionId: claims.sid,
            familyId: familyId, amr: claims.internalAMR, dpop: dpop)
        var response = try await issue(grant, client: client, newRefreshInFamily: familyId)
        response.issuedTokenType = Self.tokenTypeAccessToken
        return response
    }

    /// Access token, ID token (with `openid`) and, when given a family, its first refresh token.
    private func issue(_ grant: TokenIssuer.Grant, client: ClientConfiguration, newRefreshInFamily familyId: String?) async throws -> TokenResponse {
        let access = try await tokens.accessToken(for: grant, client: client)
        let idToken = try await tokens.idToken(for: grant, client: client, accessToken: access.token)
        var refresh: String?
        if let familyId, client.grantTypes.contains(.refreshToken) {
            let minted = tokens.refreshToken(for: grant, familyId: familyId)
            try await store.insertRefreshToken(minted.record)
            refresh = minted.token
        }
        return TokenResponse(
            accessToken: access.token, expiresIn: access.expiresIn, refreshToken: refresh, idToken: idToken,
            scope: grant.scope.joined(separator: " "))
    }
}
