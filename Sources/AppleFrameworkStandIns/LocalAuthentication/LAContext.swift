#if !canImport(LocalAuthentication)
import Foundation

// Stand-ins for the LocalAuthentication framework: the policies, errors and `LAContext` calls Latchkey's Apple code
// makes, with Apple's names. What the person does at the prompt is scripted on the task's simulated device
// (`StandInDevice.userVerification`); every prompt is logged (`StandInLog.Event.userVerificationPrompted`).

/// `LAPolicy`.
public enum LAPolicy: Int, Sendable {
    /// Face ID or Touch ID only.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// Face ID or Touch ID, with the device passcode as the fallback.
    case deviceOwnerAuthentication = 2
}

/// `LAError` (Apple imports it as a struct of the `LAErrorDomain` with a `Code`).
public struct LAError: Error, Sendable, Equatable {
    /// `LAError.Code`.
    public enum Code: Int, Sendable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case appCancel = -9
        case invalidContext = -10
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case notInteractive = -1004
    }

    /// What failed.
    public let code: Code

    /// An error of `code` (stand-in only: on Apple the system makes these).
    public init(_ code: Code) { self.code = code }
}

/// `LAContext`: one authentication, which the keychain accepts for protected items once it was evaluated.
open class LAContext: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private var _evaluatedOn: ObjectIdentifier?
    private var _invalidated = false

    /// The text of the prompt's explanation when the keychain asks through this context.
    open var localizedReason: String = ""
    /// The title of the prompt's cancel button.
    open var localizedCancelTitle: String?
    /// The title of the passcode fallback button (empty: hidden).
    open var localizedFallbackTitle: String?
    /// The keychain fails instead of prompting when this context has not been evaluated.
    open var interactionNotAllowed = false

    public override init() {}

    /// Asks the person (the device's script answers); true when they confirmed.
    /// - Throws: `LAError` (`.userCancel`, `.authenticationFailed`, `.biometryNotEnrolled`, …).
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        let device = StandInSystem.device
        guard !lock.withLock({ _invalidated }) else { throw LAError(.invalidContext) }
        guard !interactionNotAllowed else { throw LAError(.notInteractive) }
        if let failure = device.verifyUser(policy: policy, reason: localizedReason, cancelTitle: localizedCancelTitle) {
            throw failure
        }
        lock.withLock { _evaluatedOn = ObjectIdentifier(device) }
        return true
    }

    /// Ends the context: the keychain no longer accepts it.
    open func invalidate() { lock.withLock { _invalidated = true } }

    /// Stand-in only: whether the keychain of `device` accepts this context without a prompt.
    func isAuthenticated(on device: StandInDevice) -> Bool {
        lock.withLock { !_invalidated && _evaluatedOn == ObjectIdentifier(device) }
    }
}

/// What the person does when the system asks for Face ID, Touch ID or the passcode.
public enum UserVerificationOutcome: Sendable, Equatable {
    /// They look at the phone, touch the sensor, or type the passcode.
    case confirms
    /// They tap Cancel.
    case cancels
    /// Biometry does not match (and they give up on the passcode).
    case fails
    /// The device cannot ask: no biometry enrolled (and, for the biometric-only policy, the passcode is no fallback).
    case notEnrolled
}

/// One prompt the system showed.
public struct UserVerificationPrompt: Sendable, Equatable {
    public var policy: LAPolicy
    public var reason: String
    public var cancelTitle: String?

    public init(policy: LAPolicy, reason: String, cancelTitle: String? = nil) {
        self.policy = policy; self.reason = reason; self.cancelTitle = cancelTitle
    }
}

extension StandInDevice {
    /// Runs the script for one prompt and logs it; nil when the person confirmed.
    func verifyUser(policy: LAPolicy, reason: String, cancelTitle: String?) -> LAError? {
        let prompt = UserVerificationPrompt(policy: policy, reason: reason, cancelTitle: cancelTitle)
        log.record(.userVerificationPrompted(prompt))
        switch userVerification(prompt) {
        case .confirms: return nil
        case .cancels: return LAError(.userCancel)
        case .fails: return LAError(.authenticationFailed)
        case .notEnrolled: return LAError(.biometryNotEnrolled)
        }
    }
}
#endif
