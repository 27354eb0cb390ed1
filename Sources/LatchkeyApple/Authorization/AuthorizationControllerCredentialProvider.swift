import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// The system credential sheet behind seed 002 `login(withRequest:usingModalAuthorizationFor:display:)`: one
/// `ASAuthorizationController` with, in the caller's order, a saved-password request, a Sign in with Apple request
/// (its nonce the S256 challenge of a verifier the SDK keeps) and a platform passkey assertion request (the server's
/// challenge and allow list), presented from `NativeLoginRequest.anchor`.
///
/// `display: .IfImmediatelyAvailableCredentials` uses `performRequests(options: .preferImmediatelyAvailableCredentials)`:
/// with nothing on the device the call ends in `.canceled` (`AuthCanceled`) and nothing is shown. With `.Always` a
/// closed sheet is `.canceled` too (the system does not say whether anything was available). Other system failures are
/// technical errors that carry `ASAuthorizationError`'s code (`.passkeyFailed` when only passkeys were offered). A cancelled calling task cancels the sheet and throws
/// `CancellationError`.
public struct AuthorizationControllerCredentialProvider: CredentialProvider {
    /// A provider.
    public init() {}

    /// Shows the sheet and returns the credential the user chose.
    public func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
        let immediateOnly = request.mode == .IfImmediatelyAvailableCredentials
        var rpId: String?
        if request.types.contains(.Passkey), let options = request.passkeyOptions {
            rpId = try AuthorizationRequests.relyingParty(options.rpId, origin: request.origin)
        }
        let types = request.types.filter { type in
            switch type {
            case .Password: true
            case .SignInWithApple: request.appleNonce != nil
            case .Passkey: request.passkeyOptions != nil
            }
        }
        guard !types.isEmpty else {
            throw LatchkeyError(immediateOnly || !request.types.contains(.Passkey) ? .canceled : .passkeyNoCredential, "nothing to offer in the credential sheet")
        }
        let passkeyRP = rpId
        let credential: SystemCredential
        do {
            credential = try await AuthorizationRun.perform(preferImmediatelyAvailableCredentials: immediateOnly, anchor: request.anchor) {
                types.compactMap { type -> ASAuthorizationRequest? in
                    switch type {
                    case .Password: AuthorizationRequests.password()
                    case .SignInWithApple: request.appleNonce.map { AuthorizationRequests.appleID(nonce: $0, scopes: request.appleScopes) }
                    case .Passkey: request.passkeyOptions.flatMap { options in passkeyRP.map { AuthorizationRequests.assertion(options, rpId: $0) } }
                    }
                }
            }
        } catch {
            throw AuthorizationErrors.map(error, ceremony: .signIn, immediateOnly: immediateOnly, rpId: rpId, passkeyOnly: types == [.Passkey])
        }
        switch credential {
        case .password(let user, let password): return .password(username: user, password: password)
        case .appleID(let token, let given, let family): return .appleID(identityToken: token, givenName: given, familyName: family)
        case .passkeyAssertion(let assertion): return .passkey(assertion)
        case .passkeyRegistration: throw LatchkeyError(.unknownError, "the credential sheet returned a registration to a sign-in")
        }
    }
}
