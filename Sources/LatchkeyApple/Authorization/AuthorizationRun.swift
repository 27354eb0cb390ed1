import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// What the system sheet returned, copied out of Apple's (non-`Sendable`) objects in the delegate callback.
enum SystemCredential: Sendable {
    case password(user: String, password: String)
    case appleID(identityToken: String, givenName: String?, familyName: String?, authorizationCode: String?)
    case passkeyAssertion(AssertionCredential)
    case passkeyRegistration(RegistrationCredential)
}

/// How a run puts its requests to the person.
enum AuthorizationRunStyle: Sendable, Equatable, CustomStringConvertible {
    /// `performRequests()`: a sheet, or for `preferImmediatelyAvailableCredentials` an answer without UI when nothing
    /// is available (`performRequests(options:)`).
    case modal(preferImmediatelyAvailableCredentials: Bool)
    /// `performAutoFillAssistedRequests()`: the keyboard's suggestions, until the person picks one.
    case autoFill

    var description: String {
        switch self {
        case .modal(let immediate): immediate ? "immediate credential request" : "credential sheet"
        case .autoFill: "AutoFill request"
        }
    }
}

/// One `ASAuthorizationController` run, from `performRequests` to exactly one result.
///
/// The run is the controller's delegate and presentation context provider and keeps the controller alive until it
/// answers (the controller holds both weakly, and an unreferenced controller never calls back). Exactly-once holds
/// whatever the system does: a delegate called twice, the calling task cancelled (the controller is cancelled and its
/// late `.canceled` ignored), the run superseded by a newer one (`AuthorizationCoordinator`), or the sheet's window
/// already closed.
///
/// The presentation-context conformance is isolated to the main actor (Swift 6.2's `@MainActor P`): the protocol is
/// nonisolated in SDKs before Xcode 26.4 and `@MainActor` from then on, and the controller asks for the anchor on the
/// main thread either way. The delegate methods are `nonisolated` instead, for the same two SDKs.
@MainActor
final class AuthorizationRun: NSObject, ASAuthorizationControllerDelegate, @MainActor ASAuthorizationControllerPresentationContextProviding {
    private let oneShot = OneShot<SystemCredential>()
    private let anchor: PresentationAnchorBox?
    /// How the requests are put to the person.
    let presentation: AuthorizationRunStyle
    /// The system this run belongs to: its one-request-at-a-time rule.
    private let coordinator: AuthorizationCoordinator
    private var controller: ASAuthorizationController?

    private init(anchor: PresentationAnchorBox?, presentation: AuthorizationRunStyle, coordinator: AuthorizationCoordinator) {
        self.anchor = anchor
        self.presentation = presentation
        self.coordinator = coordinator
    }

    /// Runs `requests` (built on the main actor) and returns the credential, or throws the system's
    /// `ASAuthorizationError`, a `LatchkeyError` for an answer that cannot be used, `LatchkeyError(.canceled)` with
    /// `CredentialRequestSuperseded` underneath when a newer run took over, or `CancellationError`.
    nonisolated static func perform(
        _ presentation: AuthorizationRunStyle, anchor: PresentationAnchorBox?,
        requests: @escaping @MainActor @Sendable () -> [ASAuthorizationRequest]
    ) async throws -> SystemCredential {
        let run = await make(anchor: anchor, presentation: presentation)
        let oneShot = run.oneShot
        return try await withTaskCancellationHandler {
            try await oneShot.wait {
                Task { @MainActor in run.start(requests()) }
            }
        } onCancel: {
            oneShot.resume(.failure(CancellationError()))
            Task { @MainActor in run.cancel() }
        }
    }

    /// A run of the calling task's system (on Linux, the coordinator of the task's simulated device).
    private static func make(anchor: PresentationAnchorBox?, presentation: AuthorizationRunStyle) -> AuthorizationRun {
        AuthorizationRun(anchor: anchor, presentation: presentation, coordinator: AuthorizationCoordinator.current)
    }

    private func start(_ requests: [ASAuthorizationRequest]) {
        guard !oneShot.isDone else { return }
        // One request at a time: whatever this app's earlier run still shows ends before this one is performed.
        coordinator.begin(self)
        let controller = ASAuthorizationController(authorizationRequests: requests)
        controller.delegate = self
        controller.presentationContextProvider = self
        self.controller = controller
        switch presentation {
        case .modal(preferImmediatelyAvailableCredentials: true):
            controller.performRequests(options: .preferImmediatelyAvailableCredentials)
        case .modal(preferImmediatelyAvailableCredentials: false):
            controller.performRequests()
        case .autoFill:
            #if !canImport(AuthenticationServices) || (os(iOS) && !targetEnvironment(macCatalyst)) || os(visionOS)
            controller.performAutoFillAssistedRequests()
            #else
            // macOS, Mac Catalyst and tvOS have no AutoFill-assisted requests (callers check `supportsAutoFill`).
            finish(.failure(LatchkeyError(.passkeyNotSupported, "AutoFill-assisted passkey requests need iOS or visionOS")))
            #endif
        }
    }

    /// Whether this platform has AutoFill-assisted requests (`performAutoFillAssistedRequests`: iOS 16 and visionOS;
    /// not macOS, Mac Catalyst or tvOS).
    nonisolated static var supportsAutoFill: Bool {
        #if !canImport(AuthenticationServices) || (os(iOS) && !targetEnvironment(macCatalyst)) || os(visionOS)
        return true
        #else
        return false
        #endif
    }

    /// Ends the run for a newer one of the same app: its caller gets the superseded `.canceled` at once, then the
    /// system request is cancelled (its late `.canceled` is ignored by the one-shot).
    func supersede(by newer: AuthorizationRunStyle) {
        oneShot.resume(
            .failure(
                LatchkeyError(
                    .canceled, "this \(presentation) ended because the app started a new \(newer)", underlying: CredentialRequestSuperseded())))
        controller?.cancel()
        controller = nil
    }

    private func cancel() {
        controller?.cancel()
        controller = nil
        coordinator.end(self)
    }

    /// Called from the delegate methods, on whatever thread the system uses: the one-shot is thread-safe, and the
    /// controller is let go on the main actor after the delegate call has returned.
    nonisolated private func finish(_ result: Result<SystemCredential, any Error>) {
        oneShot.resume(result)
        Task { @MainActor in
            self.controller = nil
            self.coordinator.end(self)
        }
    }

    // MARK: ASAuthorizationControllerDelegate
    // nonisolated, so they satisfy the protocol whether or not an SDK marks it @MainActor; the values are copied out
    // here and handed over through the one-shot continuation.

    nonisolated func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization) {
        let result = Result { try Self.copy(authorization.credential) }
        finish(result)
    }

    nonisolated func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error) {
        let sendable: any Error =
            (error as? ASAuthorizationError).map { $0 as any Error }
            ?? LatchkeyError(.unknownError, "the credential sheet failed: \(error.localizedDescription)")
        finish(.failure(sendable))
    }

    // MARK: ASAuthorizationControllerPresentationContextProviding

    func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor {
        // A closed window leaves the system to choose; a fresh anchor is what Apple's samples fall back to.
        anchor?.anchor ?? ASPresentationAnchor()
    }

    // MARK: Copying credentials

    nonisolated static func copy(_ credential: any ASAuthorizationCredential) throws -> SystemCredential {
        switch credential {
        case let password as ASPasswordCredential:
            return .password(user: password.user, password: password.password)
        case let apple as ASAuthorizationAppleIDCredential:
            guard let data = apple.identityToken, let token = String(data: data, encoding: .utf8), !token.isEmpty else {
                throw LatchkeyError(.authenticationFailed, "Sign in with Apple returned no identity token")
            }
            // The code lets the server revoke the app at Apple when the person deletes their account.
            return .appleID(
                identityToken: token, givenName: apple.fullName?.givenName, familyName: apple.fullName?.familyName,
                authorizationCode: apple.authorizationCode.flatMap { String(data: $0, encoding: .utf8) })
        case let assertion as ASAuthorizationPlatformPublicKeyCredentialAssertion:
            guard let authenticatorData = assertion.rawAuthenticatorData, let signature = assertion.signature else {
                throw LatchkeyError(.passkeyFailed, "the passkey assertion has no authenticator data or signature")
            }
            return .passkeyAssertion(
                AssertionCredential(
                    rawId: assertion.credentialID, clientDataJSON: assertion.rawClientDataJSON, authenticatorData: authenticatorData,
                    signature: signature, userHandle: assertion.userID, authenticatorAttachment: attachment(assertion.attachment)))
        case let registration as ASAuthorizationPlatformPublicKeyCredentialRegistration:
            guard let attestationObject = registration.rawAttestationObject else {
                throw LatchkeyError(.passkeyFailed, "the new passkey has no attestation object")
            }
            return .passkeyRegistration(
                RegistrationCredential(
                    rawId: registration.credentialID, clientDataJSON: registration.rawClientDataJSON, attestationObject: attestationObject,
                    transports: ["internal", "hybrid"], authenticatorAttachment: attachment(registration.attachment)))
        default:
            throw LatchkeyError(.unknownError, "the credential sheet returned a credential Latchkey did not ask for (\(type(of: credential)))")
        }
    }

    nonisolated private static func attachment(_ attachment: ASAuthorizationPublicKeyCredentialAttachment) -> String {
        attachment == .platform ? "platform" : "cross-platform"
    }
}
