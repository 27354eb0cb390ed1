#if !canImport(AuthenticationServices)
import Crypto
import Foundation

/// The simulated system the stand-ins run on. Each test binds its own device, so scripts never leak between tests
/// that run in parallel:
///
/// ```swift
/// let device = StandInDevice()
/// device.webAuthentication = .navigates { url in try await browser.signIn(url) }
/// try await StandInSystem.$device.withValue(device) { try await client.webviewLogin(request) }
/// ```
/// Objects made inside the binding (sessions, controllers, keychain calls) keep using that device.
public enum StandInSystem {
    /// The device of the current task (a fresh one for code that binds none).
    @TaskLocal public static var device = StandInDevice()
}

/// One simulated device: what its user does in system UI, its keychain, and a log of what the system showed.
public final class StandInDevice: @unchecked Sendable {
    private let lock = NSLock()
    private var _webAuthentication = WebAuthenticationBehaviour.staysOpen
    private var _authorization = AuthorizationBehaviour.nothingAvailable
    private var _isPresentingWebAuthentication = false
    private var _hasSecureEnclave = true
    private var _hasConditionalPasskeyRegistration = true
    private var _userVerification: @Sendable (UserVerificationPrompt) -> UserVerificationOutcome = { _ in .confirms }
    /// The device's own key: what its Secure Enclave wraps key handles with (so a handle works on this device only).
    let secureEnclaveKey = SymmetricKey(size: .bits256)

    /// The device's keychain.
    public let keychain = StandInKeychain()
    /// What the system showed and did, in order.
    public let log = StandInLog()

    /// A device whose user does nothing (sessions stay open, no credentials).
    public init() {}

    /// What the user does when a web authentication session shows a page.
    public var webAuthentication: WebAuthenticationBehaviour {
        get { lock.withLock { _webAuthentication } }
        set { lock.withLock { _webAuthentication = newValue } }
    }

    /// What the user (and the system's credential store) does when an authorization controller performs requests.
    public var authorization: AuthorizationBehaviour {
        get { lock.withLock { _authorization } }
        set { lock.withLock { _authorization = newValue } }
    }

    /// Whether the device has a Secure Enclave (a Simulator or an old Mac has none).
    public var hasSecureEnclave: Bool {
        get { lock.withLock { _hasSecureEnclave } }
        set { lock.withLock { _hasSecureEnclave = newValue } }
    }

    /// Whether the device's OS has conditional passkey registration
    /// (`ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest.requestStyle`, iOS 18, macOS 15, visionOS 2):
    /// what `#available(iOS 18.0, macOS 15.0, visionOS 2.0, *)` answers on the simulated device (availability checks
    /// cannot be scripted, so the SDK's Linux branch reads this instead). True by default; false models iOS 17.
    /// Stand-in only.
    public var hasConditionalPasskeyRegistration: Bool {
        get { lock.withLock { _hasConditionalPasskeyRegistration } }
        set { lock.withLock { _hasConditionalPasskeyRegistration = newValue } }
    }

    /// What the person does when asked for Face ID, Touch ID or the passcode (`LAContext.evaluatePolicy`, or the
    /// keychain reading a protected item without an evaluated context). By default they confirm.
    public var userVerification: @Sendable (UserVerificationPrompt) -> UserVerificationOutcome {
        get { lock.withLock { _userVerification } }
        set { lock.withLock { _userVerification = newValue } }
    }

    /// One browser sheet at a time, as on a real device.
    var isPresentingWebAuthentication: Bool {
        get { lock.withLock { _isPresentingWebAuthentication } }
        set { lock.withLock { _isPresentingWebAuthentication = newValue } }
    }
}

/// What a web authentication session was asked to show.
public struct WebAuthenticationRequest: Sendable, Equatable {
    /// How the session recognises its callback.
    public enum Callback: Sendable, Equatable {
        case customScheme(String)
        case https(host: String, path: String)
    }
    /// The page.
    public var url: URL
    /// The callback the session waits for; nil when it was made with a nil scheme.
    public var callback: Callback?
    /// `prefersEphemeralWebBrowserSession`.
    public var prefersEphemeralWebBrowserSession: Bool
    /// `additionalHeaderFields`.
    public var additionalHeaderFields: [String: String]

    init(
        url: URL, callback: ASWebAuthenticationSession.Callback.Kind?, prefersEphemeralWebBrowserSession: Bool,
        additionalHeaderFields: [String: String]
    ) {
        self.url = url
        self.callback = callback.map {
            switch $0 {
            case .customScheme(let s): .customScheme(s)
            case .https(let host, let path): .https(host: host, path: path)
            }
        }
        self.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
        self.additionalHeaderFields = additionalHeaderFields
    }
}

/// How a browser sheet ends, from the user's side.
public enum WebAuthenticationOutcome: Sendable, Equatable {
    /// The page navigated to this URL (the session ends if it matches the callback, else stays open).
    case navigated(URL)
    /// The user tapped Cancel.
    case canceledByUser
    /// The user never finishes (only `cancel()` ends the session).
    case staysOpen
}

/// The scripted user of web authentication sessions.
public struct WebAuthenticationBehaviour: Sendable {
    /// Whether `start()` can present at all (false: `start()` returns false, e.g. the app is in the background).
    public var allowsStart: Bool
    /// What happens once the page shows.
    public var user: @Sendable (WebAuthenticationRequest) async -> WebAuthenticationOutcome

    /// A custom behaviour.
    public init(allowsStart: Bool = true, user: @escaping @Sendable (WebAuthenticationRequest) async -> WebAuthenticationOutcome) {
        self.allowsStart = allowsStart; self.user = user
    }

    /// The user signs in on the page: `browse` follows the URL and returns where the browser was finally sent; an
    /// error it throws counts as the user giving up (Cancel).
    public static func navigates(_ browse: @escaping @Sendable (WebAuthenticationRequest) async throws -> URL) -> Self {
        Self { request in
            do { return .navigated(try await browse(request)) } catch { return .canceledByUser }
        }
    }
    /// The user taps Cancel.
    public static let userCancels = Self { _ in .canceledByUser }
    /// The sheet stays open until the app cancels the session.
    public static let staysOpen = Self { _ in .staysOpen }
    /// `start()` returns false.
    public static let cannotStart = Self(allowsStart: false) { _ in .staysOpen }
}

/// What the simulated system did, for tests to assert on.
public final class StandInLog: @unchecked Sendable {
    /// One thing the system did.
    public enum Event: Sendable, Equatable {
        case webAuthenticationStarted(WebAuthenticationRequest)
        case webAuthenticationNavigatedElsewhere(URL)
        case webAuthenticationCanceledByApp
        /// An app called `performRequests` (before the scripted user answers, or while a sheet never answers).
        case authorizationRequested(requests: [String])
        /// An app called `performAutoFillAssistedRequests`: the requests are offered in the keyboard's suggestions.
        case authorizationAutoFillRequested(requests: [String])
        /// An authorization controller showed its sheet (it asked its presentation context provider for an anchor).
        case authorizationSheetShown(requests: [String])
        /// An authorization controller answered without showing anything.
        case authorizationAnsweredWithoutUI(requests: [String])
        case authorizationCanceledByApp
        /// The system asked for Face ID, Touch ID or the passcode.
        case userVerificationPrompted(UserVerificationPrompt)
    }

    private let lock = NSLock()
    private var _events: [Event] = []
    private var expired: Set<UUID> = []
    private var waiters: [UUID: (matches: @Sendable (Event) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]

    /// Everything so far, in order.
    public var events: [Event] { lock.withLock { _events } }

    func record(_ event: Event) {
        let woken = lock.withLock { () -> [CheckedContinuation<Bool, Never>] in
            _events.append(event)
            let ready = waiters.filter { $0.value.matches(event) }
            for id in ready.keys { waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// Waits until an event matching `matches` has been recorded at index `since` or later (at once if one already
    /// was), for at most `seconds`: tests wait for what the system did rather than for a length of time. Returns
    /// whether it came. Pass `events.count` taken before an action to wait for what that action causes.
    @discardableResult
    public func waitFor(since: Int = 0, seconds: Double = 60, _ matches: @escaping @Sendable (Event) -> Bool) async -> Bool {
        let id = UUID()
        // The deadline is a safety net for a broken test, generous enough for a saturated machine.
        let deadline = Task { [weak self] in
            try await Task.sleep(for: .seconds(seconds))
            self?.resume(id, with: false)
        }
        defer { deadline.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let seen: Bool? = lock.withLock {
                if _events.dropFirst(since).contains(where: matches) { return true }
                if expired.remove(id) != nil { return false }  // the deadline came first
                waiters[id] = (matches, continuation)
                return nil
            }
            if let seen { continuation.resume(returning: seen) }
        }
    }

    /// Waits until `event` has been recorded (`waitFor(seconds:_:)`).
    @discardableResult
    public func waitFor(_ event: Event, since: Int = 0, seconds: Double = 60) async -> Bool {
        await waitFor(since: since, seconds: seconds) { $0 == event }
    }

    private func resume(_ id: UUID, with outcome: Bool) {
        let waiter = lock.withLock {
            let waiter = waiters.removeValue(forKey: id)
            if waiter == nil { expired.insert(id) }
            return waiter
        }
        waiter?.continuation.resume(returning: outcome)
    }
}
#endif
