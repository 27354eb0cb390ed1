import Foundation
import Hummingbird
import Logging

/// The hosted sign-in page. A login request id (from `/authorize`) names the pending authorization; a double-submit
/// CSRF token (hidden field derived from a `SameSite=Strict` cookie and the login request id) proves the POST came
/// from our own form for this very request.
///
/// Sign-in has up to two steps. The first factor is the password or the page's passkey (`tkn`). When the account has
/// a second factor enrolled (TOTP first, else emailed codes), and the first step was not already multi-factor (a
/// passkey with user verification), the page asks for the code: the pending step is stored server-side under the
/// login request id and bound to the browser by an HttpOnly cookie, allows five wrong codes and five emails, and
/// expires. An application with `require_mfa` refuses accounts without a second factor, as the flows do. The SSO
/// session and the authorization code exist only once every required factor is proven; the session records its
/// `amr`, which the tokens carry.
struct HostedLoginController: Sendable {
    let lifetimes: TokenLifetimes
    let store: any UserStore & ClientStore & LoginRequestStore
    let clock: ServerClock
    let cookies: CookiePolicy
    let sessions: SignInSessions
    let accounts: Accounts
    let passkeys: Passkeys
    let ownTokens: OwnTokens
    let responses: AuthorizationResponses
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    let audit: AuditTrail
    /// Third-party applications' consent, asked once the person is signed in.
    let consent: ConsentGate
    /// "Sign in faster next time": a passkey offered after a password, before the application.
    let passkeyOffer: PasskeyOfferGate
    /// Each start of a provider's sign-in stores a row: it takes a place in the per-address start budget.
    let admission: Admission

    func addRoutes(to pages: RouterGroup<LatchkeyRequestContext>) {
        pages.get("/login") { request, context in try await self.showLogin(request, address: context.clientAddress) }
        pages.post("/login") { request, context in try await self.submitLogin(request, context: context, logger: context.logger) }
    }

    private func showLogin(_ request: Request, address: String) async throws -> Response {
        let params = try Parameters.query(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return expiredLoginPage(request.locale())
        }
        let client = try await store.client(id: pending.request.clientId)?.configuration
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        // `idp=` on the authorization request (a hint, as Keycloak's `kc_idp_hint`): straight to that provider when the
        // application offers it, else the page as usual.
        if let hint = try params.single("idp"), let client, let provider = try? federation.provider(hint, for: client) {
            return try await startFederation(
                provider, requestId: id, client: client, request: request, address: address, locale: locale, afterPost: false)
        }
        // A reload of the page while the code is owed shows the code form again (same browser only).
        if let factor = try await store.loginSecondFactor(requestId: id), isBound(factor, to: request),
            let kind = SecondFactor(rawValue: factor.kind)
        {
            return secondFactorPage(
                requestId: id, kind: kind, client: client, clientId: pending.request.clientId, error: nil, info: nil,
                status: .ok, locale: locale)
        }
        return loginPage(
            requestId: id, client: client, clientId: pending.request.clientId, username: pending.request.loginHint,
            error: nil, status: .ok, locale: locale)
    }

    private func submitLogin(_ request: Request, context: LatchkeyRequestContext, logger: Logger) async throws -> Response {
        let params = try await Parameters.body(of: request)
        guard let id = try params.single("request"), let pending = try await store.loginRequest(id: id, now: clock.now) else {
            return expiredLoginPage(request.locale())
        }
        // The language the page was shown in: the authorization request's ui_locales, else the browser's.
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        guard try cookies.formCarriesCSRFToken(params, request: request, scope: id) else {
            logger.notice("login rejected: CSRF token missing or mismatched")
            return CookiePolicy.csrfPage(locale)
        }
        let client = try await store.client(id: pending.request.clientId)?.configuration
        if let idp = try params.single("idp"), let client, try await store.loginSecondFactor(requestId: id) == nil {
            guard let provider = try? federation.provider(idp, for: client) else {
                return loginPage(
                    requestId: id, client: client, clientId: client.clientId, username: nil,
                    error: Pages.t("federation.failed", locale, ["provider": Federation.printable(idp)]), status: .badRequest, locale: locale)
            }
            return try await startFederation(
                provider, requestId: id, client: client, request: request, address: context.clientAddress, locale: locale, afterPost: true)
        }
        if let factor = try await store.loginSecondFactor(requestId: id) {
            // The first factor was already accepted for this login request: only the code is taken now (sending the
            // password again neither skips nor restarts the second step).
            return try await submitSecondFactor(
                factor, pending: pending, params: params, request: request, client: client, locale: locale, address: context.clientAddress,
                logger: logger)
        }
        let username = (try params.single("username") ?? "").trimmingCharacters(in: .whitespaces)
        let password = try params.single("password") ?? ""
        func fail(_ message: LocalizedMessage, _ status: HTTPResponse.Status, logger: Logger) -> Response {
            loginPage(
                requestId: id, client: client, clientId: pending.request.clientId, username: username, error: message.text(locale),
                status: status, locale: locale)
        }
        let user: UserRecord
        var authTime = clock.now
        let amr: [String]
        if let ticket = try params.single("tkn"), !ticket.isEmpty {
            // The page's passkey button: the reachFive endpoints verified the passkey and issued a ticket for this
            // application; redeeming it here (once) stands for the password. A ticket that still owes the second
            // factor (`mfa_pending`, a passkey without user verification) is taken too: `afterFirstFactor` asks for it.
            guard
                let claims = try? await ownTokens.redeemLoginTicket(
                    ticket, clientId: pending.request.clientId, allowMFAPending: true, logger: logger),
                let owner = try await store.user(id: claims.sub), !owner.disabled
            else {
                return fail(LocalizedMessage("page.login.passkey_failed"), .unauthorized, logger: logger)
            }
            user = owner
            authTime = Date(timeIntervalSince1970: TimeInterval(claims.authTime))
            amr = claims.amr
        } else {
            guard !username.isEmpty, !password.isEmpty else { return fail(LocalizedMessage("login.missing_fields"), .badRequest, logger: logger) }
            let outcome = try await accounts.checkPassword(
                username: username, password: password, address: context.clientAddress, signIn: .password,
                client: pending.request.clientId, logger: logger)
            guard case .accepted(let accepted) = outcome else {
                let status: HTTPResponse.Status =
                    switch outcome {
                    case .throttled: .tooManyRequests
                    case .locked: .locked
                    case .disabled: .forbidden
                    case .rejected, .accepted: .unauthorized
                    }
                return fail(outcome.userMessage(now: clock.now) ?? LocalizedMessage("login.invalid_credentials"), status, logger: logger)
            }
            user = accepted
            amr = ["pwd"]
        }

        return try await afterFirstFactor(
            pending, requestId: id, user: user, amr: amr, authTime: authTime, client: client, locale: locale, request: request,
            origin: AuditOrigin(client: pending.request.clientId, address: context.clientAddress, logger: logger)
        ) { fail($0, $1, logger: logger) }
    }

    /// The first factor is proven (a password, a passkey, another identity provider): done when it was multi-factor,
    /// else the account's second factor when it has one, else done unless the application requires one.
    private func afterFirstFactor(
        _ pending: LoginRequestRecord, requestId: String, user: UserRecord, amr: [String], authTime: Date,
        client: ClientConfiguration?, locale: SupportedLocale, request: Request, origin: AuditOrigin,
        fail: (LocalizedMessage, HTTPResponse.Status) -> Response
    ) async throws -> Response {
        let logger = origin.logger
        // One decision for every front door (`SignInCompletion`); the device grant's verification signs in here too.
        let essential = pending.request.requiresMultiFactor
        switch try await accounts.completion(of: user, amr: amr, client: client, multiFactorEssential: essential) {
        case .complete:
            return try await completeLogin(
                pending, requestId: requestId, user: user, amr: amr, authTime: authTime, client: client, request: request, origin: origin)
        case .secondFactorOwed(let kind):
            return try await beginSecondFactor(
                kind, pending: pending, requestId: requestId, user: user, amr: amr, authTime: authTime,
                client: client, locale: locale)
        case .refused:
            // The application requires MFA (an unknown application is refused), or the request made a multi-factor
            // `acr` essential (OpenID Connect Core §5.5.1.1: a failed sign-in), and the account has no second factor.
            logger.notice(
                "hosted sign-in refused: the application requires MFA and the account has no second factor",
                metadata: ["client": .string(pending.request.clientId)])
            return fail(LocalizedMessage("login.mfa_not_enrolled"), .forbidden)
        }
    }

    // MARK: Federation

    /// Sends the browser to the provider, bound to it by the `lk_fed` cookie (kept when it has one already, so several
    /// tabs may sign in at once).
    ///
    /// Each start stores a federated-login row (state, verifier, nonce), and one login request may be reused until it
    /// expires: the start is admitted per address like the authorization request (`max_starts_per_address`), or one
    /// admitted request would give unlimited writes (third review, R3-7).
    private func startFederation(
        _ provider: IdentityProviderConfiguration, requestId: String, client: ClientConfiguration, request: Request,
        address: String, locale: SupportedLocale, afterPost: Bool
    ) async throws -> Response {
        do { try await admission.admitStart(address: address) } catch let refusal as APIError where refusal.status == .tooManyRequests {
            return loginPage(
                requestId: requestId, client: client, clientId: client.clientId, username: nil,
                error: Pages.t(refusal.messageKey, locale, refusal.arguments), status: .tooManyRequests, locale: locale)
        }
        let binding = request.cookieValue(cookies.federationName).flatMap { $0.count >= 32 ? $0 : nil } ?? Secrets.token()
        do {
            let (url, _) = try await federation.begin(
                provider, purpose: .hostedLogin, target: requestId, clientId: client.clientId, browserBinding: binding)
            return Responses.redirect(
                to: url.absoluteString, afterPost: afterPost, headers: [.setCookie: cookies.federation(binding, maxAge: lifetimes.loginRequest)])
        } catch let failure as FederationFailure {
            return loginPage(
                requestId: requestId, client: client, clientId: client.clientId, username: nil,
                error: Pages.t(failure.messageKey, locale, ["provider": provider.name]), status: .serviceUnavailable, locale: locale)
        }
    }

    /// The provider vouched for `identity`: the account it signs in to, then the rest of the sign-in as after a password.
    func continueFederated(
        requestId: String, identity: UpstreamIdentity, request: Request, address: String, logger: Logger
    ) async throws -> Response {
        guard let pending = try await store.loginRequest(id: requestId, now: clock.now),
            let client = try await store.client(id: pending.request.clientId)?.configuration,
            let provider = try? federation.provider(identity.provider, for: client)
        else {
            return expiredLoginPage(request.locale())
        }
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        let user: UserRecord
        do {
            user = try await federatedAccounts.signIn(
                identity, provider: provider, client: client, origin: AuditOrigin(client: client.clientId, address: address, logger: logger))
        } catch let failure as FederationFailure {
            await audit.record(
                .signInFailed, .failure, subject: nil,
                details: [
                    "method": "federated", "provider": identity.provider,
                    "reason": failure.auditReason
                ], origin: AuditOrigin(client: client.clientId, address: address, logger: logger))
            return try await federationFailed(
                requestId: requestId, providerId: identity.provider, failure: failure, request: request, logger: logger)
        }
        return try await afterFirstFactor(
            pending, requestId: requestId, user: user, amr: identity.amr, authTime: clock.now, client: client, locale: locale,
            request: request, origin: AuditOrigin(client: client.clientId, address: address, logger: logger)
        ) { message, status in
            loginPage(
                requestId: requestId, client: client, clientId: client.clientId, username: nil, error: message.text(locale), status: status,
                locale: locale)
        }
    }

    /// The login page again, saying what went wrong with the provider in the person's language.
    func federationFailed(
        requestId: String, providerId: String, failure: FederationFailure, request: Request, logger: Logger
    ) async throws -> Response {
        logger.notice("federated sign-in failed", metadata: ["reason": .string(failure.description)])
        guard let pending = try await store.loginRequest(id: requestId, now: clock.now) else { return expiredLoginPage(request.locale()) }
        let client = try await store.client(id: pending.request.clientId)?.configuration
        let locale = request.locale(uiLocales: pending.request.uiLocales)
        let name = federation.providers.first { $0.id == providerId }?.name ?? providerId
        let status: HTTPResponse.Status =
            switch failure {
            case .unavailable: .serviceUnavailable
            case .accountDisabled, .registrationClosed, .emailInUse, .linkedElsewhere, .alreadyLinked, .denied: .forbidden
            default: .unauthorized
            }
        return loginPage(
            requestId: requestId, client: client, clientId: pending.request.clientId, username: nil,
            error: Pages.t(failure.messageKey, locale, ["provider": name]), status: status, locale: locale)
    }

    // MARK: Second factor

    /// Stores the pending second step (bound to this browser by a new cookie), emails the code when that is the
    /// factor, and shows the code form.
    private func beginSecondFactor(
        _ kind: SecondFactor, pending: LoginRequestRecord, requestId: String, user: UserRecord, amr: [String],
        authTime: Date, client: ClientConfiguration?, locale: SupportedLocale
    ) async throws -> Response {
        // An account whose code budget is spent is not sent codes it could not use (the flows and step-up do the same).
        if let wait = try await accounts.codeLockout(CodeBudget.secondFactor(userId: user.id)) {
            return Responses.html(
                Pages.message(
                    title: Pages.t("page.mfa.title", locale), body: LocalizedMessage.codesLocked(seconds: wait).text(locale),
                    locale: locale), status: .tooManyRequests)
        }
        let now = clock.now
        let lifetime = lifetimes.oneTimeCode
        var digest = Data()
        if kind == .email {
            guard let sent = try await accounts.sendSignInCode(to: user, appName: client?.name ?? pending.request.clientId, locale: locale) else {
                return expiredLoginPage(locale)  // unreachable: `enrolledSecondFactor` only offers email with an address
            }
            digest = sent
        }
        let binding = Secrets.token()
        let record = LoginSecondFactorRecord(
            requestId: requestId, browserHash: Secrets.digest(binding), userId: user.id, kind: kind.rawValue, codeDigest: digest,
            attempts: 0, sends: kind == .email ? 1 : 0, amr: amr, authTime: authTime, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)))
        guard try await store.insertLoginSecondFactor(record, now: now) else {
            // A concurrent first-factor POST for the same login request won; this browser is not the bound one.
            return CookiePolicy.csrfPage(locale)
        }
        return secondFactorPage(
            requestId: requestId, kind: kind, client: client, clientId: pending.request.clientId, error: nil, info: nil,
            status: .ok, locale: locale, extraCookies: [cookies.secondFactor(binding, maxAge: lifetime)])
    }

    /// Whether the request comes from the browser that passed the first factor.
    private func isBound(_ factor: LoginSecondFactorRecord, to request: Request) -> Bool {
        guard let value = request.cookieValue(cookies.secondFactorName), !value.isEmpty else { return false }
        return Secrets.constantTimeEquals(Secrets.digest(value), factor.browserHash)
    }

    private func submitSecondFactor(
        _ factor: LoginSecondFactorRecord, pending: LoginRequestRecord, params: Parameters, request: Request,
        client: ClientConfiguration?, locale: SupportedLocale, address: String, logger: Logger
    ) async throws -> Response {
        let id = factor.requestId
        let origin = AuditOrigin(client: pending.request.clientId, address: address, logger: logger)
        guard isBound(factor, to: request) else {
            logger.notice("second factor rejected: not the browser that passed the first factor")
            return CookiePolicy.csrfPage(locale)
        }
        guard let kind = SecondFactor(rawValue: factor.kind), let user = try await store.user(id: factor.userId), !user.disabled else {
            _ = try await store.takeLoginSecondFactor(requestId: id)
            try await store.deleteLoginRequest(id: id)
            return expiredLoginPage(locale)
        }
        func page(error: String?, info: String? = nil, message: LocalizedMessage? = nil, _ status: HTTPResponse.Status, logger: Logger) -> Response {
            secondFactorPage(
                requestId: id, kind: kind, client: client, clientId: pending.request.clientId,
                error: message.map { $0.text(locale) } ?? error.map { LocalizedMessage($0).text(locale) },
                info: info.map { LocalizedMessage($0).text(locale) }, status: status, locale: locale)
        }
        let now = clock.now
        if try params.single("resend") != nil {
            guard kind == .email else { return page(error: nil, .ok, logger: logger) }
            if let wait = try await accounts.codeLockout(CodeBudget.secondFactor(userId: user.id)) {
                return page(error: nil, message: .codesLocked(seconds: wait), .tooManyRequests, logger: logger)
            }
            // Counted before anything is sent, in one conditional UPDATE; the attempt counter is not reset.
            let code = SecondFactor.newCode()
            guard
                try await store.resendLoginSecondFactor(
                    requestId: id, codeDigest: accounts.codeDigest(code),
                    expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.oneTimeCode)),
                    maxSends: SecondFactor.maxSends)
            else {
                return page(error: "page.mfa.resend_limit", .tooManyRequests, logger: logger)
            }
            _ = try await accounts.sendSignInCode(to: user, appName: client?.name ?? pending.request.clientId, locale: locale, code: code)
            return page(error: nil, info: "page.mfa.resent", .ok, logger: logger)
        }
        // A post without a code (the password form sent again, e.g. from another tab) just shows the code form: it is
        // not a guess, and it never skips the second step.
        guard let raw = try params.single("otp") else { return page(error: nil, .ok, logger: logger) }
        guard factor.expiresAt > now else { return page(error: "flows.executor.errors.otp_expired", .unauthorized, logger: logger) }
        // The account's second-factor budget (shared with the flows and the step-up) is spent before the code is
        // checked, so new hosted sign-ins, which a known password starts at will, bring no fresh guesses.
        let budget = CodeBudget.secondFactor(userId: user.id)
        if let wait = try await accounts.reserveCodeAttempt(budget) {
            return page(error: nil, message: .codesLocked(seconds: wait), .tooManyRequests, logger: logger)
        }
        // The six-digit code of the factor asked for, or one of the account's recovery codes.
        guard let proof = try await accounts.proveSecondFactor(user, kind: kind, answer: raw, emailCodeDigest: factor.codeDigest) else {
            await audit.record(
                .signInFailed, .failure, subject: user.id, details: ["method": kind.rawValue, "reason": "invalid_code"], origin: origin)
            if try await store.failLoginSecondFactor(requestId: id, maxAttempts: SecondFactor.maxAttempts) {
                return page(error: "flows.executor.errors.invalid_otp", .unauthorized, logger: logger)
            }
            // Out of attempts: the whole sign-in is over; the application has to start a new one.
            logger.notice("hosted sign-in ended: too many wrong codes", metadata: ["user": .string(user.id)])
            try await store.deleteLoginRequest(id: id)
            var headers = HTTPFields()
            headers[values: .setCookie] = [cookies.clearSecondFactor()]
            return Responses.html(
                Pages.message(
                    title: Pages.t("page.mfa.title", locale),
                    body: Pages.t("flows.executor.errors.otp_attempts", locale), locale: locale),
                status: .tooManyRequests, headers: headers)
        }
        // Exactly once: a concurrent request with the same right code loses here.
        let taken = try await store.takeLoginSecondFactor(requestId: id)
        // A recovery code was spent whether or not this request won: the person hears of it either way.
        await accounts.announce(proof, of: user, locale: locale, origin: origin, via: "hosted")
        guard taken else { return expiredLoginPage(locale) }
        try await accounts.codeAccepted(budget)
        return try await completeLogin(
            pending, requestId: id, user: user, amr: AuthenticationMethods.withSecondFactor(factor.amr),
            authTime: factor.authTime, client: client, request: request, origin: origin)
    }

    // MARK: Completion

    /// Opens the SSO session (rotating its secret: no fixation), ends the login request and sends the code; or, signed
    /// in, hands the request to the passkey offer or the consent page, which send it on.
    private func completeLogin(
        _ pending: LoginRequestRecord, requestId: String, user: UserRecord, amr: [String],
        authTime: Date, client: ClientConfiguration?, request: Request, origin: AuditOrigin
    ) async throws -> Response {
        let (session, secret) = try await sessions.openForBrowser(userId: user.id, authTime: authTime, amr: amr, origin: origin)
        var headers = HTTPFields()
        headers[values: .setCookie] = [
            cookies.session(secret, maxAge: lifetimes.session), cookies.clearCSRF(),
            cookies.clearSecondFactor()
        ]
        // A sign-in started by the device page goes back there (signed in now) instead of to an application.
        if let returnTo = pending.request.returnTo, returnTo.hasPrefix("/device?user_code="), !returnTo.contains("\\") {
            try await store.deleteLoginRequest(id: requestId)
            return Responses.redirect(to: returnTo, afterPost: true, headers: headers)
        }
        // A password sign-in of an account without a passkey: the offer page first; it goes on as below.
        if try await passkeyOffer.shouldOffer(userId: user.id, amr: amr, client: client, request: request) {
            return Responses.redirect(to: try await passkeyOffer.pageAfterSignIn(pending, userId: user.id), afterPost: true, headers: headers)
        }
        // A third-party application: the consent page answers the login request, with the session just opened.
        if try await consent.mustAsk(pending.request, userId: user.id) {
            return Responses.redirect(to: try await consent.pageAfterSignIn(pending, userId: user.id), afterPost: true, headers: headers)
        }
        try await store.deleteLoginRequest(id: requestId)
        return try await responses.issueResponse(pending.request, user: user, session: session, afterPost: true, headers: headers)
    }

    // MARK: Pages

    private func loginPage(
        requestId: String, client: ClientConfiguration?, clientId: String, username: String?, error: String?,
        status: HTTPResponse.Status, locale: SupportedLocale
    ) -> Response {
        let secret = Secrets.token()
        // The passkey button only where the application accepts passkeys made for this very page's origin.
        let passkeys = client.map { self.passkeys.passkeyOrigins(of: $0).contains(self.passkeys.ownOrigin) } ?? false
        let providers = client.map { federation.providers(for: $0).map { (id: $0.id, name: $0.name) } } ?? []
        let page = Pages.login(
            .init(
                requestId: requestId, csrf: CookiePolicy.csrfToken(secret: secret, requestId: requestId),
                clientName: client?.name ?? clientId, username: username, error: error,
                locale: locale, passkeyClientId: passkeys ? clientId : nil, providers: providers, display: Pages.ApplicationDisplay(client)))
        return Responses.html(
            page, status: status, headers: [.setCookie: cookies.csrf(secret), .contentLanguage: locale.tag],
            sameOriginScripts: passkeys, imageSources: Pages.ApplicationDisplay(client).imageSources)
    }

    private func secondFactorPage(
        requestId: String, kind: SecondFactor, client: ClientConfiguration?, clientId: String, error: String?,
        info: String?, status: HTTPResponse.Status, locale: SupportedLocale,
        extraCookies: [String] = []
    ) -> Response {
        let secret = Secrets.token()
        let page = Pages.secondFactor(
            .init(
                requestId: requestId, csrf: CookiePolicy.csrfToken(secret: secret, requestId: requestId),
                clientName: client?.name ?? clientId, kind: kind, error: error, info: info, locale: locale))
        var headers = HTTPFields()
        headers[values: .setCookie] = [cookies.csrf(secret)] + extraCookies
        headers[.contentLanguage] = locale.tag
        return Responses.html(page, status: status, headers: headers)
    }

    private func expiredLoginPage(_ locale: SupportedLocale) -> Response {
        Responses.html(Pages.message(titleKey: "page.expired.title", bodyKey: "page.expired.body", locale: locale), status: .badRequest)
    }
}

extension HostedLoginController: HostedFederatedSignIn {
    var federationCookieName: String { cookies.federationName }
}
