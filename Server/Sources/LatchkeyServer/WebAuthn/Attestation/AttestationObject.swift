import Foundation

/// The attestation object returned by `navigator.credentials.create()` (WebAuthn §6.5): a CBOR map with `fmt`,
/// `attStmt` and `authData`. Other keys are ignored, as CTAP and WebAuthn may add some.
struct AttestationObject: Sendable {
    let format: String
    let statement: CBORValue
    let authenticatorData: AuthenticatorData

    init(_ data: Data) throws {
        let value = try WebAuthnSupport.cbor("attestation object") { try CBORDecoder.decode(data) }
        guard case .map = value else { throw WebAuthnError.malformed("attestation object is not a map") }
        guard let format = value["fmt"]?.textValue else { throw WebAuthnError.malformed("attestation object has no text fmt") }
        guard let statement = value["attStmt"], case .map = statement else {
            throw WebAuthnError.malformed("attestation object has no attStmt map")
        }
        guard let authData = value["authData"]?.bytesValue else {
            throw WebAuthnError.malformed("attestation object has no authData bytes")
        }
        self.format = format
        self.statement = statement
        authenticatorData = try AuthenticatorData(authData)
    }
}

/// What an attestation statement proved about the authenticator (WebAuthn §6.5.4).
enum AttestationType: Sendable, Equatable {
    /// `fmt: none`: nothing is claimed about the authenticator's model.
    case none
    /// Packed without a certificate: the credential key signed its own registration, which proves possession only.
    case selfAttestation
    /// Packed with an `x5c` chain; `trustedChain` says whether it verified to a configured trust anchor.
    case basic(trustedChain: Bool)
}
