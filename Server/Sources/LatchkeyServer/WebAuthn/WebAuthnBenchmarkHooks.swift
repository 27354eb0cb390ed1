import Crypto
import Foundation

/// The relying party's assertion check, reachable from `latchkey-bench` (package access: visible to this package's
/// targets only, not public API), so the benchmark times exactly what the passkey endpoints run.
package enum WebAuthnBenchmarkHooks {
    /// The credential public key (COSE) that a registration's attestation object carries.
    package static func credentialPublicKey(attestationObject: Data) throws -> Data {
        guard let credential = try AttestationObject(attestationObject).authenticatorData.attestedCredential else {
            throw WebAuthnError.malformed("no attested credential")
        }
        return credential.publicKeyCBOR
    }

    /// WebAuthn §7.2 steps 7–23 as `finishPasskeyAuthentication` runs them: client data, authenticator data, the COSE
    /// key decoded and the signature checked. Returns the new sign count.
    package static func verifyAssertion(
        rpId: String, origin: String, credentialId: Data, clientDataJSON: Data, authenticatorData: Data,
        signature: Data, challenge: Data, publicKeyCOSE: Data
    ) throws -> UInt32 {
        try WebAuthnRelyingParty(rpId: rpId, allowedOrigins: [origin])
            .verifyAssertion(
                credentialId: credentialId, clientDataJSON: clientDataJSON, authenticatorData: authenticatorData,
                signature: signature, userHandle: nil, expectedChallenge: challenge, publicKeyCOSE: publicKeyCOSE,
                storedSignCount: 0, requireUserVerification: false
            )
            .newSignCount
    }
}

extension WebAuthnBenchmarkHooks {
    /// The bare primitive the assertion check is measured against: a P-256 key made once from the COSE key's
    /// coordinates, verifying a DER signature over a message (SHA-256 included).
    package static func p256Verifier(publicKeyCOSE: Data) throws -> (_ derSignature: Data, _ message: Data) -> Bool {
        let value = try CBORDecoder.decode(publicKeyCOSE)
        guard let x = value[-2]?.bytesValue, let y = value[-3]?.bytesValue else { throw WebAuthnError.malformed("not an EC2 key") }
        let key = try P256.Signing.PublicKey(rawRepresentation: x + y)
        return { signature, message in
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: message)
        }
    }
}
