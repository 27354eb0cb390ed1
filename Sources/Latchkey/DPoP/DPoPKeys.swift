import Crypto
import Foundation
import LatchkeyJOSE

/// A session's DPoP key (RFC 9449): it signs the proofs that bind the session's tokens to this device.
public protocol DPoPSigningKey: Sendable {
    /// The JWS algorithm of the proofs (`ES256`).
    var algorithm: String { get }
    /// The public half, as it goes into each proof's header.
    var publicJWK: JWK { get }
    /// What the session's storage keeps to find the key again (for a software key, the key itself: it is then as
    /// protected as the tokens it is stored with; for a Secure Enclave key, an opaque handle only that device can use).
    var persistentReference: String { get }
    /// The raw signature (`r || s` for ES256) over `input`.
    func sign(_ input: Data) async throws -> Data
}

/// Makes and restores the DPoP keys of sessions. The default makes software P-256 keys; LatchkeyApple offers the
/// Secure Enclave where a device has one.
public protocol DPoPKeyProvider: Sendable {
    /// A new key for a new session.
    func makeKey() async throws -> any DPoPSigningKey
    /// The key of a stored session.
    /// - Throws: `.invalidToken` when the reference is not one of this provider's.
    func key(persistentReference: String) async throws -> any DPoPSigningKey
}

/// Software P-256 keys (swift-crypto), stored as PEM with the session's tokens.
public struct SoftwareDPoPKeyProvider: DPoPKeyProvider {
    /// A provider.
    public init() {}

    public func makeKey() async throws -> any DPoPSigningKey {
        try SoftwareDPoPKey(P256.Signing.PrivateKey())
    }

    public func key(persistentReference: String) async throws -> any DPoPSigningKey {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: persistentReference) else {
            throw LatchkeyError(.invalidToken, "the stored DPoP key is not a P-256 private key")
        }
        return try SoftwareDPoPKey(key)
    }
}

/// A software P-256 DPoP key.
struct SoftwareDPoPKey: DPoPSigningKey {
    /// The scalar: rebuilding the key from it for each proof is a plain copy, where the PEM would be parsed each time
    /// (swift-crypto's key type is not `Sendable` here, so the key itself cannot be kept).
    private let rawKey: Data
    let persistentReference: String
    let publicJWK: JWK
    var algorithm: String { "ES256" }

    init(_ key: P256.Signing.PrivateKey) throws {
        rawKey = key.rawRepresentation
        persistentReference = key.pemRepresentation
        publicJWK = JWK.p256(rawPublicKey: key.publicKey.rawRepresentation)
    }

    func sign(_ input: Data) async throws -> Data {
        try P256.Signing.PrivateKey(rawRepresentation: rawKey).signature(for: input).rawRepresentation
    }
}

/// Printed or dumped, a software key shows its public half only.
extension SoftwareDPoPKey: CustomStringConvertible, CustomReflectable {
    var description: String { "SoftwareDPoPKey(ES256, public x \(publicJWK.x ?? "-"))" }
    var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// Proofs (RFC 9449 §4.2).
enum DPoPProof {
    struct Claims: Encodable {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int
        var ath: String?
        var nonce: String?
    }

    /// A proof for `method` on `url` (query and fragment left out), naming `accessToken` in `ath` at a resource.
    /// `now` is the provider's time (`ProviderClock`): a proof dated by a device clock minutes off is refused.
    static func make(
        key: any DPoPSigningKey, method: String, url: URL, accessToken: String?, nonce: String?,
        now: Date = Date()
    ) async throws -> String {
        var target = URLComponents(url: url, resolvingAgainstBaseURL: false)
        target?.query = nil
        target?.fragment = nil
        // The URL is not in the message: an app's own API may carry secrets in its query.
        guard let htu = target?.string else { throw LatchkeyError(.invalidInput, "cannot make a DPoP proof for this URL") }
        let claims = Claims(
            jti: UUID().uuidString, htm: method.uppercased(), htu: htu, iat: Int(now.timeIntervalSince1970),
            ath: accessToken.map { Base64URL.encode(Data(SHA256.hash(data: Data($0.utf8)))) }, nonce: nonce)
        let input = try CompactJWS.signingInput(header: JWSHeader(alg: key.algorithm, typ: "dpop+jwt", jwk: key.publicJWK), claims: claims)
        return input + "." + Base64URL.encode(try await key.sign(Data(input.utf8)))
    }

    /// True when `response` asks for the proof again with the nonce it carries (§8: 400 `use_dpop_nonce` at the
    /// token endpoint, 401 with a `DPoP error="use_dpop_nonce"` challenge at a resource).
    static func asksForNonce(_ response: HTTPResponse) -> Bool {
        guard response.header("DPoP-Nonce") != nil else { return false }
        if response.status == 401 { return response.header("WWW-Authenticate")?.contains("use_dpop_nonce") == true }
        guard response.status == 400 else { return false }
        struct Body: Decodable { var error: String? }
        return (try? JSONDecoder().decode(Body.self, from: response.body))?.error == "use_dpop_nonce"
    }
}

extension HTTPResponse {
    /// A header's value, the name in any letter case.
    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
