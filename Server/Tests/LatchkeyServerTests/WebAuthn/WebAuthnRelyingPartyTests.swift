import _CryptoExtras
import Crypto
import Foundation
import Testing
import X509
@testable import LatchkeyServer

/// Shared fixtures: one relying party, one challenge, and an expectation helper that insists on the exact error.
enum WebAuthnFixture {
    static let challenge = Data((0..<32).map { UInt8(255 - $0) })
    static let rp = WebAuthnRelyingParty(
        rpId: TestAuthenticator.rpId,
        allowedOrigins: [TestAuthenticator.origin, "http://localhost:8090"],
        trustAnchors: [])

    static func expectError(
        _ expected: WebAuthnError, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("expected \(expected), but it succeeded", sourceLocation: sourceLocation)
        } catch let error as WebAuthnError {
            #expect(error == expected, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
        }
    }

    static func expectMalformed(
        containing text: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("expected malformed(\(text)), but it succeeded", sourceLocation: sourceLocation)
        } catch WebAuthnError.malformed(let detail) {
            #expect(detail.contains(text), "\(detail)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected malformed(\(text)), got \(error)", sourceLocation: sourceLocation)
        }
    }

    static func register(
        _ response: (clientDataJSON: Data, attestationObject: Data), rp: WebAuthnRelyingParty = WebAuthnFixture.rp,
        challenge: Data = WebAuthnFixture.challenge, requireUV: Bool = false
    ) async throws -> VerifiedRegistration {
        try await rp.verifyRegistration(
            clientDataJSON: response.clientDataJSON, attestationObject: response.attestationObject,
            expectedChallenge: challenge, requireUserVerification: requireUV, now: Date())
    }

    static func assert(
        _ response: (clientDataJSON: Data, authenticatorData: Data, signature: Data), rp: WebAuthnRelyingParty = WebAuthnFixture.rp,
        key: Data, stored: UInt32 = 0, requireUV: Bool = false, userHandle: Data? = nil,
        credentialId: Data = Data([1, 2, 3])
    ) throws -> VerifiedAssertion {
        try rp.verifyAssertion(
            credentialId: credentialId, clientDataJSON: response.clientDataJSON,
            authenticatorData: response.authenticatorData, signature: response.signature,
            userHandle: userHandle, expectedChallenge: challenge, publicKeyCOSE: key,
            storedSignCount: stored, requireUserVerification: requireUV)
    }
}

@Suite("WebAuthn registration and assertion")
struct WebAuthnRelyingPartyTests {
    typealias F = WebAuthnFixture

    // MARK: Positive paths

    @Test("Register (none) and authenticate with each algorithm", arguments: [COSEAlgorithm.es256, .edDSA, .rs256])
    func roundTrip(algorithm: COSEAlgorithm) async throws {
        var authenticator = try TestAuthenticator(algorithm)
        let registration = try await F.register(try authenticator.register(challenge: F.challenge), requireUV: true)
        #expect(registration.algorithm == algorithm)
        #expect(registration.credentialId == authenticator.credentialId)
        #expect(registration.aaguid == TestAuthenticator.aaguid)
        #expect(registration.format == "none")
        #expect(registration.attestationType == .none)
        #expect(registration.userVerified)
        #expect(registration.publicKeyCOSE == TestCBOR.encode(authenticator.key.cose))

        authenticator.signCount = 7
        let handle = Data("user-1".utf8)
        let assertion = try F.assert(
            try authenticator.assert(challenge: F.challenge), key: registration.publicKeyCOSE,
            stored: registration.signCount, requireUV: true, userHandle: handle,
            credentialId: registration.credentialId)
        #expect(assertion.newSignCount == 7)
        #expect(assertion.userVerified)
        #expect(assertion.userHandle == handle)
        #expect(assertion.credentialId == authenticator.credentialId)
    }

    @Test("Packed self attestation with each algorithm", arguments: [COSEAlgorithm.es256, .edDSA, .rs256])
    func packedSelf(algorithm: COSEAlgorithm) async throws {
        let authenticator = try TestAuthenticator(algorithm)
        let registration = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedSelf()))
        #expect(registration.attestationType == .selfAttestation)
        #expect(registration.format == "packed")
    }

    @Test("Backup flags are reported; both-zero counters are accepted; a second origin works")
    func flagsAndCounters() async throws {
        let authenticator = try TestAuthenticator()
        let flags = TestAuthenticator.flags(uv: false, be: true, bs: true, at: true)
        let registration = try await F.register(try authenticator.register(challenge: F.challenge, flags: flags))
        #expect(registration.backupEligible && registration.backedUp && !registration.userVerified)
        let assertion = try F.assert(
            try authenticator.assert(
                challenge: F.challenge, flags: TestAuthenticator.flags(uv: false, be: true, bs: true),
                origin: "http://localhost:8090"),
            key: registration.publicKeyCOSE, stored: 0)
        #expect(assertion.newSignCount == 0 && assertion.backedUp && !assertion.userVerified)
    }

    // MARK: Client data

    @Test("Wrong origin is refused")
    func wrongOrigin() async throws {
        let authenticator = try TestAuthenticator()
        await F.expectError(.originNotAllowed("https://evil.example")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, origin: "https://evil.example"))
        }
        let key = TestCBOR.encode(authenticator.key.cose)
        await F.expectError(.originNotAllowed("https://example.com.evil")) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge, origin: "https://example.com.evil"), key: key)
        }
    }

    @Test("crossOrigin true is refused")
    func crossOrigin() async throws {
        let authenticator = try TestAuthenticator()
        let key = TestCBOR.encode(authenticator.key.cose)
        do {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge, crossOrigin: true), key: key)
            Issue.record("cross-origin accepted")
        } catch WebAuthnError.originNotAllowed(let detail) {
            #expect(detail.contains("cross-origin"))
        }
        // crossOrigin false is fine.
        _ = try F.assert(try authenticator.assert(challenge: F.challenge, crossOrigin: false), key: key)
    }

    @Test("The ceremony type must match (get vs create)")
    func wrongType() async throws {
        let authenticator = try TestAuthenticator()
        await F.expectError(.wrongType(expected: "webauthn.create")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, type: "webauthn.get"))
        }
        await F.expectError(.wrongType(expected: "webauthn.get")) {
            _ = try F.assert(
                try authenticator.assert(challenge: F.challenge, type: "webauthn.create"),
                key: TestCBOR.encode(authenticator.key.cose))
        }
    }

    @Test("A different challenge is refused")
    func wrongChallenge() async throws {
        let authenticator = try TestAuthenticator()
        var other = F.challenge
        other[31] ^= 1
        await F.expectError(.challengeMismatch) { _ = try await F.register(try authenticator.register(challenge: other)) }
        await F.expectError(.challengeMismatch) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge.prefix(16)), key: TestCBOR.encode(authenticator.key.cose))
        }
    }

    @Test("Malformed clientDataJSON is refused")
    func malformedClientData() async throws {
        for json in [
            #"{"type":"webauthn.create"}"#, "[]", "not json",
            #"{"type":"webauthn.create","challenge":"a+b/","origin":"https://example.com"}"#,
            #"{"type":"webauthn.create","challenge":"AAAA====","origin":"https://example.com"}"#
        ] {
            #expect(throws: WebAuthnError.self) { try ClientData(Data(json.utf8)) }
        }
        #expect(throws: WebAuthnError.self) { try ClientData(Data(repeating: 0x20, count: ClientData.maxLength + 1)) }
        let parsed = try ClientData(
            TestAuthenticator.clientDataJSON(
                type: "webauthn.get", challenge: F.challenge,
                crossOrigin: true, topOrigin: "https://top.example"))
        #expect(parsed.crossOrigin && parsed.topOrigin == "https://top.example" && parsed.challenge == F.challenge)
    }

    // MARK: Authenticator data

    @Test("Wrong RP ID hash is refused")
    func wrongRPID() async throws {
        let authenticator = try TestAuthenticator()
        await F.expectError(.rpIdMismatch) { _ = try await F.register(try authenticator.register(challenge: F.challenge, rpId: "evil.example")) }
        await F.expectError(.rpIdMismatch) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge, rpId: "sub.example.com"), key: TestCBOR.encode(authenticator.key.cose))
        }
    }

    @Test("User presence is required; user verification when asked")
    func presenceAndVerification() async throws {
        let authenticator = try TestAuthenticator()
        let key = TestCBOR.encode(authenticator.key.cose)
        await F.expectError(.userNotPresent) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, flags: TestAuthenticator.flags(up: false, at: true)))
        }
        await F.expectError(.userNotPresent) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge, flags: TestAuthenticator.flags(up: false)), key: key)
        }
        await F.expectError(.userVerificationRequired) {
            _ = try await F.register(
                try authenticator.register(challenge: F.challenge, flags: TestAuthenticator.flags(uv: false, at: true)), requireUV: true)
        }
        await F.expectError(.userVerificationRequired) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge, flags: TestAuthenticator.flags(uv: false)), key: key, requireUV: true)
        }
        // Not required: accepted without UV.
        _ = try F.assert(try authenticator.assert(challenge: F.challenge, flags: TestAuthenticator.flags(uv: false)), key: key)
        await F.expectMalformed(containing: "backup state") {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge, flags: TestAuthenticator.flags(bs: true)), key: key)
        }
    }

    @Test("Registration without attested credential data is refused")
    func registrationWithoutCredential() async throws {
        let authenticator = try TestAuthenticator()
        await F.expectMalformed(containing: "no attested credential data") {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, flags: TestAuthenticator.flags(at: false)))
        }
    }

    @Test("AT flag with truncated credential data, trailing bytes, credential ID of 1024 bytes")
    func authenticatorDataStructure() async throws {
        let authenticator = try TestAuthenticator()
        let full = authenticator.authenticatorData(flags: TestAuthenticator.flags(at: true), signCount: 0, attested: true)
        _ = try AuthenticatorData(full)
        for cut in [37, 40, 54, 55, 60, full.count - 1] {
            #expect(throws: WebAuthnError.self, "cut at \(cut)") { try AuthenticatorData(full.prefix(cut)) }
        }
        await F.expectMalformed(containing: "truncated") { _ = try AuthenticatorData(full.prefix(40)) }
        await F.expectMalformed(containing: "trailing") { _ = try AuthenticatorData(full + Data([0])) }
        let plain = authenticator.authenticatorData(flags: TestAuthenticator.flags(), signCount: 0, attested: false)
        await F.expectMalformed(containing: "trailing") { _ = try AuthenticatorData(plain + Data([0xa0])) }
        await F.expectMalformed(containing: "at least 37") { _ = try AuthenticatorData(plain.prefix(36)) }
        await F.expectMalformed(containing: "1024 bytes exceeds 1023") {
            _ = try AuthenticatorData(
                authenticator.authenticatorData(
                    flags: TestAuthenticator.flags(at: true), signCount: 0,
                    attested: true, credentialIdLength: 1024))
        }
        let longest = try AuthenticatorData(
            authenticator.authenticatorData(
                flags: TestAuthenticator.flags(at: true), signCount: 0,
                attested: true, credentialIdLength: 1023))
        #expect(longest.attestedCredential?.credentialId.count == 1023)
        await F.expectMalformed(containing: "1024 bytes exceeds 1023") {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, credentialIdLength: 1024))
        }
        // Extensions: ED flag with a map is parsed; ED without data and extensions without ED are refused.
        let ext = TestCBOR.map([(.text("credProtect"), .unsigned(2))])
        let withExt = try AuthenticatorData(
            authenticator.authenticatorData(
                flags: TestAuthenticator.flags(at: true, ed: true),
                signCount: 9, attested: true, extensions: ext))
        #expect(withExt.extensions?["credProtect"] == .unsigned(2) && withExt.signCount == 9)
        await F.expectMalformed(containing: "ED flag") {
            _ = try AuthenticatorData(authenticator.authenticatorData(flags: TestAuthenticator.flags(ed: true), signCount: 0, attested: false))
        }
        await F.expectMalformed(containing: "trailing") {
            _ = try AuthenticatorData(
                authenticator.authenticatorData(flags: TestAuthenticator.flags(), signCount: 0, attested: false, extensions: ext))
        }
    }

    // MARK: Signatures and counters

    @Test("Tampered signature, authenticator data and clientDataJSON are refused", arguments: [COSEAlgorithm.es256, .edDSA, .rs256])
    func tampering(algorithm: COSEAlgorithm) async throws {
        let authenticator = try TestAuthenticator(algorithm)
        let key = TestCBOR.encode(authenticator.key.cose)
        let good = try authenticator.assert(challenge: F.challenge)
        _ = try F.assert(good, key: key)

        var signature = good.signature
        signature[signature.count / 2] ^= 0x01
        await F.expectError(.invalidSignature) { _ = try F.assert((good.clientDataJSON, good.authenticatorData, signature), key: key) }
        await F.expectError(.invalidSignature) { _ = try F.assert((good.clientDataJSON, good.authenticatorData, Data()), key: key) }
        await F.expectError(.invalidSignature) {
            _ = try F.assert((good.clientDataJSON, good.authenticatorData, Data(repeating: 0x30, count: 70)), key: key)
        }

        var authData = good.authenticatorData
        authData[36] ^= 0x01  // the counter's low byte: still well-formed, but not what was signed
        await F.expectError(.invalidSignature) { _ = try F.assert((good.clientDataJSON, authData, good.signature), key: key) }

        // Same challenge/origin/type, different bytes: an added space.
        var json = good.clientDataJSON
        json.insert(0x20, at: json.count - 1)
        await F.expectError(.invalidSignature) { _ = try F.assert((json, good.authenticatorData, good.signature), key: key) }

        // Another credential's key (the suites share one RSA key, so mint a fresh one here).
        let other =
            algorithm == .rs256
            ? TestCredentialKey(kind: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048)))
            : try TestCredentialKey.make(algorithm)
        await F.expectError(.invalidSignature) { _ = try F.assert(good, key: TestCBOR.encode(other.cose)) }
    }

    @Test("Sign counter must increase unless both are zero")
    func signCount() async throws {
        var authenticator = try TestAuthenticator()
        let key = TestCBOR.encode(authenticator.key.cose)
        authenticator.signCount = 5
        await F.expectError(.signCountRegression(stored: 5, received: 5)) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge), key: key, stored: 5)
        }
        authenticator.signCount = 3
        await F.expectError(.signCountRegression(stored: 5, received: 3)) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge), key: key, stored: 5)
        }
        authenticator.signCount = 0
        await F.expectError(.signCountRegression(stored: 5, received: 0)) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge), key: key, stored: 5)
        }
        #expect(try F.assert(try authenticator.assert(challenge: F.challenge), key: key, stored: 0).newSignCount == 0)
        authenticator.signCount = 6
        #expect(try F.assert(try authenticator.assert(challenge: F.challenge), key: key, stored: 5).newSignCount == 6)
        authenticator.signCount = .max
        #expect(try F.assert(try authenticator.assert(challenge: F.challenge), key: key, stored: .max - 1).newSignCount == .max)
    }

    // MARK: Algorithms and attestation formats

    @Test("Unsupported credential algorithms are refused (ES384, PS256, missing from the allowed list)")
    func unsupportedAlgorithm() async throws {
        let authenticator = try TestAuthenticator()
        let p384 = P384.Signing.PrivateKey().publicKey.rawRepresentation
        let es384 = TestCBOR.encode(
            TestCBOR.map([
                (.unsigned(1), .unsigned(2)), (.unsigned(3), TestCBOR.int(-35)), (TestCBOR.int(-1), .unsigned(2)),
                (TestCBOR.int(-2), .bytes(p384.prefix(48))), (TestCBOR.int(-3), .bytes(p384.suffix(48)))
            ]))
        await F.expectError(.unsupportedAlgorithm(-35)) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, coseKey: es384))
        }
        await F.expectError(.unsupportedAlgorithm(-35)) { _ = try COSEKey(encoded: es384) }
        await F.expectError(.unsupportedAlgorithm(-37)) {
            _ = try COSEKey(cbor: TestCBOR.map([(.unsigned(1), .unsigned(3)), (.unsigned(3), TestCBOR.int(-37))]))
        }
        // Supported by the code, excluded by this relying party's policy — at registration and at assertion.
        var strict = F.rp
        strict.allowedAlgorithms = [.edDSA]
        await F.expectError(.unsupportedAlgorithm(-7)) { _ = try await F.register(try authenticator.register(challenge: F.challenge), rp: strict) }
        await F.expectError(.unsupportedAlgorithm(-7)) {
            _ = try F.assert(try authenticator.assert(challenge: F.challenge), rp: strict, key: TestCBOR.encode(authenticator.key.cose))
        }
    }

    @Test(
        "Unsupported attestation formats are refused by name",
        arguments: ["tpm", "fido-u2f", "android-key", "android-safetynet", "apple", "compound", "x-unknown"])
    func unsupportedFormat(format: String) async throws {
        let authenticator = try TestAuthenticator()
        let statement = TestCBOR.map([(.text("alg"), TestCBOR.int(-7)), (.text("sig"), .bytes(Data([1])))])
        await F.expectError(.unsupportedAttestationFormat(format)) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .format(format, statement)))
        }
        #expect(WebAuthnError.unsupportedAttestationFormat(format).description.contains("'\(format)' is not supported"))
    }

    @Test("ECDAA packed statements are refused as unsupported")
    func ecdaa() async throws {
        let authenticator = try TestAuthenticator()
        let statement = TestCBOR.map([(.text("alg"), TestCBOR.int(-260)), (.text("sig"), .bytes(Data([1]))), (.text("ecdaaKeyId"), .bytes(Data([2])))]
        )
        await F.expectError(.unsupportedAttestationFormat("packed (ECDAA)")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .format("packed", statement)))
        }
    }

    @Test("'none' with a non-empty statement is refused")
    func noneWithStatement() async throws {
        let authenticator = try TestAuthenticator()
        await F.expectError(.invalidAttestation("'none' attestation must have an empty statement")) {
            _ = try await F.register(
                try authenticator.register(
                    challenge: F.challenge,
                    attestation: .format("none", TestCBOR.map([(.text("sig"), .bytes(Data([1])))]))))
        }
    }

    @Test("Packed self attestation: mismatched alg and bad signature are refused")
    func packedSelfNegative() async throws {
        let authenticator = try TestAuthenticator()
        do {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedSelf(alg: -257)))
            Issue.record("mismatched alg accepted")
        } catch WebAuthnError.invalidAttestation(let detail) { #expect(detail.contains("alg -257")) }
        let statement = TestCBOR.map([(.text("alg"), TestCBOR.int(-7)), (.text("sig"), .bytes(Data(repeating: 1, count: 70)))])
        await F.expectError(.invalidAttestation("self attestation signature does not verify")) {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .format("packed", statement)))
        }
        // A valid self-attestation signature does not survive a changed clientDataJSON.
        let response = try authenticator.register(challenge: F.challenge, attestation: .packedSelf())
        var json = response.clientDataJSON
        json.insert(0x20, at: json.count - 1)
        await F.expectError(.invalidAttestation("self attestation signature does not verify")) {
            _ = try await F.register((json, response.attestationObject))
        }
    }

    @Test("Malformed attestation objects are refused")
    func malformedAttestationObject() async throws {
        let authenticator = try TestAuthenticator()
        let good = try authenticator.register(challenge: F.challenge)
        await F.expectMalformed(containing: "trailing") { _ = try await F.register((good.clientDataJSON, good.attestationObject + Data([0]))) }
        await F.expectMalformed(containing: "not a map") { _ = try AttestationObject(TestCBOR.encode(.array([]))) }
        await F.expectMalformed(containing: "fmt") { _ = try AttestationObject(TestCBOR.encode(TestCBOR.map([(.text("attStmt"), .map([]))]))) }
        await F.expectMalformed(containing: "attStmt") {
            _ = try AttestationObject(TestCBOR.encode(TestCBOR.map([(.text("fmt"), .text("none")), (.text("attStmt"), .array([]))])))
        }
        await F.expectMalformed(containing: "authData") {
            _ = try AttestationObject(TestCBOR.encode(TestCBOR.map([(.text("fmt"), .text("none")), (.text("attStmt"), .map([]))])))
        }
    }
}
