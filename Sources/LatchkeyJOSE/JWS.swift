import Foundation

/// The protected header of a compact JWS. Unknown members are ignored; `crit` is refused (we implement no extensions).
public struct JWSHeader: Codable, Sendable, Equatable {
    public var alg: String
    public var kid: String?
    public var typ: String?
    public var crit: [String]?
    /// The signer's public key carried in the header (RFC 7515 §4.1.3); only DPoP proofs (RFC 9449) use it, and only
    /// they may trust it — everything else verifies against a key set it already holds.
    public var jwk: JWK?

    public init(alg: String, kid: String? = nil, typ: String? = nil, jwk: JWK? = nil) {
        self.alg = alg; self.kid = kid; self.typ = typ; self.crit = nil; self.jwk = jwk
    }

    /// The header of a compact JWS from its JSON: nil unless it is an object whose `alg` is a string and whose `kid`,
    /// `typ` and `crit` (when present) have their types. Read with `JSONValue.parse` (duplicate members refused).
    init?(json: Data) {
        guard let object = try? JSONValue.parseObject(json), let alg = object["alg"]?.stringValue else { return nil }
        // Present members must have their types; absent ones are nil.
        for name in ["kid", "typ"] where object[name] != nil && object[name]?.stringValue == nil { return nil }
        var crit: [String]?
        if let value = object["crit"] {
            guard let names = value.stringArray, case .array = value else { return nil }
            crit = names
        }
        var jwk: JWK?
        if let value = object["jwk"] {
            // Only DPoP proofs carry a key; it is decoded as the JWK type decodes itself.
            guard case .object = value, let data = try? JSONEncoder().encode(value), let key = try? JSONDecoder().decode(JWK.self, from: data) else {
                return nil
            }
            jwk = key
        }
        self.init(alg: alg, kid: object["kid"]?.stringValue, typ: object["typ"]?.stringValue, jwk: jwk)
        self.crit = crit
    }
}

/// A parsed compact JWS (`header.payload.signature`). Parsing checks shape only; call `verify` before trusting it.
public struct CompactJWS: Sendable {
    public let header: JWSHeader
    public let payload: Data
    public let signature: Data
    /// `ASCII(header) || "." || ASCII(payload)`, the bytes the signature covers.
    public let signingInput: Data

    /// What a signer signs: `base64url(header) "." base64url(claims)`, both as JSON with sorted keys and unescaped
    /// slashes. The compact JWS is this, a dot, and the base64url signature over it.
    public static func signingInput<C: Encodable>(header: JWSHeader, claims: C) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(claims))
    }

    /// Hard upper bound on a token we will even look at; keeps hostile input cheap to reject.
    public static let maximumLength = 16 * 1024

    public init(parsing token: String) throws {
        guard token.utf8.count <= Self.maximumLength else { throw JOSEError.malformed("token longer than \(Self.maximumLength) bytes") }
        // On the token's contiguous bytes: the generic collection algorithms on `String.UTF8View` (and `split`, which
        // walks grapheme clusters) were a visible share of an ID token's validation.
        var token = token
        let parts = try token.withUTF8 { bytes throws -> (Data, Data, Data, Data) in
            var first = -1, second = -1, dots = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
                dots += 1
                if dots == 1 { first = index } else if dots == 2 { second = index } else { break }
            }
            guard dots == 2 else { throw JOSEError.malformed("expected 3 segments separated by dots") }
            guard let header = Base64URL.decode(utf8: UnsafeBufferPointer(rebasing: bytes[..<first])) else {
                throw JOSEError.malformed("header is not base64url")
            }
            guard let payload = Base64URL.decode(utf8: UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second])) else {
                throw JOSEError.malformed("payload is not base64url")
            }
            guard let signature = Base64URL.decode(utf8: UnsafeBufferPointer(rebasing: bytes[(second + 1)...])) else {
                throw JOSEError.malformed("signature is not base64url")
            }
            return (header, payload, signature, Data(UnsafeBufferPointer(rebasing: bytes[..<second])))
        }
        guard let header = JWSHeader(json: parts.0) else { throw JOSEError.malformed("header is not a JSON object with alg") }
        if let crit = header.crit, !crit.isEmpty { throw JOSEError.malformed("unsupported critical header \(crit)") }
        self.header = header
        self.payload = parts.1
        self.signature = parts.2
        self.signingInput = parts.3
    }

    /// The header's algorithm if it is one we accept; `none`, `HS256` and anything unknown are refused here.
    public func algorithm() throws -> JWSAlgorithm {
        guard let alg = JWSAlgorithm(rawValue: header.alg) else { throw JOSEError.unsupportedAlgorithm(header.alg) }
        return alg
    }

    /// Verifies the signature against the key set: the key is chosen by `kid`, and its own material decides the
    /// algorithm, which must equal the header's. Throws `noMatchingKey` when no key could have signed it (callers
    /// refetch the JWKS once on that error).
    @discardableResult
    public func verify(with keySet: JWKSet) throws -> JWK {
        let alg = try algorithm()
        let candidates = keySet.preparedCandidates(kid: header.kid, algorithm: alg)
        guard !candidates.isEmpty else {
            // A key with the right kid but another algorithm is an attack or a misconfiguration, not a rotation.
            if let kid = header.kid, let wrong = keySet.keys.first(where: { $0.kid == kid }), let keyAlg = try? wrong.keyAlgorithm() {
                throw JOSEError.algorithmMismatch(header: alg.rawValue, key: keyAlg.rawValue)
            }
            throw JOSEError.noMatchingKey(kid: header.kid)
        }
        for candidate in candidates {
            let key = try candidate.get()
            if try key.verify(signature: signature, for: signingInput, algorithm: alg) { return key.jwk }
        }
        throw JOSEError.badSignature
    }

    /// Decodes the payload (after `verify`). The payload is first read by the strict reader, as `claimsObject` reads
    /// it: `JSONDecoder` alone would take the last of two `sub` (or `htu`, `aud`) members where RFC 7515 §5.2 lets a
    /// parser refuse them, and another reader of the same token might take the first.
    public func claims<T: Decodable>(as type: T.Type = T.self) throws -> T {
        let object = try claimsObject()
        if let object = object as? T { return object }
        do { return try JSONDecoder().decode(T.self, from: payload) } catch {
            throw JOSEError.malformed("payload is not the expected JSON object")
        }
    }

    /// The payload as a JSON object, read by `JSONValue.parse` (strict, and without `Decodable`'s per-value retries).
    public func claimsObject() throws -> [String: JSONValue] {
        do { return try JSONValue.parseObject(payload) } catch let error as JSONParseError {
            throw JOSEError.malformed("payload is not a JSON object (\(error.reason))")
        } catch {
            throw JOSEError.malformed("payload is not a JSON object")
        }
    }
}
