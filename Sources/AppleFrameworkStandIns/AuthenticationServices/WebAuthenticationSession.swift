#if !canImport(AuthenticationServices)
import Foundation

/// Stand-in for `ASWebAuthenticationPresentationContextProviding` (`@MainActor`, refines `NSObjectProtocol`).
@MainActor
public protocol ASWebAuthenticationPresentationContextProviding: NSObjectProtocol {
    /// The window the session presents its browser from.
    func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor
}

/// `ASWebAuthenticationSessionErrorDomain`.
public let ASWebAuthenticationSessionErrorDomain = "com.apple.AuthenticationServices.WebAuthenticationSession"

/// Stand-in for the Swift import of `ASWebAuthenticationSessionErrorCode`.
public struct ASWebAuthenticationSessionError: StandInCodedError {
    /// `ASWebAuthenticationSessionErrorCode`.
    public enum Code: Int, Sendable, Hashable, StandInErrorCode {
        public typealias ErrorType = ASWebAuthenticationSessionError
        /// The user canceled (closed the browser sheet or declined the "wants to use … to sign in" alert).
        case canceledLogin = 1
        /// No presentation context provider was set before `start()`.
        case presentationContextNotProvided = 2
        /// The provider returned an anchor the session cannot present from.
        case presentationContextInvalid = 3
    }

    /// The error's code.
    public let code: Code
    /// An error with `code`.
    public init(_ code: Code) { self.code = code }

    public static let canceledLogin = Code.canceledLogin
    public static let presentationContextNotProvided = Code.presentationContextNotProvided
    public static let presentationContextInvalid = Code.presentationContextInvalid
    public static var errorDomain: String { ASWebAuthenticationSessionErrorDomain }
}

/// Stand-in for `ASWebAuthenticationSession`: shows a web page in a browser sheet and calls the completion handler once
/// when the page navigates to the callback (custom scheme, or an https host and path since iOS 17.4), or when the user
/// cancels.
///
/// What the "user" does is scripted per task (`StandInSystem.device.webAuthentication`). Behaviour modelled on Apple's:
/// `start()` returns false when the session was started before, when no presentation context provider is set (the
/// handler then gets `presentationContextNotProvided`), or when another session is showing; the completion handler
/// runs on the main thread, at most once; `cancel()` dismisses the sheet without calling the handler.
@MainActor
open class ASWebAuthenticationSession: NSObject {
    /// The completion handler: the callback URL, or an error (`ASWebAuthenticationSessionError`).
    public typealias CompletionHandler = (URL?, (any Error)?) -> Void

    /// Stand-in for `ASWebAuthenticationSession.Callback` (iOS 17.4, macOS 14.4): which navigation ends the session.
    public class Callback: NSObject {
        enum Kind: Sendable, Equatable {
            case customScheme(String)
            case https(host: String, path: String)
        }
        let kind: Kind

        required init(kind: Kind) { self.kind = kind; super.init() }

        /// Matches URLs with the given custom scheme.
        public class func customScheme(_ customScheme: String) -> Self { self.init(kind: .customScheme(customScheme)) }

        /// Matches `https` URLs with the given host and path (the host must be an associated domain of the app).
        public class func https(host: String, path: String) -> Self { self.init(kind: .https(host: host, path: path)) }

        /// Whether `url` ends the session.
        public func matchesURL(_ url: URL) -> Bool {
            switch kind {
            case .customScheme(let scheme):
                return url.scheme?.lowercased() == scheme.lowercased()
            case .https(let host, let path):
                return url.scheme?.lowercased() == "https" && url.host?.lowercased() == host.lowercased() && url.path == path
            }
        }
    }

    /// Provides the window the browser sheet is presented from. Held weakly, as Apple does.
    public weak var presentationContextProvider: (any ASWebAuthenticationPresentationContextProviding)?
    /// Asks for a private browser session: no cookies shared with Safari, no "wants to use … to sign in" alert.
    public var prefersEphemeralWebBrowserSession = false
    /// Extra headers for the first request (iOS 17.4, macOS 14.4).
    public var additionalHeaderFields: [String: String]?

    let url: URL
    let callback: Callback?
    /// The simulated device of the task that made the session.
    private let device = StandInSystem.device
    private var completionHandler: CompletionHandler?
    private var started = false
    private var presentation: Task<Void, Never>?

    /// A session for `URL` that ends at a URL of `callbackURLScheme` (nil: the handler never matches a callback).
    public init(url URL: URL, callbackURLScheme: String?, completionHandler: @escaping CompletionHandler) {
        self.url = URL
        self.callback = callbackURLScheme.map { Callback.customScheme($0) }
        self.completionHandler = completionHandler
        super.init()
    }

    /// A session for `URL` that ends at a URL `callback` matches (iOS 17.4, macOS 14.4).
    public init(url URL: URL, callback: Callback, completionHandler: @escaping CompletionHandler) {
        self.url = URL
        self.callback = callback
        self.completionHandler = completionHandler
        super.init()
    }

    /// Whether `start()` would present now.
    public var canStart: Bool {
        !started && !device.isPresentingWebAuthentication && device.webAuthentication.allowsStart
    }

    /// Presents the page. Returns false when it cannot (see the type's notes). Main thread only.
    public func start() -> Bool {
        guard !started else { return false }
        started = true
        guard let provider = presentationContextProvider else {
            finish(nil, ASWebAuthenticationSessionError(.presentationContextNotProvided))
            return false
        }
        let behaviour = device.webAuthentication
        guard behaviour.allowsStart, !device.isPresentingWebAuthentication else { return false }
        _ = provider.presentationAnchor(for: self)
        device.isPresentingWebAuthentication = true
        let request = WebAuthenticationRequest(
            url: url, callback: callback?.kind, prefersEphemeralWebBrowserSession: prefersEphemeralWebBrowserSession,
            additionalHeaderFields: additionalHeaderFields ?? [:])
        device.log.record(.webAuthenticationStarted(request))
        presentation = Task { @MainActor [weak self] in
            let outcome = await behaviour.user(request)
            guard let self, !Task.isCancelled else { return }
            switch outcome {
            case .navigated(let url):
                if let callback = self.callback, callback.matchesURL(url) {
                    self.finish(url, nil)
                } else {
                    // Apple keeps the sheet open on any other navigation: the session waits for cancel().
                    device.log.record(.webAuthenticationNavigatedElsewhere(url))
                }
            case .canceledByUser:
                self.finish(nil, ASWebAuthenticationSessionError(.canceledLogin))
            case .staysOpen:
                break
            }
        }
        return true
    }

    /// Dismisses the sheet. The completion handler is not called; canceling again has no effect.
    public func cancel() {
        presentation?.cancel()
        presentation = nil
        if completionHandler != nil { device.log.record(.webAuthenticationCanceledByApp) }
        completionHandler = nil
        device.isPresentingWebAuthentication = false
    }

    private func finish(_ url: URL?, _ error: (any Error)?) {
        guard let handler = completionHandler else { return }
        completionHandler = nil
        presentation = nil
        if (error as? ASWebAuthenticationSessionError)?.code != .presentationContextNotProvided { device.isPresentingWebAuthentication = false }
        handler(url, error)
    }
}
#endif
