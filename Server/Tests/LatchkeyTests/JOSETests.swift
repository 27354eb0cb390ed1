import Crypto
import Foundation
import Latchkey
import Testing

@Suite("JOSE: JWS verification accepts only what it must")
struct JOSETests {
    struct Claims: Codable, Equatable { var sub: String; var n: Int }

    let ecKey = try! SigningKey.generate(.es256)
    let rsaKey = try! SigningKey.generate(.rs256)
    var keySet: JWKSet { JWKSet(keys: [try! ecKey.publicJWK(), try! rsaKey.publicJWK()]) }

    @Test func es256AndRs256RoundTrip() throws {
        for key in [ecKey, rsaKey] {
            let token = try key.sign(claims: Claims(sub: "u1", n: 7))
            let jws = try CompactJWS(parsing: token)
            let used = try jws.verify(with: keySet)
            #expect(used.kid == key.kid)
            #expect(try jws.claims(as: Claims.self) == Claims(sub: "u1", n: 7))
        }
    }

    @Test func pemPersistenceKeepsTheKeyAndItsKid() throws {
        let restored = try SigningKey(algorithm: .rs256, pem: rsaKey.pemRepresentation)
        #expect(restored.kid == rsaKey.kid)
        let token = try restored.sign(claims: Claims(sub: "x", n: 1))
        try CompactJWS(parsing: token).verify(with: keySet)
    }

    @Test func eddsaSignaturesVerify() throws {
        let ed = Curve25519.Signing.PrivateKey()
        let jwk = JWK(kty: "OKP", kid: "ed", crv: "Ed25519", x: Base64URL.encode(ed.publicKey.rawRepresentation))
        let input = Base64URL.encode(Data(#"{"alg":"EdDSA","kid":"ed"}"#.utf8)) + "." + Base64URL.encode(Data(#"{"sub":"e","n":1}"#.utf8))
        let token = input + "." + Base64URL.encode(try ed.signature(for: Data(input.utf8)))
        try CompactJWS(parsing: token).verify(with: JWKSet(keys: [jwk]))
    }

    @Test func algNoneIsRefused() throws {
        let token = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Data(#"{"sub":"a","n":1}"#.utf8)) + "."
        #expect(throws: JOSEError.unsupportedAlgorithm("none")) { try CompactJWS(parsing: token).verify(with: keySet) }
    }

    /// The classic confusion attack: HMAC "signed" with the RSA public key as the secret.
    @Test func hs256WithThePublicKeyAsSecretIsRefused() throws {
        let publicJWK = try rsaKey.publicJWK()
        let secret = SymmetricKey(data: Data(try JSONEncoder().encode(publicJWK)))
        let input = Base64URL.encode(Data(#"{"alg":"HS256","kid":"\#(rsaKey.kid)"}"#.utf8)) + "." + Base64URL.encode(Data(#"{"sub":"a","n":1}"#.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: secret)
        let token = input + "." + Base64URL.encode(Data(mac))
        #expect(throws: JOSEError.unsupportedAlgorithm("HS256")) { try CompactJWS(parsing: token).verify(with: keySet) }
    }

    @Test func headerAlgorithmMustMatchTheKeyMaterial() throws {
        // An RS256 token relabelled ES256 but naming the RSA key's kid.
        let token = try rsaKey.sign(claims: Claims(sub: "a", n: 1))
        let parts = token.split(separator: ".")
        let header = Base64URL.encode(Data(#"{"alg":"ES256","kid":"\#(rsaKey.kid)"}"#.utf8))
        let forged = "\(header).\(parts[1]).\(parts[2])"
        #expect(throws: JOSEError.algorithmMismatch(header: "ES256", key: "RS256")) { try CompactJWS(parsing: forged).verify(with: keySet) }
    }

    @Test func tamperedPayloadOrSignatureFails() throws {
        for key in [ecKey, rsaKey] {
            let token = try key.sign(claims: Claims(sub: "a", n: 1))
            let parts = token.split(separator: ".").map(String.init)
            let otherPayload = Base64URL.encode(Data(#"{"sub":"admin","n":1}"#.utf8))
            #expect(throws: JOSEError.badSignature) { try CompactJWS(parsing: "\(parts[0]).\(otherPayload).\(parts[2])").verify(with: keySet) }
            var sig = Base64URL.decode(parts[2])!
            sig[sig.count / 2] ^= 0x01
            #expect(throws: JOSEError.badSignature) {
                try CompactJWS(parsing: "\(parts[0]).\(parts[1]).\(Base64URL.encode(sig))").verify(with: keySet)
            }
        }
    }

    @Test func unknownKidReportsNoMatchingKey() throws {
        let stranger = try SigningKey.generate(.es256)
        let token = try stranger.sign(claims: Claims(sub: "a", n: 1))
        #expect(throws: JOSEError.noMatchingKey(kid: stranger.kid)) { try CompactJWS(parsing: token).verify(with: keySet) }
    }

    @Test func malformedTokensAreRejectedWithoutCrashing() {
        for bad in [
            "", "a", "a.b", "a.b.c.d", "!!.e30.", "e30.e30.e30", "eyJhbGciOiJSUzI1NiJ9.e30.==",
            String(repeating: "a", count: 20_000), Base64URL.encode(Data("[]".utf8)) + ".e30.AA"
        ] {
            #expect(throws: (any Error).self) { try CompactJWS(parsing: bad).verify(with: keySet) }
        }
    }

    @Test func critHeadersAreRefused() throws {
        let token = Base64URL.encode(Data(#"{"alg":"ES256","crit":["exp"]}"#.utf8)) + ".e30.AA"
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token) }
    }

    @Test func base64URLIsStrict() {
        #expect(Base64URL.decode("AQAB") == Data([1, 0, 1]))
        #expect(Base64URL.decode("-_8") == Data([0xfb, 0xff]))
        #expect(Base64URL.decode("AQAB=") == nil, "padding is not base64url")
        #expect(Base64URL.decode("+/8") == nil, "standard alphabet is not base64url")
        #expect(Base64URL.decode("A") == nil)
        #expect(Base64URL.encode(Data([0xfb, 0xff])) == "-_8")
    }

    @Test func thumbprintMatchesRFC7638Example() {
        // RFC 7638 §3.1 example key and thumbprint.
        let jwk = JWK(
            kty: "RSA",
            n:
                "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            e: "AQAB")
        #expect(jwk.thumbprint() == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    @Test func pkceMatchesRFC7636AppendixB() {
        let pair = PKCEPair(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pair.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        let fresh = PKCEPair()
        #expect(fresh.verifier.count == 64 && fresh.verifier != PKCEPair().verifier)
        #expect(!String(describing: fresh).contains(fresh.verifier))
    }
}
