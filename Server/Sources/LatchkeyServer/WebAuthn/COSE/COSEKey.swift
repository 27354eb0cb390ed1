import _CryptoExtras
import Crypto
import Foundation

/// The COSE algorithms a credential key may use (IANA COSE Algorithms registry), the three every WebAuthn relying
/// party is expected to support: ES256, EdDSA (Ed25519) and RS256.
enum COSEAlgorithm: Int, Sendable, CaseIterable {
    case es256 = -7
    case edDSA = -8
    case rs256 = -257
}

/// A credential public key in COSE_Key form (RFC 9052 §7, RFC 9053, WebAuthn §5.8.5), validated on construction.
///
/// Only the validated key material is kept (as bytes), and the CryptoKit-style key is rebuilt for each verification:
/// that keeps the type trivially `Sendable` on every platform and costs microseconds.
struct COSEKey: Sendable {
    /// COSE_Key common parameters and key-type parameters (RFC 9052 §7.1, RFC 9053 §7).
    private enum Label {
        static let kty = 1, alg = 3
        static let crv = -1, x = -2, y = -3
        static let rsaN = -1, rsaE = -2
    }

    private enum Material: Sendable {
        case p256(x963: Data)
        case ed25519(Data)
        case rsa(n: Data, e: Data)
    }

    let algorithm: COSEAlgorithm
    private let material: Material

    /// Checks that kty, crv and alg agree, that coordinates have the right lengths and that the key is accepted by
    /// swift-crypto (which checks that an EC point lies on the curve).
    init(cbor: CBORValue) throws {
        guard case .map = cbor else { throw WebAuthnError.malformed("COSE key is not a map") }
        guard let algValue = cbor[Label.alg] else { throw WebAuthnError.malformed("COSE key has no alg") }
        guard let alg = algValue.intValue else { throw WebAuthnError.malformed("COSE key alg is not an integer") }
        guard let algorithm = COSEAlgorithm(rawValue: alg) else { throw WebAuthnError.unsupportedAlgorithm(alg) }
        guard let kty = cbor[Label.kty]?.intValue else { throw WebAuthnError.malformed("COSE key has no integer kty") }

        switch algorithm {
        case .es256:
            // kty EC2 (2), crv P-256 (1); point compression is not allowed in WebAuthn credential keys.
            guard kty == 2 else { throw WebAuthnError.malformed("ES256 key must have kty EC2, not \(kty)") }
            guard cbor[Label.crv]?.intValue == 1 else { throw WebAuthnError.malformed("ES256 key must be on P-256 (crv 1)") }
            guard let x = cbor[Label.x]?.bytesValue, let y = cbor[Label.y]?.bytesValue, x.count == 32, y.count == 32 else {
                throw WebAuthnError.malformed("ES256 key needs 32-byte x and y coordinates")
            }
            let x963 = Data([0x04]) + x + y
            guard (try? P256.Signing.PublicKey(x963Representation: x963)) != nil else {
                throw WebAuthnError.malformed("ES256 key is not a point on P-256")
            }
            material = .p256(x963: x963)
        case .edDSA:
            guard kty == 1 else { throw WebAuthnError.malformed("EdDSA key must have kty OKP, not \(kty)") }
            guard cbor[Label.crv]?.intValue == 6 else { throw WebAuthnError.malformed("EdDSA key must be Ed25519 (crv 6)") }
            guard let x = cbor[Label.x]?.bytesValue, x.count == 32 else {
                throw WebAuthnError.malformed("Ed25519 key needs a 32-byte x")
            }
            guard (try? Curve25519.Signing.PublicKey(rawRepresentation: x)) != nil else {
                throw WebAuthnError.malformed("Ed25519 key rejected")
            }
            material = .ed25519(x)
        case .rs256:
            guard kty == 3 else { throw WebAuthnError.malformed("RS256 key must have kty RSA, not \(kty)") }
            guard let n = cbor[Label.rsaN]?.bytesValue, let e = cbor[Label.rsaE]?.bytesValue, !n.isEmpty, !e.isEmpty else {
                throw WebAuthnError.malformed("RSA key needs n and e")
            }
            // 2048 bits is the floor for RS256 elsewhere in Latchkey; 8192 bounds the verification cost.
            guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else { throw WebAuthnError.malformed("RSA key rejected") }
            guard (2048...8192).contains(key.keySizeInBits) else {
                throw WebAuthnError.malformed("RSA key of \(key.keySizeInBits) bits (2048–8192 accepted)")
            }
            material = .rsa(n: n, e: e)
        }
        self.algorithm = algorithm
    }

    /// Decodes the CBOR encoding (as stored after registration) and validates it.
    init(encoded: Data) throws {
        let value = try WebAuthnSupport.cbor("COSE key") { try CBORDecoder.decode(encoded) }
        try self.init(cbor: value)
    }

    /// Verifies a WebAuthn signature: ES256 signatures are ASN.1 DER (WebAuthn §6.5.6), EdDSA 64 raw bytes, RS256
    /// PKCS#1 v1.5 with SHA-256. Never throws; garbage is simply not a valid signature.
    func isValidSignature(_ signature: Data, for data: Data) -> Bool {
        switch material {
        case .p256(let x963):
            guard let key = try? P256.Signing.PublicKey(x963Representation: x963),
                let sig = try? P256.Signing.ECDSASignature(derRepresentation: signature)
            else { return false }
            return key.isValidSignature(sig, for: data)
        case .ed25519(let raw):
            guard signature.count == 64, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
            return key.isValidSignature(signature, for: data)
        case .rsa(let n, let e):
            guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: data,
                padding: .insecurePKCS1v1_5)
        }
    }
}
