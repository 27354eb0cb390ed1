import Foundation
import X509

/// Verifies an `x5c` attestation chain to the relying party's trust anchors with swift-certificates' `Verifier` and
/// its RFC 5280 policy (validity periods at `now`, CA basic constraints and path length, key usage, critical
/// extensions, signatures). WebAuthn orders `x5c` leaf first, each element signed by the next (§8.2); the anchors
/// are the configured roots (or intermediates).
enum AttestationChain {
    /// The reason a refused chain gives; swift-certificates' policy decides, its detailed failure is not part of the answer.
    static let refusal = "the x5c chain does not lead to a configured trust anchor under RFC 5280 rules"

    static func validate(leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], now: Date) async throws {
        var verifier = Verifier(rootCertificates: CertificateStore(anchors)) { RFC5280Policy(validationTime: now) }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediates))
        guard case .validCertificate = result else {
            throw WebAuthnError.untrustedAttestation(refusal)
        }
    }
}
