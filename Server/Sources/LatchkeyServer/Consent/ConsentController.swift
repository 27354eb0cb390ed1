import Foundation
import Hummingbird
import Logging

/// The consent page (`GET`/`POST /consent?request=…`): a signed-in person allows a third-party application the scopes
/// it asked for, or refuses it. The sign-in (hosted page or SSO session) is done; the login request waits here with
/// its authorization request, and the browser session names the person. Allowing records the consent
/// (`ConsentStore`, widened, never narrowed) and issues the code; refusing sends `access_denied` back. Both are audited.
/// The form is a double-submit CSRF form bound to the login request, like the sign-in page's.
struct ConsentController: Sendable {
    let store: any UserStore & ClientStore & LoginRequestStore & ConsentStore
    let clock: ServerClock
    let cookies: CookiePolicy
    let browserSessions: BrowserSessions
    let responses: AuthorizationResponses
    let audit: AuditTrail

    func addRoutes(to pages: RouterGroup<LatchkeyRequestContext>) {
        pages.get("/consent") { request, context in try await self.show(request, context: context) }
        pages.post("/consent") { request, context in try await self.decide(request, context: context) }
    }

    private func show(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try Parameters.query(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return Responses.expiredPage(request.locale())
        }
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        // Signed out meanwhile (another tab): sign in again for the same request; the page comes back after it.
        guard let live = try await browserSessions.live(for: request) else {
            return Responses.redirect(to: "/login?request=" + FormEncoding.encode(id))
        }
        // Only a request the gate handed over, for the account signed in now (not the sign-in page's own request).
        guard pending.request.consentFor == live.user.id, let record = try await store.client(id: pending.request.clientId),
            ApplicationTrust(record).isThirdParty
        else {
            return Responses.expiredPage(locale)
        }
        let client = record.configuration
        let secret = Secrets.token()
        let page = Pages.consent(
            .init(
                requestId: id, csrf: CookiePolicy.csrfToken(secret: secret, requestId: id), clientName: client.name,
                signedInAs: live.user.claims["email"] ?? live.user.username, scopes: pending.request.scope,
                redirectOrigin: CSPSource.origin(of: pending.request.redirectUri)
                    ?? URLComponents(string: pending.request.redirectUri)?.scheme.map { $0 + ":" },
                registrant: try await registrant(of: record, locale: locale), display: Pages.ApplicationDisplay(client), locale: locale))
        return Responses.html(
            page, headers: [.setCookie: cookies.csrf(secret), .contentLanguage: locale.tag],
            imageSources: Pages.ApplicationDisplay(client).imageSources)
    }

    private func decide(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try await Parameters.body(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return Responses.expiredPage(request.locale())
        }
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        guard try cookies.formCarriesCSRFToken(params, request: request, scope: id) else {
            context.logger.notice("consent rejected: CSRF token missing or mismatched")
            return CookiePolicy.csrfPage(locale)
        }
        guard let live = try await browserSessions.live(for: request) else {
            return Responses.redirect(to: "/login?request=" + FormEncoding.encode(id), afterPost: true)
        }
        // As on the page: only a request the gate handed over, for this account.
        guard pending.request.consentFor == live.user.id else { return Responses.expiredPage(locale) }
        var authRequest = pending.request
        authRequest.consentFor = nil
        let origin = AuditOrigin(client: authRequest.clientId, address: context.clientAddress, logger: context.logger)
        // One decision per login request: a second POST (another tab) finds it gone.
        try await store.deleteLoginRequest(id: id)
        var headers = HTTPFields()
        headers[values: .setCookie] = [cookies.clearCSRF()]
        guard try params.single("decision") == "allow" else {
            await audit.record(
                .consentDenied, .failure, subject: live.user.id, details: ["scope": authRequest.scope.joined(separator: " ")], origin: origin)
            return responses.errorRedirect(
                OAuthError(.accessDenied, "the person did not allow the application"), redirectUri: authRequest.redirectUri,
                state: authRequest.state, messageKey: "oauth.access_denied", locale: locale, responseMode: authRequest.responseMode)
        }
        let consent = try await store.grantConsent(userId: live.user.id, clientId: authRequest.clientId, scopes: authRequest.scope, now: clock.now)
        await audit.record(.consentGranted, subject: live.user.id, details: ["scope": consent.scopes.joined(separator: " ")], origin: origin)
        // The sign-in behind the session happened during this very request (the hosted page sent the browser here), or
        // before it (an SSO session answered): only the first makes the token a recent sign-in.
        let interactive = live.session.authTime >= pending.createdAt
        return try await responses.issueResponse(
            authRequest, user: live.user, session: live.session, afterPost: true, headers: headers, interactive: interactive)
    }

    /// Who registered the application, in words, for the page (`ClientRecord.registeredBy`, the actor the audit trail
    /// names): an automation by its application's name, a person (registering takes the `admin` role) as "an
    /// administrator", open registration as "anyone". Nil for a configured application or an unknown registrant.
    func registrant(of record: ClientRecord, locale: SupportedLocale) async throws -> String? {
        guard record.origin == .registration, let actor = record.registeredBy else { return nil }
        if actor == AuditEvent.anonymous { return Pages.t("page.consent.registrant.open", locale) }
        let automation = AuditEvent.clientActor("")
        if actor.hasPrefix(automation) {
            let id = String(actor.dropFirst(automation.count))
            let name = try await store.client(id: id)?.configuration.name ?? id
            return Pages.t("page.consent.registrant.application", locale, ["client": name])
        }
        return Pages.t("page.consent.registrant.administrator", locale)
    }
}
