import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// The passkey seams a client was given.
struct NativeLoginSeams: Sendable {
    var credentialProvider: (any CredentialProvider)?
    var passkeyAuthenticator: (any PasskeyAuthenticator)?
}

/// ReachFive-style native sign-in, passkey sign-up and passkey management over the ReachFive identity API.
///
/// Every sign-in ends the same way: the server's one-time `tkn` is redeemed through `/oauth/authorize` (the 302 to
/// the redirect URI is captured, never followed), with this request's own PKCE pair, `state` and `nonce`; the
/// callback's `state` and `iss` are checked, the code is exchanged and the ID token verified — and the session is
/// stored like a redirect sign-in's, so `getAccessToken`, `getUser` and `signOut` work afterwards.
///
/// The sign-in methods here are the ReachFive-style names of ``NativeSignIn`` into the default session; the core
/// type signs in to any ``LatchkeySession``.
extension LatchkeyClient {
    /// A client with the passkey seams (see `credentialProvider` and `passkeyAuthenticator`).
    public convenience init(
        http: any HTTPClient = URLSessionHTTPClient(), userAgent: any AuthorizationUserAgent = LoopbackUserAgent(),
        credentialProvider: (any CredentialProvider)?, passkeyAuthenticator: (any PasskeyAuthenticator)? = nil
    ) {
        self.init(http: http, userAgent: userAgent)
        nativeLoginSeams.withLock { $0 = NativeLoginSeams(credentialProvider: credentialProvider, passkeyAuthenticator: passkeyAuthenticator) }
    }

    /// Supplies the credential the user picks in `login(withRequest:…)`. When nil, a passkey-only provider over
    /// `passkeyAuthenticator` is used. (On Apple platforms LatchkeyApple will provide the `ASAuthorizationController` one.)
    public var credentialProvider: (any CredentialProvider)? {
        get { nativeLoginSeams.withLock { $0.credentialProvider } }
        set { nativeLoginSeams.withLock { $0.credentialProvider = newValue } }
    }

    /// Creates passkeys (`signup`, `registerNewPasskey`, thunderID passkey steps) and, without a credential
    /// provider, signs in with them. `SoftwareAuthenticator` on Linux.
    public var passkeyAuthenticator: (any PasskeyAuthenticator)? {
        get { nativeLoginSeams.withLock { $0.passkeyAuthenticator } }
        set { nativeLoginSeams.withLock { $0.passkeyAuthenticator = newValue } }
    }

    // MARK: Origin

    /// The WebAuthn origin of passkey ceremonies, validated and serialised as `scheme://host[:port]`: the override,
    /// else `LatchkeyConfig.originWebAuthn`, else the issuer's origin.
    /// - Throws: `.invalidConfiguration` for anything that is not an https origin (http only on loopback hosts), has
    ///   a path, query, fragment or user information; `.sdkNotInitialized` before `initialize`.
    public func originWebAuthn(overriddenBy override: String? = nil) throws -> String {
        if let override { return try WebAuthnOrigin.serialise(override) }
        let config = try context().config
        if let configured = config.originWebAuthn { return try WebAuthnOrigin.serialise(configured) }
        return try WebAuthnOrigin.serialise(config.issuer, stripPath: true)
    }

    // MARK: Sign-in (ReachFive-style)

    /// Signs in with whatever credential the user picks: a passkey, a saved password or Sign in with Apple.
    ///
    /// With `.Passkey` the server's options are fetched first (`/identity/v1/webauthn/authentication-options`). For
    /// `.SignInWithApple` the server's nonce is fetched first (`nativeSignInNonce()`): Apple gets its base64url
    /// SHA-256 and the server the nonce itself, which it spends with the token.
    /// - Parameters:
    ///   - request: the scopes, the presentation anchor and the WebAuthn origin.
    ///   - requestTypes: the kinds of credential the sheet offers (`.Passkey`, `.Password`, `.SignInWithApple`).
    ///   - mode: `.IfImmediatelyAvailableCredentials` fails with `.canceled` (`AuthCanceled`) when nothing is
    ///     available, without UI; `.Always` fails with `.passkeyNoCredential` when a passkey was asked for.
    /// - Throws: `LatchkeyError` — `.invalidInput` for an empty type list; `.passkeyNotSupported` without a credential
    ///   provider; `.mfaRequired` (with `mfaStepUp`) when the account's second factor is owed (after a password, a
    ///   passkey without user verification or Sign in with Apple); the server's
    ///   `ApiError` mapped (`.authenticationFailed`, `.userAccountLocked`, `.passkeyFailed` …). A cancelled calling
    ///   task is a technical error (`.unknownError`), never `.canceled`.
    public func login(
        withRequest request: NativeLoginRequest, usingModalAuthorizationFor requestTypes: [ModalAuthorization],
        display mode: Mode
    ) async throws -> AuthToken {
        try await NativeSignIn(client: self).signIn(request, offering: requestTypes, display: mode)
    }

    /// Username-first passkey sign-in: the server binds the ceremony to the named account. A Latchkey server lists
    /// no credential ids for a typed name (`allow_credentials` is empty whether the account exists or not, so the
    /// answer reveals nothing); every passkey is discoverable, so the authenticator finds the account's own, and the
    /// server accepts only a passkey of that account.
    /// - Throws: as `login(withRequest:…)`; `.passkeyNoCredential` when the authenticator has no passkey to offer.
    public func login(
        withNonDiscoverableUsername username: Username, forRequest request: NativeLoginRequest,
        usingModalAuthorizationFor requestTypes: [NonDiscoverableAuthorization], display mode: Mode
    ) async throws -> AuthToken {
        try await NativeSignIn(client: self).signIn(username: username, request, offering: requestTypes, display: mode)
    }

    /// Passkey sign-in from the keyboard (ReachFive 11's name and signature): while it runs, the platform offers the
    /// relying party's passkeys in the suggestions of the screen's username field (a text field whose content type is
    /// `.username`); the person taps one, confirms with Face ID or Touch ID, and the call returns signed in, the session
    /// stored as after `login(withRequest:usingModalAuthorizationFor:display:)`. This is the SDK's one AutoFill API;
    /// ``NativeSignIn/signInWithAutoFill(_:)`` is the same call into any session.
    ///
    /// The server's options are fetched first (`/identity/v1/webauthn/authentication-options`, discoverable: no
    /// username), then the credential provider is asked with `presentation: .autoFill` (on Apple platforms
    /// `ASAuthorizationController.performAutoFillAssistedRequests()` with the passkey assertion request only). Start it
    /// when the sign-in screen appears (SwiftUI `.task`, UIKit `viewDidAppear`) and let it wait: it ends only when the
    /// person picks a passkey, or when
    /// - the calling task is cancelled (the screen went away): the system request is cancelled and the call throws
    ///   `.unknownError` with a `CancellationError` underneath, as every cancelled sign-in does — never `.canceled`;
    /// - the app starts another credential request (a modal sign-in, a registration, another AutoFill): this one ends
    ///   with `LatchkeyError(.canceled)` whose `isSuperseded` is true — nothing to show, the newer request goes on;
    /// - the system refuses it: another request not made by this SDK is showing (`.passkeyRequestInProgress`), the
    ///   app is not associated with the RP ID (`.passkeyDomainNotAssociated`), or the platform has no AutoFill
    ///   (`.passkeyNotSupported`: macOS, tvOS, Mac Catalyst).
    ///
    /// `isLoading()` stays false while it waits for the person (the screen is not busy) and is true only while the
    /// chosen passkey is exchanged for the session. Where the credential provider cannot wait in a keyboard (the
    /// software one on Linux) the call answers at once from the passkeys it holds, or throws `.canceled`.
    /// - Throws: as above; `.passkeyNotSupported` without a credential provider or authenticator; the server's
    ///   `ApiError` mapped (`.passkeyFailed`, `.passkeyNoCredential` for a passkey the server does not know …);
    ///   `.mfaRequired` (with `mfaStepUp`) when the passkey was used without user verification and a second factor is
    ///   owed.
    public func beginAutoFillAssistedPasskeyLogin(withRequest request: NativeLoginRequest) async throws -> AuthToken {
        try await NativeSignIn(client: self).signInWithAutoFill(request)
    }

    /// Exchanges a native provider's ID token (Sign in with Apple, Google Sign-In) for a session:
    /// `/oauth/authorize?provider=…&id_token=…&nonce=<nonce>` with a separate PKCE pair for the code.
    ///
    /// The nonce must be the server's, from `nativeSignInNonce()`, fetched before the provider's sign-in: a Latchkey
    /// server spends it and the token once, and refuses a token it did not issue the nonce for or one issued more
    /// than a few minutes ago.
    ///
    /// ```swift
    /// let nonce = try await client.nativeSignInNonce()
    /// // Google Sign-In is given `nonce` (Sign in with Apple its base64url SHA-256); the ID token carries it.
    /// let token = try await client.login(withProvider: "google", idToken: googleIDToken, nonce: nonce)
    /// ```
    /// - Parameters:
    ///   - provider: the provider's name on the server (`apple`, `google`).
    ///   - idToken: the provider's ID token, as the platform returned it.
    ///   - nonce: the nonce from `nativeSignInNonce()`: the token's `nonce` claim is that value itself (Google) or
    ///     its `base64url(SHA-256(nonce))` (Apple); the server checks both forms, and our ID token then carries it.
    ///   - scope: the scopes of the session; nil uses the configuration's.
    ///   - origin: the origin the server records for the sign-in; nil uses the issuer's.
    ///   - givenName: Apple sends the name on first authorisation only, so it is forwarded.
    ///   - familyName: as `givenName`.
    /// - Throws: `.mfaRequired` (with `mfaStepUp`, continued with `mfaStart` as after a password) when the account's
    ///   second factor is owed; `.authenticationFailed` for a refused token (a replayed or stale one, a nonce the
    ///   server did not issue); the server's `ApiError` mapped when the application may not sign in natively.
    public func login(
        withProvider provider: String, idToken: String, nonce: String, scope: [String]? = nil, origin: String? = nil,
        givenName: String? = nil, familyName: String? = nil
    ) async throws -> AuthToken {
        try await NativeSignIn(client: self).signIn(
            provider: provider, idToken: idToken, nonce: nonce, scopes: scope, origin: origin, givenName: givenName, familyName: familyName)
    }

    /// A nonce for one native provider sign-in (Sign in with Apple, Google Sign-In), issued by the server
    /// (`POST /identity/v1/native-nonce`) for this application and valid for a few minutes. Give the provider's SDK
    /// the nonce (Google) or its base64url SHA-256 (Apple: `PKCEPair(verifier: nonce).challenge`), then pass the nonce
    /// itself to `login(withProvider:idToken:nonce:)`. `login(withRequest:…)` does all of this for Sign in with Apple.
    /// It carries the app's `Attestation-Token` when the configuration supplies one.
    /// - Throws: `.sdkNotInitialized` before `initialize`; the server's `ApiError` mapped (a `browser` application,
    ///   or a `mobile` one without its attestation, gets none).
    public func nativeSignInNonce() async throws -> String {
        try await NativeSignIn(client: self).providerNonce()
    }

    // MARK: Passkey sign-up and management (ReachFive-style)

    /// Creates an account with a passkey and signs it in.
    /// - Throws: `.invalidConfiguration` for a bad `originWebAuthn` (before any network call); `.passkeyNotSupported`
    ///   without an authenticator; `.userAlreadyExists` (with the field errors in `apiError`) and other mapped
    ///   `ApiError`s; `.passkeyCanceled` when the user backs out.
    public func signup(withRequest request: PasskeySignupRequest) async throws -> AuthToken {
        try await NativeSignIn(client: self).signUp(request)
    }

    /// Adds a passkey to the signed-in account.
    public func registerNewPasskey(withRequest request: NewPasskeyRequest, authToken: AuthToken) async throws {
        let context = try context()
        let origin = try originWebAuthn(overriddenBy: request.originWebAuthn)
        let authenticator = try resolvedAuthenticator()
        let optionsResponse = try await IdentityAPI.send(
            context, "POST", "/identity/v1/webauthn/registration-options",
            body: .object(["origin": .string(origin), "friendly_name": .string(request.friendlyName)]),
            bearer: authToken.accessToken)
        var registration = try Self.registrationOptions(optionsResponse)
        registration.options.user.name = request.friendlyName
        let credential = try await ceremony {
            try await authenticator.createCredential(for: registration.options, origin: origin, anchor: request.anchor)
        }
        _ = try await IdentityAPI.send(
            context, "POST", "/identity/v1/webauthn/registration", body: credential.reachFiveJSON,
            bearer: authToken.accessToken)
    }

    /// Offers a passkey for the account just signed in with a password, without asking (iOS 18, macOS 15 and
    /// visionOS 2 conditional registration): the platform's credential manager adds one by itself when it holds this
    /// account's password and agrees, and shows nothing either way. Opt-in: call it right after a password sign-in
    /// succeeded (after `login(withRequest:…)` returned a password sign-in, or after an app-native password step),
    /// when the app has shown the person signed in; the sign-in stands whatever this returns or throws.
    ///
    /// The server's creation options are fetched as for `registerNewPasskey(withRequest:authToken:)` (its excluded
    /// credentials included, so a device that already has one declines), with the account's own name as the passkey's
    /// user name — the credential manager matches it against the saved password; the person-facing name of the
    /// passkey is `friendlyName` on the server. A made passkey is verified and stored by the server, which audits it as
    /// `passkey.added` with `how: upgrade` (the request carries `"how": "upgrade"`).
    ///
    /// ```swift
    /// let token = try await client.login(withRequest: request, usingModalAuthorizationFor: [.Password], display: .Always)
    /// if case .notOffered(let reason) = try await client.upgradeToPasskey(authToken: token) {
    ///     logger.debug("no passkey this time: \(reason)")
    /// }
    /// ```
    /// - Parameters:
    ///   - authToken: the fresh sign-in's token (the server requires a recent sign-in to add a passkey).
    ///   - friendlyName: the passkey's name in the account's passkey list; nil lets the server name it.
    ///   - throwsIfUnsupported: false (the default) reports an OS without conditional registration as
    ///     `.notOffered(.unsupportedOS)`; true throws `.passkeyNotSupported` for it instead, for a caller that insists.
    /// - Returns: `.registered`, or `.notOffered` with the reason: `.unsupportedOS` (nothing asked, not even the
    ///   server), `.declined` (the credential manager said no, silently), `.alreadyRegistered`, `.superseded`.
    /// - Throws: `.passkeyDomainNotAssociated` (the app's associated domain: a developer fix); the server's errors
    ///   mapped (`.reauthenticationRequired` for a sign-in that is not recent, `.passkeyFailed` for a refused
    ///   registration); `.unknownError` with a `CancellationError` for a cancelled calling task.
    public func upgradeToPasskey(authToken: AuthToken, friendlyName: String? = nil, throwsIfUnsupported: Bool = false) async throws
        -> PasskeyUpgradeOutcome
    {
        let context = try context()
        let origin = try originWebAuthn()
        guard let authenticator = nativeLoginSeams.withLock({ $0.passkeyAuthenticator }), authenticator.supportsConditionalRegistration else {
            if throwsIfUnsupported {
                throw localized(LatchkeyError(.passkeyNotSupported, "conditional passkey registration needs iOS 18, macOS 15 or visionOS 2"))
            }
            return .notOffered(.unsupportedOS)
        }
        var body: [String: JSONValue] = ["origin": .string(origin)]
        if let friendlyName { body["friendly_name"] = .string(friendlyName) }
        let optionsResponse = try await IdentityAPI.send(
            context, "POST", "/identity/v1/webauthn/registration-options", body: .object(body), bearer: authToken.accessToken)
        // The options keep the server's user name (the account's): conditional registration is granted only for the
        // account name a password is saved under.
        let registration = try Self.registrationOptions(optionsResponse)
        let result = try await ceremony { try await authenticator.createCredentialConditionally(for: registration.options, origin: origin) }
        let credential: RegistrationCredential
        switch result {
        case .created(let created): credential = created
        case .notOffered(let reason): return .notOffered(reason)
        }
        guard case .object(var fields) = credential.reachFiveJSON else {
            throw LatchkeyError(.unknownError, "the new passkey's JSON is not an object")
        }
        // The server audits the passkey as added by this upgrade (`passkey.added`, `how: upgrade`).
        fields["how"] = .string("upgrade")
        if let friendlyName { fields["friendly_name"] = .string(friendlyName) }
        _ = try await IdentityAPI.send(
            context, "POST", "/identity/v1/webauthn/registration", body: .object(fields), bearer: authToken.accessToken)
        return .registered
    }

    /// The passkeys registered on the signed-in account.
    public func listWebAuthnCredentials(authToken: AuthToken) async throws -> [DeviceCredential] {
        let context = try context()
        let response = try await IdentityAPI.send(context, "GET", "/identity/v1/webauthn/registration", bearer: authToken.accessToken)
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: response.body), case .array(let items) = value else {
            throw LatchkeyError(.serverError, "the passkey list is not a JSON array", statusCode: response.status)
        }
        return try items.map(Self.deviceCredential)
    }

    /// Removes a passkey from the signed-in account. Needs a recent sign-in; the server refuses (`409`, its message in
    /// the person's language) to remove the passkey that is the account's only way to sign in (no password, no other
    /// passkey, no linked provider).
    public func deleteWebAuthnRegistration(id: String, authToken: AuthToken) async throws {
        let context = try context()
        _ = try await IdentityAPI.send(
            context, "DELETE", "/identity/v1/webauthn/registration/" + (try Self.pathSegment(id)), bearer: authToken.accessToken)
    }

    /// Renames a passkey of the signed-in account and returns it as the server now has it.
    @discardableResult
    public func renameWebAuthnRegistration(id: String, friendlyName: String, authToken: AuthToken) async throws -> DeviceCredential {
        let context = try context()
        let response = try await IdentityAPI.send(
            context, "PATCH", "/identity/v1/webauthn/registration/" + (try Self.pathSegment(id)),
            body: .object(["friendly_name": .string(friendlyName)]), bearer: authToken.accessToken)
        return try Self.deviceCredential(.object(try IdentityAPI.object(response, "passkey rename")))
    }

    /// The session as ReachFive's `AuthToken` (refreshed first when it is about to expire), for the calls that take one.
    public func authToken(sessionId: String? = nil) async throws -> AuthToken {
        try await session(sessionId).authToken()
    }

    // MARK: Internals

    func resolvedCredentialProvider() throws -> any CredentialProvider {
        let seams = nativeLoginSeams.withLock { $0 }
        if let provider = seams.credentialProvider { return provider }
        if let authenticator = seams.passkeyAuthenticator { return SoftwareCredentialProvider(authenticator: authenticator) }
        throw localized(LatchkeyError(.passkeyNotSupported, "no CredentialProvider is configured (set LatchkeyClient.credentialProvider)"))
    }

    func resolvedAuthenticator() throws -> any PasskeyAuthenticator {
        guard let authenticator = nativeLoginSeams.withLock({ $0.passkeyAuthenticator }) else {
            throw localized(LatchkeyError(.passkeyNotSupported, "no PasskeyAuthenticator is configured (set LatchkeyClient.passkeyAuthenticator)"))
        }
        return authenticator
    }

    /// Runs a credential ceremony. A cancelled calling task is reported as a technical error — never `.canceled`,
    /// which apps read as "no credential, show other options" (and may restart auto-fill on). The passkey outcomes
    /// the SDK raised itself get the person's words in the client's languages (`PasskeyErrorMessages`).
    func ceremony<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            if Task.isCancelled { throw CancellationError() }
            return result
        } catch is CancellationError {
            throw LatchkeyError(.unknownError, "the calling task was canceled", underlying: CancellationError())
        } catch let error as LatchkeyError {
            if Task.isCancelled, error.code == .canceled || error.code == .passkeyCanceled {
                throw LatchkeyError(.unknownError, "the calling task was canceled", underlying: error)
            }
            throw localized(error)
        } catch {
            throw LatchkeyError(.passkeyFailed, "the credential ceremony failed: \(error.localizedDescription)")
        }
    }

    /// `error` with the catalog's words for the person in this client's languages (the ones it sends as
    /// `Accept-Language`), when it is a passkey outcome the SDK raised itself.
    func localized(_ error: LatchkeyError) -> LatchkeyError {
        let languages = (try? context().config.languageTags) ?? LanguagePreferences.tags(Locale.preferredLanguages)
        return error.withPasskeyUserMessage(preferredLanguages: languages)
    }

    static func registrationOptions(_ response: HTTPResponse) throws -> RegistrationOptions {
        do { return try RegistrationOptions(json: response.body) } catch let error as LatchkeyError {
            throw LatchkeyError(.serverError, "the server's passkey creation options are unusable: \(error.message)", statusCode: response.status)
        }
    }

    static func deviceCredential(_ value: JSONValue) throws -> DeviceCredential {
        guard case .object(let o) = value, let id = o["id"]?.stringValue else {
            throw LatchkeyError(.serverError, "a passkey entry has no id")
        }
        return DeviceCredential(
            friendlyName: o["friendly_name"]?.stringValue ?? "", id: id, createdAt: o["created_at"]?.stringValue,
            lastUsedAt: o["last_used_at"]?.stringValue)
    }

    static func pathSegment(_ id: String) throws -> String {
        guard !id.isEmpty, let escaped = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."])) else {
            throw LatchkeyError(.invalidInput, "the passkey id is empty")
        }
        return escaped
    }
}
