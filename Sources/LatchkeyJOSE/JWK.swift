import Crypto
import _CryptoExtras
import Foundation

/// A public JSON Web Key (RFC 7517) of the kinds Latchkey uses: RSA, EC P-256 and OKP Ed25519.
public struct JWK: Codable, Sendable, Hashable {
    public var kty: String
    public var kid: String?
    public var use: String?
    public var alg: String?
    // EC / OKP
    public var crv: String?
    public var x: String?
    public var y: String?
    // RSA
    public var n: String?
    public var e: String?

    public init(kty: String, kid: String? = nil, use: String? = nil, alg: String? = nil,
                crv: String? = nil, x: String? = nil, y: String? = nil, n: String? = nil, e: String? = nil) {
        self.kty = kty; self.kid = kid; self.use = use; self.alg = alg
        self.crv = crv; self.x = x; self.y = y; self.n = n; self.e = e
    }

    /// The algorithm this key can verify, decided by the key material, never by the token being verified.
    public func keyAlgorithm() throws -> JWSAlgorithm {
        let fromKey: JWSAlgorithm
        switch (kty, crv) {
        case ("RSA", _): fromKey = .rs256
        case ("EC", "P-256"): fromKey = .es256
        case ("OKP", "Ed25519"): fromKey = .edDSA
        default: throw JOSEError.invalidKey("unsupported key type \(kty)\(crv.map { "/" + $0 } ?? "")")
        }
        if let alg, alg != fromKey.rawValue {
            throw JOSEError.invalidKey("key declares alg \(alg) but its material is for \(fromKey.rawValue)")
        }
        return fromKey
    }

    /// Verifies `signature` over `input` with this key using `algorithm`, which must be the key's own algorithm.
    public func verify(signature: Data, for input: Data, algorithm: JWSAlgorithm) throws -> Bool {
        let keyAlg = try keyAlgorithm()
        guard keyAlg == algorithm else {
            throw JOSEError.algorithmMismatch(header: algorithm.rawValue, key: keyAlg.rawValue)
        }
        switch algorithm {
        case .rs256:
            guard let n = n.flatMap(Base64URL.decode), let e = e.flatMap(Base64URL.decode) else {
                throw JOSEError.invalidKey("RSA key without n/e")
            }
            let key: _RSA.Signing.PublicKey
            do { key = try _RSA.Signing.PublicKey(n: n, e: e) } catch { throw JOSEError.invalidKey("RSA n/e rejected") }
            guard key.keySizeInBits >= 2048 else { throw JOSEError.invalidKey("RSA key shorter than 2048 bits") }
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input,
                                        padding: .insecurePKCS1v1_5)
        case .es256:
            guard let x = x.flatMap(Base64URL.decode), let y = y.flatMap(Base64URL.decode), x.count == 32, y.count == 32 else {
                throw JOSEError.invalidKey("EC key without 32-byte x/y")
            }
            let key: P256.Signing.PublicKey
            do { key = try P256.Signing.PublicKey(rawRepresentation: x + y) } catch { throw JOSEError.invalidKey("EC point not on P-256") }
            guard signature.count == 64, let sig = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(sig, for: input)
        case .edDSA:
            guard let x = x.flatMap(Base64URL.decode), x.count == 32 else { throw JOSEError.invalidKey("OKP key without 32-byte x") }
            let key: Curve25519.Signing.PublicKey
            do { key = try Curve25519.Signing.PublicKey(rawRepresentation: x) } catch { throw JOSEError.invalidKey("bad Ed25519 key") }
            return key.isValidSignature(signature, for: input)
        }
    }

    /// The JWK of a P-256 public key given as its 64-byte `x || y` (CryptoKit's `rawRepresentation`).
    public static func p256(rawPublicKey raw: Data) -> JWK {
        JWK(kty: "EC", crv: "P-256", x: Base64URL.encode(raw.prefix(32)), y: Base64URL.encode(raw.suffix(32)))
    }

    /// RFC 7638 thumbprint (SHA-256, base64url): a stable key id derived from the key itself.
    public func thumbprint() -> String {
        let canonical: String
        switch kty {
        case "RSA": canonical = #"{"e":"\#(e ?? "")","kty":"RSA","n":"\#(n ?? "")"}"#
        case "EC": canonical = #"{"crv":"\#(crv ?? "")","kty":"EC","x":"\#(x ?? "")","y":"\#(y ?? "")"}"#
        default: canonical = #"{"crv":"\#(crv ?? "")","kty":"\#(kty)","x":"\#(x ?? "")"}"#
        }
        return Base64URL.encode(Data(SHA256.hash(data: Data(canonical.utf8))))
    }
}

/// A JWK Set document (`{"keys":[…]}`), as served at a `jwks_uri`.
public struct JWKSet: Codable, Sendable, Hashable {
    public var keys: [JWK]
    public init(keys: [JWK]) { self.keys = keys }

    /// Keys that could have signed a token with this header: same `kid` when the token names one, and a key usable
    /// for signatures with the header's algorithm.
    public func candidates(kid: String?, algorithm: JWSAlgorithm) -> [JWK] {
        keys.filter { key in
            (key.use == nil || key.use == "sig")
                && (kid == nil || key.kid == kid)
                && (try? key.keyAlgorithm()) == algorithm
        }
    }
}
