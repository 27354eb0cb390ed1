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

    /// - Parameter conditional: `requestStyle = .conditional` (callers check `ConditionalRegistration.isAvailable`
    ///   first; where the OS or the SDK the app was built with lacks it, the request stays a standard one).
    static func registration(_ options: PublicKeyCredentialCreationOptions, rpId: String, conditional: Bool = false)
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
        if conditional { ConditionalRegistration.makeConditional(request) }
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

/// Conditional passkey registration (`requestStyle = .conditional`): iOS 18, macOS 15 and visionOS 2.
///
/// Two gates, because the SDK the app is built with and the OS it runs on are both older sometimes:
/// - At compile time, `canImport(AuthenticationServices, _version: 7619)`: the Swift overlay of AuthenticationServices
///   carries its project version as its user module version — 7618.1.15.10.7 in the iOS 17.4 SDK (Xcode 15.3), which
///   does not declare `requestStyle`, and 7619.1.26.30.6 in the iOS 18.0 SDK (Xcode 16), which does. `#available`
///   alone cannot help here: it is a run-time check, and the name must first exist for the code to compile. So with
///   an iOS 17 SDK the branch is not compiled (the type check against the 17.4 SDK stays clean) and the feature
///   reports itself unavailable; with an iOS 18 SDK or newer it is compiled and used. tvOS has no such property.
/// - At run time, `#available(iOS 18.0, macOS 15.0, visionOS 2.0, *)`, for an app built with a new SDK that runs on
///   an older OS.
/// On Linux the stand-in declares `requestStyle`, and the simulated device says what the OS has
/// (`StandInDevice.hasConditionalPasskeyRegistration`: availability checks cannot be scripted).
enum ConditionalRegistration {
    /// Whether this OS, and the SDK the app was built with, have conditional registration.
    static var isAvailable: Bool {
        #if !canImport(AuthenticationServices)
        return StandInSystem.device.hasConditionalPasskeyRegistration
        #elseif canImport(AuthenticationServices, _version: 7619) && !os(tvOS) && !os(watchOS)
        if #available(iOS 18.0, macOS 15.0, visionOS 2.0, *) { return true }
        return false
        #else
        return false
        #endif
    }

    /// Sets `requestStyle = .conditional` where the SDK declares it and the OS has it (`isAvailable`).
    @MainActor
    static func makeConditional(_ request: ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest) {
        #if !canImport(AuthenticationServices)
        request.requestStyle = .conditional
        #elseif canImport(AuthenticationServices, _version: 7619) && !os(tvOS) && !os(watchOS)
        if #available(iOS 18.0, macOS 15.0, visionOS 2.0, *) { request.requestStyle = .conditional }
        #endif
    }
}

/// `ASAuthorizationError` → `LatchkeyError`, once for every adapter.
///
/// | `ASAuthorizationError` | when | `LatchkeyError.Code` |
/// |---|---|---|
/// | `.canceled`, `.notInteractive` | `.preferImmediatelyAvailableCredentials`, passkey ceremony | `.passkeyNoCredential` |
/// | `.canceled`, `.notInteractive` | `.preferImmediatelyAvailableCredentials`, sign-in sheet | `.canceled` |
/// | `.canceled` | AutoFill (it ended without a pick) | `.canceled` |
/// | `.canceled`, `.notInteractive` | a passkey sheet the person closed | `.passkeyCanceled` |
/// | `.canceled`, `.notInteractive` | a sign-in sheet the person closed | `.canceled` |
/// | `.matchedExcludedCredential` (1006) | a registration; this device has one | `.passkeyAlreadyRegistered` |
/// | `.failed` (1004), "not associated with domain" | the app's `webcredentials:` or the AASA file | `.passkeyDomainNotAssociated` |
/// | any, "already in progress" / "already active" | another request of the system is showing | `.passkeyRequestInProgress` |
/// | any other | a passkey ceremony, or a passkey-only sheet | `.passkeyFailed` (code and associated-domain hint) |
/// | any other | a sign-in sheet | `.unknownError` |
///
/// The last two carry the system's code in their message. Apple declares no code for "not associated" or "in
/// progress" (the iOS 17.4 and 18.0 `ASAuthorizationError.h` list 1000–1006 only): the system says it in the error's
/// `NSLocalizedFailureReasonErrorKey`, its description or its `NSUnderlyingErrorKey` error (the credential daemon's,
/// wrapped into `.failed`), in English, which is what these cases read. A failure whose words differ stays
/// `.passkeyFailed` with the hint. Every mapped error carries the person's words (`PasskeyErrorMessages`) in the
/// device's languages; the client replaces them with its own languages' (`LatchkeyConfig.preferredLanguages`).
enum AuthorizationErrors {
    /// `ASAuthorizationError.Code.matchedExcludedCredential` by its value: the case is declared from the iOS 18 /
    /// macOS 15 SDKs on, the error reaches apps on iOS 17 too, and the package builds with either SDK.
    static let matchedExcludedCredential = 1006
    /// What the ceremony was, for the message and the codes.
    enum Ceremony: Sendable { case signIn, passkeyAssertion, passkeyRegistration, autoFill }

    /// What the words of a system failure say, when they say something the code does not.
    enum Reason: Equatable { case domainNotAssociated, requestInProgress }

    /// - Parameter passkeyOnly: a sign-in that offered nothing but passkeys reports failures as passkey failures.
    static func map(_ error: any Error, ceremony: Ceremony, immediateOnly: Bool, rpId: String?, passkeyOnly: Bool = false) -> any Error {
        guard let error = error as? ASAuthorizationError else { return error }  // LatchkeyError, CancellationError
        return mapped(error, ceremony: ceremony, immediateOnly: immediateOnly, rpId: rpId, passkeyOnly: passkeyOnly)
            .withPasskeyUserMessage(preferredLanguages: Locale.preferredLanguages)
    }

    private static func mapped(_ error: ASAuthorizationError, ceremony: Ceremony, immediateOnly: Bool, rpId: String?, passkeyOnly: Bool)
        -> LatchkeyError
    {
        let passkey = ceremony != .signIn
        let domain = rpId ?? "the relying party"
        switch reason(error) {
        case .domainNotAssociated?:
            return LatchkeyError(
                .passkeyDomainNotAssociated,
                "the app is not associated with \(domain): add webcredentials:\(domain) to its associated domains and serve "
                    + "https://\(domain)/.well-known/apple-app-site-association listing the app (ASAuthorizationError \(error.code.rawValue))",
                underlying: error)
        case .requestInProgress?:
            return LatchkeyError(
                .passkeyRequestInProgress,
                "the system is showing another credential request (ASAuthorizationError \(error.code.rawValue)); try again once it is done",
                underlying: error)
        case nil:
            break
        }
        switch error.code {
        case .canceled where ceremony == .autoFill:
            return LatchkeyError(.canceled, "the AutoFill request ended without a passkey being picked", underlying: error)
        case .canceled, .notInteractive:
            if immediateOnly && passkey { return LatchkeyError(.passkeyNoCredential, "no passkey is available on this device", underlying: error) }
            if immediateOnly { return LatchkeyError(.canceled, "no credential is immediately available", underlying: error) }
            return LatchkeyError(passkey ? .passkeyCanceled : .canceled, "the user closed the credential sheet", underlying: error)
        case _ where error.code.rawValue == matchedExcludedCredential:
            return LatchkeyError(.passkeyAlreadyRegistered, "this device already holds a passkey for the account", underlying: error)
        default:
            // A bare `.failed` is also what an unverified associated domain looks like when the system gives no words.
            let hint = rpId.map { " (check that the app's associated domains include webcredentials:\($0))" } ?? ""
            return LatchkeyError(
                passkey || passkeyOnly ? .passkeyFailed : .unknownError,
                "the system credential sheet failed: ASAuthorizationError \(error.code.rawValue)\(hint)", underlying: error)
        }
    }

    /// What the error's words say: its failure reason, description and underlying error (one level down, where the
    /// credential daemon's error sits).
    static func reason(_ error: ASAuthorizationError) -> Reason? {
        var texts: [String] = []
        func collect(_ userInfo: [String: Any]) {
            for key in [NSLocalizedFailureReasonErrorKey, NSLocalizedDescriptionKey, NSDebugDescriptionErrorKey] {
                if let text = userInfo[key] as? String { texts.append(text) }
            }
        }
        collect(error.userInfo)
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError {
            collect(underlying.userInfo)
            texts.append(underlying.localizedDescription)
        }
        let words = texts.joined(separator: "\n").lowercased()
        if words.contains("not associated with domain") || words.contains("is not associated with") { return .domainNotAssociated }
        if words.contains("already in progress") || words.contains("already active") || words.contains("already being performed") {
            return .requestInProgress
        }
        return nil
    }
}
