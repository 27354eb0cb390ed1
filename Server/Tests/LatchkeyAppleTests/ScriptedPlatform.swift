import LatchkeyTestSupport
import AppleFrameworkStandIns
import Foundation
import Latchkey
import LatchkeyApple
@testable import LatchkeyServer

/// The simulated user and credential store behind the authorization-controller stand-in: what iOS would do with
/// iCloud Keychain holding `passkeys`, a saved `password` and an Apple ID. Like the real system it builds
/// `clientDataJSON` itself with the origin `https://<RP ID>`. It answers with the first request (in the app's order)
/// it holds a credential for; with none it behaves as Apple does (`.canceled`, with or without UI).
///
/// A registration of a passkey the store already holds (one of `excludedCredentials`) fails with
/// `matchedExcludedCredential`. A conditional registration (`requestStyle = .conditional`) shows nothing: it is made
/// only for the account name the saved password is kept under, and declined (`.canceled`, no UI) otherwise. AutoFill
/// (`sheet.autoFill`) answers as a tap on the suggested passkey would.
enum ScriptedPlatform {
    static func behaviour(
        passkeys: SoftwareAuthenticator? = nil, password: (user: String, password: String)? = nil,
        appleIDToken: (@Sendable (_ nonce: String) throws -> String)? = nil,
        appleName: PersonNameComponents? = nil
    ) -> AuthorizationBehaviour {
        AuthorizationBehaviour { sheet in
            for request in sheet.requests {
                do {
                    if let assertion = request as? ASAuthorizationPlatformPublicKeyCredentialAssertionRequest, let passkeys {
                        let options = PublicKeyCredentialRequestOptions(
                            challenge: assertion.challenge, rpId: assertion.relyingPartyIdentifier,
                            allowCredentials: assertion.allowedCredentials.map { PublicKeyCredentialDescriptor(id: $0.credentialID) },
                            userVerification: assertion.userVerificationPreference.rawValue)
                        guard await passkeys.hasCredential(rpId: assertion.relyingPartyIdentifier, allowCredentials: options.allowCredentials) else {
                            continue
                        }
                        let signed = try await passkeys.getAssertion(for: options, origin: "https://" + assertion.relyingPartyIdentifier)
                        let credential = ASAuthorizationPlatformPublicKeyCredentialAssertion(
                            rawAuthenticatorData: signed.authenticatorData, userID: signed.userHandle, signature: signed.signature,
                            rawClientDataJSON: signed.clientDataJSON, credentialID: signed.rawId)
                        return .authorized(ASAuthorization(provider: assertion.provider, credential: credential), showingUI: true)
                    }
                    if let registration = request as? ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest, let passkeys {
                        let conditional = registration.requestStyle == .conditional
                        if conditional, password?.user != registration.name { return .failed(.canceled, showingUI: false) }
                        let options = PublicKeyCredentialCreationOptions(
                            rp: PublicKeyCredentialRpEntity(id: registration.relyingPartyIdentifier, name: registration.relyingPartyIdentifier),
                            user: PublicKeyCredentialUserEntity(
                                id: registration.userID, name: registration.name,
                                displayName: registration.displayName ?? registration.name),
                            challenge: registration.challenge,
                            excludeCredentials: registration.excludedCredentials.map { PublicKeyCredentialDescriptor(id: $0.credentialID) })
                        let created: RegistrationCredential
                        do {
                            created = try await passkeys.createCredential(for: options, origin: "https://" + registration.relyingPartyIdentifier)
                        } catch let error as LatchkeyError where error.code == .passkeyAlreadyRegistered {
                            return .failed(.matchedExcludedCredential, showingUI: !conditional)
                        }
                        let credential = ASAuthorizationPlatformPublicKeyCredentialRegistration(
                            rawAttestationObject: created.attestationObject, rawClientDataJSON: created.clientDataJSON, credentialID: created.rawId)
                        return .authorized(ASAuthorization(provider: registration.provider, credential: credential), showingUI: !conditional)
                    }
                    if request is ASAuthorizationPasswordRequest, let password {
                        return .authorized(
                            ASAuthorization(
                                provider: request.provider, credential: ASPasswordCredential(user: password.user, password: password.password)),
                            showingUI: true)
                    }
                    if let apple = request as? ASAuthorizationAppleIDRequest, let appleIDToken, let nonce = apple.nonce {
                        let credential = ASAuthorizationAppleIDCredential(
                            user: "apple-user", authorizedScopes: apple.requestedScopes ?? [],
                            identityToken: Data(try appleIDToken(nonce).utf8), fullName: appleName)
                        return .authorized(ASAuthorization(provider: apple.provider, credential: credential), showingUI: true)
                    }
                } catch {
                    return .failed(.failed, showingUI: true)
                }
            }
            return .failed(.canceled, showingUI: !sheet.options.contains(.preferImmediatelyAvailableCredentials))
        }
    }

    /// AutoFill whose suggestions nobody taps (the person is still typing): the request stays until the app cancels
    /// it; sheets are answered by `modal`.
    static func autoFillWaits(modal: AuthorizationBehaviour) -> AuthorizationBehaviour {
        AuthorizationBehaviour { sheet in
            if sheet.autoFill { return .neverCompletes }
            return await modal.respond(sheet)
        }
    }

    /// `ASAuthorizationError.failed` as a device reports an app that is not associated with `domain`: the reason in
    /// the failure reason, and the credential daemon's error underneath.
    static func notAssociated(with domain: String, bundleId: String = "ABCDE12345.io.latchkey.demo") -> ASAuthorizationError {
        let reason = "Application with identifier \(bundleId) is not associated with domain \(domain)"
        let daemon = NSError(
            domain: "com.apple.AuthenticationServicesCore.AuthorizationError", code: 7,
            userInfo: [NSLocalizedFailureReasonErrorKey: reason])
        return ASAuthorizationError(.failed, userInfo: [NSLocalizedFailureReasonErrorKey: reason, NSUnderlyingErrorKey: daemon])
    }

    /// `ASAuthorizationError.failed` as the system refuses a request while another one (not this SDK's) is showing.
    static let requestInProgress = ASAuthorizationError(
        .failed, userInfo: [NSLocalizedFailureReasonErrorKey: "An authorization request is already in progress."])
}

/// A view controller's stand-in: the window sheets attach to, and the seeds' `presentationContextProvider: self`.
@MainActor
final class ScreenStandIn: NSObject, ASWebAuthenticationPresentationContextProviding {
    let window = ASPresentationAnchor()
    private(set) var anchorRequests = 0

    func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
        anchorRequests += 1
        return window
    }
}

extension StandInDevice {
    /// Runs `body` with this device as the task's simulated device.
    func run<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await StandInSystem.$device.withValue(self) { try await body() }
    }

    /// Starts `TestServer.startForApple`, runs `body` on this device, and stops the server.
    func withAppleServer(apple: AppleStandIn? = nil, _ body: (TestServer) async throws -> Void) async throws {
        let server = try await TestServer.startForApple(apple: apple)
        defer { Task { await server.stop() } }
        try await run { try await body(server) }
    }
}

extension TestServer {
    /// The demo application as an iOS app uses it: its passkeys are made by the system for RP ID `localhost`, whose
    /// origin is `https://localhost`; Sign in with Apple for `bundleId`.
    static func startForApple(bundleId: String = "io.latchkey.demo", apple: AppleStandIn? = nil) async throws -> TestServer {
        try await startForNativeLogin(bundleId: bundleId, apple: apple) { configuration in
            configuration.webAuthn.rpId = "localhost"
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" {
                    client.passkeyOrigins.append("https://localhost")
                    client.redirectUris.append("https://app.example/auth/callback")  // an associated-domain callback
                }
                return client
            }
        }
    }

    /// The Apple client (`LatchkeyClient(…prefersEphemeralWebBrowserSession:)`) initialized with `appleConfig()`; in
    /// memory unless `storage` is nil, which leaves the client's default, the Keychain.
    func appleClient(
        ephemeral: Bool = false, storage: (any StorageAdapter)? = InMemoryStorageAdapter(),
        afterSignInUrl: String? = nil, http: any HTTPClient = productionHTTPClient()
    ) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: http, prefersEphemeralWebBrowserSession: ephemeral)
        var config = appleConfig()
        if let afterSignInUrl { config.afterSignInUrl = afterSignInUrl }
        try await client.initialize(config: config, storage: storage)
        return client
    }

    /// The SDK configuration of an iOS app: the custom-scheme callback, and the system's passkey origin.
    func appleConfig() -> LatchkeyConfig {
        var config = sdkConfig(redirect: "io.latchkey.demo:/callback")
        config.originWebAuthn = "https://localhost"
        return config
    }
}
