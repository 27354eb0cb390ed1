import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// Native sign-in over the identity API, without a browser, into one ``LatchkeySession``: a passkey, a saved password
/// or Sign in with Apple from the system's credential sheet, a passkey from the keyboard's suggestions, a native
/// provider's ID token, a passkey sign-up, and the second factor a sign-in may owe.
///
/// Every sign-in ends the same way: the server's one-time `tkn` is redeemed through `/oauth/authorize` (the 302 to
/// the redirect URI is captured, never followed), with this request's own PKCE pair, `state` and `nonce`; the
/// callback's `state` and `iss` are checked, the code is exchanged and the ID token verified, and the tokens are stored
/// in ``session`` like a redirect sign-in's, so its ``LatchkeySession/accessToken()``, ``LatchkeySession/user(source:)``
/// and ``LatchkeySession/signOut(options:)`` work afterwards.
///
/// ```swift
/// let work = NativeSignIn(client: client, session: client.session(named: "work"))
/// do {
///     let token = try await work.signIn(NativeLoginRequest(anchor: window), offering: [.Passkey, .Password])
/// } catch let error as LatchkeyError where error.code == .mfaRequired {
///     guard let stepUp = error.mfaStepUp else { throw error }
///     let challenge = try await work.startStepUp(stepUp, authType: "otp")
///     let token = try await challenge.verify(code: code)  // stored in "work" too
/// }
/// ```
///
/// The passkey seams are the client's (``LatchkeyClient/credentialProvider``, ``LatchkeyClient/passkeyAuthenticator``),
/// and so is the WebAuthn origin (``LatchkeyClient/originWebAuthn(overriddenBy:)``). The ReachFive-style
/// `login(withRequest:usingModalAuthorizationFor:display:)`, `login(withNonDiscoverableUsername:…)`,
/// `beginAutoFillAssistedPasskeyLogin(withRequest:)`, `login(withProvider:idToken:nonce:…)`, `nativeSignInNonce()`,
/// `signup(withRequest:)` and `mfaStart(stepUp:authType:)` of ``LatchkeyClient`` are this type, into the default
/// session.
public struct NativeSignIn: Sendable {
    /// The client whose configuration, passkey seams and server the sign-in uses.
    let client: LatchkeyClient
    /// Where a completed sign-in or sign-up stores its tokens.
    public let session: LatchkeySession

    /// Native sign-in into `session` (nil: the client's default session).
    public init(client: LatchkeyClient, session: LatchkeySession? = nil) {
        self.client = client
        self.session = session ?? client.session()
    }

    // MARK: Signing in

    /// Signs in with whatever credential the person picks in the system's sheet: a passkey, a saved password or Sign
    /// in with Apple.
    ///
    /// With `.Passkey` the server's options are fetched first (`/identity/v1/webauthn/authentication-options`). For
    /// `.SignInWithApple` the server's nonce is fetched first (``providerNonce()``): Apple gets its base64url SHA-256
    /// and the server the nonce itself, which it spends with the token. A type that cannot be prepared is dropped; its
    /// error is thrown only when nothing else is left to offer.
    /// - Parameters:
    ///   - request: the scopes, the presentation anchor and the WebAuthn origin.
    ///   - types: the kinds of credential the sheet offers (`.Passkey`, `.Password`, `.SignInWithApple`).
    ///   - mode: `.IfImmediatelyAvailableCredentials` fails with `.canceled` when nothing is available, without UI;
    ///     `.Always` fails with `.passkeyNoCredential` when a passkey was asked for.
    /// - Returns: the session's token, with the ID token's user.
    /// - Throws: `.invalidInput` for an empty type list; `.passkeyNotSupported` without a credential provider;
    ///   `.mfaRequired` (with `mfaStepUp`, continued with ``startStepUp(_:authType:)``) when the account's second
    ///   factor is owed; the server's `ApiError` mapped (`.authenticationFailed`, `.userAccountLocked`,
    ///   `.passkeyFailed` …). A cancelled calling task is a technical error (`.unknownError`), never `.canceled`.
    public func signIn(_ request: NativeLoginRequest = NativeLoginRequest(), offering types: [ModalAuthorization], display mode: Mode = .Always)
        async throws -> AuthToken
    {
        try await client.loading {
            var types = types.reduce(into: [ModalAuthorization]()) { kept, type in if !kept.contains(type) { kept.append(type) } }
            guard !types.isEmpty else {
                throw LatchkeyError(.invalidInput, "usingModalAuthorizationFor is empty: name at least one of .Passkey, .Password, .SignInWithApple")
            }
            let context = try client.context()
            let provider = try client.resolvedCredentialProvider()
            let scopes = request.scopes ?? context.config.scopes
            var origin = context.config.issuer
            var passkeyOptions: PublicKeyCredentialRequestOptions?
            if types.contains(.Passkey) {
                // A type that cannot be prepared is dropped (as ReachFive's SDK does); its error is thrown only when
                // nothing else is left to offer.
                do {
                    origin = try client.originWebAuthn(overriddenBy: request.originWebAuthn)
                    passkeyOptions = try await authenticationOptions(context, origin: origin, scopes: scopes, username: nil)
                } catch {
                    types.removeAll { $0 == .Passkey }
                    guard !types.isEmpty else { throw error }
                    client.logger.notice("passkey sign-in cannot be offered; offering the other credential types", metadata: ["error": "\(error)"])
                }
            }
            // Sign in with Apple uses the server's nonce (the token must carry its SHA-256): one that cannot be had is
            // dropped like a passkey that cannot be prepared.
            var apple: PKCEPair?
            if types.contains(.SignInWithApple) {
                do {
                    apple = PKCEPair(verifier: try await providerNonce(context))
                } catch {
                    types.removeAll { $0 == .SignInWithApple }
                    guard !types.isEmpty else { throw error }
                    client.logger.notice("Sign in with Apple cannot be offered; offering the other credential types", metadata: ["error": "\(error)"])
                }
            }
            let credentialRequest = CredentialRequest(
                types: types, mode: mode, passkeyOptions: passkeyOptions, origin: origin,
                appleNonce: apple?.challenge, appleScopes: Self.appleScopes(scopes), anchor: request.anchor)
            let credential = try await client.ceremony { try await provider.credential(for: credentialRequest) }
            switch credential {
            case .passkey(let assertion):
                return try await finishPasskeySignIn(assertion, context: context, scopes: scopes, origin: request.origin)
            case .password(let username, let password):
                return try await passwordSignIn(
                    username: Username.Unspecified(username), password: password, context: context,
                    scopes: scopes, origin: request.origin)
            case .appleID(let identityToken, let givenName, let familyName, let authorizationCode):
                guard let apple else { throw LatchkeyError(.unknownError, "the credential provider returned an Apple ID that was not asked for") }
                // The server's nonce itself; Apple got its SHA-256.
                return try await authorizeWithoutBrowser(
                    context, scopes: scopes, nonce: apple.verifier,
                    extra: Self.compact([
                        "provider": "apple", "id_token": identityToken, "given_name": givenName, "family_name": familyName,
                        "authorization_code": authorizationCode, "origin": request.origin
                    ]))
            }
        }
    }

    /// Username-first passkey sign-in: the server binds the ceremony to the named account. A Latchkey server lists
    /// no credential ids for a typed name (`allow_credentials` is empty whether the account exists or not, so the
    /// answer reveals nothing); every passkey is discoverable, so the authenticator finds the account's own, and the
    /// server accepts only a passkey of that account.
    /// - Throws: as ``signIn(_:offering:display:)``; `.passkeyNoCredential` when the authenticator has no passkey to
    ///   offer.
    public func signIn(
        username: Username, _ request: NativeLoginRequest = NativeLoginRequest(), offering types: [NonDiscoverableAuthorization] = [.Passkey],
        display mode: Mode = .Always
    ) async throws -> AuthToken {
        try await client.loading {
            guard types.contains(.Passkey) else {
                throw LatchkeyError(.invalidInput, "usingModalAuthorizationFor is empty: name .Passkey")
            }
            let context = try client.context()
            let provider = try client.resolvedCredentialProvider()
            let scopes = request.scopes ?? context.config.scopes
            let origin = try client.originWebAuthn(overriddenBy: request.originWebAuthn)
            let options = try await authenticationOptions(context, origin: origin, scopes: scopes, username: username)
            let credentialRequest = CredentialRequest(types: [.Passkey], mode: mode, passkeyOptions: options, origin: origin, anchor: request.anchor)
            guard case .passkey(let assertion) = try await client.ceremony({ try await provider.credential(for: credentialRequest) }) else {
                throw LatchkeyError(.unknownError, "the credential provider returned something other than the passkey asked for")
            }
            return try await finishPasskeySignIn(assertion, context: context, scopes: scopes, origin: request.origin)
        }
    }

    /// Passkey sign-in from the keyboard: while it runs, the platform offers the relying party's passkeys in the
    /// suggestions of the screen's username field; the call returns once the person picked one and confirmed it. Start
    /// it when the sign-in screen appears and let it wait; cancel the calling task when the screen goes away. The
    /// ReachFive-style `beginAutoFillAssistedPasskeyLogin(withRequest:)` documents every way it ends.
    ///
    /// `isLoading()` stays false while it waits for the person and is true only while the chosen passkey is
    /// exchanged for the session.
    /// - Throws: `.unknownError` (a `CancellationError` underneath) for a cancelled calling task; `.canceled` with
    ///   `isSuperseded` when the app started another credential request; `.passkeyRequestInProgress`,
    ///   `.passkeyDomainNotAssociated`, `.passkeyNotSupported` when the system refuses it; the server's `ApiError`
    ///   mapped; `.mfaRequired` when a second factor is owed.
    public func signInWithAutoFill(_ request: NativeLoginRequest = NativeLoginRequest()) async throws -> AuthToken {
        let context = try client.context()
        let provider = try client.resolvedCredentialProvider()
        let scopes = request.scopes ?? context.config.scopes
        let origin = try client.originWebAuthn(overriddenBy: request.originWebAuthn)
        let options = try await authenticationOptions(context, origin: origin, scopes: scopes, username: nil)
        let credentialRequest = CredentialRequest(
            types: [.Passkey], mode: .Always, passkeyOptions: options, origin: origin, anchor: request.anchor, presentation: .autoFill)
        guard case .passkey(let assertion) = try await client.ceremony({ try await provider.credential(for: credentialRequest) }) else {
            throw LatchkeyError(.unknownError, "the credential provider returned something other than the passkey AutoFill asked for")
        }
        // Busy only from here: waiting in the keyboard's suggestions is not loading.
        return try await client.loading { try await finishPasskeySignIn(assertion, context: context, scopes: scopes, origin: request.origin) }
    }

    /// Exchanges a native provider's ID token (Sign in with Apple, Google Sign-In) for a session:
    /// `/oauth/authorize?provider=…&id_token=…&nonce=<nonce>` with a separate PKCE pair for the code.
    ///
    /// The nonce must be the server's, from ``providerNonce()``, fetched before the provider's sign-in: a Latchkey
    /// server spends it and the token once, and refuses a token it did not issue the nonce for or one issued more
    /// than a few minutes ago.
    /// - Parameters:
    ///   - provider: the provider's name on the server (`apple`, `google`).
    ///   - idToken: the provider's ID token, as the platform returned it.
    ///   - nonce: the nonce from ``providerNonce()``: the token's `nonce` claim is that value itself (Google) or its
    ///     `base64url(SHA-256(nonce))` (Apple).
    ///   - scopes: the scopes of the session; nil uses the configuration's.
    ///   - origin: the origin the server records for the sign-in; nil uses the issuer's.
    ///   - givenName: Apple sends the name on first authorisation only, so it is forwarded.
    ///   - familyName: as `givenName`.
    /// - Throws: `.mfaRequired` (with `mfaStepUp`) when the account's second factor is owed; `.authenticationFailed`
    ///   for a refused token (a replayed or stale one, a nonce the server did not issue); the server's `ApiError`
    ///   mapped when the application may not sign in natively.
    public func signIn(
        provider: String, idToken: String, nonce: String, scopes: [String]? = nil, origin: String? = nil,
        givenName: String? = nil, familyName: String? = nil
    ) async throws -> AuthToken {
        try await client.loading {
            let context = try client.context()
            return try await authorizeWithoutBrowser(
                context, scopes: scopes ?? context.config.scopes, nonce: nonce,
                extra: Self.compact([
                    "provider": provider, "id_token": idToken, "given_name": givenName, "family_name": familyName, "origin": origin
                ]))
        }
    }

    /// A nonce for one native provider sign-in (Sign in with Apple, Google Sign-In), issued by the server
    /// (`POST /identity/v1/native-nonce`) for this application and valid for a few minutes. Give the provider's SDK
    /// the nonce (Google) or its base64url SHA-256 (Apple: `PKCEPair(verifier: nonce).challenge`), then pass the nonce
    /// itself to ``signIn(provider:idToken:nonce:scopes:origin:givenName:familyName:)``. It carries the app's
    /// `Attestation-Token` when the configuration supplies one.
    /// - Throws: `.sdkNotInitialized` before `initialize`; the server's `ApiError` mapped (a `browser` application,
    ///   or a `mobile` one without its attestation, gets none).
    public func providerNonce() async throws -> String {
        try await providerNonce(try client.context())
    }

    // MARK: Signing up

    /// Creates an account with a passkey and signs it in.
    /// - Throws: `.invalidConfiguration` for a bad `originWebAuthn` (before any network call); `.passkeyNotSupported`
    ///   without an authenticator; `.userAlreadyExists` (with the field errors in `apiError`) and other mapped
    ///   `ApiError`s; `.passkeyCanceled` when the person backs out.
    public func signUp(_ request: PasskeySignupRequest) async throws -> AuthToken {
        try await client.loading {
            let context = try client.context()
            let origin = try client.originWebAuthn(overriddenBy: request.originWebAuthn)
            let authenticator = try client.resolvedAuthenticator()
            let scopes = request.scopes ?? context.config.scopes
            let body: [String: JSONValue] = [
                "origin": .string(origin), "friendly_name": .string(request.friendlyName), "client_id": .string(context.config.clientId),
                "scope": .string(scopes.joined(separator: " ")), "profile": request.passkeyProfile.wire
            ]
            let optionsResponse = try await IdentityAPI.send(context, "POST", "/identity/v1/webauthn/signup-options", body: .object(body))
            var registration = try LatchkeyClient.registrationOptions(optionsResponse)
            // The name the system shows for the passkey is the app's friendly name (as ReachFive's SDK does).
            registration.options.user.name = request.friendlyName
            let credential = try await client.ceremony {
                try await authenticator.createCredential(for: registration.options, origin: origin, anchor: request.anchor)
            }
            let signup = try await IdentityAPI.send(
                context, "POST", "/identity/v1/webauthn/signup",
                body: .object([
                    "webauthn_id": .string(registration.options.user.encodedId), "public_key_credential": credential.reachFiveJSON
                ]))
            let tkn = try IdentityAPI.tkn(try IdentityAPI.object(signup, "passkey sign-up"), "passkey sign-up")
            return try await authorizeWithoutBrowser(context, scopes: scopes, nonce: nil, extra: Self.compact(["tkn": tkn, "origin": request.origin]))
        }
    }

    // MARK: The second factor

    /// Continues a sign-in that answered `.mfaRequired` (`error.mfaStepUp`): asks the server for a challenge of
    /// `authType` (one of `stepUp.amr`: `email` sends a code, `otp` is the authenticator app's). The challenge's
    /// ``ContinueStepUp/verify(code:trustDevice:)`` completes the sign-in into the session the sign-in was started
    /// for (the step-up remembers it), whichever value continues it.
    /// - Throws: `.invalidInput` for a step-up this SDK did not start (no PKCE verifier); the server's errors mapped.
    public func startStepUp(_ stepUp: MfaStepUp, authType: String) async throws -> ContinueStepUp {
        let context = try client.context()
        guard stepUp.codeVerifier != nil else {
            throw LatchkeyError(.invalidInput, "this step-up was not started by this client (it has no PKCE verifier)")
        }
        let response = try await IdentityAPI.send(
            context, "POST", "/identity/v1/passwordless/start",
            body: .object([
                "step_up": .string(stepUp.token), "auth_type": .string(authType), "client_id": .string(context.config.clientId),
                "response_type": .string("code")
            ]))
        let answer = try IdentityAPI.object(response, "step-up start")
        guard let id = answer["challenge_id"]?.stringValue, !id.isEmpty else {
            throw LatchkeyError(.serverError, "the step-up start answer has no challenge_id")
        }
        return ContinueStepUp(challengeId: id, authType: authType, stepUp: stepUp, session: client.session(stepUp.sessionName))
    }
}

// MARK: Internals

extension NativeSignIn {
    /// Sends a challenge's code and completes the sign-in into the challenge's session.
    static func verify(_ step: ContinueStepUp, code: String, trustDevice: Bool?) async throws -> AuthToken {
        let client = step.session.client
        return try await client.loading {
            let context = try client.context()
            guard let verifier = step.stepUp.codeVerifier, let redirectUri = context.config.afterSignInUrl else {
                throw LatchkeyError(.invalidConfiguration, "the step-up needs this client's PKCE verifier and afterSignInUrl")
            }
            var body: [String: JSONValue] = ["challenge_id": .string(step.challengeId), "verification_code": .string(code)]
            if let trustDevice { body["trust_device"] = .bool(trustDevice) }
            let response = try await IdentityAPI.send(context, "POST", "/identity/v1/passwordless/verify", body: .object(body))
            let answer = try IdentityAPI.object(response, "step-up verification")
            guard let authorizationCode = answer["code"]?.stringValue, !authorizationCode.isEmpty else {
                throw LatchkeyError(.serverError, "the step-up verification answer has no code")
            }
            let tokenResponse = try await context.tokenRequest(
                .authorizationCode(code: authorizationCode, redirectURI: redirectUri, codeVerifier: verifier))
            let tokens = try await context.signInTokens(
                tokenResponse, nonce: nil, maxAge: nil,
                expectsIDToken: context.config.scopes.contains("openid"))
            try await context.tokens.replace(tokens, sessionId: step.session.name)
            return AuthToken(tokens, now: context.clock.deviceNow)
        }
    }

    func providerNonce(_ context: OAuthClient) async throws -> String {
        let response = try await IdentityAPI.send(
            context, "POST", "/identity/v1/native-nonce", body: .object(["client_id": .string(context.config.clientId)]))
        guard let nonce = try IdentityAPI.object(response, "native sign-in nonce")["nonce"]?.stringValue, !nonce.isEmpty else {
            throw LatchkeyError(.serverError, "the native sign-in nonce answer has no nonce", statusCode: response.status)
        }
        return nonce
    }

    private func authenticationOptions(_ context: OAuthClient, origin: String, scopes: [String], username: Username?) async throws
        -> PublicKeyCredentialRequestOptions
    {
        var body: [String: JSONValue] = [
            "client_id": .string(context.config.clientId), "origin": .string(origin),
            "scope": .string(scopes.joined(separator: " "))
        ]
        if let username { body[username.wire.key] = .string(username.wire.value) }
        let response = try await IdentityAPI.send(context, "POST", "/identity/v1/webauthn/authentication-options", body: .object(body))
        do { return try PublicKeyCredentialRequestOptions(json: response.body, style: .reachFive) } catch let error as LatchkeyError {
            throw LatchkeyError(.serverError, "the server's passkey options are unusable: \(error.message)", statusCode: response.status)
        }
    }

    private func finishPasskeySignIn(_ assertion: AssertionCredential, context: OAuthClient, scopes: [String], origin: String?) async throws
        -> AuthToken
    {
        let response = try await IdentityAPI.send(context, "POST", "/identity/v1/webauthn/authentication", body: assertion.reachFiveJSON)
        let answer = try IdentityAPI.object(response, "passkey sign-in")
        let tkn = try IdentityAPI.tkn(answer, "passkey sign-in")
        // A passkey without user verification is one factor: the account's second factor may be owed, as after a password.
        if answer["mfa_required"]?.boolValue == true {
            throw try await stepUp(tkn: tkn, context: context, scopes: scopes)
        }
        return try await authorizeWithoutBrowser(context, scopes: scopes, nonce: nil, extra: Self.compact(["tkn": tkn, "origin": origin]))
    }

    private func passwordSignIn(username: Username, password: String, context: OAuthClient, scopes: [String], origin: String?) async throws
        -> AuthToken
    {
        var body: [String: JSONValue] = [
            username.wire.key: .string(username.wire.value), "password": .string(password), "grant_type": .string("password"),
            "client_id": .string(context.config.clientId), "scope": .string(scopes.joined(separator: " "))
        ]
        if let origin { body["origin"] = .string(origin) }
        let response = try await IdentityAPI.send(context, "POST", "/identity/v1/password/login", body: .object(body))
        let answer = try IdentityAPI.object(response, "password sign-in")
        let tkn = try IdentityAPI.tkn(answer, "password sign-in")
        if answer["mfa_required"]?.boolValue == true {
            throw try await stepUp(tkn: tkn, context: context, scopes: scopes)
        }
        return try await authorizeWithoutBrowser(context, scopes: scopes, nonce: nil, extra: Self.compact(["tkn": tkn, "origin": origin]))
    }

    /// Starts the MFA step-up of a sign-in and returns the `.mfaRequired` error that carries it (remembering this
    /// value's session, where the step-up's tokens will be stored).
    private func stepUp(tkn: String, context: OAuthClient, scopes: [String]) async throws -> LatchkeyError {
        guard let redirectUri = context.config.afterSignInUrl else {
            throw LatchkeyError(.invalidConfiguration, "afterSignInUrl (the redirect URI) is not set")
        }
        let pkce = PKCEPair()
        let response = try await IdentityAPI.send(
            context, "POST", "/identity/v1/mfa/stepup",
            body: .object([
                "response_type": .string("code"), "client_id": .string(context.config.clientId), "redirect_uri": .string(redirectUri),
                "code_challenge": .string(pkce.challenge), "code_challenge_method": .string("S256"),
                "scope": .string(scopes.joined(separator: " ")), "tkn": .string(tkn)
            ]))
        let answer = try IdentityAPI.object(response, "MFA step-up")
        guard let token = answer["token"]?.stringValue else { throw LatchkeyError(.serverError, "the MFA step-up answer has no token") }
        let amr = answer["amr"]?.stringArray ?? []
        var error = LatchkeyError(.mfaRequired, "a second factor is required (\(amr.joined(separator: ", ")))")
        error.mfaStepUp = MfaStepUp(token: token, amr: amr, codeVerifier: pkce.verifier, sessionName: session.name)
        return error
    }

    /// `/oauth/authorize` without a browser: this request's own PKCE/state/nonce, the 302 captured (never followed)
    /// and completed like a redirect callback (state, iss, error, code exchange, ID-token verification, tokens stored
    /// in this value's session). A native provider exchange (`id_token`) carries the app's `Attestation-Token`, and
    /// when the server answers that the account's second factor is owed (`interaction_required` with an
    /// `mfa_pending` `tkn`), the step-up starts and `.mfaRequired` is thrown, as after a password.
    private func authorizeWithoutBrowser(_ context: OAuthClient, scopes: [String], nonce: String?, extra: [String: String]) async throws
        -> AuthToken
    {
        let codeFlow = client.codeFlow
        _ = try await context.requireMetadata()  // the authorization endpoint comes from discovery
        let authorization = try codeFlow.start(context, options: SignInOptions(extra: extra), sessionId: session.name, nonce: nonce, scopes: scopes)
        var headers = ["Accept": "application/json"]
        if extra["id_token"] != nil, let provider = context.config.attestationTokenProvider {
            headers["Attestation-Token"] = try await provider()
        }
        var stepUpTicket: String?
        do {
            let response = try await context.http.send(HTTPRequest(url: authorization.url, headers: headers))
            guard (300..<400).contains(response.status) else {
                if response.status >= 400 { throw IdentityErrorMapping.error(from: response) }
                throw LatchkeyError(
                    .serverError, "the authorization endpoint did not redirect (HTTP \(response.status))", statusCode: response.status)
            }
            guard let location = response.location, let callback = URL(string: location, relativeTo: authorization.url)?.absoluteURL else {
                throw LatchkeyError(.serverError, "the authorization endpoint redirected without a Location", statusCode: response.status)
            }
            let query = URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? []
            if query.contains(where: { $0.name == "mfa_required" && $0.value == "true" }) {
                stepUpTicket = query.first { $0.name == "tkn" }?.value
            }
            // The redirect was captured without a browser: no browser holds a session of this sign-in.
            return AuthToken(try await codeFlow.resume(callback: callback, context: context, browser: .withoutBrowser), now: context.clock.deviceNow)
        } catch let error as LatchkeyError where error.serverCode == "interaction_required" && stepUpTicket?.isEmpty == false {
            // `resume` checked the callback's state, redirect URI and iss before it read the error: the answer is this
            // sign-in's. The ticket opens only the step-up, which needs the second factor itself.
            codeFlow.discard(state: authorization.state)
            throw try await stepUp(tkn: stepUpTicket ?? "", context: context, scopes: scopes)
        } catch {
            codeFlow.discard(state: authorization.state)
            throw error
        }
    }

    /// Apple's scopes from the OAuth ones: `email` → email, `profile`/`name` → full name.
    static func appleScopes(_ scopes: [String]) -> [AppleIDScope] {
        var out: [AppleIDScope] = []
        if scopes.contains("email") { out.append(.email) }
        if scopes.contains("profile") || scopes.contains("name") { out.append(.fullName) }
        return out
    }

    static func compact(_ values: [String: String?]) -> [String: String] { values.compactMapValues { $0 } }
}
