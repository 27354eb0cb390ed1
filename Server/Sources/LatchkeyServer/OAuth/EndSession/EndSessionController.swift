import Foundation
import Hummingbird
import LatchkeyJOSE

/// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0). The browser is sent back only to a
/// `post_logout_redirect_uri` registered for the client named by the ID-token hint (or `client_id`); anything else
/// ends on our own "signed out" page, so the endpoint is no open redirector. Without a valid hint, the user confirms
/// on a CSRF-protected form, so a third-party page cannot sign people out. Without a session cookie, a hint ends its
/// session only when that session holds no live tokens any more. The applications of the ended sessions are told
/// (`FrontChannelLogout` here, `BackChannelLogout` from the store).
struct EndSessionController {
    /// Verifies ID-token hints (this server's, expired ones too), with the issuer in force.
    let validator: @Sendable () -> TokenValidator
    /// The issuer in force, for front-channel logout's `iss`.
    let issuer: @Sendable () -> String
    let store: any ClientStore & SessionStore
    let sessions: BrowserSessions
    let cookies: CookiePolicy
    let clock: ServerClock
    /// How the hint's application names the account (`SubjectIdentifiers`), to compare with the session's.
    let subjects: SubjectIdentifiers

    func addRoutes(to mount: OAuthMount) {
        mount.routes.get("logout") { request, _ in
            try await endSession(request, try Parameters.query(of: request), isPost: false)
        }
        mount.routes.post("logout") { request, _ in
            try await endSession(request, try await Parameters.body(of: request), isPost: true)
        }
    }

    private func endSession(_ request: Request, _ params: Parameters, isPost: Bool) async throws -> Response {
        let hint = try params.single("id_token_hint")
        let postLogout = try params.single("post_logout_redirect_uri")
        let state = try params.single("state")
        var clientId = try params.single("client_id")

        var hintedSid: String?
        var hintedSub: String?
        var hintedClient: String?
        if let hint {
            let verified: RegisteredClaims
            do { verified = try await validator().idToken(hint, allowExpired: true).claims } catch {
                return logoutError("page.logout_invalid.hint", request)
            }
            let audiences = verified.aud?.stringArray ?? []
            if let clientId, !audiences.contains(clientId) { return logoutError("page.logout_invalid.client", request) }
            clientId = clientId ?? audiences.first
            hintedSid = verified.sid
            hintedSub = verified.sub
            hintedClient = audiences.first
        }
        var redirect: String?
        if let postLogout {
            guard let clientId, let client = try await store.client(id: clientId)?.configuration else {
                return logoutError("page.logout_invalid.unidentified", request)
            }
            guard RedirectURIMatcher.isRegistered(postLogout, in: client.postLogoutRedirectUris) else {
                return logoutError("page.authorize_invalid.redirect", request)
            }
            redirect = RedirectURL.appending([("state", state)], to: postLogout)
        }

        let live = try await sessions.live(for: request)
        // The session's account as the hint's application was told it: a pairwise application's hint names a pairwise
        // subject.
        let liveSubject: String? = if let live { try await subject(of: live.user.id, to: hintedClient) } else { nil }
        // The hint confirms the sign-out of the browser's own session when it names the same user; otherwise a
        // leaked ID token could sign anyone out silently.
        // Without a session cookie (an app's request, or a browser that holds no session) a hint alone proves
        // nothing: ID tokens travel into logs and front ends. The hinted session then ends only once it holds no
        // live tokens (the app revoked them first, as the SDK does), and that is what confirms it.
        var hintedSessionEnded = false
        // Whether this request is what ends it: a session ended before (the same logout again) frames nothing anew.
        var hintedSessionEndedNow = false
        if let hintedSid, live == nil {
            let wasLive = try await store.session(id: hintedSid).map { $0.endedAt == nil } ?? false
            hintedSessionEnded = try await store.endSessionHoldingNoTokens(id: hintedSid, now: clock.now)
            hintedSessionEndedNow = wasLive && hintedSessionEnded
        }
        let confirmedByHint = hint != nil && (live == nil ? hintedSessionEnded : liveSubject == hintedSub)
        if !confirmedByHint && (live != nil || hint != nil) {
            guard isPost, try params.single("confirm") == "yes", let form = try params.single("csrf"),
                let cookie = request.cookieValue(cookies.csrfName), Secrets.constantTimeEquals(form, cookie)
            else {
                let csrf = Secrets.token()
                var hidden: [(String, String)] = []
                for name in ["post_logout_redirect_uri", "state", "client_id", "id_token_hint"] {
                    if let v = try params.single(name) { hidden.append((name, v)) }
                }
                if hint == nil, let clientId { hidden.removeAll { $0.0 == "client_id" }; hidden.append(("client_id", clientId)) }
                return Responses.html(
                    Pages.logoutConfirmation(csrf: csrf, hiddenFields: hidden, locale: request.locale(uiLocales: try params.single("ui_locales"))),
                    headers: [.setCookie: cookies.csrf(csrf)])
            }
        }
        // A confirmed form ends the browser's own session, and the hinted one only when it is the same user's in this
        // browser: confirming takes no more than a CSRF cookie anyone can get, so it does not reach a cookie-less hint.
        var ended: [String] = hintedSessionEndedNow ? hintedSid.map { [$0] } ?? [] : []
        if let live {
            try await store.endSession(id: live.session.id, now: clock.now)
            ended.append(live.session.id)
        }
        if let hintedSid, let live, hintedSid != live.session.id, liveSubject == hintedSub {
            try await store.endSession(id: hintedSid, now: clock.now)
            ended.append(hintedSid)
        }
        var headers = HTTPFields()
        headers[values: .setCookie] = [cookies.clearSession()]
        // The applications of the ended sessions clear their own cookies in hidden frames before the browser moves on
        // (front-channel logout); back-channel logout reaches them from the store (`BackChannelLogout`).
        let frames = try await FrontChannelLogout.frames(for: ended, store: store, issuer: issuer())
        let locale = request.locale(uiLocales: try params.single("ui_locales"))
        if !frames.isEmpty { return FrontChannelLogout.page(frames: frames, next: redirect, locale: locale, headers: headers) }
        if let redirect { return Responses.redirect(to: redirect, afterPost: isPost, headers: headers) }
        return Responses.html(Pages.message(titleKey: "page.signed_out.title", bodyKey: "page.signed_out.body", locale: locale), headers: headers)
    }

    /// `accountId` as application `clientId` is given it; the account id when the application is gone.
    private func subject(of accountId: String, to clientId: String?) async throws -> String {
        guard let clientId, let client = try await store.client(id: clientId)?.configuration else { return accountId }
        return subjects.subject(of: accountId, for: client)
    }

    private func logoutError(_ bodyKey: String, _ request: Request) -> Response {
        Responses.html(Pages.message(titleKey: "page.logout_invalid.title", bodyKey: bodyKey, locale: request.locale()), status: .badRequest)
    }
}
