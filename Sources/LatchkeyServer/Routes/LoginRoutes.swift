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
            return expiredLoginPage()
        }
        let client = try await store.client(id: pending.request.clientId)?.configuration
        return loginPage(requestId: id, clientName: client?.name ?? pending.request.clientId, username: pending.request.loginHint,
                         error: nil, status: .ok)
    }

    private func submitLogin(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let params = try await Parameters.body(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return expiredLoginPage()
        }
        guard let formToken = try params.single("csrf"), let cookieToken = request.cookieValue(CookiePolicy.csrfCookie),
              Secrets.constantTimeEquals(formToken, cookieToken) else {
            logger.notice("login rejected: CSRF token missing or mismatched")
            return Responses.html(Pages.message(title: "Sign-in form expired",
                                                body: "For your security this form can only be sent from the page we showed you. Go back, reload the page and try again."),
                                  status: .forbidden)
        }
        let clientName = try await store.client(id: pending.request.clientId)?.configuration.name ?? pending.request.clientId
        let username = (try params.single("username") ?? "").trimmingCharacters(in: .whitespaces)
        let password = try params.single("password") ?? ""
        func fail(_ message: String, _ status: HTTPResponse.Status) -> Response {
            loginPage(requestId: id, clientName: clientName, username: username, error: message, status: status)
        }
        guard !username.isEmpty, !password.isEmpty else { return fail("Enter your email or username and your password.", .badRequest) }

        let user: UserRecord
        switch try await checkPassword(username: username, password: password, address: context.clientAddress) {
        case .throttled(let wait): return fail("Too many failed sign-in attempts from your network. Try again in \(Self.minutes(wait)).", .tooManyRequests)
        case .locked(let until): return fail(lockedMessage(until: until), .locked)
        case .rejected: return fail("The email or password is incorrect.", .unauthorized)
        case .disabled: return fail("This account is disabled. Contact your administrator.", .forbidden)
        case .accepted(let accepted): user = accepted
        }

        let now = clock.now
        let secret = Secrets.token()
        let session = SessionRecord(id: Secrets.identifier(), secretHash: Secrets.digest(secret), userId: user.id, authTime: now,
                                    createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(configuration.lifetimes.session)),
                                    endedAt: nil)
        try await store.insertSession(session)
        try await store.deleteLoginRequest(id: id)
        var headers = HTTPFields()
        headers[values: .setCookie] = [cookies.session(secret, maxAge: configuration.lifetimes.session), cookies.clearCSRF()]
        return try await issueCode(pending.request, user: user, session: session, afterPost: true, headers: headers)
    }

    private func loginPage(requestId: String, clientName: String, username: String?, error: String?, status: HTTPResponse.Status) -> Response {
        let csrf = Secrets.token()
        let page = Pages.login(.init(requestId: requestId, csrf: csrf, clientName: clientName, username: username, error: error))
        return Responses.html(page, status: status, headers: [.setCookie: cookies.csrf(csrf)])
    }

    private func expiredLoginPage() -> Response {
        Responses.html(Pages.message(title: "Sign-in link expired",
                                     body: "This sign-in page has expired or was already used. Return to the application and start again."),
                       status: .badRequest)
    }

    private func lockedMessage(until: Date) -> String {
        "This account is temporarily locked after too many failed sign-in attempts. Try again in \(minutesUntil(until))."
    }

    static func minutes(_ seconds: Int) -> String {
        let m = max(1, (seconds + 59) / 60)
        return m == 1 ? "1 minute" : "\(m) minutes"
    }
}
