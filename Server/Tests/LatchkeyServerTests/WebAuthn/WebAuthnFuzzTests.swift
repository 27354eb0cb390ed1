import Foundation
import Testing
@testable import LatchkeyServer

/// Deterministic fuzzing: hostile bytes must either decode or fail with our own error types — never trap, hang or
/// throw something unexpected. Seeds are fixed so a failure reproduces; bump them locally to explore further.
@Suite("WebAuthn fuzz")
struct WebAuthnFuzzTests {
    typealias F = WebAuthnFixture

    /// Runs `body` and reports anything thrown that is not one of our error types.
    static func check(_ label: String, _ input: Data, _ unexpected: inout [String], _ body: () throws -> Void) {
        do { try body() } catch is CBORError {} catch is WebAuthnError {} catch {
            if unexpected.count < 5 { unexpected.append("\(label) \(input.map { String(format: "%02x", $0) }.joined()): \(error)") }
        }
    }

    static func check(_ label: String, _ input: Data, _ unexpected: inout [String], _ body: () async throws -> Void) async {
        do { try await body() } catch is CBORError {} catch is WebAuthnError {} catch {
            if unexpected.count < 5 { unexpected.append("\(label) \(input.map { String(format: "%02x", $0) }.joined()): \(error)") }
        }
    }

    /// Heads that exercise length handling: long arguments, indefinite forms, reserved values, breaks.
    static let interesting: [UInt8] = [
        0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1f, 0x3b, 0x58, 0x59, 0x5a, 0x5b, 0x5f, 0x7b, 0x7f,
        0x98, 0x9a, 0x9b, 0x9f, 0xb8, 0xbb, 0xbf, 0xc0, 0xd8, 0xdb, 0xf8, 0xf9, 0xfb, 0xff, 0x00, 0x81, 0xa1
    ]

    @Test("20 000 random byte strings")
    func randomBytes() async {
        var rng = SplitMix64(seed: 0x5eed_cb04)
        var unexpected: [String] = []
        var decoded = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0..<48, using: &rng)
            let input = Data(
                (0..<length).map { _ in
                    Bool.random(using: &rng) ? UInt8.random(in: 0...255, using: &rng) : Self.interesting.randomElement(using: &rng) ?? 0
                })
            Self.check("decode", input, &unexpected) {
                _ = try CBORDecoder.decode(input); decoded += 1
            }
            Self.check("prefix", input, &unexpected) { _ = try CBORDecoder.decodePrefix(input) }
            Self.check("cose", input, &unexpected) { _ = try COSEKey(encoded: input) }
            Self.check("authData", input, &unexpected) { _ = try AuthenticatorData(input) }
            Self.check("attestation", input, &unexpected) { _ = try AttestationObject(input) }
        }
        #expect(unexpected.isEmpty, "\(unexpected)")
        #expect(decoded > 0)  // the generator does reach valid CBOR
    }

    /// Valid inputs to mutate: attestation objects of every kind we accept, COSE keys, authenticator data with extensions.
    static func corpus() throws -> (attestations: [(Data, Data)], keys: [Data], authData: [Data]) {
        let es = try TestAuthenticator(.es256), ed = try TestAuthenticator(.edDSA), rsa = try TestAuthenticator(.rs256)
        let attestations = [
            try es.register(challenge: F.challenge),
            try ed.register(challenge: F.challenge, attestation: .packedSelf()),
            try rsa.register(challenge: F.challenge, attestation: .packedSelf()),
            try es.register(challenge: F.challenge, attestation: .packedX5C(try TestPKI()))
        ].map { ($0.clientDataJSON, $0.attestationObject) }
        let keys = [es, ed, rsa].map { TestCBOR.encode($0.key.cose) }
        let ext = TestCBOR.map([(.text("credProtect"), .unsigned(2)), (.text("hmac-secret"), .bool(true))])
        let authData = [es.authenticatorData(flags: TestAuthenticator.flags(at: true, ed: true), signCount: 1, attested: true, extensions: ext)]
        return (attestations, keys, authData)
    }

    static func mutate(_ original: Data, using rng: inout SplitMix64) -> Data {
        var bytes = [UInt8](original)
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            guard !bytes.isEmpty else { bytes.append(UInt8.random(in: 0...255, using: &rng)); continue }
            let i = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)  // bit flip
            case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))  // truncation
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: i)  // inserted byte
            case 3:  // duplicated range
                let end = min(bytes.count, i + Int.random(in: 1...16, using: &rng))
                bytes.insert(contentsOf: bytes[i..<end], at: end)
            case 4: bytes[i] = Self.interesting.randomElement(using: &rng) ?? 0  // length-field corruption
            case 5:  // huge argument
                let end = min(bytes.count, i + 9)
                for j in (i + 1)..<max(i + 1, end) { bytes[j] = 0xff }
            default: bytes.remove(at: i)  // deleted byte
            }
        }
        return Data(bytes)
    }

    @Test("24 000 mutations of valid attestation objects, COSE keys and authenticator data")
    func mutations() async throws {
        let corpus = try Self.corpus()
        var rng = SplitMix64(seed: 0xa77e_57ed)
        var unexpected: [String] = []
        var accepted = 0
        for round in 0..<24_000 {
            switch round % 3 {
            case 0:
                let (json, object) = corpus.attestations[round / 3 % corpus.attestations.count]
                let input = Self.mutate(object, using: &rng)
                Self.check("decode", input, &unexpected) { _ = try CBORDecoder.decode(input) }
                await Self.check("registration", input, &unexpected) {
                    _ = try await F.register((json, input))
                    accepted += 1
                }
            case 1:
                let input = Self.mutate(corpus.keys[round / 3 % corpus.keys.count], using: &rng)
                Self.check("cose", input, &unexpected) { _ = try COSEKey(encoded: input) }
            default:
                let input = Self.mutate(corpus.authData[0], using: &rng)
                Self.check("authData", input, &unexpected) { _ = try AuthenticatorData(input) }
            }
        }
        #expect(unexpected.isEmpty, "\(unexpected)")
        // A mutated, still-signed registration can only pass if the mutation hit unsigned bytes (e.g. the x5c
        // intermediate, which is not evaluated without trust anchors); it must stay rare.
        #expect(accepted < 2_000, "\(accepted) mutated registrations accepted")
    }
}
