import Crypto
import Foundation
import Latchkey

/// Fixed keys and tokens the harnesses verify against. The private keys are derived from public strings (they sign
/// nothing but fuzz inputs); the RSA key is public only (its private half made the seed tokens and was not kept).
/// Tests/fuzz/corpus holds tokens signed with them, so the fuzzer starts from inputs whose signatures verify.
enum Fixtures {
    static let issuer = "https://id.example.com"
    static let clientId = "app"

    /// swift-crypto does not mark its private keys `Sendable` on every platform although they are immutable values.
    struct Keys: @unchecked Sendable {
        /// P-256 key whose scalar is SHA-256("latchkey-fuzz ES256 fixture"), kid `fuzz-es256`.
        let es256 = try! P256.Signing.PrivateKey(rawRepresentation: Data(SHA256.hash(data: Data("latchkey-fuzz ES256 fixture".utf8))))
        /// Ed25519 key whose seed is SHA-256("latchkey-fuzz EdDSA fixture"), kid `fuzz-eddsa`.
        let edDSA = try! Curve25519.Signing.PrivateKey(rawRepresentation: Data(SHA256.hash(data: Data("latchkey-fuzz EdDSA fixture".utf8))))
    }
    static let keys = Keys()

    /// The public keys of `es256`, a 2048-bit RSA key (`fuzz-rs256`) and `edDSA`.
    static let jwksJSON = #"""
        {"keys":[{"kty":"EC","kid":"fuzz-es256","use":"sig","alg":"ES256","crv":"P-256","x":"ETC4f9XYyStmqplVrWtThtH1jv_tqHVsUrfrMQW2vuU","y":"w6vxZjkhSlrOC0WGH6J-4TEFm7-StrO8JvY7FU3SVgU"},{"kty":"RSA","kid":"fuzz-rs256","use":"sig","alg":"RS256","n":"nJsqRfRJ1_fVo7pBNfwlNHOjiUv7r6jxliPWF5SsfQax6wRauc3E8paXu-ptR7zqdMW0U0UVutF-3wawvGdM--OrsmgYezViX6FJ2Vi0GxJw_RcCTjTn0RbEFzEvrRTimHufOzjme4IgFWFZOgZvWlHDxdZ7zTc9Hqvx6fMOlK4WAuulI_7NtnUp1jXpx4_FbakADE2sElyKIH4DsBexWbCx3UTO_Westigwyzwfj_Lq_ya3u0TRyafIG4nX_drJChlOBj8vZtzUjsvYLCV4dL9Dtn1_VWxpunCClW8Ee0yFHaxfvu2OdfZg6ZRXx81KF1g8w3fbZ-uZE_a0ISGS_w","e":"AQAB"},{"kty":"OKP","kid":"fuzz-eddsa","use":"sig","alg":"EdDSA","crv":"Ed25519","x":"JebwClIubbj17ZRSFTmU2Yv6GlIN5azvRN-lwrZTPlk"}]}
        """#
    static let keySet = try! JSONDecoder().decode(JWKSet.self, from: Data(jwksJSON.utf8))

    /// `{"iss":"https://id.example.com","sub":"fixture"}` signed by each fixture key: a fuzzed key set is tried on them.
    static let signedTokens: [CompactJWS] = [
        "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImZ1enotZXMyNTYifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUuY29tIiwic3ViIjoiZml4dHVyZSJ9.Fkd0QGBtBOPdcJLyQmn27Cc5E5BU5CYjriS9ay9fGsWX2_6LnIvoaQzge0hovDw-l57YCA5EqEhTlwC696yKUA",
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImZ1enotcnMyNTYifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUuY29tIiwic3ViIjoiZml4dHVyZSJ9.im6Q8UUL4vNBPCGp1kaJ0ZL0F54NEdV92QKOSHpIdSKfQbhgkcD5KhArcruL64LZXphyxKeWcTCDMP6BZBRoEn-LXnsqTaqGLE2BzCfVmLNl_RSKQ5eKPIHV-nTHSidQLi9mbGCPcA2Yw1qachQEYX-_bBeLl11blgdgeO7827YNXTNlPzHgPs-PhZDXOJxmDfgD8SPi3XHX8P5WMtspZxYTT-YBkGlcEiIGOQqwbqG8b6KikbQzcQy727mXVz7ODkN0ExaqLEbQtR7cjcDzbLrBe4ng49KKb6ZkE9lXWAQ7zjc9xi5-ldbEgcX7Syf7DPKVJDgeazOiJ4LCcgPJsQ",
        "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCIsImtpZCI6ImZ1enotZWRkc2EifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUuY29tIiwic3ViIjoiZml4dHVyZSJ9.21CFkWj52NVskFSStn9l4PRaG24AGehL2FCOhbWGw5AtCKiaP8yqDlbCsOP8_F5jCUa14rI_ukRq_nLh1EZdBA"
    ].map { try! CompactJWS(parsing: $0) }
}
