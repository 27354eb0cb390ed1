import Foundation
import Hummingbird
import Logging

/// The authorization endpoint (OIDC Core §3.1.2) in each OAuth mount, with reachFive's native sign-in exchanges (a
/// login ticket or a provider's ID token for a code).
struct AuthorizeController: Sendable {
    let kit: TokenKit
    let admission: Admission
    let accounts: Accounts
    /// Login tickets are redeemed here.
    let ownTokens: OwnTokens
    let apple: AppleSignIn
    let sessions: SignInSessions
    let browserSessions: BrowserSessions
    let responses: AuthorizationResponses
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    let metrics: ServerMetrics
    let audit: AuditTrail
    /// The keys request objects are verified with.
    let clientKeys: ClientKeySets
    /// Request objects published at a client's registered `request_uris`.
    let references: RequestObjectReference
    /// Third-party applications' consent, asked before an SSO session answers for them.
    let consent: ConsentGate
    /// The application's native sign-in policy (`browser` refused, `mobile` attested), applied to the native
    /// provider exchanges as to every other native front door.
    let nativeSignIn: NativeSignInPolicy
    /// The server's nonces for native provider sign-in, and the spending of upstream tokens.
    let nativeNonces: NativeSignInNonces

    private var store: any UserStore & ClientStore & LoginRequestStore & PushedRequestStore { kit.store }
    private var clock: ServerClock { kit.clock }
    private var lifetimes: TokenLifetimes { kit.lifetimes }

    func addRoutes(to mount: OAuthMount) {
        // Every authorization request may store a pending login: counted per address (`max_starts_per_address`).
        mount.routes.get("authorize") { request, context in
            try await admission.admitStart(address: context.clientAddress)
            return try await self.authorize(
                try Parameters.query(of: request), request: request, address: context.clientAddress, logger: context.logger)
        }
        mount.routes.post("authorize") { request, context in
            try await admission.admitStart(address: context.clientAddress)
            return try await self.authorize(
                try await Parameters.body(of: request), request: request, address: context.clientAddress, logger: context.logger)
        }
    }

    /// OIDC Core §3.1.2. Until client and redirect URI are known good, errors are shown on an error page and never
    /// redirected (an unregistered redirect URI must not receive anything); after that they go back to the client
    /// with `state` and `iss` (RFC 9207).
    func authorize(_ pushedOrGiven: Parameters, request: Request, address: String, logger: Logger) async throws -> Response {
        guard let resolved = try await PushedAuthorizationController.resolveAuthorizationParameters(pushedOrGiven, store: store, now: clock.now)
        else {
            return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.malformed", request, pushedOrGiven)
        }
        var params = resolved.parameters
        let pushed = resolved.pushed
        let clientId: String?
        var redirectUri: String?
        do {
            clientId = try params.single("client_id")
            redirectUri = try params.single("redirect_uri")
        } catch {
            return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.malformed", request, params)
        }
        guard let clientId, let client = try await store.client(id: clientId)?.configuration else {
            return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.client", request, params)
        }
        // A request object by reference (RFC 9101 §5.2): fetched only from a URL the client registered, and never for a
        // client that requires PAR (FAPI 2.0), whose requests must be pushed.
        if !pushed, let reference = (try? params.single("request_uri")) ?? nil {
            guard !client.requirePushedAuthorizationRequests, (try? params.single("request")) == nil else {
                logger.notice(
                    "request_uri by reference refused", metadata: ["client": .string(clientId), "reason": "PAR required or request sent too"])
                return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.malformed", request, params)
            }
            do {
                var values = params.values
                values["request"] = [try await references.object(at: reference, client: client)]
                values["request_uri"] = nil
                params = Parameters(values)
            } catch {
                logger.notice("request_uri refused", metadata: ["client": .string(clientId), "reason": .string(error.description)])
                // The error goes back to the request's own redirect URI when the client registered it; else a page.
                guard let redirectUri, RedirectURIMatcher.isRegistered(redirectUri, in: client.redirectUris) else {
                    return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.malformed", request, params)
                }
                return responses.errorRedirect(error, redirectUri: redirectUri, state: (try? params.single("state")) ?? nil)
            }
        }
        // A signed request object (RFC 9101) is the request. Until it verifies, its redirect URI is not trusted: a
        // refusal is a page.
        if let object = (try? params.single("request")) ?? nil {
            do {
                params = try await RequestObject.parameters(
                    object, client: client, outerClientId: clientId, issuer: kit.issuer, now: clock.now, keys: clientKeys)
                redirectUri = try params.single("redirect_uri")
            } catch {
                logger.notice("request object refused", metadata: ["client": .string(clientId), "reason": .string(error.description)])
                return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.malformed", request, pushedOrGiven)
            }
        }
        guard pushed || !client.requirePushedAuthorizationRequests else {
            logger.notice("authorization request without request_uri for an application that requires PAR", metadata: ["client": .string(clientId)])
            return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.malformed", request, params)
        }
        guard let redirectUri, RedirectURIMatcher.isRegistered(redirectUri, in: client.redirectUris) else {
            return AuthorizationResponses.authorizeErrorPage("page.authorize_invalid.redirect", request, params)
        }
        let state = try? params.single("state")
        // Errors go back the way the request asked for, when it asked for a mode that can carry them.
        let mode = ResponseMode.forError(
            requested: (try? params.single("response_mode")) ?? nil, responseType: (try? params.single("response_type")) ?? nil,
            redirectUri: redirectUri)
        let origin = AuditOrigin(client: clientId, address: address, logger: logger)
        do {
            let authRequest = try AuthorizeController.validateAuthorizationRequest(params, client: client, redirectUri: redirectUri, state: state)
            if let ticket = try params.single("tkn") {
                return try await authorizeWithTicket(ticket, authRequest, client: client, origin: origin)
            }
            // reachFive's `provider` with an ID token is a native sign-in; without one (`webviewLogin(provider:)`), and
            // `idp`, it names the identity provider to go to straight away.
            let provider = try params.single("provider")
            if let provider, try params.single("id_token") != nil {
                return try await authorizeWithProvider(provider, params, authRequest, client: client, request: request, origin: origin)
            }
            // `fidp` is thunderID's name for the same hint.
            let hint = try params.single("idp") ?? params.single("fidp") ?? provider
            return try await continueAuthorization(authRequest, request: request, client: client, identityProvider: hint, origin: origin)
        } catch let error as OAuthError {
            return responses.errorRedirect(error, redirectUri: redirectUri, state: state, responseMode: mode)
        } catch let failure as AppleSignInFailure {
            logger.notice("Sign in with Apple refused", metadata: ["reason": .string(failure.description), "client": .string(clientId)])
            await audit.record(
                .signInFailed, .failure, subject: nil,
                details: ["method": "apple", "reason": failure.auditReason], origin: origin)
            return responses.errorRedirect(
                failure.oauthError, redirectUri: redirectUri, state: state, messageKey: failure.messageKey,
                locale: request.locale(), responseMode: mode)
        } catch let failure as FederationFailure {
            logger.notice("native provider sign-in refused", metadata: ["reason": .string(failure.description), "client": .string(clientId)])
            await audit.record(
                .signInFailed, .failure, subject: nil,
                details: [
                    "method": "federated", "provider": String((try? params.single("provider")).flatMap { $0 }?.prefix(64) ?? ""),
                    "reason": failure.auditReason
                ], origin: origin)
            return responses.errorRedirect(
                failure.oauthError, redirectUri: redirectUri, state: state, messageKey: failure.messageKey, locale: request.locale(),
                arguments: ["provider": Self.providerName(try? params.single("provider"), federation: federation)], responseMode: mode)
        }
    }

    /// reachFive `tkn` exchange: the user already authenticated (password or passkey endpoint); the single-use
    /// ticket becomes an authorization code for the same application, with the request's PKCE, `state` and `nonce`.
    private func authorizeWithTicket(
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

    /// Native provider token exchange (reachFive `login(withProvider:idToken:nonce:…)`): Sign in with Apple, or the ID
    /// token of an OpenID provider the application offers (Google Sign-In's).
    ///
    /// In order: the application's native sign-in policy (before the token is even read: a `browser` application is
    /// refused outright, a `mobile` one needs its attestation); the token and its server-issued nonce, both spent
    /// (`NativeSignInNonces`); the account; then `SignInCompletion`. An account that owes its second factor gets no
    /// code: the answer is `error=interaction_required` with an `mfa_pending` login ticket (`tkn`, `mfa_required=true`)
    /// that only the step-up endpoints take — the SDK continues there as after a password, and any other client falls
    /// back to the hosted page, which asks for the factor itself.
    private func authorizeWithProvider(
        _ provider: String, _ params: Parameters, _ authRequest: AuthorizationRequest,
        client: ClientConfiguration, request: Request, origin: AuditOrigin
    ) async throws -> Response {
        let logger = origin.logger
        try nativeSignIn.requireNativeSignInAllowed(client: client, attestation: request.headers[.attestationToken])
        let user: UserRecord
        let amr: [String]
        if provider == "apple" || provider.hasPrefix("apple:") {
            user = try await apple.signInWithApple(
                idToken: try params.required("id_token"), nonce: try params.single("nonce"), client: client,
                givenName: try params.single("given_name"), familyName: try params.single("family_name"),
                authorizationCode: try params.single("authorization_code"), nonces: nativeNonces, logger: logger)
            // RFC 8176 `fed`: Apple authenticated the user; we cannot see how, so it never counts as a second factor.
            amr = ["fed"]
        } else {
            let configured = try federation.provider(provider, for: client)
            // The provider's checks are invisible here unless it asserts them (and is trusted with them).
            let identity = try await federation.verifyNativeIDToken(
                try params.required("id_token"), nonce: try params.single("nonce"), provider: configured, clientId: client.clientId,
                nonces: nativeNonces)
            user = try await federatedAccounts.signIn(identity, provider: configured, client: client, origin: origin)
            amr = identity.amr
        }
        let essential = authRequest.requiresMultiFactor
        switch try await accounts.completion(of: user, amr: amr, client: client, multiFactorEssential: essential) {
        case .complete:
            let session = try await sessions.open(userId: user.id, authTime: clock.now, amr: amr, origin: origin)
            return try await responses.issueResponse(authRequest, user: user, session: session, afterPost: false)
        case .secondFactorOwed:
            logger.info("native provider sign-in owes the account's second factor", metadata: ["client": .string(client.clientId)])
            let ticket = try await ownTokens.mintLoginTicket(user: user, clientId: client.clientId, amr: amr, mfaPending: true)
            return secondFactorOwed(ticket: ticket, authRequest)
        case .refused:
            throw OAuthError(.accessDenied, "the application requires a second factor")
        }
    }

    /// The native exchanges' answer when the account's second factor is owed: an OAuth error redirect
    /// (`interaction_required`, OpenID Connect Core §3.1.2.6) with `state` and `iss`, carrying the `mfa_pending`
    /// ticket for the step-up. The ticket opens nothing but the step-up, which needs the factor itself.
    private func secondFactorOwed(ticket: String, _ authRequest: AuthorizationRequest) -> Response {
        responses.errorRedirect(
            OAuthError(
                .interactionRequired, "the account's second factor is required: continue with the step-up, or sign in on the hosted page"),
            redirectUri: authRequest.redirectUri, state: authRequest.state, responseMode: authRequest.responseMode,
            extra: [("mfa_required", "true"), ("tkn", ticket)])
    }

    /// The configured name of the provider a native sign-in named (for the person's message), else the id as sent,
    /// in printable form.
    static func providerName(_ requested: String??, federation: Federation) -> String {
        let id = (requested ?? nil).map { String($0.split(separator: ":").first ?? "") } ?? ""
        return federation.providers.first { $0.id == id }?.name ?? Federation.printable(id)
    }

    static func validateAuthorizationRequest(
        _ params: Parameters, client: ClientConfiguration, redirectUri: String,
        state: String?
    ) throws(OAuthError) -> AuthorizationRequest {
        if try params.single("request") != nil { throw OAuthError(.invalidRequestObject, "a request object is resolved before it is validated") }
        if try params.single("request_uri") != nil {
            throw OAuthError(.requestURINotSupported, "request_uri is resolved before the request is validated")
        }
        guard let typeName = try params.single("response_type") else {
            throw OAuthError(.invalidRequest, "response_type is missing (RFC 6749 §4.1.1)")
        }
        guard let type = ResponseType(parameter: typeName) else {
            throw OAuthError(
                .unsupportedResponseType,
                "response_type must be one of \(ResponseType.listed())")
        }
        guard client.responseTypes.contains(type) else {
            throw OAuthError(
                .unauthorizedClient,
                type == .code
                    ? "the client may not use the authorization code grant"
                    : "the client may not use response_type \(type.rawValue) (its response_types: \(ResponseType.listed(client.responseTypes)))")
        }
        let responseMode = try params.single("response_mode") ?? type.defaultResponseMode
        switch responseMode {
        case ResponseMode.query:
            // OAuth 2.0 Multiple Response Type Encoding Practices §5: tokens never go in the query.
            if type.isFrontChannel { throw OAuthError(.invalidRequest, "response_mode=query cannot carry tokens: use fragment or form_post") }
        case ResponseMode.fragment:
            break
        case ResponseMode.formPost:
            guard FormPostResponse.accepts(redirectUri: redirectUri) else {
                throw OAuthError(.invalidRequest, "response_mode=form_post needs an http(s) redirect_uri")
            }
        default:
            throw OAuthError(.invalidRequest, "response_mode must be query, fragment or form_post")
        }
        if let missing = type.grantTypes.first(where: { !client.grantTypes.contains($0) }) {
            throw OAuthError(
                .unauthorizedClient,
                missing == .authorizationCode ? "the client may not use the authorization code grant" : "the client may not use the implicit grant")
        }
        let requested = (try params.single("scope"))?.split(separator: " ").map(String.init) ?? client.scopes
        let unknown = requested.filter { !client.scopes.contains($0) }
        guard unknown.isEmpty else { throw OAuthError(.invalidScope, "scope not allowed for this client: \(unknown.joined(separator: " "))") }

        let challenge = try params.single("code_challenge")
        let method = try params.single("code_challenge_method")
        if let challenge {
            guard (method ?? "plain") == "S256" else { throw OAuthError(.invalidRequest, "code_challenge_method must be S256") }
            guard PKCE.isValidChallenge(challenge) else { throw OAuthError(.invalidRequest, "code_challenge is not a base64url SHA-256 value") }
        } else {
            if method != nil { throw OAuthError(.invalidRequest, "code_challenge_method without code_challenge") }
            // No code, nothing to prove: the implicit flow's tokens come back in the response itself.
            if type.issuesCode, client.isPublic || client.requirePKCE {
                throw OAuthError(.invalidRequest, "PKCE is required: send code_challenge with code_challenge_method=S256")
            }
        }
        let prompt = (try params.single("prompt"))?.split(separator: " ").map(String.init) ?? []
        if prompt.contains("none") && prompt.count > 1 { throw OAuthError(.invalidRequest, "prompt=none cannot be combined") }
        if let unsupported = prompt.first(where: { !["none", "login", "consent", "select_account"].contains($0) }) {
            throw OAuthError(.invalidRequest, "unsupported prompt value \(unsupported)")
        }
        let nonce = try params.single("nonce")
        if let nonce, nonce.utf8.count > 255 { throw OAuthError(.invalidRequest, "nonce is longer than 255 characters") }
        if type.isFrontChannel {
            // OpenID Connect Core §3.2.2.1 and §3.3.2.11: an ID token in the front channel is replayable without a
            // nonce, and these flows are OpenID Connect's.
            guard requested.contains("openid") else {
                throw OAuthError(.invalidRequest, "response_type \(type.rawValue) is OpenID Connect's: the scope must contain openid")
            }
            guard nonce != nil else { throw OAuthError(.invalidRequest, "response_type \(type.rawValue) requires a nonce") }
        }
        if let state, state.utf8.count > 1024 { throw OAuthError(.invalidRequest, "state is longer than 1024 characters") }
        var maxAge: Int?
        if let raw = try params.single("max_age") {
            guard let value = Int(raw), value >= 0 else { throw OAuthError(.invalidRequest, "max_age must be a non-negative integer") }
            maxAge = value
        }
        // RFC 9449 §10: the code is bound to this DPoP key; the token request must be proved by it.
        let dpopJkt = try params.single("dpop_jkt")
        if let dpopJkt, !DPoP.isThumbprint(dpopJkt) {
            throw OAuthError(.invalidRequest, "dpop_jkt is not a base64url SHA-256 JWK thumbprint (RFC 7638)")
        }
        var authorization = AuthorizationRequest(
            clientId: client.clientId, redirectUri: redirectUri, scope: requested, state: state, nonce: nonce,
            codeChallenge: challenge, loginHint: try params.single("login_hint"),
            uiLocales: try params.single("ui_locales"), maxAge: maxAge, prompt: prompt)
        authorization.dpopJkt = dpopJkt
        authorization.responseMode = responseMode == ResponseMode.query ? nil : responseMode
        authorization.responseType = type == .code ? nil : type
        // OpenID Connect Core §5.5 and §3.1.2.1: the claims asked for, `acr_values` as a voluntary `acr` request.
        var claims = try params.single("claims").map { text throws(OAuthError) in try ClaimsRequest(parameter: text) } ?? ClaimsRequest()
        claims.add(acrValues: (try params.single("acr_values"))?.split(separator: " ").map(String.init) ?? [])
        claims.restrict(toScopes: client.scopes)
        authorization.claims = claims.stored
        return authorization
    }

    /// Silent SSO when a live session satisfies the request (audited as `signin.session_reused`); otherwise the login
    /// page (or `login_required`).
    private func continueAuthorization(
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
