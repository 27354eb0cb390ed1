import Foundation
import Hummingbird

/// The hosted sign-in page. A login request id (from `/authorize`) names the pending authorization; a double-submit
/// CSRF token (hidden field == `SameSite=Strict` cookie) proves the POST came from our own form.
extension IdentityServer {
    func addLoginRoutes(_ router: Router<LatchkeyRequestContext>) {
        router.get("/login") { request, _ in try await self.showLogin(request) }
        router.post("/login") { request, context in try await self.submitLogin(request, context: context) }
    }

    private func showLogin(_ request: Request) async throws -> Response {
        let params = try Parameters.query(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return expiredLoginPage(request.locale())
        }
        let client = try await store.client(id: pending.request.clientId)?.configuration
        return loginPage(requestId: id, client: client, clientId: pending.request.clientId, username: pending.request.loginHint,
                         error: nil, status: .ok, locale: request.locale(uiLocales: pending.request.uiLocales))
    }

    private func submitLogin(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try await Parameters.body(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return expiredLoginPage(request.locale())
        }
        // The language the page was shown in: the authorization request's ui_locales, else the browser's.
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        guard let formToken = try params.single("csrf"), let cookieToken = request.cookieValue(CookiePolicy.csrfCookie),
              Secrets.constantTimeEquals(formToken, cookieToken) else {
            logger.notice("login rejected: CSRF token missing or mismatched")
            return Responses.html(Pages.message(titleKey: "page.csrf.title", bodyKey: "page.csrf.body", locale: locale), status: .forbidden)
        }
        let client = try await store.client(id: pending.request.clientId)?.configuration
        let username = (try params.single("username") ?? "").trimmingCharacters(in: .whitespaces)
        let password = try params.single("password") ?? ""
        func fail(_ message: LocalizedMessage, _ status: HTTPResponse.Status) -> Response {
            loginPage(requestId: id, client: client, clientId: pending.request.clientId, username: username, error: message.text(locale),
                      status: status, locale: locale)
        }
        let user: UserRecord
        var authTime = clock.now
        if let ticket = try params.single("tkn"), !ticket.isEmpty {
            // The page's passkey button: the reachFive endpoints verified the passkey and issued a ticket for this
            // application; redeeming it here (once) stands for the password.
            guard let claims = try? await redeemLoginTicket(ticket, clientId: pending.request.clientId),
                  let owner = try await store.user(id: claims.sub), !owner.disabled else {
                return fail(LocalizedMessage("page.login.passkey_failed"), .unauthorized)
            }
            user = owner
            authTime = Date(timeIntervalSince1970: TimeInterval(claims.authTime))
        } else {
            guard !username.isEmpty, !password.isEmpty else { return fail(LocalizedMessage("login.missing_fields"), .badRequest) }
            let outcome = try await checkPassword(username: username, password: password, address: context.clientAddress)
            guard case .accepted(let accepted) = outcome else {
                let status: HTTPResponse.Status = switch outcome {
                case .throttled: .tooManyRequests
                case .locked: .locked
                case .disabled: .forbidden
                case .rejected, .accepted: .unauthorized
                }
                return fail(outcome.userMessage(now: clock.now) ?? LocalizedMessage("login.invalid_credentials"), status)
            }
            user = accepted
        }

        let now = clock.now
        let secret = Secrets.token()
        let session = SessionRecord(id: Secrets.identifier(), secretHash: Secrets.digest(secret), userId: user.id, authTime: authTime,
                                    createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(configuration.lifetimes.session)),
                                    endedAt: nil)
        try await store.insertSession(session)
        try await store.deleteLoginRequest(id: id)
        var headers = HTTPFields()
        headers[values: .setCookie] = [cookies.session(secret, maxAge: configuration.lifetimes.session), cookies.clearCSRF()]
        return try await issueCode(pending.request, user: user, session: session, afterPost: true, headers: headers)
    }

    private func loginPage(requestId: String, client: ClientConfiguration?, clientId: String, username: String?, error: String?,
                           status: HTTPResponse.Status, locale: SupportedLocale) -> Response {
        let csrf = Secrets.token()
        // The passkey button only where the application accepts passkeys made for this very page's origin.
        let passkeys = client.map { passkeyOrigins(of: $0).contains(ownOrigin) } ?? false
        let page = Pages.login(.init(requestId: requestId, csrf: csrf, clientName: client?.name ?? clientId, username: username, error: error,
                                     locale: locale, passkeyClientId: passkeys ? clientId : nil))
        return Responses.html(page, status: status, headers: [.setCookie: cookies.csrf(csrf), .contentLanguage: locale.tag],
                              sameOriginScripts: passkeys)
    }

    private func expiredLoginPage(_ locale: SupportedLocale) -> Response {
        Responses.html(Pages.message(titleKey: "page.expired.title", bodyKey: "page.expired.body", locale: locale), status: .badRequest)
    }
}
