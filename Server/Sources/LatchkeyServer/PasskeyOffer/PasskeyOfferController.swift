import Foundation
import Hummingbird
import LatchkeyJOSE
import Logging

/// The passkey offer page (`/passkey-offer?request=…`), shown between a password sign-in on the hosted page and the
/// application: "Create a passkey" or "Not now", then the browser goes on as it would have (the consent page for a
/// third-party application, else the authorization response).
///
/// The sign-in is done when the page shows: the SSO session names the person and the login request waits here, handed
/// over by `PasskeyOfferGate` for that account only. The page's script (`PasskeyOfferScript`) asks
/// `POST /passkey-offer/options` for creation options and sends the browser's answer to `POST /passkey-offer/credential`;
/// both are authorised by the browser session and the page's double-submit CSRF token (bound to the login request),
/// never by a bearer token, and take only form fields, so no other site can make them for the person. The passkey is
/// recorded like any other (`passkey.added`, `how: upgrade`).
struct PasskeyOfferController: Sendable {
    let store: any UserStore & ClientStore & LoginRequestStore
    let clock: ServerClock
    let cookies: CookiePolicy
    let browserSessions: BrowserSessions
    let passkeys: Passkeys
    let consent: ConsentGate
    let responses: AuthorizationResponses
    /// Mails the account that a passkey was added, as every other way of adding one does.
    let accounts: Accounts

    func addRoutes(to pages: RouterGroup<LatchkeyRequestContext>) {
        pages.get(RouterPath(PasskeyOfferGate.path)) { request, context in try await self.show(request, context: context) }
        pages.post(RouterPath(PasskeyOfferGate.path)) { request, context in try await self.proceed(request, context: context) }
        pages.post(RouterPath(PasskeyOfferGate.path + "/options")) { request, context in try await self.options(request, context: context) }
        pages.post(RouterPath(PasskeyOfferGate.path + "/credential")) { request, context in
            try await self.credential(request, context: context)
        }
    }

    /// A login request waiting on the offer for the account signed in in this browser.
    private struct Waiting {
        var pending: LoginRequestRecord
        var session: SessionRecord
        var user: UserRecord
        var client: ClientConfiguration
        var locale: SupportedLocale
    }

    private enum Lookup {
        case waiting(Waiting)
        case answer(Response)
    }

    /// Finds the waiting request for `params` (the query for the page, the form otherwise). A signed-out browser is sent
    /// to sign in again for the same request; anything else that does not fit is the expired page.
    private func lookup(_ params: Parameters, request: Request, context: LatchkeyRequestContext, form: Bool) async throws -> Lookup {
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return .answer(Responses.expiredPage(request.locale()))
        }
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        if form {
            guard try cookies.formCarriesCSRFToken(params, request: request, scope: id) else {
                context.logger.notice("passkey offer rejected: CSRF token missing or mismatched")
                return .answer(CookiePolicy.csrfPage(locale))
            }
        }
        guard let live = try await browserSessions.live(for: request) else {
            return .answer(Responses.redirect(to: "/login?request=" + FormEncoding.encode(id), afterPost: form))
        }
        guard pending.request.passkeyOfferFor == live.user.id, let client = try await store.client(id: pending.request.clientId)?.configuration
        else {
            return .answer(Responses.expiredPage(locale))
        }
        return .waiting(Waiting(pending: pending, session: live.session, user: live.user, client: client, locale: locale))
    }

    private func show(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let waiting: Waiting
        switch try await lookup(try Parameters.query(of: request), request: request, context: context, form: false) {
        case .answer(let response): return response
        case .waiting(let found): waiting = found
        }
        let id = waiting.pending.id
        let secret = Secrets.token()
        let page = PasskeyOfferPage.render(
            .init(
                requestId: id, csrf: CookiePolicy.csrfToken(secret: secret, requestId: id), clientName: waiting.client.name,
                account: waiting.user.claims["email"] ?? waiting.user.username, locale: waiting.locale))
        return Responses.html(page, headers: [.setCookie: cookies.csrf(secret), .contentLanguage: waiting.locale.tag], sameOriginScripts: true)
    }

    /// "Not now", or the script's "created" (or "unsupported" where the browser cannot make one): the browser goes on.
    /// Only "Not now" is remembered. One answer per login request: a second POST finds it handed on or gone.
    private func proceed(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try await Parameters.body(of: request)
        let waiting: Waiting
        switch try await lookup(params, request: request, context: context, form: true) {
        case .answer(let response): return response
        case .waiting(let found): waiting = found
        }
        var headers = HTTPFields()
        var cookies = [self.cookies.clearCSRF()]
        if try params.single("decision") == "later" {
            cookies.append(self.cookies.passkeyLater(PasskeyOfferGate.declined(waiting.user.id), maxAge: PasskeyOfferGate.declineSeconds))
        }
        headers[values: .setCookie] = cookies
        var next = waiting.pending
        next.request.passkeyOfferFor = nil
        if try await consent.mustAsk(next.request, userId: waiting.user.id) {
            return Responses.redirect(to: try await consent.pageAfterSignIn(next, userId: waiting.user.id), afterPost: true, headers: headers)
        }
        try await store.deleteLoginRequest(id: next.id)
        return try await responses.issueResponse(
            next.request, user: waiting.user, session: waiting.session, afterPost: true, headers: headers,
            interactive: waiting.session.authTime >= waiting.pending.createdAt)
    }

    /// Creation options for the signed-in account, in the W3C JSON shape (base64url binary values).
    private func options(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try await Parameters.body(of: request)
        let waiting: Waiting
        switch try await lookup(params, request: request, context: context, form: true) {
        case .answer: return try refusal(status: .forbidden, locale: request.locale())
        case .waiting(let found): waiting = found
        }
        do {
            let options = try await passkeys.beginPasskeyRegistration(
                user: waiting.user, client: waiting.client, origin: passkeys.ownOrigin, friendlyName: nil)
            return try Responses.json(options, noStore: true)
        } catch let failure as PasskeyFailure {
            context.logger.notice("passkey offer: no options", metadata: ["reason": .string(failure.description)])
            return try refusal(status: .badRequest, locale: waiting.locale)
        }
    }

    /// The browser's answer: verified and recorded as the account's passkey (`how: upgrade`).
    private func credential(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try await Parameters.body(of: request)
        let waiting: Waiting
        switch try await lookup(params, request: request, context: context, form: true) {
        case .answer: return try refusal(status: .forbidden, locale: request.locale())
        case .waiting(let found): waiting = found
        }
        guard let rawId = try params.single("raw_id").flatMap(Base64URL.decode),
            let clientData = try params.single("client_data_json").flatMap(Base64URL.decode),
            let attestation = try params.single("attestation_object").flatMap(Base64URL.decode)
        else {
            return try refusal(status: .badRequest, locale: waiting.locale)
        }
        do {
            let added = try await passkeys.finishPasskeyRegistration(
                user: waiting.user,
                response: PasskeyRegistrationResponse(credentialId: rawId, clientDataJSON: clientData, attestationObject: attestation),
                how: .upgrade,
                origin: AuditOrigin(client: waiting.client.clientId, address: context.clientAddress, logger: context.logger))
            // The passkey is in: a mail that cannot be sent now is logged, not turned into a failed offer.
            await accounts.notifyAccountChange(
                waiting.user, "passkey_added", arguments: ["name": added.friendlyName], locale: waiting.locale, logger: context.logger)
            return try Responses.json(["created": true], noStore: true)
        } catch let failure as PasskeyFailure {
            context.logger.notice("passkey offer: registration refused", metadata: ["reason": .string(failure.description)])
            return try refusal(status: .badRequest, locale: waiting.locale)
        }
    }

    /// The scripts' error answer: the person's message (the page shows its own, in the same words).
    private func refusal(status: HTTPResponse.Status, locale: SupportedLocale) throws -> Response {
        try Responses.json(
            ["error": status == .forbidden ? "access_denied" : "invalid_request", "error_user_msg": Pages.t("page.passkey_offer.failed", locale)],
            status: status, noStore: true)
    }
}
