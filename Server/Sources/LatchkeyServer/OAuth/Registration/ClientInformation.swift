import Foundation
import LatchkeyJOSE

/// The client information response (RFC 7591 §3.2.1, RFC 7592 §3): the registered metadata, with the credentials
/// only where they were just made (`client_secret` at registration, at an update that made the application
/// confidential and at a rotation; `registration_access_token` at registration). Secrets are stored hashed, so a read
/// cannot show them again.
struct ClientInformation: Encodable, Sendable {
    /// The registered metadata, written as registration reads them (`ClientMetadata.members`).
    var metadata: ClientMetadata
    var clientIdIssuedAt: Int?
    var clientSecretExpiresAt: Int?
    var registrationAccessToken: String?
    var registrationClientURI: String?
    /// What the registration policy removed from the request (absent when nothing was).
    var trimmed: [String: [String]]?
    /// `configuration` or `registration`: in the administrators' list only.
    var origin: String?

    /// Only where it was just made.
    var clientSecret: String? {
        get { metadata.clientSecret }
        set { metadata.clientSecret = newValue }
    }

    init(_ record: ClientRecord, registrationClientURI: String?) {
        let c = record.configuration
        metadata = ClientMetadata(describing: c)
        // OpenID Connect Registration §2's coarser type, answered beside `latchkey_app_type`.
        metadata.applicationType = c.appType == .browser ? "web" : "native"
        clientIdIssuedAt = record.issuedAt.map { Int($0.timeIntervalSince1970) }
        clientSecretExpiresAt = c.usesSecret ? 0 : nil  // RFC 7591 §3.2.1: 0, the secret does not expire
        self.registrationClientURI = registrationClientURI
    }

    enum CodingKeys: String, CodingKey {
        case clientIdIssuedAt = "client_id_issued_at", clientSecretExpiresAt = "client_secret_expires_at"
        case registrationAccessToken = "registration_access_token", registrationClientURI = "registration_client_uri"
        case trimmed = "latchkey_trimmed", origin = "latchkey_origin"
    }

    /// The metadata's members and the credentials and server members beside them, in one object.
    func encode(to encoder: any Encoder) throws {
        try metadata.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(clientIdIssuedAt, forKey: .clientIdIssuedAt)
        try container.encodeIfPresent(clientSecretExpiresAt, forKey: .clientSecretExpiresAt)
        try container.encodeIfPresent(registrationAccessToken, forKey: .registrationAccessToken)
        try container.encodeIfPresent(registrationClientURI, forKey: .registrationClientURI)
        try container.encodeIfPresent(trimmed, forKey: .trimmed)
        try container.encodeIfPresent(origin, forKey: .origin)
    }
}

/// The answer to a secret rotation (`POST /oauth2/register/{client_id}/secret`).
struct RotatedSecret: Encodable, Sendable {
    var clientId: String
    var clientSecret: String
    var clientSecretExpiresAt = 0
    /// Until when the previous secret is still accepted (seconds since 1970; now when the grace period is 0).
    var previousSecretExpiresAt: Int

    enum CodingKeys: String, CodingKey {
        case clientId = "client_id", clientSecret = "client_secret", clientSecretExpiresAt = "client_secret_expires_at"
        case previousSecretExpiresAt = "previous_secret_expires_at"
    }
}
