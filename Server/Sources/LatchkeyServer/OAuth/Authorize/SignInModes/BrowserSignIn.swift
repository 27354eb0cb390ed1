import Foundation
import Hummingbird
import Logging

/// The authorization endpoint's browser sign-in mode: the browser's live session answers when it satisfies the request
/// (and the application's consent is given), else the request waits for the hosted login page.
struct BrowserSignIn: Sendable {
    let store: any LoginRequestStore
    let clock: ServerClock
    let lifetimes: TokenLifetimes
    let browserSessions: BrowserSessions
    /// Whether the session's provider is the one a hint asks for.
    let federation: Federation
    let accounts: Accounts
    /// Third-party applications' consent, asked before an SSO session answers for them.
    let consent: ConsentGate
    let responses: AuthorizationResponses
    let metrics: ServerMetrics
    let audit: AuditTrail

    /// Silent SSO when a live session satisfies the request (audited as `signin.session_reused`); otherwise the login
    /// page (or `login_required`).
    func signIn(
        _ authRequest: AuthorizationRequest, request: Request, client: ClientConfiguration, identityProvider: String? = nil,
        origin: AuditOrigin
    ) async throws -> Response {
        let now = clock.now
        var needsLogin = authRequest.prompt.contains("login")
        let live = try await browserSessions.live(for: request)
        // Asked for a provider the application offers: a session that provider did not open does not answer for it.
        if let live, let hint = identityProvider, let wanted = try? federation.provider(hint, for: client),
            AuthenticationMethods.provider(live.session.amr) != wanted.id
        {
            needsLogin = true
        }
        if let live, let maxAge = authRequest.maxAge, now.timeIntervalSince(live.session.authTime) > TimeInterval(maxAge) {
            needsLogin = true
        }
        // An essential multi-factor `acr` (OpenID Connect Core §5.5.1.1): a single-factor session does not answer for it.
        if let live, authRequest.requiresMultiFactor,
            !AuthenticationMethods.isMultiFactor(live.session.amr)
        {
            needsLogin = true
        }
        if let live, !needsLogin, try await accounts.sessionSatisfies(live.session, user: live.user, clientId: authRequest.clientId) {
            // A third-party application gets nothing silently (R3-2): the person consents first, on a page.
            if try await consent.mustAsk(authRequest, userId: live.user.id) {
                if authRequest.prompt.contains("none") {
                    return responses.errorRedirect(
                        OAuthError(.consentRequired, "the person has not consented to this application's scopes"),
                        redirectUri: authRequest.redirectUri, state: authRequest.state, responseMode: authRequest.responseMode)
                }
                return Responses.redirect(to: try await consent.pageForNewRequest(authRequest, userId: live.user.id))
            }
            metrics.signIn(.sso, .success)
            // The sign-in that opened the session was audited then; this one is the session answering for another
            // request (perhaps another application), with no credential shown.
            var details = [
                "method": SignInSessions.method(of: live.session.amr),
                "amr": AuthenticationMethods.published(live.session.amr).joined(separator: " ")
            ]
            if let provider = AuthenticationMethods.provider(live.session.amr) { details["provider"] = provider }
            await audit.record(.signInSessionReused, subject: live.user.id, details: details, origin: origin)
            return try await responses.issueResponse(authRequest, user: live.user, session: live.session, afterPost: false, interactive: false)
        }
        if authRequest.prompt.contains("none") {
            return responses.errorRedirect(
                OAuthError(.loginRequired, "no active session satisfies the request"),
                redirectUri: authRequest.redirectUri, state: authRequest.state, responseMode: authRequest.responseMode)
        }
        let id = Secrets.token()
        try await store.insertLoginRequest(
            LoginRequestRecord(
                id: id, request: authRequest, createdAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.loginRequest))))
        // An identity provider hint goes along; the page decides whether the application offers it.
        let hint = identityProvider.map { "&idp=" + FormEncoding.encode($0) } ?? ""
        return Responses.redirect(to: "/login?request=\(id)" + hint)
    }
}
