import Crypto
import _CryptoExtras
import Foundation

/// A JWK turned into the crypto library's key once — the RSA modulus parsed and its Montgomery constants computed,
/// the EC point decoded and checked — so that each verification pays for the signature only. `JWKSet` prepares its
/// keys when it is made or decoded; `JWK.verify` prepares one for a single use.
public struct PreparedKey: Sendable {
    public let jwk: JWK
    /// The algorithm the key's material is for.
    public let algorithm: JWSAlgorithm
    private let material: Material

    private enum Material: Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(SharedP256Key)
        /// The 32 raw bytes (swift-crypto's Ed25519 key type is not `Sendable`; making one from them costs nothing).
        case ed25519(Data)
    }

    /// Throws `invalidKey` for material no signature could be checked with (an RSA key under 2048 bits, an EC point
    /// off the curve, a key type or curve we do not accept).
    public init(_ jwk: JWK) throws {
        self.jwk = jwk
        algorithm = try jwk.keyAlgorithm()
        switch algorithm {
        case .rs256:
            guard let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode) else {
                throw JOSEError.invalidKey("RSA key without n/e")
            }
            let key: _RSA.Signing.PublicKey
            do { key = try _RSA.Signing.PublicKey(n: n, e: e) } catch { throw JOSEError.invalidKey("RSA n/e rejected") }
            guard key.keySizeInBits >= 2048 else { throw JOSEError.invalidKey("RSA key shorter than 2048 bits") }
            material = .rsa(key)
        case .es256:
            guard let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode), x.count == 32, y.count == 32 else {
                throw JOSEError.invalidKey("EC key without 32-byte x/y")
            }
            do { material = .p256(SharedP256Key(key: try P256.Signing.PublicKey(rawRepresentation: x + y))) } catch {
                throw JOSEError.invalidKey("EC point not on P-256")
            }
        case .edDSA:
            guard let x = jwk.x.flatMap(Base64URL.decode), x.count == 32 else { throw JOSEError.invalidKey("OKP key without 32-byte x") }
            do { _ = try Curve25519.Signing.PublicKey(rawRepresentation: x) } catch { throw JOSEError.invalidKey("bad Ed25519 key") }
            material = .ed25519(x)
        }
    }

    /// Verifies `signature` over `input` using `algorithm`, which must be the key's own algorithm.
    public func verify(signature: Data, for input: Data, algorithm: JWSAlgorithm) throws -> Bool {
        guard algorithm == self.algorithm else {
            throw JOSEError.algorithmMismatch(header: algorithm.rawValue, key: self.algorithm.rawValue)
        }
        switch material {
        case .rsa(let key):
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input, padding: .insecurePKCS1v1_5)
        case .p256(let shared):
            guard signature.count == 64, let sig = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return shared.key.isValidSignature(sig, for: input)
        case .ed25519(let raw):
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
            return key.isValidSignature(signature, for: input)
        }
    }
}

/// A P-256 public key shared across tasks. swift-crypto does not mark the type `Sendable` on Linux (CryptoKit does on
/// Apple platforms); it is an immutable value whose BoringSSL key is only read (`ECDSA_do_verify` takes it `const`),
/// so sharing it is safe.
private struct SharedP256Key: @unchecked Sendable {
    let key: P256.Signing.PublicKey
}
