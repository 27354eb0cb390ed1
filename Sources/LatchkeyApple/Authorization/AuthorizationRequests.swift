import Foundation
import Latchkey
#if canImport(AuthenticationServices)
import AuthenticationServices
#else
import AppleFrameworkStandIns
#endif

/// Builds Apple's request objects from the SDK's plain values (main actor: Apple's request objects are UI-side).
@MainActor
enum AuthorizationRequests {
    /// The RP ID of a ceremony: the options' own, else the origin's host.
    nonisolated static func relyingParty(_ rpId: String?, origin: String) throws -> String {
        if let rpId, !rpId.isEmpty { return rpId }
        guard let host = URLComponents(string: origin)?.host, !host.isEmpty else {
            throw LatchkeyError(.passkeyFailed, "the passkey options name no relying party and the origin \(origin) has no host")
        }
        return host
    }

    static func assertion(_ options: PublicKeyCredentialRequestOptions, rpId: String) -> ASAuthorizationPlatformPublicKeyCredentialAssertionRequest {
        let request = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: rpId)
            .createCredentialAssertionRequest(challenge: options.challenge)
        request.allowedCredentials = options.allowCredentials.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0.id) }
        request.userVerificationPreference = userVerification(options.userVerification)
        return request
    }

    static func registration(_ options: PublicKeyCredentialCreationOptions, rpId: String)
        -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest
    {
        let request = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: rpId)
            .createCredentialRegistrationRequest(challenge: options.challenge, name: options.user.name, userID: options.user.id)
        request.displayName = options.user.displayName
        request.userVerificationPreference = userVerification(options.authenticatorSelection?.userVerification)
        request.attestationPreference =
            switch options.attestation {
            case "direct": .direct
            case "indirect": .indirect
            case "enterprise": .enterprise
            default: .none
            }
        if #available(iOS 17.4, macOS 14.4, tvOS 17.4, watchOS 10.4, visionOS 1.1, *) {
            request.excludedCredentials = options.excludeCredentials.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0.id) }
        }
        return request
    }

    static func password() -> ASAuthorizationPasswordRequest { ASAuthorizationPasswordProvider().createRequest() }

    static func appleID(nonce: String, scopes: [AppleIDScope]) -> ASAuthorizationAppleIDRequest {
        let request = ASAuthorizationAppleIDProvider().createRequest()
        request.nonce = nonce
        request.requestedScopes = scopes.map { $0 == .email ? ASAuthorization.Scope.email : ASAuthorization.Scope.fullName }
        return request
    }

    private static func userVerification(_ value: String?) -> ASAuthorizationPublicKeyCredentialUserVerificationPreference {
        switch value {
        case "required": .required
        case "discouraged": .discouraged
        default: .preferred
        }
    }
}

/// `ASAuthorizationError` → `LatchkeyError`, once for every adapter.
enum AuthorizationErrors {
    /// `ASAuthorizationError.Code.matchedExcludedCredential` by its value: the case is declared from the iOS 18 /
    /// macOS 15 SDKs on, the error reaches apps on iOS 17 too, and the package builds with either SDK.
    static let matchedExcludedCredential = 1006
    /// What the ceremony was, for the message and the codes.
    enum Ceremony { case signIn, passkeyAssertion, passkeyRegistration }

    /// - Parameter passkeyOnly: a sign-in that offered nothing but passkeys reports failures as passkey failures.
    static func map(_ error: any Error, ceremony: Ceremony, immediateOnly: Bool, rpId: String?, passkeyOnly: Bool = false) -> any Error {
        guard let error = error as? ASAuthorizationError else { return error }  // LatchkeyError, CancellationError
        let passkey = ceremony != .signIn
        switch error.code {
        case .canceled, .notInteractive:
            if immediateOnly && passkey { return LatchkeyError(.passkeyNoCredential, "no passkey is available on this device", underlying: error) }
            if immediateOnly { return LatchkeyError(.canceled, "no credential is immediately available", underlying: error) }
            return LatchkeyError(passkey ? .passkeyCanceled : .canceled, "the user closed the credential sheet", underlying: error)
        case _ where error.code.rawValue == matchedExcludedCredential:
            return LatchkeyError(.passkeyFailed, "this device already holds a passkey for the account", underlying: error)
        default:
            // `.failed` is what a relying party outside the app's associated domains gets.
            let hint = rpId.map { " (check that the app's associated domains include webcredentials:\($0))" } ?? ""
            return LatchkeyError(
                passkey || passkeyOnly ? .passkeyFailed : .unknownError,
                "the system credential sheet failed: ASAuthorizationError \(error.code.rawValue)\(hint)", underlying: error)
        }
    }
}
