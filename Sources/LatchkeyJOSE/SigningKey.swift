import Crypto
import _CryptoExtras
import Foundation

/// A private signing key (ES256 or RS256) with its key id; the server's token-signing keys.
public struct SigningKey: Sendable {
    /// swift-crypto 3.x does not mark `P256.Signing.PrivateKey` `Sendable` on every platform although it is an
    /// immutable value; this box states that, and nothing else is unchecked.
    private struct P256Key: @unchecked Sendable { let key: P256.Signing.PrivateKey }

    private enum Material: Sendable {
        case es256(P256Key)
        case rs256(_RSA.Signing.PrivateKey)
    }

    private let material: Material
    public let kid: String
    public var algorithm: JWSAlgorithm {
        switch material {
        case .es256: .es256;
        case .rs256: .rs256
        }
    }

    /// Generates a fresh key. RSA keys are 2048-bit (RS256 as required by OpenID Connect Core §15.1).
    public static func generate(_ algorithm: JWSAlgorithm) throws -> SigningKey {
        switch algorithm {
        case .es256: return try SigningKey(material: .es256(P256Key(key: P256.Signing.PrivateKey())))
        case .rs256: return try SigningKey(material: .rs256(_RSA.Signing.PrivateKey(keySize: .bits2048)))
        case .edDSA: throw JOSEError.unsupportedAlgorithm("EdDSA signing keys are not issued by Latchkey")
        }
    }

    /// Restores a key from its PKCS#8 PEM (as written by `pemRepresentation`).
    public init(algorithm: JWSAlgorithm, pem: String) throws {
        switch algorithm {
        case .es256: try self.init(material: .es256(P256Key(key: P256.Signing.PrivateKey(pemRepresentation: pem))))
        case .rs256: try self.init(material: .rs256(_RSA.Signing.PrivateKey(pemRepresentation: pem)))
        case .edDSA: throw JOSEError.unsupportedAlgorithm("EdDSA")
        }
    }

    /// Restores a key from its PKCS#8 PEM with a key id its issuer chose (Apple's team keys are named by Apple).
    @_spi(LatchkeyInternal) public init(algorithm: JWSAlgorithm, pem: String, kid: String) throws {
        let key = try SigningKey(algorithm: algorithm, pem: pem)
        self.init(material: key.material, kid: kid)
    }

    private init(material: Material) throws {
        // The key id is the RFC 7638 thumbprint, so it is derived from the key and survives restarts unchanged.
        self.init(material: material, kid: try Self.publicJWK(of: material, kid: nil).thumbprint())
    }

    private init(material: Material, kid: String) {
        self.material = material
        self.kid = kid
    }

    /// The private key as PEM, for persistence in the server's store.
    public var pemRepresentation: String {
        switch material {
        case .es256(let box): box.key.pemRepresentation
        case .rs256(let key): key.pemRepresentation
        }
    }

    /// The public half, as published in the JWKS.
    public func publicJWK() throws -> JWK { try Self.publicJWK(of: material, kid: kid) }

    private static func publicJWK(of material: Material, kid: String?) throws -> JWK {
        switch material {
        case .es256(let box):
            let raw = box.key.publicKey.rawRepresentation
            return JWK(
                kty: "EC", kid: kid, use: "sig", alg: "ES256", crv: "P-256",
                x: Base64URL.encode(raw.prefix(32)), y: Base64URL.encode(raw.suffix(32)))
        case .rs256(let key):
            let primitives = try key.publicKey.getKeyPrimitives()
            return JWK(
                kty: "RSA", kid: kid, use: "sig", alg: "RS256",
                n: Base64URL.encode(primitives.modulus), e: Base64URL.encode(primitives.publicExponent))
        }
    }

    public func sign(_ input: Data) throws -> Data {
        switch material {
        case .es256(let box): return try box.key.signature(for: input).rawRepresentation
        case .rs256(let key): return try key.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation
        }
    }

    /// Produces a compact JWS over the JSON encoding of `claims`.
    public func sign<C: Encodable>(claims: C, type: String? = "JWT") throws -> String {
        let input = try CompactJWS.signingInput(header: JWSHeader(alg: algorithm.rawValue, kid: kid, typ: type), claims: claims)
        return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
    }
}
