#if !canImport(AuthenticationServices)
import Foundation

/// Stand-in for `ASAuthorizationControllerDelegate`. Both methods are optional in Objective-C; the extension below
/// gives them empty defaults to the same effect.
public protocol ASAuthorizationControllerDelegate: NSObjectProtocol {
    /// The user chose a credential.
    func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization)
    /// The request failed (`ASAuthorizationError`), including when the user canceled.
    func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error)
}

extension ASAuthorizationControllerDelegate {
    public func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization) {}
    public func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error) {}
}

/// Stand-in for `ASAuthorizationControllerPresentationContextProviding` (`@MainActor`).
@MainActor
public protocol ASAuthorizationControllerPresentationContextProviding: NSObjectProtocol {
    /// The window the sheet is presented from.
    func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor
}

/// Stand-in for `ASAuthorizationController`: shows the system sheet for a set of requests and tells its delegate what
/// the user chose.
///
/// The user and the credential store are scripted per task (`StandInSystem.device.authorization`). Modelled on
/// Apple's behaviour: the delegate and the presentation context provider are held weakly, and so is the controller by
/// the system (an app that lets go of it, or of its delegate, gets no answer); answers arrive on the main thread after
/// `performRequests` returns; with `.preferImmediatelyAvailableCredentials` and nothing available the delegate gets
/// `.canceled` without any UI; `cancel()` ends a request in progress with `.canceled`.
@MainActor
open class ASAuthorizationController: NSObject {
    /// Stand-in for `ASAuthorizationController.RequestOptions`.
    public struct RequestOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Answer only from credentials available on the device right now; without any, fail with `.canceled` and
        /// show nothing.
        public static let preferImmediatelyAvailableCredentials = RequestOptions(rawValue: 1)
    }

    /// The requests the sheet offers.
    public let authorizationRequests: [ASAuthorizationRequest]
    /// Receives the outcome. Held weakly.
    public weak var delegate: (any ASAuthorizationControllerDelegate)?
    /// Provides the window for the sheet. Held weakly.
    public weak var presentationContextProvider: (any ASAuthorizationControllerPresentationContextProviding)?

    private let device = StandInSystem.device
    private var inProgress: Task<Void, Never>?

    /// A controller for `authorizationRequests`.
    public init(authorizationRequests: [ASAuthorizationRequest]) {
        self.authorizationRequests = authorizationRequests
        super.init()
    }

    /// Shows the sheet.
    open func performRequests() { perform(options: [], autoFill: false) }

    /// Shows the sheet, or with `.preferImmediatelyAvailableCredentials` answers without UI when nothing is available.
    open func performRequests(options: RequestOptions) { perform(options: options, autoFill: false) }

    /// Offers the credentials in the keyboard's QuickType bar instead of a sheet (iOS 16; unavailable on macOS, Mac
    /// Catalyst and tvOS). It answers when the person taps a suggestion, and stays until then or until `cancel()`.
    open func performAutoFillAssistedRequests() { perform(options: [], autoFill: true) }

    /// Cancels a request in progress; the delegate receives `.canceled`.
    open func cancel() {
        guard let task = inProgress else { return }
        task.cancel()
        inProgress = nil
        device.log.record(.authorizationCanceledByApp)
        delegate?.authorizationController(controller: self, didCompleteWithError: ASAuthorizationError(.canceled))
    }

    private func perform(options: RequestOptions, autoFill: Bool) {
        let behaviour = device.authorization
        let sheet = AuthorizationSheet(requests: authorizationRequests, options: options, autoFill: autoFill)
        let names = authorizationRequests.map { String(describing: type(of: $0)) }
        device.log.record(autoFill ? .authorizationAutoFillRequested(requests: names) : .authorizationRequested(requests: names))
        inProgress = Task { @MainActor [weak self, device] in
            let outcome = await behaviour.respond(sheet)
            guard let self, !Task.isCancelled else { return }
            if case .neverCompletes = outcome { return }  // still in progress: only cancel() ends it
            self.inProgress = nil
            switch outcome {
            case .neverCompletes:
                return
            case .authorized(let authorization, let showingUI):
                self.present(showingUI, names: names, device: device)
                self.delegate?.authorizationController(controller: self, didCompleteWithAuthorization: authorization)
            case .failed(let code, let showingUI):
                self.present(showingUI, names: names, device: device)
                self.delegate?.authorizationController(controller: self, didCompleteWithError: ASAuthorizationError(code))
            case .error(let error, let showingUI):
                self.present(showingUI, names: names, device: device)
                self.delegate?.authorizationController(controller: self, didCompleteWithError: error)
            case .completesTwice(let authorization):
                self.present(true, names: names, device: device)
                self.delegate?.authorizationController(controller: self, didCompleteWithAuthorization: authorization)
                self.delegate?.authorizationController(controller: self, didCompleteWithError: ASAuthorizationError(.failed))
            }
        }
    }

    private func present(_ showingUI: Bool, names: [String], device: StandInDevice) {
        if showingUI {
            _ = presentationContextProvider?.presentationAnchor(for: self)
            device.log.record(.authorizationSheetShown(requests: names))
        } else {
            device.log.record(.authorizationAnsweredWithoutUI(requests: names))
        }
    }
}

/// What an authorization controller was asked to show, as the scripted user sees it.
@MainActor
public struct AuthorizationSheet {
    /// The requests, in the order the app gave them.
    public let requests: [ASAuthorizationRequest]
    /// The options of `performRequests(options:)`.
    public let options: ASAuthorizationController.RequestOptions
    /// Whether it came from `performAutoFillAssistedRequests()`.
    public let autoFill: Bool

    /// The request of type `T`, if the app made one.
    public func request<T: ASAuthorizationRequest>(_ type: T.Type) -> T? { requests.lazy.compactMap { $0 as? T }.first }
}

/// How the sheet ends.
public enum AuthorizationOutcome {
    /// The user chose this credential; `showingUI` false for an answer given without a sheet.
    case authorized(ASAuthorization, showingUI: Bool)
    /// The request failed with `code`.
    case failed(ASAuthorizationError.Code, showingUI: Bool)
    /// The request failed with `error`, whose user info says more than its code (a failure reason, an underlying
    /// error).
    case error(ASAuthorizationError, showingUI: Bool)
    /// A misbehaving system: the delegate hears a success and then an error.
    case completesTwice(ASAuthorization)
    /// The sheet stays until the app cancels.
    case neverCompletes
}

/// The scripted user and credential store behind authorization controllers.
public struct AuthorizationBehaviour: Sendable {
    /// Decides how a sheet ends.
    public var respond: @MainActor @Sendable (AuthorizationSheet) async -> AuthorizationOutcome

    /// A custom behaviour.
    public init(respond: @escaping @MainActor @Sendable (AuthorizationSheet) async -> AuthorizationOutcome) { self.respond = respond }

    /// No credential on the device: `.canceled` without UI under `preferImmediatelyAvailableCredentials`, otherwise
    /// the sheet shows (a passkey QR code, an empty list) and the user closes it.
    public static let nothingAvailable = Self { sheet in
        .failed(.canceled, showingUI: !sheet.options.contains(.preferImmediatelyAvailableCredentials))
    }
    /// The user closes the sheet.
    public static let userCancels = Self { _ in .failed(.canceled, showingUI: true) }
    /// The system fails with `code` after showing the sheet.
    public static func fails(_ code: ASAuthorizationError.Code) -> Self { Self { _ in .failed(code, showingUI: true) } }
    /// The system fails with `error` (its user info included) without showing anything, as it does for a request it
    /// refuses outright (an app not associated with the domain, another request in progress).
    public static func fails(_ error: ASAuthorizationError) -> Self { Self { _ in .error(error, showingUI: false) } }
    /// The sheet stays until the app cancels.
    public static let neverCompletes = Self { _ in .neverCompletes }
}
#endif
