import Foundation
import Latchkey
import LatchkeyApple
import Logging
import Observation

/// The app's authentication state (ThunderID's `ThunderIDState`): the signed-in user, whether the SDK is ready or busy,
/// the last error in words for the user, the client for direct calls, and the language.
///
/// `.latchkeyProvider(config:)` creates one, puts it into the environment and calls `start()`; views read it with
/// `@Environment(LatchkeyState.self)` (or `@EnvironmentObject` as ThunderID's documentation shows). It follows the
/// client's `authStateChanges`, so a sign-in or sign-out done anywhere through `client` — a component, the app's
/// own code, a refresh the server refused — shows here without `refresh()`.
///
/// All behaviour lives here, in plain Swift on the main actor; the views only lay it out.
@MainActor @Observable
public final class LatchkeyState {
    /// How `start()` and `refresh()` find out whether the stored session still works.
    public enum SessionCheck: Sendable, Equatable {
        /// Ask the server (`LatchkeyClient.checkSession`: userinfo, and one refresh if the access token is refused):
        /// a session ended elsewhere while the app was closed shows as signed out at launch, and the user's profile
        /// is the server's current one. One request at launch, or two when the access token must be refreshed.
        case server
        /// Trust the stored tokens: no request until the access token is about to expire (then a refresh). A session
        /// ended elsewhere shows only when that refresh is refused, up to an access token's lifetime later.
        case storedTokens
    }

    /// The signed-in user (from the verified ID token, else userinfo); nil when signed out, or while a stored
    /// session cannot be checked (the server unreachable at launch: `isSignedIn` stays true, `error` says why).
    public private(set) var user: User?
    /// True while the session holds tokens that work or can be refreshed.
    public private(set) var isSignedIn = false
    /// True while signed in on a stored session the server has not confirmed: the check at launch (or the last
    /// `refresh()`) failed for a reason that does not end a session — offline, a timeout, a 5xx or 429. The session
    /// is kept; the next refresh that works (an API call of the app through `client`, or `refresh()`) clears it and
    /// loads the user.
    public private(set) var isStale = false
    /// True while the SDK initializes or a sign-in, sign-out or refresh of this state is in progress.
    public var isLoading: Bool { operations > 0 }
    /// True once `start()` finished, whether or not a session was restored or initialization failed.
    public private(set) var isInitialized = false
    /// What `SignedIn` shows its content on: a session is there.
    public var showsSignedInContent: Bool { isSignedIn }
    /// What `SignedOut` shows its content on: no session, and the stored one has been looked for (so a restored
    /// session never flashes the sign-in screen at launch).
    public var showsSignedOutContent: Bool { isInitialized && !isSignedIn }
    /// What went wrong last, in the user's language; nil again after the next operation that succeeds.
    public private(set) var error: String?
    /// The failure behind `error`, for apps that branch on its code.
    public private(set) var lastError: LatchkeyError?
    /// What the developer must fix, when the last failure here or in a component came from the app's set-up (a
    /// redirect URI or client id the server does not know, an unreachable server, a passkey domain the app is not
    /// associated with, a call before the client was initialized …); nil after the next success. Each new diagnosis
    /// is also logged once, at error level (`logger`). A failed initialization stays the diagnosis of the calls that
    /// then find the client uninitialized, so the log names the cause rather than its symptom.
    public private(set) var diagnosis: LatchkeyDiagnosis?
    /// What the last sign-out did at the provider: each token revoked, its session ended, or why not (nil before one).
    public private(set) var lastSignOut: SignOutReport?
    /// The client, for direct API calls (sign-in, tokens, profile …); its changes show in this state.
    public let client: LatchkeyClient
    /// The session this state follows (nil: the default session).
    public let sessionId: String?
    /// The session this state follows, as the core's value: what the account models call.
    public var session: LatchkeySession { sessionId.map(client.session(named:)) ?? client.session() }
    /// The language of the components and of the server's messages.
    public let i18n: LatchkeyI18n
    /// How the stored session is checked at launch and by `refresh()`.
    public let sessionCheck: SessionCheck
    /// Where set-up mistakes are logged (`diagnosis`); by default the unified log on Apple platforms.
    public let logger: Logger
    /// True for a state made by `preview(user:error:locale:step:)`: it never reaches a server.
    public let isPreview: Bool
    /// The step `SignIn` and `SignUp` show over a preview state.
    @ObservationIgnored var previewStep: EmbeddedFlowResponse?

    private var operations = 0
    @ObservationIgnored private let config: LatchkeyConfig?
    @ObservationIgnored private let storage: (any StorageAdapter)?
    @ObservationIgnored private var starting: Task<Void, Never>?
    @ObservationIgnored private var following: Task<Void, Never>?
    @ObservationIgnored private var signingOut: Task<Void, Never>?
    /// Why `initialize` failed, when it did: the root cause of every later "not initialized".
    @ObservationIgnored private var initializationFailure: LatchkeyError?

    /// A state that initializes `client` with `config` when it starts (what `.latchkeyProvider(config:)` does).
    /// - Parameters:
    ///   - config: the configuration `start()` initializes the client with.
    ///   - client: on Apple platforms with LatchkeyApple, `LatchkeyClient()` signs in with the system sheets and
    ///     keeps sessions in the Keychain.
    ///   - storage: nil uses the client's default storage (the Keychain for the Apple client).
    ///   - sessionId: the session this state follows (nil: the default session).
    ///   - i18n: the language; by default the one kept by an earlier `setLocale(_:)`, else the device's.
    ///   - sessionCheck: how the stored session is checked at launch and by `refresh()`; by default with the server.
    ///   - logger: where set-up mistakes are logged once each (`diagnosis`); by default the unified log on Apple
    ///     platforms (`Logger.latchkey`), where Xcode's console shows them.
    public convenience init(
        config: LatchkeyConfig, client: LatchkeyClient = LatchkeyClient(), storage: (any StorageAdapter)? = nil,
        sessionId: String? = nil, i18n: LatchkeyI18n = LatchkeyI18n(), sessionCheck: SessionCheck = .server, logger: Logger = .latchkey
    ) {
        self.init(
            configuration: config, client: client, storage: storage, sessionId: sessionId, i18n: i18n, sessionCheck: sessionCheck,
            logger: logger, isPreview: false)
    }

    /// A state over a client the app has already initialized.
    public convenience init(
        client: LatchkeyClient, sessionId: String? = nil, i18n: LatchkeyI18n = LatchkeyI18n(), sessionCheck: SessionCheck = .server,
        logger: Logger = .latchkey
    ) {
        self.init(
            configuration: nil, client: client, storage: nil, sessionId: sessionId, i18n: i18n, sessionCheck: sessionCheck, logger: logger,
            isPreview: false)
    }

    /// A state for SwiftUI previews (and snapshot tests): already started, signed in as `user` when one is given,
    /// showing `error`, in `locale`; `SignIn` and `SignUp` over it show `step` (a username and password step by
    /// default) and `UserProfile` the user's claims. It makes no request: its client is never initialized, and
    /// what would reach the server (a submission, a sign-out) only changes what the preview shows.
    ///
    ///     #Preview { SignIn().environment(LatchkeyState.preview()) }
    ///     #Preview { UserProfile().environment(LatchkeyState.preview(user: .preview)) }
    public static func preview(
        user: User? = nil, error: String? = nil, locale: String = "en", step: EmbeddedFlowResponse? = nil
    ) -> LatchkeyState {
        let state = LatchkeyState(
            configuration: nil, client: LatchkeyClient(http: PreviewNetwork(), userAgent: LoopbackUserAgent()), storage: nil,
            sessionId: nil, i18n: LatchkeyI18n(locale: locale, store: InMemoryLocaleStore()), sessionCheck: .storedTokens,
            logger: Logger(label: "latchkey.preview"), isPreview: true)
        state.user = user
        state.isSignedIn = user != nil
        state.isInitialized = true
        state.error = error
        state.previewStep = step
        return state
    }

    private init(
        configuration config: LatchkeyConfig?, client: LatchkeyClient, storage: (any StorageAdapter)?, sessionId: String?,
        i18n: LatchkeyI18n, sessionCheck: SessionCheck, logger: Logger, isPreview: Bool
    ) {
        self.isPreview = isPreview
        self.sessionCheck = sessionCheck
        self.logger = logger
        self.config = config
        self.client = client
        self.storage = storage
        self.sessionId = sessionId
        self.i18n = i18n
        i18n.onChange = { [weak self] languages in try? self?.client.setPreferredLanguages(languages) }
    }

    /// Initializes the client (when this state was given the configuration), restores the stored session — with
    /// `sessionCheck` `.server` (the default) checking it with the server, so a session that ended while the app was
    /// closed shows as signed out with a message, and an unreachable server as `isStale` with one — and starts
    /// following the client's changes. Calling it again waits for the first call; it never throws:
    /// failures land in `error`.
    public func start() async {
        if isPreview { return }
        if let starting { return await starting.value }
        let task = Task { await self.performStart() }
        starting = task
        await task.value
    }

    /// Checks the session again as `start()` did (with `sessionCheck`) and updates `user`, `isSignedIn` and `isStale`
    /// (ThunderID's `refresh()`). Sign-ins and sign-outs made through `client` show without it. Call it when the app
    /// comes back to the foreground, to notice a session ended elsewhere (another device, an administrator). It does
    /// not read the storage again: another process's changes to a shared Keychain item show at that session's next
    /// refresh.
    public func refresh() async {
        await tracked { await self.reload(check: true) }
    }

    /// Signs out (revokes the tokens, ends the server session, clears the stored one). A second call while one is
    /// in progress waits for it instead of sending its own requests.
    public func signOut() async { await signOut(options: nil) }

    /// Signs out as `options` ask (how the provider's session is ended, what its page is presented from); what
    /// happened at the provider is in `lastSignOut` afterwards (nil when the sign-out failed). A second call while one
    /// is in progress waits for it, with the first call's options.
    public func signOut(options: SignOutOptions?) async {
        if isPreview { return apply(user: nil, signedIn: false) }
        if let signingOut { return await signingOut.value }
        lastSignOut = nil
        let task = Task {
            await self.tracked {
                do {
                    self.lastSignOut = try await self.session.signOut(options: options)
                    self.apply(user: nil, signedIn: false)
                    self.clearError()
                } catch {
                    self.fail(error)
                }
            }
        }
        signingOut = task
        await task.value
        signingOut = nil
    }

    /// Changes the language of the components and of the server's messages (see `LatchkeyI18n.setLocale(_:)`).
    public func setLocale(_ locale: String) { i18n.setLocale(locale) }

    /// Stops following the client's changes for good (a state made for a screen that goes away); the provider's
    /// state lives as long as the app and never needs it. The follower holds the state weakly, so a state that is
    /// simply released stops too.
    public func stop() {
        following?.cancel()
        following = nil
    }

    // MARK: What components report

    /// A component signed the user in through `client` (the change stream reports it too; this makes the state
    /// current before the component's `onComplete` runs).
    func didSignIn(_ signedIn: User?) async {
        if let signedIn { apply(user: signedIn, signedIn: true); clearError() } else { await reload(check: false) }
    }

    /// Records a failure of an operation started by a component.
    func report(_ failure: any Error) { fail(failure) }

    /// Records what a component's failure says about the app's set-up (`diagnosis`), without making it the state's
    /// `error` (the component shows its own message).
    func diagnose(_ failure: any Error) {
        guard let error = failure as? LatchkeyError else { return }
        var found = LatchkeyDiagnosis(error, config: config)
        if error.code == .sdkNotInitialized, let initializationFailure {
            found = LatchkeyDiagnosis(initializationFailure, config: config) ?? found  // the cause, not its symptom
        }
        guard let found else { return }
        // Logged once: the same mistake again (its cause may be worded differently, as a network failure's is) says
        // nothing new.
        let repeated = found.kind == diagnosis?.kind && found.fix == diagnosis?.fix
        diagnosis = found
        guard !repeated else { return }
        logger.error("\(found.description)", metadata: ["code": "\(error.code.rawValue)"])
    }

    /// Counts an operation of a component in `isLoading`.
    func tracked<T>(_ body: () async throws -> T) async rethrows -> T {
        operations += 1
        defer { operations -= 1 }
        return try await body()
    }

    // MARK: Internals

    private func performStart() async {
        await tracked {
            if let config {
                var config = config
                if let languages = i18n.preferredLanguages { config.preferredLanguages = languages }
                do {
                    try await client.initialize(config: config, storage: storage)
                } catch let error as LatchkeyError where error.code == .alreadyInitialized {
                    if let languages = i18n.preferredLanguages { try? client.setPreferredLanguages(languages) }
                } catch {
                    initializationFailure = error as? LatchkeyError
                    fail(error)
                    isInitialized = true
                    return
                }
            } else if let languages = i18n.preferredLanguages {
                try? client.setPreferredLanguages(languages)
            }
            // Subscribe before reading, so nothing that happens while the session is checked is missed.
            let changes = session.authStateChanges()
            await reload(check: true)
            follow(changes)
            isInitialized = true
        }
    }

    private func follow(_ changes: AsyncStream<AuthStateChange>) {
        following?.cancel()
        following = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                await self.handle(change)
            }
        }
    }

    private func handle(_ change: AuthStateChange) async {
        switch change.event {
        case .initialSession:
            break  // read by `start()`
        case .tokenRefreshed:
            if isStale { await reload(check: false) }  // the server answered again: the session is confirmed
        case .signedIn:
            await reload(check: false)
        case .userUpdated:
            await reload(check: false, fromServer: true)  // the stored ID token still has the old claims
        case .signedOut:
            apply(user: nil, signedIn: false)
        case .sessionExpired:
            apply(user: nil, signedIn: false)
            fail(LatchkeyError(.sessionExpired, change.reason?.message ?? "the provider ended the session", serverCode: change.reason?.serverCode))
        }
    }

    /// Reads the session; with `check`, also makes sure it still works (`sessionCheck`: asking the server, or
    /// refreshing the tokens if due); with `fromServer`, the user comes from userinfo rather than the stored ID token.
    private func reload(check: Bool, fromServer: Bool = false) async {
        do {
            guard try await session.isSignedIn() else {
                apply(user: nil, signedIn: false)
                clearError()
                return
            }
            let user: User
            if check, sessionCheck == .server {
                user = try await session.check()
            } else {
                if check { _ = try await session.accessToken() }
                user = try await session.user(source: fromServer ? .userinfo : .idToken)
            }
            apply(user: user, signedIn: true)
            clearError()
        } catch let error as LatchkeyError {
            switch error.code {
            case .sessionExpired, .invalidGrant, .invalidToken:
                apply(user: nil, signedIn: false)  // the session is over (the SDK has forgotten it)
            case .storageUnavailable, .biometricAuthenticationFailed:
                // A locked device, or a Face ID prompt the person cancelled: nothing is known, nothing is changed
                // (and no second prompt is raised by asking again here).
                break
            default:
                isSignedIn = (try? await session.isSignedIn()) ?? isSignedIn  // kept: only the check failed
                setStale(isSignedIn)
            }
            fail(error)
        } catch {
            fail(error)
        }
    }

    /// A state the server or the person just confirmed (signed in with this user, or signed out): never stale.
    private func apply(user: User?, signedIn: Bool) {
        if self.user != user { self.user = user }
        if isSignedIn != signedIn { isSignedIn = signedIn }
        setStale(false)
    }

    private func setStale(_ stale: Bool) {
        if isStale != stale { isStale = stale }
    }

    private func clearError() {
        if error != nil { error = nil }
        if lastError != nil { lastError = nil }
        if diagnosis != nil { diagnosis = nil }
    }

    private func fail(_ failure: any Error) {
        let error = failure as? LatchkeyError ?? LatchkeyError(.unknownError, String(describing: failure), underlying: nil)
        lastError = error
        self.error = i18n.message(for: error)
        diagnose(error)
    }
}

/// ThunderID's name for the state.
public typealias ThunderIDState = LatchkeyState

extension User {
    /// A user for previews: Ada Lovelace, ada@example.com.
    public static var preview: User {
        User(claims: [
            "sub": .string("preview-user"), "preferred_username": .string("ada"), "email": .string("ada@example.com"),
            "name": .string("Ada Lovelace"), "given_name": .string("Ada"), "family_name": .string("Lovelace")
        ])
    }
}

/// The network of a preview state: nothing is sent.
struct PreviewNetwork: HTTPClient {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        throw LatchkeyError(.networkError, "a preview state sends no request")
    }
}
