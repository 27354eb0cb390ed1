import Foundation

/// Applications registered and managed at runtime (RFC 7591, RFC 7592): created with a generated id and secret,
/// read, replaced, deleted, their secret rotated. Each change is one row written to the store, which every request
/// reads, so it is in force on every instance at once; each is audited with who made it.
///
/// Credentials the server makes are 256-bit random values: the secret and the registration access token are kept as
/// their SHA-256 (no offline guess can find a value of that size, so the key derivation that protects an operator's
/// chosen secret would buy nothing) and shown only in the answer that made them.
struct ClientRegistrations: Sendable {
    let store: any ClientStore
    let clock: ServerClock
    let policy: ClientRegistrationPolicy
    /// The ids of the server's identity providers (what `latchkey_identity_providers` may name).
    let providers: Set<String>
    let audit: AuditTrail
    /// Checks a `sector_identifier_uri` against the redirect URIs (fetched at each registration and update).
    let sectors: SectorDocuments

    /// The longest grace period a rotation may give the previous secret: 30 days.
    static let maxGracePeriodSeconds = 30 * 24 * 3600

    /// A registration's or an update's outcome, with the credentials made by it (shown once).
    struct Outcome: Sendable {
        var record: ClientRecord
        var secret: String?
        var registrationToken: String?
        var trimmed: [String: [String]]
    }

    /// `via` names the way the change came when it is not the registration API (`console`), for the audit trail.
    func register(_ metadata: ClientMetadata, actor: String, via: String? = nil, origin: AuditOrigin) async throws -> Outcome {
        let clientId = "lk-" + Secrets.identifier()
        let settings = try metadata.settings(clientId: clientId, policy: policy, providers: providers)
        try await sectors.check(settings.configuration)
        let secret = settings.configuration.usesSecret ? Secrets.token() : nil
        let registrationToken = Secrets.token()
        let record = ClientRecord(
            configuration: settings.configuration, secretHash: secret.map(Secrets.digest), origin: .registration,
            registrationTokenHash: Secrets.digest(registrationToken), issuedAt: clock.now, registeredBy: actor)
        try await store.insertClient(record)
        await audit.record(
            .applicationRegistered, subject: nil, actor: actor,
            details: Self.with(via, Self.summary(settings.configuration, trimmed: settings.trimmed)),
            origin: origin.for(client: clientId))
        return Outcome(record: record, secret: secret, registrationToken: registrationToken, trimmed: settings.trimmed)
    }

    /// RFC 7592 §2.2: the metadata replace the application's (absent members take their defaults); `client_id` must
    /// be the application's, and a `client_secret`, when sent, its current one.
    func update(
        _ record: ClientRecord, with metadata: ClientMetadata, actor: String, via: String? = nil, origin: AuditOrigin
    ) async throws -> Outcome {
        let clientId = record.configuration.clientId
        guard let sent = metadata.clientId, Secrets.constantTimeEquals(sent, clientId) else {
            throw OAuthError(.invalidRequest, "the body's client_id must be the application's own (RFC 7592 §2.2)")
        }
        if let presented = metadata.clientSecret {
            guard let stored = record.secretHash, Secrets.constantTimeEquals(Secrets.digest(presented), stored) else {
                throw OAuthError(.invalidRequest, "client_secret is not the application's current secret")
            }
        }
        let settings = try metadata.settings(clientId: clientId, policy: policy, providers: providers, previous: record.configuration)
        try await sectors.check(settings.configuration)
        var updated = record
        updated.configuration = settings.configuration
        var secret: String?
        if !settings.configuration.usesSecret {  // public, or private_key_jwt: no secret
            updated.secretHash = nil
            updated.previousSecretHash = nil
            updated.previousSecretExpiresAt = nil
        } else if record.secretHash == nil {
            // Made to use a secret: it needs one, which only this answer shows.
            let fresh = Secrets.token()
            secret = fresh
            updated.secretHash = Secrets.digest(fresh)
        }
        guard try await store.updateClient(updated) else { throw RegistrationRefusal.unknownClient }
        var details = Self.changes(from: record.configuration, to: settings.configuration)
        if let trimmed = Self.trimmedSummary(settings.trimmed) { details["trimmed"] = trimmed }
        await audit.record(.applicationUpdated, subject: nil, actor: actor, details: Self.with(via, details), origin: origin.for(client: clientId))
        return Outcome(record: updated, secret: secret, registrationToken: nil, trimmed: settings.trimmed)
    }

    /// Deletes the application: its tokens stop working at once (`ClientStore.deleteClient`).
    func delete(_ record: ClientRecord, actor: String, via: String? = nil, origin: AuditOrigin) async throws {
        let clientId = record.configuration.clientId
        guard try await store.deleteClient(id: clientId, now: clock.now) else { throw RegistrationRefusal.unknownClient }
        await audit.record(.applicationDeleted, subject: nil, actor: actor, details: Self.with(via, [:]), origin: origin.for(client: clientId))
    }

    /// A new secret; the current one stays valid for `graceSeconds` more (0: it stops now), so the application's
    /// instances can move over one by one. A secret still in an earlier grace period stops now.
    func rotateSecret(
        _ record: ClientRecord, graceSeconds: Int, actor: String, via: String? = nil, origin: AuditOrigin
    ) async throws -> RotatedSecret {
        let clientId = record.configuration.clientId
        guard record.configuration.usesSecret, let current = record.secretHash else {
            throw OAuthError(
                .invalidRequest,
                "an application with token_endpoint_auth_method \(record.configuration.tokenEndpointAuthMethod.rawValue) has no secret to rotate")
        }
        guard (0...Self.maxGracePeriodSeconds).contains(graceSeconds) else {
            throw OAuthError(.invalidRequest, "grace_period_seconds must be from 0 to \(Self.maxGracePeriodSeconds)")
        }
        let now = clock.now
        let secret = Secrets.token()
        var updated = record
        updated.secretHash = Secrets.digest(secret)
        updated.previousSecretHash = graceSeconds > 0 ? current : nil
        updated.previousSecretExpiresAt = graceSeconds > 0 ? now.addingTimeInterval(TimeInterval(graceSeconds)) : nil
        guard try await store.updateClient(updated) else { throw RegistrationRefusal.unknownClient }
        await audit.record(
            .applicationSecretRotated, subject: nil, actor: actor, details: Self.with(via, ["grace_period_seconds": String(graceSeconds)]),
            origin: origin.for(client: clientId))
        return RotatedSecret(
            clientId: clientId, clientSecret: secret,
            previousSecretExpiresAt: Int((updated.previousSecretExpiresAt ?? now).timeIntervalSince1970))
    }

    /// `details` with `via` when there is one.
    private static func with(_ via: String?, _ details: [String: String]) -> [String: String] {
        guard let via else { return details }
        return details.merging(["via": via]) { _, new in new }
    }

    /// The audit details of a registration: what kind of application, never a secret.
    private static func summary(_ c: ClientConfiguration, trimmed: [String: [String]]) -> [String: String] {
        var details = [
            "grant_types": c.grantTypes.map(\.rawValue).joined(separator: " "), "token_endpoint_auth_method": c.tokenEndpointAuthMethod.rawValue,
            "scope": c.scopes.joined(separator: " "), "app_type": c.appType.rawValue
        ]
        if let trimmed = trimmedSummary(trimmed) { details["trimmed"] = trimmed }
        return details
    }

    /// `scope: scim.admin; latchkey_registration: open`
    private static func trimmedSummary(_ trimmed: [String: [String]]) -> String? {
        guard !trimmed.isEmpty else { return nil }
        return trimmed.keys.sorted().map { "\($0): \(trimmed[$0, default: []].joined(separator: " "))" }.joined(separator: "; ")
    }

    /// The names of the settings an update changed (`changed: client_name redirect_uris`, alphabetical), for the audit
    /// trail: every registration member (`ClientMetadata.members`) but the credentials and the derived
    /// `application_type`.
    static func changes(from old: ClientConfiguration, to new: ClientConfiguration) -> [String: String] {
        let before = ClientMetadata(describing: old), after = ClientMetadata(describing: new)
        let unlisted: Set = ["client_id", "client_secret", "application_type"]
        let changed = ClientMetadata.members.filter { !unlisted.contains($0.name) && !$0.same(before, after) }.map(\.name).sorted()
        var details = ["changed": changed.joined(separator: " ")]
        // Where codes may be sent is what an attacker with management rights would change: the trail keeps both
        // lists, so a redirect URI added by the wrong hand can be seen and undone.
        if old.redirectUris != new.redirectUris {
            details["redirect_uris_old"] = old.redirectUris.joined(separator: " ")
            details["redirect_uris_new"] = new.redirectUris.joined(separator: " ")
        }
        return details
    }
}

/// Refusals of the registration management endpoints that are not metadata errors.
enum RegistrationRefusal {
    /// RFC 7592 §2.1: an unknown application is answered 401, as a wrong token is, so the answer does not tell
    /// whether an id exists.
    static let unknownClient = OAuthError(
        .invalidToken, "the registration access token is not valid for this application", challenge: .bearer)
}

extension AuditOrigin {
    /// The same origin, about `client`.
    func `for`(client: String) -> AuditOrigin {
        AuditOrigin(client: client, address: address, logger: logger)
    }
}
