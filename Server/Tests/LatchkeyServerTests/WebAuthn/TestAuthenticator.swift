import _CryptoExtras
import Crypto
import Foundation
import LatchkeyJOSE
import SwiftASN1
import X509
@testable import LatchkeyServer

/// A minimal CBOR encoder for tests (definite lengths, preferred integer heads), enough to build attestation
/// objects, COSE keys and deliberately malformed variants.
enum TestCBOR {
    static func encode(_ value: CBORValue) -> Data {
        var out = Data()
        append(value, to: &out)
        return out
    }

    static func head(_ major: UInt8, _ argument: UInt64, to out: inout Data) {
        let m = major << 5
        switch argument {
        case 0..<24: out.append(m | UInt8(argument))
        case 24...0xff: out.append(m | 24); out.append(UInt8(argument))
        case 0x100...0xffff: out.append(m | 25); out.append(contentsOf: bigEndian(argument, 2))
        case 0x10000...0xffff_ffff: out.append(m | 26); out.append(contentsOf: bigEndian(argument, 4))
        default: out.append(m | 27); out.append(contentsOf: bigEndian(argument, 8))
        }
    }

    static func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    static func append(_ value: CBORValue, to out: inout Data) {
        switch value {
        case .unsigned(let n): head(0, n, to: &out)
        case .negative(let n): head(1, n, to: &out)
        case .bytes(let d): head(2, UInt64(d.count), to: &out); out.append(d)
        case .text(let s): head(3, UInt64(s.utf8.count), to: &out); out.append(contentsOf: Array(s.utf8))
        case .array(let items): head(4, UInt64(items.count), to: &out); items.forEach { append($0, to: &out) }
        case .map(let entries):
            head(5, UInt64(entries.count), to: &out)
            for e in entries { append(e.key, to: &out); append(e.value, to: &out) }
        case .tagged(let tag, let inner): head(6, tag, to: &out); append(inner, to: &out)
        case .bool(let b): out.append(b ? 0xf5 : 0xf4)
        case .null: out.append(0xf6)
        case .undefined: out.append(0xf7)
        case .float(let d): out.append(0xfb); out.append(contentsOf: bigEndian(d.bitPattern, 8))
        case .simple(let s): if s < 24 { out.append(0xe0 | s) } else { out.append(0xf8); out.append(s) }
        }
    }

    static func int(_ i: Int) -> CBORValue { i >= 0 ? .unsigned(UInt64(i)) : .negative(UInt64(-1 - i)) }
    static func map(_ pairs: [(CBORValue, CBORValue)]) -> CBORValue { .map(pairs.map { CBORMapEntry(key: $0.0, value: $0.1) }) }
}

/// A credential key pair of one of the supported algorithms, producing WebAuthn-shaped signatures.
struct TestCredentialKey: @unchecked Sendable {
    enum Kind { case p256(P256.Signing.PrivateKey), ed25519(Curve25519.Signing.PrivateKey), rsa(_RSA.Signing.PrivateKey) }
    let kind: Kind

    static func make(_ algorithm: COSEAlgorithm) throws -> TestCredentialKey {
        switch algorithm {
        case .es256: return TestCredentialKey(kind: .p256(P256.Signing.PrivateKey()))
        case .edDSA: return TestCredentialKey(kind: .ed25519(Curve25519.Signing.PrivateKey()))
        case .rs256: return TestCredentialKey(kind: .rsa(try TestKeys.rsa()))
        }
    }

    var algorithm: Int {
        switch kind {
        case .p256: -7;
        case .ed25519: -8;
        case .rsa: -257
        }
    }

    var cose: CBORValue {
        switch kind {
        case .p256(let key):
            let raw = key.publicKey.rawRepresentation
            return TestCBOR.map([
                (.unsigned(1), .unsigned(2)), (.unsigned(3), TestCBOR.int(-7)), (TestCBOR.int(-1), .unsigned(1)),
                (TestCBOR.int(-2), .bytes(raw.prefix(32))), (TestCBOR.int(-3), .bytes(raw.suffix(32)))
            ])
        case .ed25519(let key):
            return TestCBOR.map([
                (.unsigned(1), .unsigned(1)), (.unsigned(3), TestCBOR.int(-8)), (TestCBOR.int(-1), .unsigned(6)),
                (TestCBOR.int(-2), .bytes(key.publicKey.rawRepresentation))
            ])
        case .rsa(let key):
            let (n, e) = TestKeys.rsaComponents(key.publicKey)
            return TestCBOR.map([
                (.unsigned(1), .unsigned(3)), (.unsigned(3), TestCBOR.int(-257)),
                (TestCBOR.int(-1), .bytes(n)), (TestCBOR.int(-2), .bytes(e))
            ])
        }
    }

    func sign(_ data: Data) throws -> Data {
        switch kind {
        case .p256(let key): return try key.signature(for: data).derRepresentation
        case .ed25519(let key): return try key.signature(for: data)
        case .rsa(let key): return try key.signature(for: data, padding: .insecurePKCS1v1_5).rawRepresentation
        }
    }
}

/// RSA key generation is slow in debug builds, so the suites share one key.
enum TestKeys {
    private static let shared = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }
    static func rsa() throws -> _RSA.Signing.PrivateKey { try shared.get() }

    /// n and e from the PKCS#1 DER of the public key (SEQUENCE { INTEGER n, INTEGER e }), minus sign padding.
    static func rsaComponents(_ key: _RSA.Signing.PublicKey) -> (Data, Data) {
        guard let node = try? DER.parse([UInt8](key.pkcs1DERRepresentation)),
            case .constructed(let children) = node.content
        else { return (Data(), Data()) }
        let ints = children.compactMap { child -> Data? in
            guard case .primitive(let bytes) = child.content else { return nil }
            return Data(bytes.drop { $0 == 0 })
        }
        return ints.count == 2 ? (ints[0], ints[1]) : (Data(), Data())
    }
}

/// An attestation certificate chain: root CA → intermediate CA → leaf, minted with swift-certificates.
struct TestPKI: @unchecked Sendable {
    let rootKey = P256.Signing.PrivateKey()
    let intermediateKey = P256.Signing.PrivateKey()
    let leafKey = P256.Signing.PrivateKey()
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate

    static let notBefore = Date(timeIntervalSinceNow: -3600)
    static let notAfter = Date(timeIntervalSinceNow: 365 * 86400)

    init(
        leafOU: String = "Authenticator Attestation", aaguid: Data? = TestAuthenticator.aaguid,
        leafIsCA: Bool = false, intermediateIsCA: Bool = true, intermediateNotAfter: Date = TestPKI.notAfter
    ) throws {
        let rootName = try DistinguishedName {
            CountryName("US"); OrganizationName("Latchkey Test"); CommonName("Test Root")
        }
        let intermediateName = try DistinguishedName {
            CountryName("US"); OrganizationName("Latchkey Test"); CommonName("Test Intermediate")
        }
        let leafName = try DistinguishedName {
            CountryName("US"); OrganizationName("Latchkey Test"); OrganizationalUnitName(leafOU); CommonName("Test Authenticator")
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: Self.notBefore,
            notValidAfter: Self.notAfter, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(keyCertSign: true)
            },
            issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: Self.notBefore,
            notValidAfter: intermediateNotAfter, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(intermediateIsCA ? BasicConstraints.isCertificateAuthority(maxPathLength: 0) : .notCertificateAuthority)
                KeyUsage(keyCertSign: true)
            },
            issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Certificate.Extensions {
            Critical(leafIsCA ? BasicConstraints.isCertificateAuthority(maxPathLength: nil) : .notCertificateAuthority)
        }
        if let aaguid {
            var serializer = DER.Serializer()
            try serializer.serialize(ASN1OctetString(contentBytes: ArraySlice(aaguid)))
            try leafExtensions.append(
                Certificate.Extension(
                    oid: PackedAttestation.aaguidExtension, critical: false,
                    value: serializer.serializedBytes[...]))
        }
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: Self.notBefore,
            notValidAfter: Self.notAfter, issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey))
    }

    static func der(_ certificate: Certificate) throws -> Data {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }
}

/// A software authenticator and client in one: it produces the exact bytes a browser would hand to the relying
/// party (clientDataJSON, attestation objects, assertions), with knobs to break each rule on purpose.
struct TestAuthenticator: @unchecked Sendable {
    static let aaguid = Data((0..<16).map { UInt8($0 &* 17) })
    static let rpId = "example.com"
    static let origin = "https://example.com"

    var key: TestCredentialKey
    var credentialId = Data((0..<32).map { UInt8($0) })
    var signCount: UInt32 = 0

    init(_ algorithm: COSEAlgorithm = .es256) throws { key = try TestCredentialKey.make(algorithm) }

    static func clientDataJSON(
        type: String, challenge: Data, origin: String = TestAuthenticator.origin, crossOrigin: Bool? = nil,
        topOrigin: String? = nil
    ) -> Data {
        var json = #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)""#
        if let crossOrigin { json += #","crossOrigin":\#(crossOrigin)"# }
        if let topOrigin { json += #","topOrigin":"\#(topOrigin)""# }
        return Data((json + "}").utf8)
    }

    static func flags(up: Bool = true, uv: Bool = true, be: Bool = false, bs: Bool = false, at: Bool = false, ed: Bool = false) -> UInt8 {
        (up ? 0x01 : 0) | (uv ? 0x04 : 0) | (be ? 0x08 : 0) | (bs ? 0x10 : 0) | (at ? 0x40 : 0) | (ed ? 0x80 : 0)
    }

    /// rpIdHash ‖ flags ‖ signCount ‖ (attested credential data) ‖ (extensions).
    func authenticatorData(
        rpId: String = TestAuthenticator.rpId, flags: UInt8, signCount: UInt32, attested: Bool,
        credentialIdLength: Int? = nil, coseKey: Data? = nil, extensions: CBORValue? = nil
    ) -> Data {
        var data = Data(SHA256.hash(data: Data(rpId.utf8)))
        data.append(flags)
        data.append(contentsOf: TestCBOR.bigEndian(UInt64(signCount), 4))
        if attested {
            data.append(Self.aaguid)
            let length = credentialIdLength ?? credentialId.count
            data.append(contentsOf: TestCBOR.bigEndian(UInt64(length), 2))
            data.append(length == credentialId.count ? credentialId : Data(repeating: 0xab, count: length))
            data.append(coseKey ?? TestCBOR.encode(key.cose))
        }
        if let extensions { data.append(TestCBOR.encode(extensions)) }
        return data
    }

    enum Attestation { case none, packedSelf(alg: Int? = nil), packedX5C(TestPKI), format(String, CBORValue) }

    /// A registration response: (clientDataJSON, attestationObject).
    func register(
        challenge: Data, attestation: Attestation = .none, flags: UInt8 = TestAuthenticator.flags(at: true),
        rpId: String = TestAuthenticator.rpId, origin: String = TestAuthenticator.origin, type: String = "webauthn.create",
        credentialIdLength: Int? = nil, coseKey: Data? = nil
    ) throws -> (clientDataJSON: Data, attestationObject: Data) {
        let clientDataJSON = Self.clientDataJSON(type: type, challenge: challenge, origin: origin)
        let authData = authenticatorData(
            rpId: rpId, flags: flags, signCount: signCount, attested: flags & 0x40 != 0,
            credentialIdLength: credentialIdLength, coseKey: coseKey)
        let signed = authData + Data(SHA256.hash(data: clientDataJSON))
        let format: String, statement: CBORValue
        switch attestation {
        case .none: format = "none"; statement = .map([])
        case .packedSelf(let alg):
            format = "packed"
            statement = TestCBOR.map([(.text("alg"), TestCBOR.int(alg ?? key.algorithm)), (.text("sig"), .bytes(try key.sign(signed)))])
        case .packedX5C(let pki):
            format = "packed"
            let sig = try pki.leafKey.signature(for: signed).derRepresentation
            statement = TestCBOR.map([
                (.text("alg"), TestCBOR.int(-7)), (.text("sig"), .bytes(sig)),
                (.text("x5c"), .array([.bytes(try TestPKI.der(pki.leaf)), .bytes(try TestPKI.der(pki.intermediate))]))
            ])
        case .format(let name, let stmt): format = name; statement = stmt
        }
        let object = TestCBOR.map([(.text("fmt"), .text(format)), (.text("attStmt"), statement), (.text("authData"), .bytes(authData))])
        return (clientDataJSON, TestCBOR.encode(object))
    }

    /// An authentication response: (clientDataJSON, authenticatorData, signature).
    func assert(
        challenge: Data, flags: UInt8 = TestAuthenticator.flags(), signCount: UInt32? = nil, rpId: String = TestAuthenticator.rpId,
        origin: String = TestAuthenticator.origin, type: String = "webauthn.get", crossOrigin: Bool? = nil
    )
        throws -> (clientDataJSON: Data, authenticatorData: Data, signature: Data)
    {
        let clientDataJSON = Self.clientDataJSON(type: type, challenge: challenge, origin: origin, crossOrigin: crossOrigin)
        let authData = authenticatorData(rpId: rpId, flags: flags, signCount: signCount ?? self.signCount, attested: false)
        let signature = try key.sign(authData + Data(SHA256.hash(data: clientDataJSON)))
        return (clientDataJSON, authData, signature)
    }
}

/// A seedable PRNG (SplitMix64) so the fuzz tests are reproducible run after run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
