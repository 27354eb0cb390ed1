import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// Passkeys on the platform authenticator (iCloud Keychain, or a phone through the QR code), for the ReachFive-style
/// `signup(withRequest:)`, `registerNewPasskey`, and the passkey steps of app-native flows.
///
/// The system builds `clientDataJSON` itself with the origin `https://<RP ID>`, so the `origin` arguments are not
/// used: the server must list that origin for the application, and the RP ID must be one of the app's associated
/// domains (`webcredentials:`). Errors (`AuthorizationErrors`): `.passkeyCanceled` when the user closes the sheet,
/// `.passkeyNoCredential` when `.IfImmediatelyAvailableCredentials` finds nothing, `.passkeyAlreadyRegistered` when
/// the device already holds one of the excluded passkeys, `.passkeyDomainNotAssociated` when the app is not associated
/// with the RP ID, `.passkeyRequestInProgress` when another request of the system is showing, `.passkeyFailed`
/// otherwise (with `ASAuthorizationError`'s code).
///
/// Conditional registration (`LatchkeyClient.upgradeToPasskey`) runs where the OS has it (`ConditionalRegistration`).
public struct PlatformPasskeyAuthenticator: PasskeyAuthenticator {
    /// An authenticator.
    public init() {}

    /// Registers a passkey (`ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest`).
    public func createCredential(
        for options: PublicKeyCredentialCreationOptions, origin: String,
        anchor: PresentationAnchorBox?
    ) async throws -> RegistrationCredential {
        let rpId = try AuthorizationRequests.relyingParty(options.rp.id, origin: origin)
        return try await ceremony(
            .passkeyRegistration, rpId: rpId, immediateOnly: false, anchor: anchor,
            request: { AuthorizationRequests.registration(options, rpId: rpId) }
        ) {
            if case .passkeyRegistration(let registration) = $0 { registration } else { nil }
        }
    }

    /// Signs the challenge with a passkey (`ASAuthorizationPlatformPublicKeyCredentialAssertionRequest`).
    public func getAssertion(
        for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode,
        anchor: PresentationAnchorBox?
    ) async throws -> AssertionCredential {
        let rpId = try AuthorizationRequests.relyingParty(options.rpId, origin: origin)
        return try await ceremony(
            .passkeyAssertion, rpId: rpId, immediateOnly: mode == .IfImmediatelyAvailableCredentials, anchor: anchor,
            request: { AuthorizationRequests.assertion(options, rpId: rpId) }
        ) {
            if case .passkeyAssertion(let assertion) = $0 { assertion } else { nil }
        }
    }

    /// True: the platform does not reveal whether it holds a passkey; `getAssertion` finds out.
    public func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool { true }

    /// Whether this OS, and the SDK the app was built with, have conditional registration (iOS 18, macOS 15,
    /// visionOS 2; see `ConditionalRegistration`).
    public var supportsConditionalRegistration: Bool { ConditionalRegistration.isAvailable }

    /// A registration request with `requestStyle = .conditional`: the credential manager makes the passkey without UI
    /// when it holds a password for `options.user.name` and agrees; otherwise the system ends the request with an
    /// error, also without UI, which is `.notOffered(.declined)` here (`.alreadyRegistered` for a passkey the device
    /// already holds, `.superseded` when the app started another request). An app not associated with the RP ID
    /// throws `.passkeyDomainNotAssociated` — the one failure a developer must see; a cancelled task throws.
    public func createCredentialConditionally(for options: PublicKeyCredentialCreationOptions, origin: String) async throws
        -> ConditionalRegistrationResult
    {
        guard ConditionalRegistration.isAvailable else { return .notOffered(.unsupportedOS) }
        let rpId = try AuthorizationRequests.relyingParty(options.rp.id, origin: origin)
        let credential: SystemCredential
        do {
            credential = try await AuthorizationRun.perform(.modal(preferImmediatelyAvailableCredentials: false), anchor: nil) {
                [AuthorizationRequests.registration(options, rpId: rpId, conditional: true)]
            }
        } catch let error as LatchkeyError where error.isSuperseded {
            return .notOffered(.superseded)
        } catch let error as ASAuthorizationError {
            let mapped = AuthorizationErrors.map(error, ceremony: .passkeyRegistration, immediateOnly: false, rpId: rpId)
            switch (mapped as? LatchkeyError)?.code {
            case .passkeyDomainNotAssociated?: throw mapped
            case .passkeyAlreadyRegistered?: return .notOffered(.alreadyRegistered)
            // Declined, cancelled, busy: the conditional request is opportunistic and shows nothing; next time may do.
            default: return .notOffered(.declined)
            }
        }
        guard case .passkeyRegistration(let registration) = credential else {
            throw LatchkeyError(.passkeyFailed, "the conditional registration answered with a credential of another kind")
        }
        return .created(registration)
    }

    /// One sheet with one request; its answer must be what `expected` extracts, its errors are mapped once.
    private func ceremony<Result: Sendable>(
        _ ceremony: AuthorizationErrors.Ceremony, rpId: String, immediateOnly: Bool, anchor: PresentationAnchorBox?,
        request: @escaping @MainActor @Sendable () -> ASAuthorizationRequest,
        expected: (SystemCredential) -> Result?
    ) async throws -> Result {
        let credential: SystemCredential
        do {
            credential = try await AuthorizationRun.perform(.modal(preferImmediatelyAvailableCredentials: immediateOnly), anchor: anchor) {
                [request()]
            }
        } catch {
            throw AuthorizationErrors.map(error, ceremony: ceremony, immediateOnly: immediateOnly, rpId: rpId)
        }
        guard let result = expected(credential) else {
            throw LatchkeyError(.passkeyFailed, "the passkey sheet answered with a credential of another kind")
        }
        return result
    }
}
