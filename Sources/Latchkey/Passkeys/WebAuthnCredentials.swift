import Foundation

/// A new passkey, as an authenticator returns it (`AuthenticatorAttestationResponse` with its credential).
public struct RegistrationCredential: Sendable, Equatable {
    /// The credential ID, base64url (the `id` member).
    public var id: String
    /// The credential ID, raw.
    public var rawId: Data
    /// The exact bytes the authenticator's client signed over (`{"type":"webauthn.create", …}`).
    public var clientDataJSON: Data
    /// CBOR `{fmt, attStmt, authData}`.
    public var attestationObject: Data
    /// How the authenticator can be reached (`internal` for platform authenticators).
    public var transports: [String]?
    /// `platform` or `cross-platform`, when known.
    public var authenticatorAttachment: String?

    /// A registration result; `id` is derived from `rawId`.
    public init(rawId: Data, clientDataJSON: Data, attestationObject: Data, transports: [String]? = nil, authenticatorAttachment: String? = nil) {
        self.id = Base64URL.encode(rawId); self.rawId = rawId; self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject; self.transports = transports; self.authenticatorAttachment = authenticatorAttachment
    }

    /// ReachFive's `public_key_credential`: `{id, raw_id, type, response: {attestation_object, client_data_json}}`.
    public var reachFiveJSON: JSONValue {
        .object([
            "id": .string(id), "raw_id": .string(Base64URL.encode(rawId)), "type": .string("public-key"),
            "response": .object([
                "attestation_object": .string(Base64URL.encode(attestationObject)),
                "client_data_json": .string(Base64URL.encode(clientDataJSON))
            ])
        ])
    }

    /// W3C `RegistrationResponseJSON` (WebAuthn Level 3 §5.1), what `PublicKeyCredential.toJSON()` produces.
    public var w3cJSON: JSONValue {
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(clientDataJSON)),
            "attestationObject": .string(Base64URL.encode(attestationObject))
        ]
        response["transports"] = .array((transports ?? []).map(JSONValue.string))
        var out: [String: JSONValue] = [
            "id": .string(id), "rawId": .string(Base64URL.encode(rawId)), "type": .string("public-key"),
            "response": .object(response), "clientExtensionResults": .object([:])
        ]
        if let authenticatorAttachment { out["authenticatorAttachment"] = .string(authenticatorAttachment) }
        return .object(out)
    }
}

/// A passkey sign-in, as an authenticator returns it (`AuthenticatorAssertionResponse` with its credential).
public struct AssertionCredential: Sendable, Equatable {
    /// The credential ID, base64url.
    public var id: String
    /// The credential ID, raw.
    public var rawId: Data
    /// The exact bytes the signature covers (hashed).
    public var clientDataJSON: Data
    /// RP ID hash, flags, counter (WebAuthn §6.1).
    public var authenticatorData: Data
    /// ES256: an ASN.1 DER ECDSA signature over `authenticatorData || SHA-256(clientDataJSON)`.
    public var signature: Data
    /// The user handle stored with a discoverable credential; nil when the authenticator has none.
    public var userHandle: Data?
    /// `platform` or `cross-platform`, when known.
    public var authenticatorAttachment: String?

    /// An assertion result; `id` is derived from `rawId`.
    public init(
        rawId: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data, userHandle: Data?,
        authenticatorAttachment: String? = nil
    ) {
        self.id = Base64URL.encode(rawId); self.rawId = rawId; self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData; self.signature = signature; self.userHandle = userHandle
        self.authenticatorAttachment = authenticatorAttachment
    }

    /// ReachFive's `/webauthn/authentication` body: `{id, raw_id, type, response: {authenticator_data, client_data_json,
    /// signature, user_handle}}` (`user_handle` left out when there is none).
    public var reachFiveJSON: JSONValue {
        var response: [String: JSONValue] = [
            "authenticator_data": .string(Base64URL.encode(authenticatorData)),
            "client_data_json": .string(Base64URL.encode(clientDataJSON)),
            "signature": .string(Base64URL.encode(signature))
        ]
        if let userHandle { response["user_handle"] = .string(Base64URL.encode(userHandle)) }
        return .object([
            "id": .string(id), "raw_id": .string(Base64URL.encode(rawId)), "type": .string("public-key"),
            "response": .object(response)
        ])
    }

    /// W3C `AuthenticationResponseJSON` (WebAuthn Level 3 §5.1).
    public var w3cJSON: JSONValue {
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(clientDataJSON)),
            "authenticatorData": .string(Base64URL.encode(authenticatorData)),
            "signature": .string(Base64URL.encode(signature))
        ]
        if let userHandle { response["userHandle"] = .string(Base64URL.encode(userHandle)) }
        var out: [String: JSONValue] = [
            "id": .string(id), "rawId": .string(Base64URL.encode(rawId)), "type": .string("public-key"),
            "response": .object(response), "clientExtensionResults": .object([:])
        ]
        if let authenticatorAttachment { out["authenticatorAttachment"] = .string(authenticatorAttachment) }
        return .object(out)
    }
}

/// `CollectedClientData` (WebAuthn §5.8.1), serialised the way browsers do: `type`, `challenge`, `origin` and
/// `crossOrigin` in that order, so relying parties with naive checks accept it too.
public enum ClientData {
    /// - Parameters:
    ///   - type: `webauthn.create` or `webauthn.get`.
    ///   - challenge: the decoded challenge; it is written base64url without padding.
    ///   - origin: the origin of the page or app (`scheme://host[:port]`).
    public static func json(type: String, challenge: Data, origin: String) -> Data {
        Data(
            "{\"type\":\(quoted(type)),\"challenge\":\(quoted(Base64URL.encode(challenge))),\"origin\":\(quoted(origin)),\"crossOrigin\":false}".utf8)
    }

    private static func quoted(_ s: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(s)).flatMap { String(data: $0, encoding: .utf8) } ?? "\"\""
    }
}
