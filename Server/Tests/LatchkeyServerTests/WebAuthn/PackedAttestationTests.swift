import Crypto
import Foundation
import SwiftASN1
import Testing
import X509
@testable import LatchkeyServer

@Suite("WebAuthn packed x5c attestation")
struct WebAuthnPackedAttestationTests {
    typealias F = WebAuthnFixture

    static func rp(anchors: [Certificate]) -> WebAuthnRelyingParty {
        WebAuthnRelyingParty(rpId: TestAuthenticator.rpId, allowedOrigins: [TestAuthenticator.origin], trustAnchors: anchors)
    }

    @Test("x5c verifying to a configured root or intermediate is trusted")
    func trusted() async throws {
        let pki = try TestPKI()
        let authenticator = try TestAuthenticator()
        let response = try authenticator.register(challenge: F.challenge, attestation: .packedX5C(pki))
        #expect(try await F.register(response, rp: Self.rp(anchors: [pki.root])).attestationType == .basic(trustedChain: true))
        #expect(try await F.register(response, rp: Self.rp(anchors: [pki.intermediate])).attestationType == .basic(trustedChain: true))
        let other = try TestPKI()
        #expect(try await F.register(response, rp: Self.rp(anchors: [other.root, pki.root])).attestationType == .basic(trustedChain: true))
    }

    @Test("x5c with no trust anchors is accepted as basic, untrusted")
    func noAnchors() async throws {
        let response = try TestAuthenticator().register(challenge: F.challenge, attestation: .packedX5C(try TestPKI()))
        let registration = try await F.register(response)
        #expect(registration.attestationType == .basic(trustedChain: false))
        #expect(registration.format == "packed")
    }

    @Test("x5c under a different root is untrusted")
    func otherRoot() async throws {
        let response = try TestAuthenticator().register(challenge: F.challenge, attestation: .packedX5C(try TestPKI()))
        await F.expectError(.untrustedAttestation(AttestationChain.refusal)) {
            _ = try await F.register(response, rp: Self.rp(anchors: [try TestPKI().root]))
        }
    }

    @Test("Chain rules: intermediate that is not a CA, expired intermediate")
    func chainRules() async throws {
        let authenticator = try TestAuthenticator()
        let notCA = try TestPKI(intermediateIsCA: false)
        await F.expectError(.untrustedAttestation(AttestationChain.refusal)) {
            _ = try await F.register(
                try authenticator.register(challenge: F.challenge, attestation: .packedX5C(notCA)), rp: Self.rp(anchors: [notCA.root]))
        }
        let expired = try TestPKI(intermediateNotAfter: Date(timeIntervalSinceNow: -60))
        await F.expectError(.untrustedAttestation(AttestationChain.refusal)) {
            _ = try await F.register(
                try authenticator.register(challenge: F.challenge, attestation: .packedX5C(expired)), rp: Self.rp(anchors: [expired.root]))
        }
        // Without anchors the chain is not evaluated, so the same responses are basic/untrusted.
        #expect(
            try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedX5C(expired))).attestationType
                == .basic(trustedChain: false))
    }

    @Test("Leaf requirements (§8.2.1): OU, CA flag, AAGUID extension")
    func leafRequirements() async throws {
        let authenticator = try TestAuthenticator()
        let noOU = try TestPKI(leafOU: "Something Else")
        await F.expectError(.invalidAttestation("attestation certificate subject OU is not \"Authenticator Attestation\"")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedX5C(noOU)))
        }
        let wrongAAGUID = try TestPKI(aaguid: Data(repeating: 0x42, count: 16))
        await F.expectError(.invalidAttestation("AAGUID in the attestation certificate differs from the authenticator data")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedX5C(wrongAAGUID)))
        }
        let leafCA = try TestPKI(leafIsCA: true)
        await F.expectError(.invalidAttestation("attestation certificate is a CA certificate")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedX5C(leafCA)))
        }
        // The AAGUID extension is optional.
        let noAAGUID = try TestPKI(aaguid: nil)
        #expect(
            try await F.register(
                try authenticator.register(challenge: F.challenge, attestation: .packedX5C(noAAGUID)), rp: Self.rp(anchors: [noAAGUID.root])
            ).attestationType == .basic(trustedChain: true))
    }

    @Test("x5c signature problems and garbage certificates are invalid attestation")
    func badStatements() async throws {
        let pki = try TestPKI()
        let authenticator = try TestAuthenticator()
        let leafDER = try TestPKI.der(pki.leaf)
        func statement(alg: Int = -7, sig: Data, x5c: [CBORValue]) -> CBORValue {
            TestCBOR.map([(.text("alg"), TestCBOR.int(alg)), (.text("sig"), .bytes(sig)), (.text("x5c"), .array(x5c))])
        }
        // Signed by the credential key instead of the attestation key.
        let wrongSigner = try authenticator.register(challenge: F.challenge, attestation: .packedSelf())
        let object = try CBORDecoder.decode(wrongSigner.attestationObject)
        let selfSig = object["attStmt"]?["sig"]?.bytesValue ?? Data()
        let authData = object["authData"]?.bytesValue ?? Data()
        func response(_ stmt: CBORValue) -> (Data, Data) {
            (
                wrongSigner.clientDataJSON,
                TestCBOR.encode(TestCBOR.map([(.text("fmt"), .text("packed")), (.text("attStmt"), stmt), (.text("authData"), .bytes(authData))]))
            )
        }
        await F.expectError(.invalidAttestation("packed signature does not verify with the attestation certificate")) {
            _ = try await F.register(response(statement(sig: selfSig, x5c: [.bytes(leafDER)])))
        }
        await F.expectError(.invalidAttestation("x5c[0] is not a DER X.509 certificate")) {
            _ = try await F.register(response(statement(sig: selfSig, x5c: [.bytes(Data([0x30, 0x03, 0x02, 0x01, 0x01]))])))
        }
        await F.expectError(.invalidAttestation("x5c is not a non-empty array")) {
            _ = try await F.register(response(statement(sig: selfSig, x5c: [])))
        }
        await F.expectError(.invalidAttestation("x5c[0] is not a byte string")) {
            _ = try await F.register(response(statement(sig: selfSig, x5c: [.text("cert")])))
        }
        await F.expectError(.unsupportedAlgorithm(-65535)) {
            _ = try await F.register(response(statement(alg: -65535, sig: selfSig, x5c: [.bytes(leafDER)])))
        }
        await F.expectError(.invalidAttestation("packed statement has no sig")) {
            _ = try await F.register(response(TestCBOR.map([(.text("alg"), TestCBOR.int(-7))])))
        }
        await F.expectError(.invalidAttestation("packed statement has no integer alg")) {
            _ = try await F.register(response(TestCBOR.map([(.text("sig"), .bytes(selfSig))])))
        }
    }

    /// The trust decision is swift-certificates' `Verifier` + `RFC5280Policy` (`AttestationChain`); these are the
    /// chains it must accept and refuse.
    @Test("Chain trust: to the root or an intermediate anchor; not to another root, a non-CA or an expired intermediate")
    func chainTrust() async throws {
        let good = try TestPKI()
        let cases: [(String, TestPKI, [Certificate], Bool)] = [
            ("valid to root", good, [good.root], true),
            ("valid to intermediate", good, [good.intermediate], true),
            ("other root", good, [try TestPKI().root], false),
            ("intermediate not CA", try TestPKI(intermediateIsCA: false), [], false),
            ("expired intermediate", try TestPKI(intermediateNotAfter: Date(timeIntervalSinceNow: -60)), [], false)
        ]
        for (name, pki, explicitAnchors, expected) in cases {
            let anchors = explicitAnchors.isEmpty ? [pki.root] : explicitAnchors
            let trusted =
                await (try? AttestationChain.validate(leaf: pki.leaf, intermediates: [pki.intermediate], anchors: anchors, now: Date())) != nil
            #expect(trusted == expected, "\(name)")
        }
    }
}

@Suite("WebAuthn COSE keys")
struct WebAuthnCOSEKeyTests {
    typealias F = WebAuthnFixture

    @Test("Valid keys of each algorithm parse and verify", arguments: [COSEAlgorithm.es256, .edDSA, .rs256])
    func valid(algorithm: COSEAlgorithm) async throws {
        let key = try TestCredentialKey.make(algorithm)
        let cose = try COSEKey(encoded: TestCBOR.encode(key.cose))
        #expect(cose.algorithm == algorithm)
        let message = Data("message".utf8)
        #expect(cose.isValidSignature(try key.sign(message), for: message))
        #expect(!cose.isValidSignature(try key.sign(message), for: Data("other".utf8)))
        #expect(!cose.isValidSignature(Data(), for: message))
        #expect(!cose.isValidSignature(Data(repeating: 0xff, count: 512), for: message))
    }

    @Test("kty/crv/alg must agree; coordinates must have the right length and lie on the curve")
    func invalid() async throws {
        let raw = P256.Signing.PrivateKey().publicKey.rawRepresentation
        let x = Data(raw.prefix(32)), y = Data(raw.suffix(32))
        func ec2(kty: Int = 2, alg: Int = -7, crv: Int = 1, x: Data = x, y: Data? = y) -> CBORValue {
            var pairs: [(CBORValue, CBORValue)] = [
                (.unsigned(1), TestCBOR.int(kty)), (.unsigned(3), TestCBOR.int(alg)),
                (TestCBOR.int(-1), TestCBOR.int(crv)), (TestCBOR.int(-2), .bytes(x))
            ]
            if let y { pairs.append((TestCBOR.int(-3), .bytes(y))) }
            return TestCBOR.map(pairs)
        }
        _ = try COSEKey(cbor: ec2())
        await F.expectMalformed(containing: "kty EC2") { _ = try COSEKey(cbor: ec2(kty: 1)) }
        await F.expectMalformed(containing: "P-256") { _ = try COSEKey(cbor: ec2(crv: 2)) }
        await F.expectMalformed(containing: "32-byte") { _ = try COSEKey(cbor: ec2(x: x.prefix(31))) }
        await F.expectMalformed(containing: "32-byte") { _ = try COSEKey(cbor: ec2(y: nil)) }
        var offCurve = y
        offCurve[offCurve.startIndex] ^= 0x01
        await F.expectMalformed(containing: "not a point") { _ = try COSEKey(cbor: ec2(y: offCurve)) }
        await F.expectMalformed(containing: "kty OKP") { _ = try COSEKey(cbor: ec2(alg: -8)) }
        await F.expectMalformed(containing: "no alg") { _ = try COSEKey(cbor: TestCBOR.map([(.unsigned(1), .unsigned(2))])) }
        await F.expectMalformed(containing: "not a map") { _ = try COSEKey(cbor: .array([])) }
        await F.expectMalformed(containing: "COSE key") { _ = try COSEKey(encoded: Data([0xa1])) }
        // Short RSA keys are refused.
        let short = TestCBOR.map([
            (.unsigned(1), .unsigned(3)), (.unsigned(3), TestCBOR.int(-257)),
            (TestCBOR.int(-1), .bytes(Data(repeating: 0xc5, count: 128))), (TestCBOR.int(-2), .bytes(Data([1, 0, 1])))
        ])
        await F.expectMalformed(containing: "RSA key") { _ = try COSEKey(cbor: short) }
    }
}
