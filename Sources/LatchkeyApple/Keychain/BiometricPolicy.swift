import Foundation
import Latchkey
#if canImport(LocalAuthentication)
import LocalAuthentication
#else
import AppleFrameworkStandIns
#endif
#if canImport(Security)
import Security
#endif

/// How often the person must confirm with Face ID, Touch ID or the passcode before the stored session is read — the
/// refresh token, and the DPoP key (a software key's PEM, or the handle of a Secure Enclave key) stored with it.
///
/// The session's Keychain item carries an access control (`SecAccessControl`: user presence or current biometry), so
/// the system itself refuses to give it out unconfirmed; the policy decides how long one confirmation lasts. The SDK
/// reads the item when it first needs the session after a launch, and again for every refresh (under the lease that
/// keeps one refresh across processes); a session already in memory is used without asking. A prompt the person
/// cancels or fails throws `.biometricAuthenticationFailed` and leaves the session where it is: ask again when the
/// person chooses to (a "Unlock with Face ID" button), never sign them out for it.
public enum BiometricPolicy: Sendable, Equatable {
    /// Every time the SDK reads the stored session: when it first needs it after a launch, and at every refresh. One
    /// confirmation covers the reads of one action (`alwaysActionSeconds`, 10 s: a launch's read and the refresh of
    /// its expired access token that follows at once), not two prompts in a row.
    case always
    /// Once, then not again for `timeoutInSeconds`, or until the session is signed out.
    case session(timeoutInSeconds: Int = 3600)
    /// Once per launch of the app, then not again for `timeoutInSeconds`; a sign-out and a new sign-in do not ask again.
    case appLifecycle(timeoutInSeconds: Int = 3600)

    /// How long `.always` lets one confirmation cover the reads that follow it.
    static let alwaysActionSeconds: TimeInterval = 10

    /// One confirmation serves the whole process (every adapter of the same items) and outlives a sign-out.
    var isPerLaunch: Bool {
        if case .appLifecycle = self { true } else { false }
    }

    /// How long one confirmation lasts.
    var confirmationLasts: TimeInterval {
        switch self {
        case .always: Self.alwaysActionSeconds
        case .session(let seconds), .appLifecycle(let seconds): TimeInterval(seconds)
        }
    }
}

/// Face ID, Touch ID or the passcode in front of the stored session: what is required, how often (`BiometricPolicy`),
/// and what the prompt says.
public struct BiometricProtection: Sendable, Equatable {
    /// What the person must do.
    public enum Requirement: Sendable, Equatable, CaseIterable {
        /// Face ID or Touch ID, with the device passcode as the fallback (`.userPresence`). The default: a person
        /// whose face is not recognised (a mask, an injury) is not locked out of their own session.
        case userPresence
        /// Face ID or Touch ID only, as enrolled when the session was stored (`.biometryCurrentSet`): adding a face
        /// or a finger later makes the stored session unreadable, and the person signs in again.
        case currentBiometry

        var accessControlFlags: SecAccessControlCreateFlags {
            switch self {
            case .userPresence: .userPresence
            case .currentBiometry: .biometryCurrentSet
            }
        }

        var policy: LAPolicy {
            switch self {
            case .userPresence: .deviceOwnerAuthentication
            case .currentBiometry: .deviceOwnerAuthenticationWithBiometrics
            }
        }
    }

    /// How often the person confirms.
    public var policy: BiometricPolicy
    /// What they confirm with.
    public var requirement: Requirement
    /// The prompt's explanation (Touch ID and the passcode screen show it; Face ID shows it in the app's
    /// `NSFaceIDUsageDescription`, which the app must declare). In the person's language: the app localizes it.
    public var reason: String
    /// The title of the prompt's cancel button; nil: the system's.
    public var cancelTitle: String?
    /// The title of the passcode fallback button; nil: the system's, "": hidden.
    public var fallbackTitle: String?

    /// A protection; `reason` must not be empty.
    public init(
        policy: BiometricPolicy = .always, requirement: Requirement = .userPresence, reason: String, cancelTitle: String? = nil,
        fallbackTitle: String? = nil
    ) {
        self.policy = policy; self.requirement = requirement; self.reason = reason
        self.cancelTitle = cancelTitle; self.fallbackTitle = fallbackTitle
    }
}

/// An evaluated LocalAuthentication context and when it was confirmed. The Keychain accepts an evaluated context for
/// protected items without asking again. `@unchecked Sendable`: `LAContext` may be used from any thread (Apple's
/// documentation), but is not annotated; a box is only ever read after it is made.
final class ConfirmedAuthentication: @unchecked Sendable {
    let context: LAContext
    let confirmedAt: Date

    init(_ context: LAContext, confirmedAt: Date) { self.context = context; self.confirmedAt = confirmedAt }

    /// Still accepted at `now` by `policy` (a clock set back before the confirmation does not extend it).
    func isValid(for policy: BiometricPolicy, at now: Date) -> Bool {
        now >= confirmedAt && now < confirmedAt.addingTimeInterval(policy.confirmationLasts)
    }

    /// Asks the person, as `protection` says.
    /// - Throws: `.biometricAuthenticationFailed` when they cancel or fail, or the device cannot ask.
    static func confirm(_ protection: BiometricProtection, at now: @Sendable () -> Date) async throws -> ConfirmedAuthentication {
        let context = LAContext()
        context.localizedReason = protection.reason
        context.localizedCancelTitle = protection.cancelTitle
        context.localizedFallbackTitle = protection.fallbackTitle
        do {
            _ = try await context.evaluatePolicy(protection.requirement.policy, localizedReason: protection.reason)
        } catch let error as LAError {
            throw LatchkeyError(.biometricAuthenticationFailed, Self.explanation(error.code), underlying: error)
        } catch {
            throw LatchkeyError(
                .biometricAuthenticationFailed, "the person was not confirmed; the session is kept", underlying: error)
        }
        return ConfirmedAuthentication(context, confirmedAt: now())
    }

    private static func explanation(_ code: LAError.Code) -> String {
        switch code {
        case .userCancel, .appCancel, .systemCancel:
            "the person cancelled the prompt; the session is kept, ask again when they choose to"
        case .biometryNotEnrolled, .biometryNotAvailable, .passcodeNotSet:
            "this device cannot confirm the person (no Face ID or Touch ID enrolled, or no passcode); the session is kept"
        case .biometryLockout:
            "Face ID or Touch ID is locked after too many attempts (the passcode unlocks it); the session is kept"
        default:
            "the person was not confirmed (\(code.rawValue)); the session is kept"
        }
    }

    /// A process-wide confirmation per Keychain service and access group, for `.appLifecycle`: it outlives a
    /// sign-out, and every client of the same items in the process shares it.
    static let launchConfirmations = LaunchConfirmations()

    final class LaunchConfirmations: @unchecked Sendable {
        private let lock = NSLock()
        private var confirmations: [String: ConfirmedAuthentication] = [:]
        subscript(_ id: String) -> ConfirmedAuthentication? {
            get { lock.withLock { confirmations[id] } }
            set { lock.withLock { confirmations[id] = newValue } }
        }
    }
}
