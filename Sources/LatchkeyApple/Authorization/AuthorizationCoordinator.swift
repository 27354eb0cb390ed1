import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// One credential request at a time, as the system runs them: the `AuthorizationRun` this app has showing, whichever
/// adapter started it (the sign-in sheet, a passkey registration, AutoFill, a conditional registration).
///
/// Starting a run while another is showing ends the earlier one first (`AuthorizationRun.supersede(by:)`): its caller
/// gets `LatchkeyError(.canceled)` with `CredentialRequestSuperseded` underneath at once — never a hang, never
/// `.passkeyFailed` — and its controller is cancelled before the new one performs. The usual case is AutoFill waiting
/// in the keyboard's suggestions when the person taps "Sign in with a passkey": the sheet must win, and the AutoFill
/// call must end cleanly. ReachFive's SDK does the same (its ongoing requests end with `AuthCanceled`).
///
/// A request the system refuses because another one — not started by this SDK, so not known here — is showing ends in
/// `.passkeyRequestInProgress` (`AuthorizationErrors`); nothing is cancelled for it.
@MainActor
final class AuthorizationCoordinator {
    private var current: AuthorizationRun?

    private init() {}

    /// `run` is starting: the run showing before it, if any, is superseded.
    func begin(_ run: AuthorizationRun) {
        if let previous = current, previous !== run {
            previous.supersede(by: run.presentation)
        }
        current = run
    }

    /// `run` has ended (answered, failed, cancelled); a newer run that replaced it is left alone.
    func end(_ run: AuthorizationRun) {
        if current === run { current = nil }
    }

    #if canImport(AuthenticationServices)
    /// The app's one coordinator: a device has one credential UI.
    static let shared = AuthorizationCoordinator()

    /// The coordinator of this system.
    static var current: AuthorizationCoordinator { shared }
    #else
    /// Linux: each simulated device (`StandInSystem.device`, bound per test) is a system of its own, so tests that run
    /// in parallel never supersede each other's requests. Entries of devices that are gone are dropped as new ones come.
    private static var byDevice: [ObjectIdentifier: (device: WeakDevice, coordinator: AuthorizationCoordinator)] = [:]

    private struct WeakDevice {
        weak var device: StandInDevice?
    }

    /// The coordinator of the calling task's simulated device.
    static var current: AuthorizationCoordinator {
        let device = StandInSystem.device
        let key = ObjectIdentifier(device)
        if let entry = byDevice[key], entry.device.device === device { return entry.coordinator }
        byDevice = byDevice.filter { $0.value.device.device != nil }
        let coordinator = AuthorizationCoordinator()
        byDevice[key] = (WeakDevice(device: device), coordinator)
        return coordinator
    }
    #endif
}
