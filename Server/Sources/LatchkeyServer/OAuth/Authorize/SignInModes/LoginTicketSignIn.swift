import Foundation
import Hummingbird
import Logging

/// The authorization endpoint's `tkn` sign-in mode: a login ticket from the native password or passkey endpoints.
struct LoginTicketSignIn: Sendable {
    let store: any UserStore
    /// Login tickets are redeemed here.
    let ownTokens: OwnTokens
    let accounts: Accounts
    let sessions: SignInSessions
    let responses: AuthorizationResponses

    /// reachFive `tkn` exchange: the user already authenticated (password or passkey endpoint); the single-use
    /// ticket becomes an authorization code for the same application, with the request's PKCE, `state` and `nonce`.
    func signIn(
        _ ticket: String, _ authRequest: AuthorizationRequest, client: ClientConfiguration, origin: AuditOrigin
    ) async throws -> Response {
        let logger = origin.logger
        // A `browser` application gets a ticket only from the hosted page's own passkey button, whose form redeems it
        // (`HostedLoginController`); taken here, it would be a sign-in the application started itself, which its
        // type forbids (`NativeSignInPolicy`).
        guard client.appType != .browser else {
            throw OAuthError(.accessDenied, "a browser application signs in through the hosted page, not with a login ticket")
        }
        let claims = try await ownTokens.redeemLoginTicket(ticket, clientId: authRequest.clientId, logger: logger)
        guard let user = try await store.user(id: claims.sub), !user.disabled else {
            throw OAuthError(.accessDenied, "the account can no longer sign in")
        }
        // The endpoint that issued the ticket decided already (`SignInCompletion`); deciding again here keeps a ticket
        // from outliving the decision (a factor enrolled since, an essential multi-factor `acr` on this request).
        let essential = authRequest.requiresMultiFactor
        switch try await accounts.completion(of: user, amr: claims.amr, client: client, multiFactorEssential: essential) {
        case .complete:
            break
        case .secondFactorOwed:
            throw OAuthError(.accessDenied, "the login ticket still needs a second factor")
        case .refused:
            throw OAuthError(.accessDenied, "the application requires a second factor")
        }
        let session = try await sessions.open(
            userId: user.id, authTime: Date(timeIntervalSince1970: TimeInterval(claims.authTime)), amr: claims.amr, origin: origin)
        return try await responses.issueResponse(authRequest, user: user, session: session, afterPost: false)
    }
}
