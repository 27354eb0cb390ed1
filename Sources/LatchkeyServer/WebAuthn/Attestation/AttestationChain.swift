import Foundation
import SwiftASN1
import X509

/// Verifies an `x5c` attestation chain to the relying party's trust anchors, synchronously.
///
/// Why not swift-certificates' `Verifier`: its `validate` is `async` (its certificate stores and policies may
/// suspend), while the relying-party API is synchronous by contract, and blocking a thread on an async call from the
/// 2-thread cooperative pool can deadlock the server. `RFC5280Policy.chainMeetsPolicyRequirements` is synchronous but
/// needs an `UnverifiedCertificateChain`, which cannot be built outside the package. WebAuthn fixes the chain order
/// (each `x5c` element is signed by the next, §8.2), so no path *search* is needed; this type checks the path with
/// swift-certificates' primitives (signature verification, extension parsing) and applies the RFC 5280 rules that
/// `RFC5280Policy` applies: validity periods, CA basic constraints with path length, keyCertSign key usage, and
/// no unhandled critical extensions. The tests cross-check it against `Verifier` + `RFC5280Policy`.
enum AttestationChain {
    /// Critical extensions this validator enforces; any other critical extension makes the chain unacceptable
    /// (RFC 5280 §4.2).
    static let handledCriticalExtensions: [ASN1ObjectIdentifier] = [
        .X509ExtensionID.basicConstraints, .X509ExtensionID.keyUsage, .X509ExtensionID.extendedKeyUsage,
    ]

    static func validate(leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], now: Date) throws {
        var chain = [leaf]
        var nextIntermediate = 0
        while true {
            guard let current = chain.last else { break }
            if anchors.contains(current) { break }
            if let anchor = anchors.first(where: { isIssuer($0, of: current) }) {
                chain.append(anchor)
                break
            }
            guard nextIntermediate < intermediates.count else {
                throw WebAuthnError.untrustedAttestation("the x5c chain does not lead to a configured trust anchor")
            }
            let issuer = intermediates[nextIntermediate]
            guard isIssuer(issuer, of: current) else {
                throw WebAuthnError.untrustedAttestation("x5c[\(nextIntermediate)] is not signed by x5c[\(nextIntermediate + 1)]")
            }
            chain.append(issuer)
            nextIntermediate += 1
        }

        for (index, certificate) in chain.enumerated() {
            guard certificate.notValidBefore <= now, now <= certificate.notValidAfter else {
                throw WebAuthnError.untrustedAttestation("certificate \(index) of the chain is outside its validity period")
            }
            for ext in certificate.extensions where ext.critical && !handledCriticalExtensions.contains(ext.oid) {
                throw WebAuthnError.untrustedAttestation("certificate \(index) has an unhandled critical extension \(ext.oid)")
            }
            guard index > 0 else { continue }
            // Every issuer must be a CA whose path length allows the intermediates below it (RFC 5280 §4.2.1.9);
            // index - 1 non-leaf certificates sit below the certificate at `index`.
            let constraints: BasicConstraints?
            let usage: KeyUsage?
            do {
                constraints = try certificate.extensions.basicConstraints
                usage = try certificate.extensions.keyUsage
            } catch {
                throw WebAuthnError.untrustedAttestation("certificate \(index) has unparseable extensions")
            }
            guard case .isCertificateAuthority(let maxPathLength) = constraints else {
                throw WebAuthnError.untrustedAttestation("certificate \(index) issues certificates but is not a CA")
            }
            if let maxPathLength, index - 1 > maxPathLength {
                throw WebAuthnError.untrustedAttestation("certificate \(index) path length constraint exceeded")
            }
            if let usage, !usage.keyCertSign {
                throw WebAuthnError.untrustedAttestation("certificate \(index) may not sign certificates (key usage)")
            }
        }
    }

    private static func isIssuer(_ issuer: Certificate, of certificate: Certificate) -> Bool {
        issuer.subject == certificate.issuer && issuer.publicKey.isValidSignature(certificate.signature, for: certificate)
    }
}
