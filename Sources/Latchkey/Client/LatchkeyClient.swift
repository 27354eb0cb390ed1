import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import Logging

/// The Latchkey client: one core with the ThunderID-style and ReachFive-style compatibility APIs on it, each with the
/// original SDK's method names and argument labels (async/await instead of Futures).
///
/// ```swift
/// let client = LatchkeyClient()
/// try await client.initialize(config: LatchkeyConfig(baseUrl: "http://localhost:8090", clientId: "latchkey-demo",
///                                                     afterSignInUrl: "http://127.0.0.1:7777/callback"))
/// let url = try client.buildSignInURL()
/// // … the browser returns to afterSignInUrl …
/// let user = try await client.handleRedirectCallback(url: callbackURL)
/// let token = try await client.getAccessToken()
/// ```
public final class LatchkeyClient: Sendable {
    /// State that synchronous ThunderID-style methods (`getConfiguration`, `isLoading`, `buildSignInURL`) must read.
    private struct State {
        var context: OAuthClient?
        var loading = 0
    }

    /// Redirect sign-ins in flight (`buildSignInURL`, `webviewLogin`, native login's captured redirect).
    let codeFlow = AuthorizationRequests()

    private let state = Locked(State())
    /// App-native flows in progress, by execution id: each one's latest challenge token (single use, rotated by the
    /// server on every step) and what the flow is for.
    let flowProgress = Locked<[String: FlowProgress]>([:])
    /// `/flow/meta` answers by application, for resolving component labels.
    let flowMetaCache = Locked<[String: FlowMeta]>([:])
    /// The passkey authenticator and credential provider of native login (see `LatchkeyClient+NativeLogin.swift`).
    let nativeLoginSeams = Locked(NativeLoginSeams())
    let http: any HTTPClient
    /// How pages of the provider are shown: sign-in, sign-out, identity linking and flow redirections.
    let userAgent: any AuthorizationUserAgent
    private let defaultStorage: (@Sendable (LatchkeyConfig) throws -> any StorageAdapter)?
    /// The DPoP keys `initialize` uses when the configuration names none (LatchkeyApple: the Secure Enclave).
    let defaultDPoPKeyProvider = Locked<(any DPoPKeyProvider)?>(nil)
    /// Where session changes are published (`authStateChanges`).
    let authState = AuthStateBroadcaster()
    /// The default session's usable access token, written by the current context's token manager only.
    @usableFromInline let accessTokenCache: AccessTokenCache
    let logger: Logger
    /// The device's clock, read by every time rule of every context (through its `ProviderClock`).
    let clock: LatchkeyClock

    /// - Parameters:
    ///   - http: the network seam (URLSession by default).
    ///   - userAgent: how `webviewLogin` shows the provider's page: the loopback redirect + system browser by
    ///     default; LatchkeyApple's `WebAuthenticationSessionUserAgent` (`ASWebAuthenticationSession`) on Apple platforms.
    ///   - logger: where the client reports what it could not do but worked around (a failed revocation …).
    ///   - defaultStorage: the storage `initialize(config:storage:)` uses when it is given none (LatchkeyApple passes
    ///     the Keychain); nil keeps tokens in memory.
    ///   - clock: the time every rule decides by (token expiry, device polls, pending sign-ins); tests pass a
    ///     `ManualClock`'s and move it instead of waiting.
    public init(
        http: any HTTPClient = URLSessionHTTPClient(), userAgent: any AuthorizationUserAgent = LoopbackUserAgent(),
        logger: Logger = Logger(label: "latchkey"), defaultStorage: (@Sendable (LatchkeyConfig) throws -> any StorageAdapter)? = nil,
        clock: LatchkeyClock
    ) {
        self.clock = clock
        self.accessTokenCache = AccessTokenCache(now: clock.isSystem ? nil : clock.now)
        self.http = http
        self.userAgent = userAgent
        self.logger = logger
        self.defaultStorage = defaultStorage
    }

    /// A client on the device's clock (``LatchkeyClock/system``); see the initializer with `clock` for the rest.
    public convenience init(
        http: any HTTPClient = URLSessionHTTPClient(), userAgent: any AuthorizationUserAgent = LoopbackUserAgent(),
        logger: Logger = Logger(label: "latchkey"), defaultStorage: (@Sendable (LatchkeyConfig) throws -> any StorageAdapter)? = nil
    ) {
        self.init(http: http, userAgent: userAgent, logger: logger, defaultStorage: defaultStorage, clock: .system)
    }

    // MARK: Initialization

    /// Initializes the SDK; call once before anything else.
    /// - Parameters:
    ///   - config: the provider, the application and the options (checked: an https base URL, or http on loopback).
    ///   - storage: where token sets are kept; nil uses the client's default storage (the Keychain for a client made
    ///     by LatchkeyApple), else memory.
    @discardableResult
    public func initialize(config: LatchkeyConfig, storage: (any StorageAdapter)? = nil) async throws -> Bool {
        try config.validate()
        var config = config
        if config.dpopKeyProvider == nil { config.dpopKeyProvider = defaultDPoPKeyProvider.withLock { $0 } }
        let resolved = try storage ?? defaultStorage?(config) ?? InMemoryStorageAdapter()
        let context = OAuthClient(
            config: config, http: http, storage: resolved, changes: authState, cache: accessTokenCache, logger: logger,
            clock: ProviderClock(device: clock))
        try state.withLock { s in
            guard s.context == nil else { throw LatchkeyError(.alreadyInitialized, "initialize(config:storage:) was already called") }
            s.context = context
            accessTokenCache.bind(to: context.tokens)
        }
        _ = await context.metadata()  // best effort: buildSignInURL is synchronous and wants the real endpoint
        return true
    }

    /// Changes the base URL and/or client id, keeping the rest of the configuration and the storage.
    @discardableResult
    public func reInitialize(baseUrl: String? = nil, clientId: String? = nil) async throws -> Bool {
        let current = try context()
        var config = current.config
        if let baseUrl { config.baseUrl = baseUrl }
        if let clientId { config.clientId = clientId }
        try config.validate()
        let context = OAuthClient(
            config: config, http: http, storage: current.storage, changes: authState, cache: accessTokenCache,
            logger: logger, clock: ProviderClock(device: clock))
        state.withLock { s in
            s.context = context
            codeFlow.discardAll()
            accessTokenCache.bind(to: context.tokens)  // the old context's token is not this one's
        }
        _ = await context.metadata()
        return true
    }

    public func getConfiguration() throws -> LatchkeyConfig { try context().config }

    /// Changes the user's languages (`LatchkeyConfig.preferredLanguages`) without re-initializing: the next request
    /// sends them as `Accept-Language`, the next authorization URL as `ui_locales`, and the next step of a flow in
    /// progress as its `locale` (the server answers that step, and the rest of the flow, in the new language).
    /// Sessions, flows in progress and pending authorization requests are kept.
    /// - Parameter languages: BCP 47 tags, most preferred first; nil follows the device, an empty list sends none.
    /// - Throws: `.sdkNotInitialized` before `initialize(config:storage:)`.
    public func setPreferredLanguages(_ languages: [String]?) throws {
        try context().setPreferredLanguages(languages)
    }

    /// True while a sign-in or sign-out is in progress.
    public func isLoading() -> Bool { state.withLock { $0.loading > 0 } }

    func context() throws -> OAuthClient {
        guard let context = state.withLock({ $0.context }) else {
            throw LatchkeyError(.sdkNotInitialized, "call initialize(config:storage:) first")
        }
        return context
    }

    func loading<T>(_ body: () async throws -> T) async rethrows -> T {
        state.withLock { $0.loading += 1 }
        defer { state.withLock { $0.loading -= 1 } }
        return try await body()
    }

    // MARK: Redirect sign-in

    /// The authorization URL (code flow, PKCE S256, fresh `state` and `nonce`) to open in a browser.
    public func buildSignInURL(options: SignInOptions? = nil) throws -> URL {
        try AuthorizationCodeFlow(client: self).start(options: options)
    }

    /// As `buildSignInURL(options:)`, for a named session (multi-session apps): the callback stores its tokens there.
    public func buildSignInURL(options: SignInOptions?, sessionId: String?) throws -> URL {
        try AuthorizationCodeFlow(client: self, session: session(sessionId)).start(options: options)
    }

    /// Completes a redirect sign-in: checks `error`, `state` and `iss`, exchanges the code (form-encoded, with the
    /// PKCE verifier), validates the ID token and stores the session.
    public func handleRedirectCallback(url: URL) async throws -> User {
        try await AuthorizationCodeFlow(client: self).resume(with: url)
    }

    /// ReachFive's `webviewLogin`: signs in through the provider's own page in a browser (SSO cookies shared) and returns the
    /// tokens. Unlike ReachFive's SDK, the returned `state` is checked, `iss` is checked and the ID token is verified.
    ///
    /// With `request.provider` (ReachFive's `WebviewLoginRequest.provider`) the authorization request carries
    /// `provider`: the server skips its login page and sends the browser straight to that identity provider; with
    /// `request.origin` it carries `origin`.
    /// - Throws: `.canceled` when the user closes the page; the user agent's errors (a sign-in already showing, no
    ///   presentation context) as they are; the callback's and the token endpoint's errors mapped (a provider that
    ///   refused the person: `.authenticationFailed`).
    public func webviewLogin(_ request: WebviewLoginRequest) async throws -> AuthToken {
        try await AuthorizationCodeFlow(client: self, session: session(request.sessionId)).signIn(request)
    }

    /// ThunderID's `buildSignInURL(options:)` and `handleRedirectCallback(url:)` in one call: the client's user agent
    /// shows the URL (on Apple platforms an `ASWebAuthenticationSession` presented from `presentationContextProvider`)
    /// and the callback it returns is handled at once. Returns the signed-in user.
    /// - Throws: as `webviewLogin(_:)`.
    public func signInWithBrowser(
        options: SignInOptions? = nil, sessionId: String? = nil,
        presentationContextProvider: (any PresentationContextProviding)? = nil
    ) async throws -> User {
        try await AuthorizationCodeFlow(client: self, session: session(sessionId))
            .signIn(options: options, presentationContextProvider: presentationContextProvider)
    }

    /// Shows `url` through the client's user agent and returns the callback, the user agent's failures mapped: its
    /// `LatchkeyError`s as they are, a cancelled calling task a technical error (never `.canceled`), anything else
    /// the page having been closed (`.canceled`).
    func showThroughUserAgent(_ url: URL, _ presentation: AuthorizationPresentation, what: String) async throws -> URL {
        do {
            return try await userAgent.authorize(url: url, presentation: presentation)
        } catch let error as LatchkeyError {
            throw error
        } catch is CancellationError {
            throw LatchkeyError(.unknownError, "the \(what) task was cancelled", underlying: CancellationError())
        } catch {
            throw LatchkeyError(.canceled, "the \(what) page was closed: \(error.localizedDescription)")
        }
    }

    /// The redirect URI a page shown through the user agent comes back to: the one the user agent prepared (the
    /// loopback user agent's listener), else the configured `afterSignInUrl`. `prepared` says whether the user agent
    /// reserved it (then it is given back with `userAgent.release(redirectURI:)` when it is not used).
    func appRedirectURI() async throws -> (uri: String, prepared: Bool) {
        if let prepared = try await userAgent.prepareRedirectURI() { return (prepared, true) }
        let context = try context()
        guard let configured = context.config.afterSignInUrl else {
            throw LatchkeyError(.invalidConfiguration, "afterSignInUrl (the redirect URI) is not set")
        }
        return (configured, false)
    }

    // MARK: Session and tokens (compatibility names over `LatchkeySession`)

    /// Every change of the session `sessionId` (nil: the default session) from now on, starting with its current state
    /// (`.initialSession`, read from storage), then `.signedIn`, `.tokenRefreshed`, `.userUpdated`, `.signedOut` and
    /// `.sessionExpired` as they happen through this client. Each call returns an independent stream; it ends when
    /// the consuming task is cancelled. An uninitialized client, or storage that cannot be read (a locked device),
    /// reports the initial session as signed out.
    public func authStateChanges(sessionId: String? = nil) -> AsyncStream<AuthStateChange> {
        session(sessionId).authStateChanges()
    }

    /// A valid access token, refreshed first if it is about to expire. Concurrent callers share one refresh.
    @inlinable
    public func getAccessToken(sessionId: String? = nil) async throws -> String {
        try await session(sessionId).accessToken()
    }

    /// Every case but the default session's cached token: the token manager loads, refreshes or waits for the
    /// refresh in flight.
    @usableFromInline
    func accessTokenFromManager(_ sessionId: String?) async throws -> String {
        try await context().tokens.accessToken(sessionId)
    }

    /// True when the session has tokens that are usable now or can be refreshed.
    public func isSignedIn(sessionId: String? = nil) async throws -> Bool {
        try await session(sessionId).isSignedIn()
    }

    /// Revokes the refresh token, ends the provider session (id_token_hint), clears local state and returns the
    /// post-sign-out URL (the configured `afterSignOutUrl`, or "/"). Local state is cleared even if the server is down.
    /// What happened at the provider is logged (a warning for each step that did not happen) and reported in full by
    /// `signOutReporting(options:sessionId:)`.
    @discardableResult
    public func signOut(options: SignOutOptions? = nil, sessionId: String? = nil) async throws -> String {
        try await session(sessionId).signOut(options: options).afterSignOutUrl
    }

    /// Signs out and says what happened: the local session is always forgotten first; then the refresh token and the
    /// access token are revoked (RFC 7009) and the provider's session is ended (RP-Initiated Logout 1.0), each step
    /// reported as done, not needed, not possible with this provider (no endpoint published), failed (refused,
    /// unreachable) or unconfirmed (the answer does not show it happened). Each step that did not settle is also a
    /// warning on the client's logger. How the provider's session is ended: `SignOutOptions.ProviderSession`.
    public func signOutReporting(options: SignOutOptions? = nil, sessionId: String? = nil) async throws -> SignOutReport {
        try await session(sessionId).signOut(options: options)
    }

    /// Forgets the session locally without telling the server.
    public func clearSession(sessionId: String? = nil) {
        guard (try? context()) != nil else { return }
        let session = self.session(sessionId)
        Task { try? await session.clear() }
    }

    /// Forgets the session locally and waits until storage has been updated.
    public func clearSessionAndWait(sessionId: String? = nil) async throws {
        try await session(sessionId).clear()
    }

    /// Decodes a JWT's payload without verifying it (for display and debugging; never for trust decisions).
    public func decodeJwtToken<R: Decodable>(_ token: String) throws -> R {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else {
            throw LatchkeyError(.invalidInput, "not a JWT (expected three base64url segments)")
        }
        do { return try JSONDecoder().decode(R.self, from: payload) } catch {
            throw LatchkeyError(.invalidInput, "the JWT payload does not decode as \(R.self)")
        }
    }

    /// The signed-in user: validated ID-token claims, else the userinfo endpoint.
    public func getUser(options: [String: String]? = nil, sessionId: String? = nil) async throws -> User {
        try await session(sessionId).user(source: options?["source"] == "userinfo" ? .userinfo : .idToken)
    }

    /// Asks the server whether the session still works, and returns its user as the server knows it now (userinfo).
    ///
    /// Stored tokens say nothing about a session the person ended elsewhere ("sign out everywhere", an administrator,
    /// a password change): the access token is used without a request until it is about to expire. This asks. An
    /// access token the server no longer accepts (401) is refreshed once and userinfo asked again, so a session whose
    /// refresh token was revoked ends here, as any refused refresh ends it: the stored session is forgotten and the
    /// error is `.sessionExpired` or `.invalidGrant`. An unreachable server throws `.networkError` and keeps the session.
    /// A provider without a userinfo endpoint cannot be asked: the tokens are refreshed if due and the user read from
    /// the ID token, as `getUser` does. `LatchkeyState` calls it at launch and in `refresh()` (`SessionCheck.server`).
    public func checkSession(sessionId: String? = nil) async throws -> User {
        try await session(sessionId).check()
    }

    /// RFC 8693 token exchange. Returns the new token; the session's own tokens are left untouched.
    public func exchangeToken(config: TokenExchangeRequestConfig, sessionId: String? = nil) async throws -> TokenResponse {
        try await session(sessionId).exchangeToken(config)
    }
}

/// Parameters of a token exchange (``LatchkeySession/exchangeToken(_:)``, `exchangeToken(config:sessionId:)`).
public struct TokenExchangeRequestConfig: Sendable {
    /// The token to exchange (`subject_token`); nil uses the session's access token.
    public var subjectToken: String?
    /// The subject token's type URI (`subject_token_type`, RFC 8693 §3); an access token's by default.
    public var subjectTokenType: String
    /// The service the new token is for (`audience`); nil leaves it to the server.
    public var audience: String?
    /// The scopes of the new token (`scope`); nil leaves them to the server.
    public var scope: [String]?
    /// The type URI of the token wanted back (`requested_token_type`); nil leaves it to the server.
    public var requestedTokenType: String?

    /// An exchange's parameters; every member but the subject token's type is optional.
    public init(
        subjectToken: String? = nil, subjectTokenType: String = "urn:ietf:params:oauth:token-type:access_token",
        audience: String? = nil, scope: [String]? = nil, requestedTokenType: String? = nil
    ) {
        self.subjectToken = subjectToken; self.subjectTokenType = subjectTokenType; self.audience = audience; self.scope = scope
        self.requestedTokenType = requestedTokenType
    }
}

/// ThunderID's name for the client (`let client = ThunderIDClient()`).
public typealias ThunderIDClient = LatchkeyClient
