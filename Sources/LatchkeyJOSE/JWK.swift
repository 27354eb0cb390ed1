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

    public init(
        kty: String, kid: String? = nil, use: String? = nil, alg: String? = nil,
        crv: String? = nil, x: String? = nil, y: String? = nil, n: String? = nil, e: String? = nil
    ) {
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
    /// (Each call builds the crypto library's key; `PreparedKey` builds it once for many verifications.)
    public func verify(signature: Data, for input: Data, algorithm: JWSAlgorithm) throws -> Bool {
        try PreparedKey(self).verify(signature: signature, for: input, algorithm: algorithm)
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
    /// The keys as published. Each is also prepared for verification (`PreparedKey`) when the set is made, decoded or
    /// changed, so verifying against a set held for many tokens builds no key per token.
    public var keys: [JWK] { didSet { prepared = Self.prepare(keys) } }
    /// `keys[i]` prepared, or the reason it cannot verify anything.
    private var prepared: [Result<PreparedKey, JOSEError>]

    public init(keys: [JWK]) {
        self.keys = keys
        prepared = Self.prepare(keys)
    }

    private enum CodingKeys: String, CodingKey { case keys }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(keys: try container.decode([JWK].self, forKey: .keys))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(keys, forKey: .keys)
    }

    public static func == (a: JWKSet, b: JWKSet) -> Bool { a.keys == b.keys }
    public func hash(into hasher: inout Hasher) { hasher.combine(keys) }

    private static func prepare(_ keys: [JWK]) -> [Result<PreparedKey, JOSEError>] {
        keys.map { key in
            do { return .success(try PreparedKey(key)) } catch let error as JOSEError { return .failure(error) } catch {
                return .failure(.invalidKey("\(error)"))
            }
        }
    }

    /// Keys that could have signed a token with this header: same `kid` when the token names one, and a key usable
    /// for signatures with the header's algorithm.
    public func candidates(kid: String?, algorithm: JWSAlgorithm) -> [JWK] {
        keys.filter { key in Self.isCandidate(key, kid: kid, algorithm: algorithm) }
    }

    /// `candidates`, prepared (a candidate whose material is unusable is its error, thrown when it is tried).
    func preparedCandidates(kid: String?, algorithm: JWSAlgorithm) -> [Result<PreparedKey, JOSEError>] {
        zip(keys, prepared).compactMap { key, prepared in Self.isCandidate(key, kid: kid, algorithm: algorithm) ? prepared : nil }
    }

    private static func isCandidate(_ key: JWK, kid: String?, algorithm: JWSAlgorithm) -> Bool {
        (key.use == nil || key.use == "sig") && (kid == nil || key.kid == kid) && (try? key.keyAlgorithm()) == algorithm
    }
}
