import Crypto
import Foundation
import X509

/// A successfully verified registration (WebAuthn §7.1): what the caller stores for the new credential.
struct VerifiedRegistration: Sendable {
    var credentialId: Data
    /// The credential public key, exactly as the authenticator encoded it; pass it back to `verifyAssertion`.
    var publicKeyCOSE: Data
    var algorithm: COSEAlgorithm
    var signCount: UInt32
    var aaguid: Data
    var format: String
    var attestationType: AttestationType
    var userVerified: Bool
    var backupEligible: Bool
    var backedUp: Bool
}

/// A successfully verified assertion (WebAuthn §7.2): the caller updates the stored sign count and backup state,
/// and checks `userHandle` against the credential's owner.
struct VerifiedAssertion: Sendable {
    var credentialId: Data
    var newSignCount: UInt32
    var userVerified: Bool
    var backedUp: Bool
    var userHandle: Data?
}

/// The relying party's rules and the two verification ceremonies. Pure: no storage, no clock except for
/// certificate validity, no I/O. Challenges are issued, remembered and consumed by the caller.
struct WebAuthnRelyingParty: Sendable {
    /// The RP ID (a registrable domain such as `example.com`, or `localhost`); authenticator data carries its SHA-256.
    var rpId: String
    /// Exact origins accepted in client data (`https://example.com`, `http://localhost:8090`,
    /// `android:apk-key-hash:…`). No wildcards: an origin is a security boundary.
    var allowedOrigins: Set<String>
    /// Roots (or intermediates) that packed `x5c` chains must reach. Empty: chains are not evaluated and packed
    /// basic attestation is reported as `.basic(trustedChain: false)`.
    var trustAnchors: [Certificate]
    /// Credential key algorithms accepted, at registration and again at every assertion.
    var allowedAlgorithms: [COSEAlgorithm] = [.es256, .edDSA, .rs256]
    /// Registration needs an attestation chain to `trustAnchors` (`webauthn.attestation: required`): `none`, self
    /// attestation and chains that reach no anchor are refused, so the anchors decide which authenticators may register.
    var requireTrustedAttestation = false

    init(
        rpId: String, allowedOrigins: Set<String>, trustAnchors: [Certificate] = [],
        allowedAlgorithms: [COSEAlgorithm] = [.es256, .edDSA, .rs256]
    ) {
        self.rpId = rpId
        self.allowedOrigins = allowedOrigins
        self.trustAnchors = trustAnchors
        self.allowedAlgorithms = allowedAlgorithms
    }

    /// Attestation formats this relying party can verify; anything else is refused by name.
    static let supportedAttestationFormats = ["none", "packed"]

    /// Registration ceremony, WebAuthn Level 3 §7.1 steps 5–27 (the caller does steps 1–4 and 28 onwards:
    /// obtaining the response, and rejecting credential IDs already registered). `now` is the server's clock: the
    /// attestation certificates' validity is checked at it.
    func verifyRegistration(
        clientDataJSON: Data, attestationObject: Data, expectedChallenge: Data,
        requireUserVerification: Bool, now: Date
    ) async throws -> VerifiedRegistration {
        let clientData = try ClientData(clientDataJSON)
        try checkClientData(clientData, type: "webauthn.create", expectedChallenge: expectedChallenge)
        let clientDataHash = Data(SHA256.hash(data: clientDataJSON))

        let attestation = try AttestationObject(attestationObject)
        let authData = attestation.authenticatorData
        try checkAuthenticatorData(authData, requireUserVerification: requireUserVerification)
        guard let credential = authData.attestedCredential else {
            throw WebAuthnError.malformed("registration authenticator data has no attested credential data")
        }
        guard allowedAlgorithms.contains(credential.publicKey.algorithm) else {
            throw WebAuthnError.unsupportedAlgorithm(credential.publicKey.algorithm.rawValue)
        }

        let attestationType: AttestationType
        switch attestation.format {
        case "none":
            guard attestation.statement.mapValue?.isEmpty == true else {
                throw WebAuthnError.invalidAttestation("'none' attestation must have an empty statement")
            }
            attestationType = .none
        case "packed":
            attestationType = try await PackedAttestation.verify(
                statement: attestation.statement, authenticatorData: authData,
                clientDataHash: clientDataHash, credential: credential,
                trustAnchors: trustAnchors, now: now)
        default:
            // tpm, android-key, android-safetynet, fido-u2f, apple, compound and unknown formats.
            throw WebAuthnError.unsupportedAttestationFormat(attestation.format)
        }

        if requireTrustedAttestation, attestationType != .basic(trustedChain: true) {
            throw WebAuthnError.untrustedAttestation("an attestation chaining to a configured trust anchor is required (got \(attestation.format))")
        }

        return VerifiedRegistration(
            credentialId: credential.credentialId, publicKeyCOSE: credential.publicKeyCBOR,
            algorithm: credential.publicKey.algorithm, signCount: authData.signCount, aaguid: credential.aaguid,
            format: attestation.format, attestationType: attestationType, userVerified: authData.flags.userVerified,
            backupEligible: authData.flags.backupEligible, backedUp: authData.flags.backedUp)
    }

    /// Authentication ceremony, WebAuthn Level 3 §7.2 steps 7–23 for a credential the caller has already looked up
    /// by `credentialId` (and, for discoverable credentials, whose owner it will compare with `userHandle`).
    func verifyAssertion(
        credentialId: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data,
        userHandle: Data?, expectedChallenge: Data, publicKeyCOSE: Data, storedSignCount: UInt32,
        requireUserVerification: Bool
    ) throws -> VerifiedAssertion {
        let clientData = try ClientData(clientDataJSON)
        try checkClientData(clientData, type: "webauthn.get", expectedChallenge: expectedChallenge)
        let authData = try AuthenticatorData(authenticatorData)
        try checkAuthenticatorData(authData, requireUserVerification: requireUserVerification)

        let key = try COSEKey(encoded: publicKeyCOSE)
        guard allowedAlgorithms.contains(key.algorithm) else { throw WebAuthnError.unsupportedAlgorithm(key.algorithm.rawValue) }
        let clientDataHash = Data(SHA256.hash(data: clientDataJSON))
        guard key.isValidSignature(signature, for: authData.raw + clientDataHash) else { throw WebAuthnError.invalidSignature }

        // §7.2 step 22: a counter that does not increase suggests a cloned authenticator. Authenticators that do not
        // implement a counter always send 0, which is accepted as long as nothing larger was ever stored.
        let received = authData.signCount
        if storedSignCount != 0 || received != 0, received <= storedSignCount {
            throw WebAuthnError.signCountRegression(stored: storedSignCount, received: received)
        }
        return VerifiedAssertion(
            credentialId: credentialId, newSignCount: received,
            userVerified: authData.flags.userVerified, backedUp: authData.flags.backedUp,
            userHandle: userHandle)
    }

    /// §7.1 steps 7–10 / §7.2 steps 11–14 (type, challenge, origin, cross-origin).
    private func checkClientData(_ clientData: ClientData, type: String, expectedChallenge: Data) throws {
        guard clientData.type == type else { throw WebAuthnError.wrongType(expected: type) }
        guard WebAuthnSupport.constantTimeEquals(clientData.challenge, expectedChallenge) else {
            throw WebAuthnError.challengeMismatch
        }
        guard allowedOrigins.contains(clientData.origin) else { throw WebAuthnError.originNotAllowed(clientData.origin) }
        // Ceremonies inside cross-origin iframes are not offered: a framing site could otherwise run them.
        guard !clientData.crossOrigin else {
            throw WebAuthnError.originNotAllowed("\(clientData.origin) in a cross-origin frame (top origin \(clientData.topOrigin ?? "unknown"))")
        }
    }

    /// §7.1 steps 13–18 / §7.2 steps 15–19 (RP ID hash, UP, UV, backup flags).
    private func checkAuthenticatorData(_ authData: AuthenticatorData, requireUserVerification: Bool) throws {
        let expectedHash = Data(SHA256.hash(data: Data(rpId.utf8)))
        guard WebAuthnSupport.constantTimeEquals(authData.rpIdHash, expectedHash) else { throw WebAuthnError.rpIdMismatch }
        guard authData.flags.userPresent else { throw WebAuthnError.userNotPresent }
        if requireUserVerification, !authData.flags.userVerified { throw WebAuthnError.userVerificationRequired }
        guard authData.flags.backupEligible || !authData.flags.backedUp else {
            throw WebAuthnError.malformed("backup state set without backup eligibility")
        }
    }
}
