import Foundation
import SwiftASN1
import X509

/// Verification of the `packed` attestation statement format (WebAuthn §8.2):
/// `{ alg: int, sig: bytes, x5c?: [bytes] }` signed over `authData ‖ clientDataHash`.
enum PackedAttestation {
    /// id-fido-gen-ce-aaguid: the authenticator model's AAGUID, embedded in attestation certificates (§8.2.1).
    static let aaguidExtension: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]

    static func verify(
        statement: CBORValue, authenticatorData: AuthenticatorData, clientDataHash: Data,
        credential: AuthenticatorData.AttestedCredential, trustAnchors: [Certificate],
        now: Date
    ) async throws -> AttestationType {
        if statement["ecdaaKeyId"] != nil {
            throw WebAuthnError.unsupportedAttestationFormat("packed (ECDAA)")
        }
        guard let alg = statement["alg"]?.intValue else { throw WebAuthnError.invalidAttestation("packed statement has no integer alg") }
        guard let signature = statement["sig"]?.bytesValue else { throw WebAuthnError.invalidAttestation("packed statement has no sig") }
        let signedData = authenticatorData.raw + clientDataHash

        guard let x5cValue = statement["x5c"] else {
            // Self attestation: the credential key signs, and must claim the algorithm it actually is.
            guard alg == credential.publicKey.algorithm.rawValue else {
                throw WebAuthnError.invalidAttestation(
                    "self attestation alg \(alg) differs from the credential key's \(credential.publicKey.algorithm.rawValue)")
            }
            guard credential.publicKey.isValidSignature(signature, for: signedData) else {
                throw WebAuthnError.invalidAttestation("self attestation signature does not verify")
            }
            return .selfAttestation
        }

        guard let x5c = x5cValue.arrayValue, !x5c.isEmpty else {
            throw WebAuthnError.invalidAttestation("x5c is not a non-empty array")
        }
        var certificates: [Certificate] = []
        for (index, element) in x5c.enumerated() {
            guard let der = element.bytesValue else { throw WebAuthnError.invalidAttestation("x5c[\(index)] is not a byte string") }
            do { certificates.append(try Certificate(derEncoded: [UInt8](der))) } catch {
                throw WebAuthnError.invalidAttestation("x5c[\(index)] is not a DER X.509 certificate")
            }
        }
        let leaf = certificates[0]
        guard let signatureAlgorithm = certificateSignatureAlgorithm(for: alg) else {
            throw WebAuthnError.unsupportedAlgorithm(alg)
        }
        guard leaf.publicKey.isValidSignature(signature, for: signedData, signatureAlgorithm: signatureAlgorithm) else {
            throw WebAuthnError.invalidAttestation("packed signature does not verify with the attestation certificate")
        }
        try checkLeafRequirements(leaf, aaguid: credential.aaguid)

        guard !trustAnchors.isEmpty else { return .basic(trustedChain: false) }
        try await AttestationChain.validate(
            leaf: leaf, intermediates: Array(certificates.dropFirst()),
            anchors: trustAnchors, now: now)
        return .basic(trustedChain: true)
    }

    /// The attestation key's algorithm, which (unlike the credential key's) may be any the certificate supports.
    static func certificateSignatureAlgorithm(for alg: Int) -> Certificate.SignatureAlgorithm? {
        switch alg {
        case -7: return .ecdsaWithSHA256
        case -35: return .ecdsaWithSHA384
        case -36: return .ecdsaWithSHA512
        case -8: return .ed25519
        case -257: return .sha256WithRSAEncryption
        case -258: return .sha384WithRSAEncryption
        case -259: return .sha512WithRSAEncryption
        default: return nil
        }
    }

    /// Packed attestation certificate requirements (WebAuthn §8.2.1).
    static func checkLeafRequirements(_ leaf: Certificate, aaguid: Data) throws {
        guard leaf.version == .v3 else { throw WebAuthnError.invalidAttestation("attestation certificate is not X.509 v3") }
        let organizationalUnits = leaf.subject.flatMap { $0 }
            .filter { $0.type == .RDNAttributeType.organizationalUnitName }
            .compactMap { String($0.value) }
        guard organizationalUnits.contains("Authenticator Attestation") else {
            throw WebAuthnError.invalidAttestation("attestation certificate subject OU is not \"Authenticator Attestation\"")
        }
        let basicConstraints: BasicConstraints?
        do { basicConstraints = try leaf.extensions.basicConstraints } catch {
            throw WebAuthnError.invalidAttestation("attestation certificate basicConstraints cannot be parsed")
        }
        if case .isCertificateAuthority = basicConstraints {
            throw WebAuthnError.invalidAttestation("attestation certificate is a CA certificate")
        }
        if let ext = leaf.extensions[oid: aaguidExtension] {
            guard !ext.critical else { throw WebAuthnError.invalidAttestation("AAGUID extension must not be critical") }
            // extnValue holds a DER OCTET STRING whose content is the 16-byte AAGUID.
            guard let inner = try? ASN1OctetString(derEncoded: ext.value), inner.bytes.count == 16 else {
                throw WebAuthnError.invalidAttestation("AAGUID extension is not a 16-byte OCTET STRING")
            }
            guard Data(inner.bytes) == aaguid else {
                throw WebAuthnError.invalidAttestation("AAGUID in the attestation certificate differs from the authenticator data")
            }
        }
    }
}
