import Foundation

/// Authenticator data (WebAuthn §6.1): the bytes the authenticator signs, parsed strictly.
///
/// Layout: rpIdHash (32) ‖ flags (1) ‖ signCount (4, big-endian) ‖ attested credential data (if AT) ‖
/// extensions CBOR map (if ED). Every byte must be accounted for; trailing bytes are an error because they would
/// be signed yet unexplained.
struct AuthenticatorData: Sendable {
    /// The flag bits of byte 32 that WebAuthn defines (bits 1 and 5 are reserved and ignored).
    struct Flags: Sendable, Equatable {
        var userPresent: Bool
        var userVerified: Bool
        var backupEligible: Bool
        var backedUp: Bool
        var attestedCredentialData: Bool
        var extensionData: Bool

        init(
            userPresent: Bool, userVerified: Bool, backupEligible: Bool, backedUp: Bool,
            attestedCredentialData: Bool, extensionData: Bool
        ) {
            self.userPresent = userPresent
            self.userVerified = userVerified
            self.backupEligible = backupEligible
            self.backedUp = backedUp
            self.attestedCredentialData = attestedCredentialData
            self.extensionData = extensionData
        }

        init(byte: UInt8) {
            self.init(
                userPresent: byte & 0x01 != 0, userVerified: byte & 0x04 != 0, backupEligible: byte & 0x08 != 0,
                backedUp: byte & 0x10 != 0, attestedCredentialData: byte & 0x40 != 0, extensionData: byte & 0x80 != 0)
        }
    }

    /// Attested credential data (WebAuthn §6.5.2), present during registration.
    struct AttestedCredential: Sendable {
        var aaguid: Data
        var credentialId: Data
        var publicKey: COSEKey
        /// The exact bytes of the COSE key as the authenticator sent them: this is what gets stored, so that later
        /// verification uses precisely what was attested.
        var publicKeyCBOR: Data
    }

    /// WebAuthn §5.4.3 bounds credential IDs at 1023 bytes.
    static let maxCredentialIdLength = 1023

    let raw: Data
    let rpIdHash: Data
    let flags: Flags
    let signCount: UInt32
    let attestedCredential: AttestedCredential?
    let extensions: CBORValue?

    init(_ data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count >= 37 else {
            throw WebAuthnError.malformed("authenticator data is \(bytes.count) bytes, at least 37 are required")
        }
        raw = Data(bytes)
        rpIdHash = Data(bytes[0..<32])
        flags = Flags(byte: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var position = 37

        if flags.attestedCredentialData {
            guard bytes.count - position >= 18 else {
                throw WebAuthnError.malformed("attested credential data is truncated (AT flag set, \(bytes.count - position) bytes left)")
            }
            let aaguid = Data(bytes[position..<position + 16])
            let idLength = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            position += 18
            guard idLength <= Self.maxCredentialIdLength else {
                throw WebAuthnError.malformed("credential ID of \(idLength) bytes exceeds \(Self.maxCredentialIdLength)")
            }
            guard idLength > 0 else { throw WebAuthnError.malformed("empty credential ID") }
            guard bytes.count - position >= idLength else {
                throw WebAuthnError.malformed("credential ID is truncated")
            }
            let credentialId = Data(bytes[position..<position + idLength])
            position += idLength
            let keyBytes = Data(bytes[position...])
            let (keyValue, keyLength) = try WebAuthnSupport.cbor("credential public key") {
                try CBORDecoder.decodePrefix(keyBytes)
            }
            let publicKey = try COSEKey(cbor: keyValue)
            attestedCredential = AttestedCredential(
                aaguid: aaguid, credentialId: credentialId, publicKey: publicKey,
                publicKeyCBOR: Data(bytes[position..<position + keyLength]))
            position += keyLength
        } else {
            attestedCredential = nil
        }

        if flags.extensionData {
            guard position < bytes.count else { throw WebAuthnError.malformed("ED flag set but no extensions follow") }
            let rest = Data(bytes[position...])
            let value = try WebAuthnSupport.cbor("authenticator extensions") { try CBORDecoder.decode(rest) }
            guard case .map = value else { throw WebAuthnError.malformed("authenticator extensions are not a map") }
            extensions = value
        } else {
            guard position == bytes.count else {
                throw WebAuthnError.malformed("\(bytes.count - position) trailing byte(s) after the authenticator data")
            }
            extensions = nil
        }
    }
}
