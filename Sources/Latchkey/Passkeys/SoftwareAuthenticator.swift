import Crypto
import Foundation

/// A WebAuthn authenticator in plain Swift, for Linux, the CLI and tests: P-256 keys, real attestation objects
/// (`none`, or `packed` self-attestation) and assertions a standard relying party verifies.
///
/// It also plays the browser's part: it writes `clientDataJSON` for the origin it is given and refuses an RP ID that
/// is not the origin's host or a parent domain of it. Keys live in a `PasskeyKeyStore`.
///
/// **A development and test tool, not a secure enclave**: keys are software keys in memory or in a file.
public actor SoftwareAuthenticator: PasskeyAuthenticator {
    /// How new credentials are attested.
    public enum AttestationFormat: String, Sendable, CaseIterable {
        /// `fmt: "none"`, empty statement.
        case none
        /// `fmt: "packed"` self-attestation: `{alg: -7, sig}` signed with the credential's own key.
        case packed
    }

    /// The AAGUID this authenticator reports (random, fixed; it names "Latchkey software authenticator").
    public static let defaultAAGUID = Data([0x6c, 0x61, 0x74, 0x63, 0x68, 0x6b, 0x65, 0x79, 0x2d, 0x73, 0x77, 0x2d, 0x61, 0x75, 0x74, 0x68])

    private let store: any PasskeyKeyStore
    /// The attestation format of new credentials.
    public let attestation: AttestationFormat
    /// Sets the UV flag (user verified). Turn off to test relying parties that require verification.
    public let userVerified: Bool
    /// The AAGUID written into attested credential data (16 bytes).
    public let aaguid: Data
    /// Refuse RP IDs that are not the origin's host or a parent domain of it, as browsers do.
    public let checksOriginAgainstRpId: Bool

    /// An authenticator over `store` (in memory by default).
    public init(
        store: any PasskeyKeyStore = InMemoryPasskeyKeyStore(), attestation: AttestationFormat = .none, userVerified: Bool = true,
        aaguid: Data = SoftwareAuthenticator.defaultAAGUID, checksOriginAgainstRpId: Bool = true
    ) {
        self.store = store; self.attestation = attestation; self.userVerified = userVerified
        self.aaguid = aaguid.count == 16 ? aaguid : Self.defaultAAGUID; self.checksOriginAgainstRpId = checksOriginAgainstRpId
    }

    /// Authenticator data flags (WebAuthn §6.1). BE and BS stay clear: these keys are device-bound and never synced.
    enum Flag {
        static let userPresent: UInt8 = 0x01
        static let userVerified: UInt8 = 0x04
        static let attestedCredentialData: UInt8 = 0x40
    }

    // MARK: PasskeyAuthenticator

    /// Creates a P-256 credential; refuses an excluded one (`.passkeyAlreadyRegistered`) and options without ES256
    /// (`.passkeyNotSupported`).
    public func createCredential(
        for options: PublicKeyCredentialCreationOptions, origin: String,
        anchor: PresentationAnchorBox? = nil
    ) async throws -> RegistrationCredential {
        let rpId = try effectiveRpId(options.rp.id, origin: origin)
        guard
            options.pubKeyCredParams.isEmpty
                || options.pubKeyCredParams.contains(where: { $0.type == "public-key" && Int64($0.alg) == COSEKey.es256 })
        else {
            throw LatchkeyError(.passkeyNotSupported, "the relying party accepts none of this authenticator's algorithms (ES256 only)")
        }
        let existing = try await store.all()
        let excluded = Set(options.excludeCredentials.map(\.id))
        if existing.contains(where: { $0.rpId == rpId && excluded.contains($0.credentialId) }) {
            // WebAuthn's InvalidStateError: this authenticator already holds a credential for the account.
            throw LatchkeyError(.passkeyAlreadyRegistered, "this authenticator already holds a passkey the relying party excluded")
        }
        let key = P256.Signing.PrivateKey()
        let credentialId = Self.randomBytes(32)
        let clientData = ClientData.json(type: "webauthn.create", challenge: options.challenge, origin: origin)
        let cose = COSEKey.ec2P256(rawRepresentation: key.publicKey.rawRepresentation).encoded
        var attested = aaguid
        attested.append(contentsOf: [UInt8(credentialId.count >> 8), UInt8(credentialId.count & 0xFF)])
        attested.append(credentialId)
        attested.append(cose)
        let authData = authenticatorData(rpId: rpId, extraFlags: Flag.attestedCredentialData, signCount: 0) + attested

        let statement: CBORValue
        switch attestation {
        case .none: statement = .map([:])
        case .packed:
            let signature = try key.signature(for: authData + Data(SHA256.hash(data: clientData))).derRepresentation
            statement = .map([.text("alg"): .int(COSEKey.es256), .text("sig"): .bytes(signature)])
        }
        let attestationObject = CBORValue.map([
            .text("fmt"): .text(attestation.rawValue), .text("attStmt"): statement,
            .text("authData"): .bytes(authData)
        ]).encoded
        let residentKey = options.authenticatorSelection?.residentKey
        // Passkeys are discoverable unless the relying party discourages it.
        let discoverable = residentKey != "discouraged" || options.authenticatorSelection?.requireResidentKey == true
        try await store.save(
            StoredPasskey(
                credentialId: credentialId, rpId: rpId, userHandle: options.user.id, userName: options.user.name,
                userDisplayName: options.user.displayName, privateKey: key.rawRepresentation,
                discoverable: discoverable))
        return RegistrationCredential(
            rawId: credentialId, clientDataJSON: clientData, attestationObject: attestationObject,
            transports: ["internal"], authenticatorAttachment: "platform")
    }

    /// Signs with the newest matching credential and increments its counter.
    public func getAssertion(
        for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode = .Always,
        anchor: PresentationAnchorBox? = nil
    ) async throws -> AssertionCredential {
        let rpId = try effectiveRpId(options.rpId, origin: origin)
        // The most recently created matching credential, as a platform authenticator would suggest it first.
        guard var passkey = try await candidates(rpId: rpId, allow: options.allowCredentials).last else {
            if mode == .IfImmediatelyAvailableCredentials { throw LatchkeyError(.canceled, "no passkey is available for \(rpId)") }
            throw LatchkeyError(
                .passkeyNoCredential,
                options.allowCredentials.isEmpty
                    ? "this authenticator has no passkey for \(rpId)" : "this authenticator has none of the passkeys the relying party allows")
        }
        let key: P256.Signing.PrivateKey
        do { key = try P256.Signing.PrivateKey(rawRepresentation: passkey.privateKey) } catch {
            throw LatchkeyError(.passkeyFailed, "the stored passkey \(Base64URL.encode(passkey.credentialId)) has an unreadable key")
        }
        passkey.signCount &+= 1
        // The counter is saved before the signature leaves the authenticator, so a counter is never used twice.
        try await store.save(passkey)
        let clientData = ClientData.json(type: "webauthn.get", challenge: options.challenge, origin: origin)
        let authData = authenticatorData(rpId: rpId, extraFlags: 0, signCount: passkey.signCount)
        let signature = try key.signature(for: authData + Data(SHA256.hash(data: clientData))).derRepresentation
        return AssertionCredential(
            rawId: passkey.credentialId, clientDataJSON: clientData, authenticatorData: authData, signature: signature,
            userHandle: passkey.userHandle.isEmpty ? nil : passkey.userHandle, authenticatorAttachment: "platform")
    }

    /// True when a credential for `rpId` matches the allow list (any discoverable one when it is empty).
    public func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool {
        ((try? await candidates(rpId: rpId, allow: allowCredentials)) ?? []).isEmpty == false
    }

    // MARK: Management (CLI, tests)

    /// Every stored credential (private keys included: do not print them; `StoredPasskey.description` does not).
    public func credentials() async throws -> [StoredPasskey] { try await store.all() }

    /// Forgets a credential.
    public func removeCredential(id: Data) async throws { try await store.remove(credentialId: id) }

    // MARK: Internals

    private func candidates(rpId: String, allow: [PublicKeyCredentialDescriptor]) async throws -> [StoredPasskey] {
        let all = try await store.all().filter { $0.rpId == rpId }
        if allow.isEmpty { return all.filter(\.discoverable) }
        let allowed = Set(allow.map(\.id))
        return all.filter { allowed.contains($0.credentialId) }
    }

    private func authenticatorData(rpId: String, extraFlags: UInt8, signCount: UInt32) -> Data {
        var data = Data(SHA256.hash(data: Data(rpId.utf8)))
        data.append(Flag.userPresent | (userVerified ? Flag.userVerified : 0) | extraFlags)
        data.append(contentsOf: [UInt8(signCount >> 24), UInt8((signCount >> 16) & 0xFF), UInt8((signCount >> 8) & 0xFF), UInt8(signCount & 0xFF)])
        return data
    }

    /// The RP ID to use: the given one (checked against the origin like a browser does) or the origin's host.
    private func effectiveRpId(_ requested: String?, origin: String) throws -> String {
        guard let components = URLComponents(string: origin), let host = components.host?.lowercased(), !host.isEmpty else {
            throw LatchkeyError(.passkeyFailed, "the WebAuthn origin \(origin) is not scheme://host[:port]")
        }
        guard let rpId = requested?.lowercased(), !rpId.isEmpty else { return host }
        if checksOriginAgainstRpId, host != rpId, !host.hasSuffix("." + rpId) {
            throw LatchkeyError(.passkeyFailed, "the RP ID \(rpId) is not valid for the origin \(origin) (SecurityError)")
        }
        return rpId
    }

    static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}
