import Foundation

/// Why a WebAuthn ceremony was refused. Each case maps to one rule of WebAuthn Level 3 §7.1/§7.2, so callers can log
/// precisely and tests can assert that a failure happened for the right reason. None of the messages contain secrets.
enum WebAuthnError: Error, Sendable, Equatable, CustomStringConvertible {
    /// CBOR, JSON or authenticator-data structure is wrong.
    case malformed(String)
    /// `clientDataJSON.type` is not the ceremony's type (`webauthn.create` / `webauthn.get`).
    case wrongType(expected: String)
    case challengeMismatch
    /// The origin (or, for cross-origin iframes, the reason) that was refused.
    case originNotAllowed(String)
    case rpIdMismatch
    case userNotPresent
    case userVerificationRequired
    /// A COSE algorithm identifier we do not implement or the relying party does not allow.
    case unsupportedAlgorithm(Int)
    case unsupportedAttestationFormat(String)
    /// The attestation statement is present but wrong (bad signature, certificate requirements not met …).
    case invalidAttestation(String)
    /// The attestation is internally valid but does not chain to a configured trust anchor.
    case untrustedAttestation(String)
    case invalidSignature
    /// The signature counter did not increase: a possible cloned authenticator (§6.1.1).
    case signCountRegression(stored: UInt32, received: UInt32)

    var description: String {
        switch self {
        case .malformed(let detail): return "malformed WebAuthn data: \(detail)"
        case .wrongType(let expected): return "client data type is not \(expected)"
        case .challengeMismatch: return "the challenge does not match the one issued"
        case .originNotAllowed(let origin): return "origin not allowed: \(origin)"
        case .rpIdMismatch: return "the authenticator data is for another relying party ID"
        case .userNotPresent: return "the authenticator did not report user presence"
        case .userVerificationRequired: return "user verification is required but the authenticator did not perform it"
        case .unsupportedAlgorithm(let alg): return "COSE algorithm \(alg) is not supported or not allowed"
        case .unsupportedAttestationFormat(let format):
            return "attestation format '\(format)' is not supported (supported: none, packed); request attestation 'none' to accept any authenticator"
        case .invalidAttestation(let detail): return "invalid attestation: \(detail)"
        case .untrustedAttestation(let detail): return "attestation not trusted: \(detail)"
        case .invalidSignature: return "the assertion signature does not verify"
        case .signCountRegression(let stored, let received):
            return "signature counter did not increase (stored \(stored), received \(received)); the authenticator may be cloned"
        }
    }
}

/// Helpers shared by the WebAuthn verification code.
enum WebAuthnSupport {
    /// Compares without an early exit, so timing does not reveal how many leading bytes of a challenge matched.
    static func constantTimeEquals(_ a: Data, _ b: Data) -> Bool {
        Secrets.constantTimeEquals(a, b)
    }

    /// Runs a CBOR decode, reporting failures as `WebAuthnError.malformed` so the relying-party API has one error type.
    static func cbor<T>(_ context: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as CBORError {
            throw WebAuthnError.malformed("\(context): \(error)")
        }
    }
}
