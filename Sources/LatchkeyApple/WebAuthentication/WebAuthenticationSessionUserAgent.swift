import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// Shows the sign-in page in an `ASWebAuthenticationSession` (ReachFive's `webviewLogin`, and
/// `signInWithBrowser(options:sessionId:presentationContextProvider:)` for ThunderID's URL-and-callback pair).
///
/// - The callback is the sign-in's redirect URI (`afterSignInUrl`): a custom scheme (`io.example.app://callback`), or an
///   `https` URL on one of the app's associated domains (iOS 17.4 / macOS 14.4 and later).
/// - `WebviewLoginRequest.presentationContextProvider` is required: the session is presented from its anchor.
/// - One sign-in at a time: a second one while a page is showing fails at once with `.invalidInput`, and the first
///   goes on undisturbed.
/// - The user closing the page is `.canceled` (ReachFive `AuthCanceled`); a session the system refuses to start is a
///   technical error (`.unknownError`), never a hang; cancelling the calling task closes the page.
public final class WebAuthenticationSessionUserAgent: AuthorizationUserAgent {
    /// Asks for a private browser session: no cookies shared with Safari (no single sign-on with other apps or the
    /// website, and no "wants to use … to sign in" alert).
    public let prefersEphemeralWebBrowserSession: Bool
    /// Extra headers for the first request (iOS 17.4 / macOS 14.4 and later; ignored before).
    public let additionalHeaderFields: [String: String]

    private let showing = NSLock()
    private nonisolated(unsafe) var isShowing = false

    /// A user agent.
    public init(prefersEphemeralWebBrowserSession: Bool = false, additionalHeaderFields: [String: String] = [:]) {
        self.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
        self.additionalHeaderFields = additionalHeaderFields
    }

    /// Nil: the sign-in returns to the configured `afterSignInUrl`.
    public func prepareRedirectURI() async throws -> String? { nil }

    /// A shared (not ephemeral) session keeps the provider's cookie in the system's browser storage: sign-out shows
    /// `end_session_endpoint` in a sheet like the sign-in's to end it. An ephemeral one keeps nothing to end.
    public var keepsProviderSession: Bool { !prefersEphemeralWebBrowserSession }

    /// Needs the presentation context and redirect URI that `webviewLogin` passes; always throws `.invalidConfiguration`.
    public func authorize(url: URL) async throws -> URL {
        throw LatchkeyError(
            .invalidConfiguration,
            "WebAuthenticationSessionUserAgent shows pages for webviewLogin(_:) and signInWithBrowser(…), which pass a presentation context")
    }

    /// Presents `url` and returns the callback URL.
    public func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL {
        let callback = try CallbackRule(redirectURI: presentation.redirectURI)
        guard reserve() else {
            throw LatchkeyError(.invalidInput, "a sign-in page is already showing; wait for it to finish before starting another")
        }
        defer { showing.withLock { isShowing = false } }
        let run = SessionRun()
        return try await withTaskCancellationHandler {
            try await run.oneShot.wait {
                Task { @MainActor in
                    run.start(
                        url: url, callback: callback, provider: presentation.contextProvider?.provider,
                        ephemeral: prefersEphemeralWebBrowserSession, headers: additionalHeaderFields)
                }
            }
        } onCancel: {
            run.oneShot.resume(.failure(CancellationError()))
            Task { @MainActor in run.cancel() }
        }
    }

    private func reserve() -> Bool {
        showing.withLock {
            guard !isShowing else { return false }
            isShowing = true
            return true
        }
    }
}

/// How the session recognises the end of the sign-in, from the redirect URI.
struct CallbackRule: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case customScheme(String)
        case https(host: String, path: String)
    }
    let kind: Kind

    init(redirectURI: String) throws {
        guard let components = URLComponents(string: redirectURI), let scheme = components.scheme?.lowercased(), !scheme.isEmpty else {
            throw LatchkeyError(
                .invalidRedirectUri,
                "afterSignInUrl \"\(redirectURI)\" is not a URL; ASWebAuthenticationSession needs a custom scheme (io.example.app://callback) or an https URL of an associated domain"
            )
        }
        switch scheme {
        case "https":
            guard let host = components.host, !host.isEmpty else {
                throw LatchkeyError(.invalidRedirectUri, "afterSignInUrl \"\(redirectURI)\" has no host")
            }
            kind = .https(host: host, path: components.path.isEmpty ? "/" : components.path)
        case "http":
            throw LatchkeyError(
                .invalidRedirectUri,
                "ASWebAuthenticationSession cannot return to an http URL (\(redirectURI)); use a custom scheme or an https URL of an associated domain"
            )
        default:
            kind = .customScheme(scheme)
        }
    }
}

/// One presentation: the session, kept alive until it ends (Apple requires a strong reference while it runs).
final class SessionRun: Sendable {
    let oneShot = OneShot<URL>()
    @MainActor private var session: ASWebAuthenticationSession?

    /// Written out, and nonisolated: the implicit initializer takes the main actor's isolation from `session` where an
    /// SDK marks `ASWebAuthenticationSession` `@MainActor`, and runs are created off the main actor.
    nonisolated init() {}

    @MainActor
    func start(url: URL, callback: CallbackRule, provider: (any PresentationContextProviding)?, ephemeral: Bool, headers: [String: String]) {
        guard !oneShot.isDone else { return }  // cancelled before the main actor got here
        guard let provider else {
            oneShot.resume(
                .failure(
                    LatchkeyError(
                        .invalidConfiguration,
                        "webviewLogin needs presentationContextProvider (a view controller that implements ASWebAuthenticationPresentationContextProviding), or it was released before the page could show"
                    )))
            return
        }
        let completion: ASWebAuthenticationSession.CompletionHandler = { [weak self] callbackURL, error in
            guard let self else { return }
            self.oneShot.resume(Self.outcome(callbackURL, error))
            Task { @MainActor in self.session = nil }
        }
        let session: ASWebAuthenticationSession
        switch callback.kind {
        case .customScheme(let scheme):
            if #available(iOS 17.4, macOS 14.4, tvOS 17.4, watchOS 10.4, visionOS 1.1, *) {
                session = ASWebAuthenticationSession(url: url, callback: .customScheme(scheme), completionHandler: completion)
            } else {
                session = ASWebAuthenticationSession(url: url, callbackURLScheme: scheme, completionHandler: completion)
            }
        case .https(let host, let path):
            guard #available(iOS 17.4, macOS 14.4, tvOS 17.4, watchOS 10.4, visionOS 1.1, *) else {
                oneShot.resume(
                    .failure(LatchkeyError(.invalidRedirectUri, "https callbacks need iOS 17.4 / macOS 14.4; use a custom scheme on older systems")))
                return
            }
            session = ASWebAuthenticationSession(url: url, callback: .https(host: host, path: path), completionHandler: completion)
        }
        session.presentationContextProvider = provider
        session.prefersEphemeralWebBrowserSession = ephemeral
        if !headers.isEmpty, #available(iOS 17.4, macOS 14.4, tvOS 17.4, watchOS 10.4, visionOS 1.1, *) {
            session.additionalHeaderFields = headers
        }
        self.session = session
        guard session.start() else {
            self.session = nil
            oneShot.resume(
                .failure(
                    LatchkeyError(
                        .unknownError,
                        "ASWebAuthenticationSession did not start (another sign-in sheet is showing, the app is not in the foreground, or the presentation anchor is not a window on screen)"
                    )))
            return
        }
    }

    @MainActor
    func cancel() {
        session?.cancel()
        session = nil
    }

    static func outcome(_ callbackURL: URL?, _ error: (any Error)?) -> Result<URL, any Error> {
        if let callbackURL { return .success(callbackURL) }
        switch error {
        case let error as ASWebAuthenticationSessionError where error.code == .canceledLogin:
            return .failure(LatchkeyError(.canceled, "the user closed the sign-in page", underlying: error))
        case let error as ASWebAuthenticationSessionError:
            return .failure(
                LatchkeyError(
                    .invalidConfiguration,
                    "the sign-in page could not be presented (ASWebAuthenticationSessionError \(error.code.rawValue)): the presentation anchor must be a window on screen",
                    underlying: error))
        case let error?:
            return .failure(LatchkeyError(.unknownError, "the sign-in page failed: \(error.localizedDescription)", underlying: error))
        case nil:
            return .failure(LatchkeyError(.unknownError, "ASWebAuthenticationSession ended with neither a callback nor an error"))
        }
    }
}
