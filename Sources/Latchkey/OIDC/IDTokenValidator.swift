import Crypto
import Foundation

/// Validates ID tokens per OpenID Connect Core §3.1.3.7 and §12.2: signature by a provider key chosen by `kid`
/// (RS256/ES256/EdDSA from the key's own material — never `none` or HMAC), `iss`, `aud`, `azp`, `exp`, `iat`, `nbf`,
/// `nonce`, `at_hash`, `auth_time`/`max_age`, with a leeway for clock skew.
public struct IDTokenValidator: Sendable {
    /// What an ID token must carry for this sign-in: issuer, audience, nonce, `at_hash` source, `max_age`, leeway.
    public struct Expectations: Sendable {
        public var issuer: String
        public var clientId: String
        /// Required on sign-in; on refresh a nonce, if present, must equal the original one.
        public var nonce: String?
        public var accessToken: String?
        public var maxAge: Int?
        public var leeway: TimeInterval
        public var now: Date

        public init(
            issuer: String, clientId: String, nonce: String?, accessToken: String?, maxAge: Int? = nil,
            leeway: TimeInterval = 60, now: Date = Date()
        ) {
            self.issuer = issuer; self.clientId = clientId; self.nonce = nonce; self.accessToken = accessToken
            self.maxAge = maxAge; self.leeway = leeway; self.now = now
        }
    }

    public let jwks: JWKSCache

    public init(jwks: JWKSCache) { self.jwks = jwks }

    /// Returns the verified claims.
    public func validate(_ token: String, _ expect: Expectations) async throws -> [String: JSONValue] {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(parsing: token)
            try await jwks.verify(jws)
        } catch let error as JOSEError {
            throw LatchkeyError(.invalidToken, "ID token rejected: \(error.description)", underlying: error)
        }
        let claims: [String: JSONValue]
        do { claims = try jws.claimsObject() } catch {
            throw LatchkeyError(.invalidToken, "ID token payload is not a JSON object")
        }
        func fail(_ why: String) -> LatchkeyError { LatchkeyError(.invalidToken, "ID token rejected: \(why)") }
        // RFC 8725 §3.11: an explicitly typed JWT of another kind (an access token `at+jwt`, a logout token, a
        // provider's own single-use tokens) is never an ID token, whatever its claims look like.
        if let typ = jws.header.typ?.lowercased(), typ.hasSuffix("+jwt") { throw fail("typ \(typ) is not an ID token") }
        let now = expect.now.timeIntervalSince1970

        guard claims["iss"]?.stringValue == expect.issuer else { throw fail("iss is not \(expect.issuer)") }
        guard claims["sub"]?.stringValue?.isEmpty == false else { throw fail("no sub") }
        guard let audiences = claims["aud"]?.stringArray, audiences.contains(expect.clientId) else {
            throw fail("aud does not contain \(expect.clientId)")
        }
        if let azp = claims["azp"] {
            guard azp.stringValue == expect.clientId else { throw fail("azp is not \(expect.clientId)") }
        } else if audiences.count > 1 {
            throw fail("several audiences but no azp")
        }
        guard let exp = claims["exp"]?.doubleValue else { throw fail("no exp") }
        guard exp + expect.leeway > now else { throw fail("expired") }
        guard let iat = claims["iat"]?.doubleValue else { throw fail("no iat") }
        guard iat - expect.leeway <= now else { throw fail("issued in the future (iat)") }
        if let nbf = claims["nbf"]?.doubleValue, nbf - expect.leeway > now { throw fail("not valid yet (nbf)") }

        switch (expect.nonce, claims["nonce"]?.stringValue) {
        case (let expected?, let actual?):
            guard constantTimeEquals(expected, actual) else { throw fail("nonce does not match the request") }
        case (.some, nil): throw fail("nonce missing")
        case (nil, _): break
        }
        if let atHash = claims["at_hash"]?.stringValue, let accessToken = expect.accessToken {
            // Left half of the hash the signature algorithm uses: SHA-256 for RS256/ES256, SHA-512 for Ed25519.
            // Hashed from the token's own bytes: the generic `hash(data:)` over a fresh `Data` cost more than the hash.
            var token = accessToken
            let edDSA = (try? jws.algorithm()) == .edDSA
            let digest = token.withUTF8 { bytes -> [UInt8] in
                func hash<H: HashFunction>(_: H.Type) -> [UInt8] {
                    var hasher = H()
                    hasher.update(bufferPointer: UnsafeRawBufferPointer(bytes))
                    return Array(hasher.finalize())
                }
                return edDSA ? hash(SHA512.self) : hash(SHA256.self)
            }
            guard Base64URL.encode(digest.prefix(digest.count / 2)) == atHash else { throw fail("at_hash does not match the access token") }
        }
        if let maxAge = expect.maxAge {
            guard let authTime = claims["auth_time"]?.doubleValue else { throw fail("max_age requested but no auth_time") }
            guard authTime + Double(maxAge) + expect.leeway >= now else { throw fail("authentication is older than max_age") }
        }
        return claims
    }

}
