/// The only signature algorithms Latchkey signs or accepts. `none` and the HMAC family are deliberately absent:
/// an asymmetric verifier must never be talked into treating a public key as an HMAC secret.
public enum JWSAlgorithm: String, Codable, Sendable, CaseIterable {
    case rs256 = "RS256"
    case es256 = "ES256"
    case edDSA = "EdDSA"
}
