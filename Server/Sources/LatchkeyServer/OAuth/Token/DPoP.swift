import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyJOSE

/// DPoP (RFC 9449): names and limits shared by the token endpoint, the resources and discovery.
enum DPoP {
    /// What a proof may be signed with: the algorithms of the keys clients make (P-256 software or Secure Enclave
    /// keys, Ed25519); RSA is refused (slow to make on a device, and no client here needs it).
    static let algorithms = ["ES256", "EdDSA"]
    static let proofHeader = HTTPField.Name("DPoP")!
    static let nonceHeader = HTTPField.Name("DPoP-Nonce")!
    /// A nonce is valid in its window and the next.
    static let nonceWindowSeconds: Int64 = 300
    static let proofType = "dpop+jwt"

    /// An RFC 7638 SHA-256 JWK thumbprint as `dpop_jkt` carries it: 43 base64url characters.
    static func isThumbprint(_ value: String) -> Bool {
        value.utf8.count == 43
            && value.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" || $0 == "_" }
    }

    /// The claims of a proof (§4.2).
    struct ProofClaims: Decodable {
        var jti: String?
        var htm: String?
        var htu: String?
        var iat: Double?
        var ath: String?
        var nonce: String?
    }

    /// `htu` as compared (§4.3): scheme and host in lower case, default ports dropped, no query or fragment.
    static func normalizedURI(_ raw: String) -> String? {
        guard var components = URLComponents(string: raw), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        components.scheme = scheme
        components.host = host
        if (scheme == "https" && components.port == 443) || (scheme == "http" && components.port == 80) { components.port = nil }
        components.query = nil
        components.fragment = nil
        if components.path.isEmpty { components.path = "/" }
        return components.string
    }

    /// `ath` (§4.2): base64url of the SHA-256 of the access token.
    static func accessTokenHash(_ token: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(token.utf8))))
    }
}

/// Verifies DPoP proofs (RFC 9449 §4.3) and makes the server's nonces: at the token endpoint and at the resources.
struct DPoPVerifier: Sendable {
    let kit: TokenKit
    let settings: DPoPPolicy
    /// Makes the nonces (keyed, so any instance can check another's).
    let sealer: SecretSealer

    private var issuer: String { kit.issuer }
    private var store: any SingleUseStore { kit.store }
    private var clock: ServerClock { kit.clock }

    /// The request's DPoP proof, nil without one; two `DPoP` headers are refused (§4.3 check 1).
    func proof(_ request: Request, challenge: OAuthError.Challenge?) throws(OAuthError) -> String? {
        let values = request.headers[values: DPoP.proofHeader]
        guard values.count <= 1 else { throw OAuthError(.invalidDPoPProof, "send one DPoP proof, not \(values.count)", challenge: challenge) }
        return values.first
    }

    /// The current DPoP nonce.
    func currentNonce() -> String { sealer.dpopNonce(window: dpopNonceWindow()) }

    private func dpopNonceWindow() -> Int64 { Int64(clock.now.timeIntervalSince1970) / DPoP.nonceWindowSeconds }

    /// Checks a proof for `request` (§4.3) and returns its key's RFC 7638 thumbprint (`jkt`).
    ///
    /// - Parameters:
    ///   - accessToken: at a resource, the token the proof must name in `ath`; nil at the token endpoint.
    ///   - challenge: `.dpop` at a resource (401 with a `DPoP` challenge), nil at the token endpoint (400).
    func verifyProof(_ proof: String, request: Request, accessToken: String?, challenge: OAuthError.Challenge?) async throws(OAuthError) -> String {
        func refuse(_ why: String) -> OAuthError { OAuthError(.invalidDPoPProof, why, challenge: challenge) }
        let jws: CompactJWS
        do { jws = try CompactJWS(parsing: proof) } catch { throw refuse("the DPoP proof is not a compact JWS") }
        guard jws.header.typ == DPoP.proofType else { throw refuse("the DPoP proof's typ must be \(DPoP.proofType)") }
        guard DPoP.algorithms.contains(jws.header.alg), let alg = JWSAlgorithm(rawValue: jws.header.alg) else {
            throw refuse("the DPoP proof's alg must be one of \(DPoP.algorithms.joined(separator: ", "))")
        }
        guard let jwk = jws.header.jwk else { throw refuse("the DPoP proof has no jwk header") }
        // The JWK type ignores private members; the raw header is read to refuse a key that carries its private half.
        if Self.headerCarriesPrivateKey(proof) { throw refuse("the DPoP proof's jwk must be a public key") }
        let verified: Bool
        do { verified = try jwk.verify(signature: jws.signature, for: jws.signingInput, algorithm: alg) } catch {
            throw refuse("the DPoP proof's key does not match its alg or is not a valid public key")
        }
        guard verified else { throw refuse("the DPoP proof's signature does not verify") }
        guard let claims = try? jws.claims(as: DPoP.ProofClaims.self) else { throw refuse("the DPoP proof's claims are not a JSON object") }
        guard let jti = claims.jti, !jti.isEmpty, jti.utf8.count <= 256 else { throw refuse("the DPoP proof needs a jti (at most 256 bytes)") }
        guard claims.htm == request.method.rawValue else { throw refuse("the DPoP proof's htm does not match the request method") }
        let target = issuer + request.uri.path
        guard let htu = claims.htu.flatMap(DPoP.normalizedURI), htu == DPoP.normalizedURI(target) else {
            throw refuse("the DPoP proof's htu does not match \(target)")
        }
        let now = clock.now
        let window = TimeInterval(settings.proofLifetimeSeconds)
        // The past gets the whole lifetime; the future only a clock's worth of skew: a proof dated ahead
        // would stay usable that much longer, so brief use of the key must not buy ten minutes of proofs.
        let ahead = DPoPPolicy.maximumFutureSkewSeconds
        guard let iat = claims.iat, iat.isFinite, now.timeIntervalSince1970 - iat <= window, iat - now.timeIntervalSince1970 <= ahead else {
            throw refuse("the DPoP proof's iat is missing, more than \(Int(window)) s old or more than \(Int(ahead)) s ahead of the server's clock")
        }
        if let accessToken {
            guard let ath = claims.ath, Secrets.constantTimeEquals(ath, DPoP.accessTokenHash(accessToken)) else {
                throw refuse("the DPoP proof's ath does not match the access token")
            }
        }
        if settings.requireNonce {
            let current = dpopNonceWindow()
            let accepted = [current, current - 1].map { sealer.dpopNonce(window: $0) }
            guard let nonce = claims.nonce, accepted.contains(where: { Secrets.constantTimeEquals($0, nonce) }) else {
                throw OAuthError(
                    .useDPoPNonce, "the DPoP proof must carry the nonce from the DPoP-Nonce header", challenge: challenge,
                    dpopNonce: currentNonce())
            }
        }
        let thumbprint = jwk.thumbprint()
        // Single use (§11.1), in the store so it holds across instances; kept as long as the proof could be accepted.
        let fresh: Bool
        do {
            fresh = try await store.consumeTokenId("dpop:\(thumbprint):\(jti)", expiresAt: Date(timeIntervalSince1970: iat + window))
        } catch {
            throw OAuthError(.serverError, "could not record the DPoP proof")
        }
        guard fresh else { throw refuse("the DPoP proof was already used") }
        return thumbprint
    }

    private static func headerCarriesPrivateKey(_ proof: String) -> Bool {
        guard let segment = proof.split(separator: ".", maxSplits: 1).first, let data = Base64URL.decode(segment),
            let header = try? JSONDecoder().decode([String: JSONValue].self, from: data),
            case .object(let jwk)? = header["jwk"]
        else { return true }
        return ["d", "p", "q", "dp", "dq", "qi", "k"].contains { jwk[$0] != nil }
    }
}
