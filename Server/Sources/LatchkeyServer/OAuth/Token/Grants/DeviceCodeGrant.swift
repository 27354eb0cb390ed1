import Foundation

/// `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4): the device's poll. Each answer but the approval is
/// an error the device acts on (`authorization_pending`, `slow_down`, `access_denied`, `expired_token`); an approval is
/// handed out once.
struct DeviceCodeGrant: GrantHandler {
    let store: any DeviceAuthorizationStore & UserStore & SessionStore & TokenStore
    let tokens: GrantTokens

    func tokens(for request: GrantRequest) async throws -> TokenResponse {
        let client = request.client
        let clock = tokens.clock
        let deviceCode = try request.parameters.required("device_code")
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
            amr: authorization.amr, dpop: request.dpop)
        return try await tokens.issue(grant, client: client, newRefreshInFamily: familyId)
    }
}
