import Foundation

/// The application's policy for signing in without the hosted page (thunderID §2.2), enforced on every native
/// front door — flow initiation, reachFive password sign-in, passkey sign-in and sign-up — so that no endpoint is a
/// side door around it: `browser` applications must redirect to the hosted page, and `mobile` applications must
/// prove with a platform attestation (`Attestation-Token` header) that the caller is the genuine app, unless the
/// server runs in development. The one exception is the hosted page's own passkey button, which asks for a browser
/// application at the server's own origin (`ReachFivePasskeyController.publicClient`); its ticket is redeemed by that
/// page's form only (`/oauth/authorize` and the step-up refuse a browser application's ticket).
struct NativeSignInPolicy: Sendable {
    /// A development server does not ask mobile applications for an attestation.
    let development: Bool
    let attestationVerifier: (any AttestationVerifier)?

    func requireNativeSignInAllowed(client: ClientConfiguration, attestation: String?) throws {
        if client.appType == .browser { throw FlowFailure.directInitiationForbidden.apiError }
        guard client.appType == .mobile, !development else { return }
        guard let verifier = attestationVerifier else { throw FlowFailure.attestationUnconfigured.apiError }
        guard let attestation, !attestation.isEmpty else { throw FlowFailure.attestationMissing.apiError }
        guard verifier.verify(attestation, applicationId: client.clientId) else { throw FlowFailure.attestationInvalid.apiError }
    }
}
