import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// The system credential sheet behind the ReachFive-style `login(withRequest:usingModalAuthorizationFor:display:)`: one
/// `ASAuthorizationController` with, in the caller's order, a saved-password request, a Sign in with Apple request
/// (its nonce the S256 challenge of a verifier the SDK keeps) and a platform passkey assertion request (the server's
/// challenge and allow list), presented from `NativeLoginRequest.anchor`.
///
/// `display: .IfImmediatelyAvailableCredentials` uses `performRequests(options: .preferImmediatelyAvailableCredentials)`:
/// with nothing on the device the call ends in `.canceled` (`AuthCanceled`) and nothing is shown. With `.Always` a
/// closed sheet is `.canceled` too (the system does not say whether anything was available). Other system failures are
/// mapped once (`AuthorizationErrors`): an app not associated with the RP ID is `.passkeyDomainNotAssociated`, another
/// request of the system showing is `.passkeyRequestInProgress`, the rest technical errors that carry
/// `ASAuthorizationError`'s code (`.passkeyFailed` when only passkeys were offered). A cancelled calling task cancels
/// the sheet and throws `CancellationError`.
///
/// `presentation: .autoFill` (`beginAutoFillAssistedPasskeyLogin(withRequest:)`) performs the passkey assertion request
/// alone with `performAutoFillAssistedRequests()` (iOS, visionOS; elsewhere `.passkeyNotSupported`): the passkeys show
/// in the keyboard's suggestions until the person picks one. Whatever this app starts next — a sheet, a registration,
/// another AutoFill — ends it first with the superseded `.canceled` (`LatchkeyError.isSuperseded`): one request at a
/// time (`AuthorizationCoordinator`).
public struct AuthorizationControllerCredentialProvider: CredentialProvider {
    /// A provider.
    public init() {}

    /// What one entry of the sheet asks for, prepared off the main actor (plain values).
    private enum Entry: Sendable {
        case password
        case appleID(nonce: String, scopes: [AppleIDScope])
        case passkey(PublicKeyCredentialRequestOptions, rpId: String)
    }

    /// Shows the sheet (or offers AutoFill) and returns the credential the user chose.
    public func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
        if request.presentation == .autoFill { return try await autoFill(request) }
        let immediateOnly = request.mode == .IfImmediatelyAvailableCredentials
        // A type without what it needs (no Apple nonce, no passkey options) is left out of the sheet.
        let entries: [Entry] = try request.types.compactMap { type in
            switch type {
            case .Password: .password
            case .SignInWithApple: request.appleNonce.map { .appleID(nonce: $0, scopes: request.appleScopes) }
            case .Passkey:
                try request.passkeyOptions.map { .passkey($0, rpId: try AuthorizationRequests.relyingParty($0.rpId, origin: request.origin)) }
            }
        }
        guard !entries.isEmpty else {
            throw LatchkeyError(
                immediateOnly || !request.types.contains(.Passkey) ? .canceled : .passkeyNoCredential, "nothing to offer in the credential sheet")
        }
        let rpId = entries.lazy.compactMap { if case .passkey(_, let rpId) = $0 { rpId } else { nil } }.first
        let credential: SystemCredential
        do {
            credential = try await AuthorizationRun.perform(.modal(preferImmediatelyAvailableCredentials: immediateOnly), anchor: request.anchor) {
                entries.map { entry -> ASAuthorizationRequest in
                    switch entry {
                    case .password: AuthorizationRequests.password()
                    case .appleID(let nonce, let scopes): AuthorizationRequests.appleID(nonce: nonce, scopes: scopes)
                    case .passkey(let options, let rpId): AuthorizationRequests.assertion(options, rpId: rpId)
                    }
                }
            }
        } catch {
            let passkeyOnly = entries.count == 1 && rpId != nil
            throw AuthorizationErrors.map(error, ceremony: .signIn, immediateOnly: immediateOnly, rpId: rpId, passkeyOnly: passkeyOnly)
        }
        switch credential {
        case .password(let user, let password): return .password(username: user, password: password)
        case .appleID(let token, let given, let family, let code):
            return .appleID(identityToken: token, givenName: given, familyName: family, authorizationCode: code)
        case .passkeyAssertion(let assertion): return .passkey(assertion)
        case .passkeyRegistration: throw LatchkeyError(.unknownError, "the credential sheet returned a registration to a sign-in")
        }
    }

    /// The passkey assertion request alone, in the keyboard's suggestions.
    private func autoFill(_ request: CredentialRequest) async throws -> ProvidedCredential {
        guard AuthorizationRun.supportsAutoFill else {
            throw LatchkeyError(.passkeyNotSupported, "AutoFill-assisted passkey requests need iOS or visionOS")
                .withPasskeyUserMessage(preferredLanguages: Locale.preferredLanguages)
        }
        guard let options = request.passkeyOptions else {
            throw LatchkeyError(.invalidInput, "an AutoFill request needs the server's passkey options")
        }
        let rpId = try AuthorizationRequests.relyingParty(options.rpId, origin: request.origin)
        let credential: SystemCredential
        do {
            credential = try await AuthorizationRun.perform(.autoFill, anchor: request.anchor) {
                [AuthorizationRequests.assertion(options, rpId: rpId)]
            }
        } catch {
            throw AuthorizationErrors.map(error, ceremony: .autoFill, immediateOnly: false, rpId: rpId)
        }
        guard case .passkeyAssertion(let assertion) = credential else {
            throw LatchkeyError(.unknownError, "AutoFill returned a credential other than the passkey it offered")
        }
        return .passkey(assertion)
    }
}
