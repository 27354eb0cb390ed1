import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// The device authorization grant (RFC 8628): a device without a browser asks for a code pair at
/// `/oauth2/device_authorization`, shows the user code, and polls the token endpoint while a person enters the code on
/// `/device` — signed in through the same hosted login and SSO session as the login page — and allows or denies it.
struct DeviceController: Sendable {
    /// How recent a sign-in must be for a device to get `offline_access` (`recent_auth_seconds`).
    let recentAuthenticationSeconds: Int
    let kit: TokenKit
    let cookies: CookiePolicy
    let admission: Admission
    let clientAuthentication: ClientAuthentication
    let accounts: Accounts
    let browserSessions: BrowserSessions
    let audit: AuditTrail

    private var store: any DeviceAuthorizationStore & ClientStore & LoginRequestStore & ConsentStore { kit.store }
    private var clock: ServerClock { kit.clock }
    private var issuer: String { kit.issuer }
    private var lifetimes: TokenLifetimes { kit.lifetimes }

    /// RFC 8628 §6.1: twenty consonants (no vowels, so no words; no 0/O or 1/I to confuse), eight of them: 20^8 ≈ 2.6·10^10.
    static let userCodeAlphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
    static let userCodeLength = 8
    /// The CSRF binding of the device page's forms (the login page binds its token to the login request instead).
    private static let deviceCSRFScope = "device"

    /// The device's request (`device_authorization`), in the OAuth family.
    func addRoutes(to mount: OAuthMount) {
        mount.refuseMethodsOtherThanPost(at: "device_authorization")
        mount.routes.post("device_authorization") { request, context in
            try await admission.admitStart(address: context.clientAddress)
            return try await self.deviceAuthorization(request, try await Parameters.body(of: request), context: context)
        }
    }

    /// The person's page (`/device`).
    func addRoutes(to pages: RouterGroup<LatchkeyRequestContext>) {
        pages.get("/device") { request, context in try await self.showDevicePage(request, context: context) }
        pages.post("/device") { request, context in try await self.submitDevicePage(request, context: context, logger: context.logger) }
    }

    // MARK: The device's request

    private func deviceAuthorization(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext) async throws -> Response {
        let client = try await clientAuthentication.authenticate(request, params, context: context)
        guard client.grantTypes.contains(.deviceCode) else {
            throw OAuthError(.unauthorizedClient, "the client may not use the device authorization grant")
        }
        let scope = try params.single("scope")?.split(separator: " ").map(String.init) ?? client.scopes
        let unknown = scope.filter { !client.scopes.contains($0) }
        guard unknown.isEmpty else { throw OAuthError(.invalidScope, "scope not allowed for this client: \(unknown.joined(separator: " "))") }
        let now = clock.now
        let deviceCode = Secrets.token()
        var userCode = ""
        // A collision of two pending user codes is refused by the store's unique index: try another.
        for attempt in 1...3 {
            userCode = Self.newUserCode()
            do {
                try await store.insertDeviceAuthorization(
                    DeviceAuthorizationRecord(
                        deviceCodeHash: Secrets.digest(deviceCode), userCodeDigest: accounts.codeDigest(userCode), clientId: client.clientId,
                        scope: scope, status: .pending, createdAt: now,
                        expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.deviceCode)),
                        interval: lifetimes.devicePollingInterval, lastPolledAt: nil))
                break
            } catch _ where attempt < 3 {
                continue
            }
        }
        let display = Self.displayUserCode(userCode)
        struct Answer: Encodable {
            var deviceCode, userCode, verificationURI: String
            var verificationURIComplete: String?
            var expiresIn, interval: Int
            enum CodingKeys: String, CodingKey {
                case deviceCode = "device_code", userCode = "user_code", verificationURI = "verification_uri"
                case verificationURIComplete = "verification_uri_complete", expiresIn = "expires_in", interval
            }
        }
        return try Responses.json(
            Answer(
                deviceCode: deviceCode, userCode: display, verificationURI: issuer + "/device",
                verificationURIComplete: client.deviceVerificationURIComplete ? issuer + "/device?user_code=" + display : nil,
                expiresIn: lifetimes.deviceCode, interval: lifetimes.devicePollingInterval),
            noStore: true)
    }

    static func newUserCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<userCodeLength).map { _ in userCodeAlphabet.randomElement(using: &generator) ?? "B" })
    }

    /// `BCDF-GHJK`: the form people read and type.
    static func displayUserCode(_ code: String) -> String {
        String(code.prefix(userCodeLength / 2)) + "-" + String(code.dropFirst(userCodeLength / 2))
    }

    /// What a person typed, as stored: upper case, dashes and spaces ignored; nil unless it can be a user code.
    static func normalizedUserCode(_ typed: String) -> String? {
        let letters = typed.uppercased().filter { $0 != "-" && !$0.isWhitespace }
        guard letters.count == userCodeLength, letters.allSatisfy(userCodeAlphabet.contains) else { return nil }
        return String(letters)
    }

    // MARK: The person's page

    private func showDevicePage(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let locale = request.locale()
        let query = try Parameters.query(of: request)
        let typed = try query.single("user_code")
        // Signed in already (back from the login page, or an SSO session): straight to the confirmation, when the code
        // was typed on this server's page (`typed` proves it) or the application allows links with the code in them.
        // Otherwise a link someone sent is an empty entry page: the person types the code their device shows.
        let typedHere = try query.single("typed")
        var prefill: String? = nil
        if let typed, let code = Self.normalizedUserCode(typed) {
            let vouched = typedHere.map { Secrets.constantTimeEquals($0, deviceTypedProof(code)) } ?? false
            if try await admission.admitChallengeRequest(address: context.clientAddress) == nil,
                let pending = try await store.pendingDeviceAuthorization(userCodeDigest: accounts.codeDigest(code), now: clock.now)
            {
                let linkAllowed = try await store.client(id: pending.clientId)?.configuration.deviceVerificationURIComplete ?? false
                if vouched || linkAllowed {
                    prefill = typed
                    if let live = try await browserSessions.live(for: request),
                        try await accounts.sessionSatisfies(live.session, user: live.user, clientId: pending.clientId),
                        deviceSessionIsFreshEnough(live.session, for: pending)
                    {
                        return try await deviceConfirmationPage(pending, code: code, user: live.user, locale: locale)
                    }
                }
            }
        }
        return deviceEntryPage(typed: prefill, error: nil, status: .ok, locale: locale)
    }

    /// Vouches, in the return address after the sign-in, that the person typed `code` on this server's page: keyed,
    /// so a link someone else made cannot carry it.
    private func deviceTypedProof(_ code: String) -> String {
        Base64URL.encode(accounts.codeDigest("device-typed:" + code))
    }

    /// A device request with `offline_access` (a refresh token that outlives the session) needs a sign-in from the
    /// last `recent_auth_seconds`, not any SSO session: approving it hands a device lasting access.
    func deviceSessionIsFreshEnough(_ session: SessionRecord, for pending: DeviceAuthorizationRecord) -> Bool {
        guard pending.scope.contains("offline_access") else { return true }
        return clock.now.timeIntervalSince(session.authTime) <= TimeInterval(recentAuthenticationSeconds)
    }

    private func submitDevicePage(_ request: Request, context: LatchkeyRequestContext, logger: Logger) async throws -> Response {
        let locale = request.locale()
        let params = try await Parameters.body(of: request)
        guard try cookies.formCarriesCSRFToken(params, request: request, scope: Self.deviceCSRFScope) else {
            logger.notice("device page rejected: CSRF token missing or mismatched")
            return CookiePolicy.csrfPage(locale)
        }
        let typed = try params.single("user_code") ?? ""
        // Every look-up of a code counts against the address: eight letters are many guesses, not infinitely many.
        if let wait = try await admission.admitChallengeRequest(address: context.clientAddress) {
            let message = Pages.t("page.device.throttled", locale, ["minutes": String(MessageCatalog.minutes(seconds: wait))])
            return deviceEntryPage(typed: typed, error: message, status: .tooManyRequests, locale: locale)
        }
        guard let code = Self.normalizedUserCode(typed),
            let pending = try await store.pendingDeviceAuthorization(userCodeDigest: accounts.codeDigest(code), now: clock.now)
        else {
            return deviceEntryPage(typed: typed, error: Pages.t("page.device.invalid", locale), status: .badRequest, locale: locale)
        }
        let returnTo = "/device?user_code=" + Self.displayUserCode(code) + "&typed=" + deviceTypedProof(code)
        let live = try await browserSessions.live(for: request)
        let satisfied = if let live { try await accounts.sessionSatisfies(live.session, user: live.user, clientId: pending.clientId) } else { false }
        guard let live, satisfied, deviceSessionIsFreshEnough(live.session, for: pending) else {
            // Sign in first (the hosted login, with its second factor), then back here, signed in. A session that is
            // good enough except for its age signs in again (`prompt=login`).
            let id = Secrets.token()
            let now = clock.now
            try await store.insertLoginRequest(
                LoginRequestRecord(
                    id: id,
                    request: AuthorizationRequest(
                        clientId: pending.clientId, redirectUri: "", scope: pending.scope, state: nil,
                        nonce: nil, codeChallenge: nil, loginHint: nil, uiLocales: nil, maxAge: nil,
                        prompt: satisfied ? ["login"] : [], returnTo: returnTo),
                    createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.loginRequest))))
            return Responses.redirect(to: "/login?request=\(id)", afterPost: true)
        }
        switch try params.single("decision") {
        case let decision? where decision == "approve" || decision == "deny":
            let approve = decision == "approve"
            guard
                try await store.decideDeviceAuthorization(
                    userCodeDigest: accounts.codeDigest(code), approve: approve, userId: live.user.id,
                    sessionId: live.session.id, authTime: live.session.authTime,
                    amr: live.session.amr, now: clock.now)
            else {
                return deviceEntryPage(typed: typed, error: Pages.t("page.device.invalid", locale), status: .badRequest, locale: locale)
            }
            logger.info("device authorization decided", metadata: ["client": .string(pending.clientId), "approved": .string("\(approve)")])
            // The confirmation page named a third-party application and its scopes: approving is the person's consent.
            if approve, let record = try await store.client(id: pending.clientId), ApplicationTrust(record).isThirdParty {
                let consent = try await store.grantConsent(userId: live.user.id, clientId: pending.clientId, scopes: pending.scope, now: clock.now)
                await audit.record(
                    .consentGranted, subject: live.user.id, details: ["scope": consent.scopes.joined(separator: " "), "via": "device"],
                    origin: AuditOrigin(client: pending.clientId, address: context.clientAddress, logger: logger))
            }
            // Never the user code: it is the device's credential until the token is handed out.
            await audit.record(
                approve ? .deviceApproved : .deviceDenied, subject: live.user.id, details: ["scope": pending.scope.joined(separator: " ")],
                origin: AuditOrigin(client: pending.clientId, address: context.clientAddress, logger: logger))
            return Responses.html(
                Pages.message(
                    titleKey: "page.device.title", bodyKey: approve ? "page.device.approved" : "page.device.denied",
                    locale: locale), headers: [.contentLanguage: locale.tag])
        default:
            return try await deviceConfirmationPage(pending, code: code, user: live.user, locale: locale)
        }
    }

    private func deviceEntryPage(typed: String?, error: String?, status: HTTPResponse.Status, locale: SupportedLocale) -> Response {
        let secret = Secrets.token()
        let page = Pages.deviceEntry(
            csrf: CookiePolicy.csrfToken(secret: secret, requestId: Self.deviceCSRFScope),
            typed: typed, error: error, locale: locale)
        return Responses.html(page, status: status, headers: [.setCookie: cookies.csrf(secret), .contentLanguage: locale.tag])
    }

    private func deviceConfirmationPage(
        _ pending: DeviceAuthorizationRecord, code: String, user: UserRecord,
        locale: SupportedLocale
    ) async throws -> Response {
        let secret = Secrets.token()
        let record = try await store.client(id: pending.clientId)
        let clientName = record?.configuration.name ?? pending.clientId
        // How old the request is: one that someone else started minutes before the person arrived shows its age.
        let minutes = max(1, Int(clock.now.timeIntervalSince(pending.createdAt)) / 60)  // whole minutes passed (at least one)
        let page = Pages.deviceConfirmation(
            csrf: CookiePolicy.csrfToken(secret: secret, requestId: Self.deviceCSRFScope),
            code: Self.displayUserCode(code), clientName: clientName, userName: user.username,
            age: MessageCatalog.duration(minutes: minutes, locale: locale),
            thirdPartyScopes: record.map(ApplicationTrust.init)?.isThirdParty ?? true ? pending.scope : nil, locale: locale)
        return Responses.html(page, headers: [.setCookie: cookies.csrf(secret), .contentLanguage: locale.tag])
    }
}
