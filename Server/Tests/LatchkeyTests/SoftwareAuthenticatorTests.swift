import Crypto
import Foundation
@testable import Latchkey
import Testing

/// The parts of authenticator data (WebAuthn §6.1), parsed independently of the authenticator's code.
struct ParsedAuthData {
    var rpIdHash: Data
    var flags: UInt8
    var signCount: UInt32
    var aaguid: Data?
    var credentialId: Data?
    var publicKey: [CBORValue: CBORValue]?

    init(_ data: Data) throws {
        let d = Data(data)
        try #require(d.count >= 37)
        rpIdHash = d.prefix(32)
        flags = d[32]
        signCount = d[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        if flags & 0x40 != 0 {
            aaguid = d[37..<53]
            let length = Int(d[53]) << 8 | Int(d[54])
            credentialId = d[55..<(55 + length)]
            guard case .map(let key) = try TestCBOR.decode(Data(d[(55 + length)...])) else { throw TestCBOR.Malformed() }
            publicKey = key
        } else {
            try #require(d.count == 37)
        }
    }

    /// The credential's public key from its COSE form.
    func p256Key() throws -> P256.Signing.PublicKey {
        guard case .bytes(let x)? = publicKey?[.int(-2)], case .bytes(let y)? = publicKey?[.int(-3)] else { throw TestCBOR.Malformed() }
        return try P256.Signing.PublicKey(rawRepresentation: x + y)
    }
}

@Suite("Software authenticator: attestation objects and assertions a relying party verifies")
struct SoftwareAuthenticatorTests {
    static let origin = "https://login.example.com"
    static func creation(
        rpId: String? = "example.com", exclude: [Data] = [], residentKey: String? = "required",
        params: [PublicKeyCredentialParameters] = [.init(alg: -7)]
    ) -> PublicKeyCredentialCreationOptions {
        PublicKeyCredentialCreationOptions(
            rp: .init(id: rpId, name: "Example"), user: .init(id: Data("user-1".utf8), name: "ada", displayName: "Ada"),
            challenge: Data("register-challenge".utf8), pubKeyCredParams: params,
            excludeCredentials: exclude.map { PublicKeyCredentialDescriptor(id: $0) },
            authenticatorSelection: .init(residentKey: residentKey), attestation: "none")
    }
    static func request(allow: [Data] = [], rpId: String? = "example.com") -> PublicKeyCredentialRequestOptions {
        PublicKeyCredentialRequestOptions(
            challenge: Data("login-challenge".utf8), rpId: rpId,
            allowCredentials: allow.map { PublicKeyCredentialDescriptor(id: $0) }, userVerification: "preferred")
    }

    func attestation(_ credential: RegistrationCredential) throws -> (
        fmt: String, statement: [CBORValue: CBORValue], authData: ParsedAuthData, raw: Data
    ) {
        guard case .map(let object) = try TestCBOR.decode(credential.attestationObject), case .text(let fmt)? = object[.text("fmt")],
            case .map(let statement)? = object[.text("attStmt")], case .bytes(let authData)? = object[.text("authData")]
        else {
            throw TestCBOR.Malformed()
        }
        #expect(try TestCBOR.mapKeyOrder(credential.attestationObject) == [.text("fmt"), .text("attStmt"), .text("authData")])
        return (fmt, statement, try ParsedAuthData(authData), authData)
    }

    @Test func noneAttestationIsWellFormed() async throws {
        let authenticator = SoftwareAuthenticator()
        let credential = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        let (fmt, statement, authData, _) = try attestation(credential)
        #expect(fmt == "none" && statement.isEmpty)
        #expect(authData.rpIdHash == Data(SHA256.hash(data: Data("example.com".utf8))))
        #expect(authData.flags == 0x45)  // UP | UV | AT; BE/BS clear (device-bound)
        #expect(authData.signCount == 0)
        #expect(authData.aaguid == SoftwareAuthenticator.defaultAAGUID)
        #expect(authData.credentialId == credential.rawId && credential.id == Base64URL.encode(credential.rawId))
        #expect(authData.publicKey?[.int(1)] == .int(2) && authData.publicKey?[.int(3)] == .int(-7) && authData.publicKey?[.int(-1)] == .int(1))
        _ = try authData.p256Key()
        let clientData = try JSONDecoder().decode([String: JSONValue].self, from: credential.clientDataJSON)
        #expect(
            clientData == [
                "type": .string("webauthn.create"), "challenge": .string(Base64URL.encode(Data("register-challenge".utf8))),
                "origin": .string(Self.origin), "crossOrigin": .bool(false)
            ])
        #expect(credential.transports == ["internal"])
    }

    @Test func packedSelfAttestationVerifiesWithTheCredentialKey() async throws {
        let authenticator = SoftwareAuthenticator(attestation: .packed)
        let credential = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        let (fmt, statement, authData, raw) = try attestation(credential)
        #expect(fmt == "packed")
        #expect(statement[.text("alg")] == .int(-7))
        #expect(statement[.text("x5c")] == nil)  // self attestation: no certificate
        guard case .bytes(let sig)? = statement[.text("sig")] else { Issue.record("no sig"); return }
        let signed = raw + Data(SHA256.hash(data: credential.clientDataJSON))
        #expect(try authData.p256Key().isValidSignature(P256.Signing.ECDSASignature(derRepresentation: sig), for: signed))
        #expect(try !authData.p256Key().isValidSignature(P256.Signing.ECDSASignature(derRepresentation: sig), for: signed + Data([0])))
    }

    @Test func assertionsVerifyAndCountUp() async throws {
        let authenticator = SoftwareAuthenticator()
        let credential = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        let key = try attestation(credential).authData.p256Key()
        var counts: [UInt32] = []
        for _ in 0..<3 {
            let assertion = try await authenticator.getAssertion(for: Self.request(), origin: Self.origin)
            let authData = try ParsedAuthData(assertion.authenticatorData)
            #expect(authData.rpIdHash == Data(SHA256.hash(data: Data("example.com".utf8))))
            #expect(authData.flags == 0x05)  // UP | UV, no attested data
            counts.append(authData.signCount)
            #expect(assertion.rawId == credential.rawId)
            #expect(assertion.userHandle == Data("user-1".utf8))
            let signed = assertion.authenticatorData + Data(SHA256.hash(data: assertion.clientDataJSON))
            #expect(key.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: assertion.signature), for: signed))
            let clientData = try JSONDecoder().decode([String: JSONValue].self, from: assertion.clientDataJSON)
            #expect(clientData["type"] == .string("webauthn.get") && clientData["origin"] == .string(Self.origin))
            #expect(clientData["challenge"] == .string(Base64URL.encode(Data("login-challenge".utf8))))
        }
        #expect(counts == [1, 2, 3])
    }

    @Test func userVerificationFlagIsConfigurable() async throws {
        let authenticator = SoftwareAuthenticator(userVerified: false)
        _ = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        let assertion = try await authenticator.getAssertion(for: Self.request(), origin: Self.origin)
        #expect(try ParsedAuthData(assertion.authenticatorData).flags == 0x01)
    }

    @Test func excludeCredentialsRefusesASecondRegistration() async throws {
        let authenticator = SoftwareAuthenticator()
        let first = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        await #expect {
            try await authenticator.createCredential(for: Self.creation(exclude: [first.rawId]), origin: Self.origin)
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyAlreadyRegistered }
        // An unrelated exclusion does not stop it.
        _ = try await authenticator.createCredential(for: Self.creation(exclude: [Data([1, 2, 3])]), origin: Self.origin)
        #expect(try await authenticator.credentials().count == 2)
    }

    @Test func allowCredentialsChoosesTheCredentialAndRefusesOthers() async throws {
        let authenticator = SoftwareAuthenticator()
        let a = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        let b = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        #expect(try await authenticator.getAssertion(for: Self.request(allow: [a.rawId]), origin: Self.origin).rawId == a.rawId)
        #expect(try await authenticator.getAssertion(for: Self.request(), origin: Self.origin).rawId == b.rawId)  // newest first
        await #expect {
            try await authenticator.getAssertion(for: Self.request(allow: [Data([7, 7, 7])]), origin: Self.origin)
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyNoCredential }
        await #expect {
            try await authenticator.getAssertion(
                for: Self.request(allow: [Data([7, 7, 7])]), origin: Self.origin, mode: .IfImmediatelyAvailableCredentials)
        } throws: { ($0 as? LatchkeyError)?.code == .canceled }
    }

    @Test func discoverableCredentialsArePerRpIdAndNonResidentOnesNeedAnAllowList() async throws {
        let authenticator = SoftwareAuthenticator()
        let resident = try await authenticator.createCredential(for: Self.creation(), origin: Self.origin)
        let nonResident = try await authenticator.createCredential(for: Self.creation(residentKey: "discouraged"), origin: Self.origin)
        #expect(try await authenticator.getAssertion(for: Self.request(), origin: Self.origin).rawId == resident.rawId)
        #expect(try await authenticator.getAssertion(for: Self.request(allow: [nonResident.rawId]), origin: Self.origin).rawId == nonResident.rawId)
        #expect(await authenticator.hasCredential(rpId: "example.com", allowCredentials: []))
        #expect(await !authenticator.hasCredential(rpId: "other.example", allowCredentials: []))
        await #expect {
            try await authenticator.getAssertion(for: Self.request(rpId: "other.example"), origin: "https://other.example")
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyNoCredential }
    }

    @Test func rpIdMustMatchTheOriginAndES256MustBeAccepted() async throws {
        let authenticator = SoftwareAuthenticator()
        await #expect {
            try await authenticator.createCredential(for: Self.creation(rpId: "evil.example"), origin: Self.origin)
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyFailed }
        await #expect {
            try await authenticator.createCredential(for: Self.creation(params: [.init(alg: -257)]), origin: Self.origin)
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyNotSupported }
        // Without an RP ID the origin's host is used.
        let credential = try await authenticator.createCredential(for: Self.creation(rpId: nil), origin: "http://localhost:8090")
        #expect(try attestation(credential).authData.rpIdHash == Data(SHA256.hash(data: Data("localhost".utf8))))
    }

    @Test func fileKeyStoreRoundTripsWithMode0600() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lk-passkeys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("passkeys.json")
        let first = SoftwareAuthenticator(store: FilePasskeyKeyStore(url: url))
        let credential = try await first.createCredential(for: Self.creation(), origin: Self.origin)
        _ = try await first.getAssertion(for: Self.request(), origin: Self.origin)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // A new authenticator over the same file continues with the key and the counter.
        let second = SoftwareAuthenticator(store: FilePasskeyKeyStore(url: url))
        let assertion = try await second.getAssertion(for: Self.request(), origin: Self.origin)
        #expect(assertion.rawId == credential.rawId)
        #expect(try ParsedAuthData(assertion.authenticatorData).signCount == 2)
        let key = try attestation(credential).authData.p256Key()
        #expect(
            key.isValidSignature(
                try P256.Signing.ECDSASignature(derRepresentation: assertion.signature),
                for: assertion.authenticatorData + Data(SHA256.hash(data: assertion.clientDataJSON))))
        let stored = try await FilePasskeyKeyStore(url: url).all()
        #expect(stored.count == 1 && stored[0].userHandle == Data("user-1".utf8) && stored[0].signCount == 2)
        #expect(!stored[0].description.contains(Base64URL.encode(stored[0].privateKey)))
        try await FilePasskeyKeyStore(url: url).remove(credentialId: credential.rawId)
        #expect(try await FilePasskeyKeyStore(url: url).all().isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: directory.path)).filter { $0.hasSuffix(".tmp") }.isEmpty)
    }

    @Test func thunderIDFlowStepsBecomeInputs() async throws {
        let authenticator = SoftwareAuthenticator()
        let creation =
            #"{"challenge":"AAEC","rp":{"id":"example.com","name":"Example"},"user":{"id":"dXNlci0x","name":"ada","displayName":"Ada"},"pubKeyCredParams":[{"type":"public-key","alg":-7}],"attestation":"none"}"#
        let register = EmbeddedFlowResponse(
            flowId: "f", flowStatus: .promptOnly, type: .view, flowType: .registration, inputs: [], actions: [],
            components: [], fieldErrors: [], error: nil, additionalData: ["passkeyCreationOptions": creation],
            redirectURL: nil, user: nil)
        let registered = try await PasskeyFlowInputs.inputs(
            for: register, authenticator: authenticator, origin: Self.origin, credentialName: "laptop")
        #expect(Set(registered.keys) == ["credentialId", "clientDataJSON", "attestationObject", "credentialName"])
        #expect(registered["credentialName"] == "laptop")
        let attestationObject = try #require(Base64URL.decode(registered["attestationObject"] ?? ""))
        #expect(try TestCBOR.decode(attestationObject) != .null)

        let challenge =
            #"{"challenge":"BAUG","timeout":60000,"rpId":"example.com","allowCredentials":[{"type":"public-key","id":"\#(registered["credentialId"]!)"}],"userVerification":"preferred"}"#
        var verify = register
        verify.additionalData = ["passkeyChallenge": challenge]
        let inputs = try await PasskeyFlowInputs.inputs(for: verify, authenticator: authenticator, origin: Self.origin)
        #expect(Set(inputs.keys) == ["credentialId", "clientDataJSON", "authenticatorData", "signature", "userHandle"])
        #expect(inputs["credentialId"] == registered["credentialId"] && inputs["userHandle"] == "dXNlci0x")
        let clientDataJSON = try #require(Base64URL.decode(inputs["clientDataJSON"] ?? ""))
        let clientData = try JSONDecoder().decode([String: JSONValue].self, from: clientDataJSON)
        #expect(clientData["challenge"] == .string("BAUG"))

        var none = register
        none.additionalData = [:]
        await #expect { try await PasskeyFlowInputs.inputs(for: none, authenticator: authenticator, origin: Self.origin) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidInput
        }
    }
}
