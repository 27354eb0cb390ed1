import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// Passkeys on the platform authenticator (iCloud Keychain, or a phone through the QR code), for seed 004
/// `signup(withRequest:)`, `registerNewPasskey`, and the passkey steps of app-native flows.
///
/// The system builds `clientDataJSON` itself with the origin `https://<RP ID>`, so the `origin` arguments are not
/// used: the server must list that origin for the application, and the RP ID must be one of the app's associated
/// domains (`webcredentials:`). Errors: `.passkeyCanceled` when the user closes the sheet, `.passkeyNoCredential` when
/// `.IfImmediatelyAvailableCredentials` finds nothing, `.passkeyFailed` otherwise (with `ASAuthorizationError`'s code).
public struct PlatformPasskeyAuthenticator: PasskeyAuthenticator {
    /// An authenticator.
    public init() {}

    /// Registers a passkey (`ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest`).
    public func createCredential(for options: PublicKeyCredentialCreationOptions, origin: String,
                                 anchor: PresentationAnchorBox?) async throws -> RegistrationCredential {
        let rpId = try AuthorizationRequests.relyingParty(options.rp.id, origin: origin)
        do {
            let credential = try await AuthorizationRun.perform(preferImmediatelyAvailableCredentials: false, anchor: anchor) {
                [AuthorizationRequests.registration(options, rpId: rpId)]
            }
            guard case .passkeyRegistration(let registration) = credential else {
                throw LatchkeyError(.passkeyFailed, "the passkey sheet returned something other than a new passkey")
            }
            return registration
        } catch {
            throw AuthorizationErrors.map(error, ceremony: .passkeyRegistration, immediateOnly: false, rpId: rpId)
        }
    }

    /// Signs the challenge with a passkey (`ASAuthorizationPlatformPublicKeyCredentialAssertionRequest`).
    public func getAssertion(for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode,
                             anchor: PresentationAnchorBox?) async throws -> AssertionCredential {
        let rpId = try AuthorizationRequests.relyingParty(options.rpId, origin: origin)
        let immediateOnly = mode == .IfImmediatelyAvailableCredentials
        do {
            let credential = try await AuthorizationRun.perform(preferImmediatelyAvailableCredentials: immediateOnly, anchor: anchor) {
                [AuthorizationRequests.assertion(options, rpId: rpId)]
            }
            guard case .passkeyAssertion(let assertion) = credential else {
                throw LatchkeyError(.passkeyFailed, "the passkey sheet returned something other than an assertion")
            }
            return assertion
        } catch {
            throw AuthorizationErrors.map(error, ceremony: .passkeyAssertion, immediateOnly: immediateOnly, rpId: rpId)
        }
    }

    /// True: the platform does not reveal whether it holds a passkey; `getAssertion` finds out.
    public func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool { true }
}
