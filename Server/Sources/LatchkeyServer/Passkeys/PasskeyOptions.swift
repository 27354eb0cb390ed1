import Foundation

/// `PublicKeyCredentialCreationOptions` as the server sends them. Property names are the W3C ones (the thunderID
/// dialect's `passkeyCreationOptions`); encoded with `.convertToSnakeCase` they become the reachFive shape
/// (`pub_key_cred_params`, `display_name`, `authenticator_selection` …). Binary values are base64url.
struct PasskeyCreationOptions: Codable, Sendable, Equatable {
    struct RelyingParty: Codable, Sendable, Equatable { var id: String; var name: String }
    struct User: Codable, Sendable, Equatable { var id: String; var name: String; var displayName: String }
    struct Parameter: Codable, Sendable, Equatable { var type = "public-key"; var alg: Int }
    struct Selection: Codable, Sendable, Equatable {
        var residentKey: String
        var requireResidentKey: Bool
        var userVerification: String
    }

    var rp: RelyingParty
    var user: User
    var challenge: String
    var pubKeyCredParams: [Parameter]
    var timeout: Int
    var excludeCredentials: [PasskeyDescriptor]
    var authenticatorSelection: Selection
    var attestation: String
}

/// `PublicKeyCredentialRequestOptions` (same naming rule as `PasskeyCreationOptions`).
struct PasskeyRequestOptions: Codable, Sendable, Equatable {
    var challenge: String
    var timeout: Int
    var rpId: String
    var allowCredentials: [PasskeyDescriptor]
    var userVerification: String
}

struct PasskeyDescriptor: Codable, Sendable, Equatable {
    var type = "public-key"
    var id: String
}

/// A registration response (`AuthenticatorAttestationResponse`), whichever dialect carried it.
struct PasskeyRegistrationResponse: Sendable {
    var credentialId: Data
    var clientDataJSON: Data
    var attestationObject: Data
}

/// An authentication response (`AuthenticatorAssertionResponse`), whichever dialect carried it.
struct PasskeyAssertionResponse: Sendable {
    var credentialId: Data
    var clientDataJSON: Data
    var authenticatorData: Data
    var signature: Data
    var userHandle: Data?
}

enum PasskeyJSON {
    /// The reachFive wire: snake_case keys, sorted for stable output.
    static func snakeCase(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// The W3C/thunderID wire: camelCase, as a JSON string (it travels inside `additionalData`).
    static func camelCaseString(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
