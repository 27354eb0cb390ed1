import Foundation
import Hummingbird

/// `GET /users/me/export`: what the server holds about the signed-in person, as one JSON document they can keep (GDPR
/// Art. 15 access and Art. 20 portability): the profile, linked identities, passkeys (metadata), second factors
/// (kinds), open sessions and grants, consents, a pending email change or scheduled deletion, and the audit events
/// about the account.
///
/// Never a secret, digest or code: no password hash, TOTP key, public-key bytes, session or token digest, recovery or
/// email code (`AccountExportTests` scans the document for each). Every member is built here from named fields, so a
/// new secret column in a record cannot leak into it by being there.
struct AccountExport: Sendable {
    let store:
        any UserStore & SecondFactorStore & RecoveryCodeStore & PasskeyStore & FederatedIdentityStore & ConsentStore & AccountDeletionStore
            & AuditStore & SessionStore & TokenStore & ClientStore
    let clock: ServerClock
    /// The newest audit events included; older ones are left out (`audit_events_truncated`).
    static let auditEventLimit = 1000

    /// The document as a download (`account-data.json`), the export audited: what the account API and the account
    /// page answer, once the caller's sign-in is known to be recent.
    func attachment(for user: UserRecord, caller: ResourceCaller, audit: AuditTrail, origin: AuditOrigin) async throws -> Response {
        let document = try await document(for: user, caller: caller)
        await audit.record(.accountExported, subject: user.id, origin: origin)
        var response = try Responses.json(document, noStore: true)
        response.headers[.contentDisposition] = "attachment; filename=\"account-data.json\""
        return response
    }

    func document(for user: UserRecord, caller: ResourceCaller) async throws -> AccountExportDocument {
        let formatter = ISO8601DateFormatter()
        func time(_ date: Date?) -> String? { date.map(formatter.string(from:)) }
        var events: [AuditEvent] = []
        var cursor: AuditCursor?
        while events.count <= Self.auditEventLimit {  // one more than kept tells whether any were left out
            let page = try await store.auditEvents(AuditQuery(subject: user.id, after: cursor, limit: 200))
            events += page
            guard page.count == 200, let last = page.last else { break }
            cursor = AuditCursor(at: last.at, id: last.id)
        }
        let truncated = events.count > Self.auditEventLimit
        let pendingEmail = try await store.emailChange(userId: user.id).flatMap { $0.expiresAt > clock.now ? $0.email : nil }
        // The factors' kinds and dates, and the recovery codes counted: never a secret or a digest.
        var factors: [AccountExportDocument.SecondFactor] = try await store.factors(userId: user.id).map {
            .init(kind: $0.kind.rawValue, enrolledAt: formatter.string(from: $0.createdAt))
        }
        if let codes = try await store.recoveryCodes(userId: user.id) {
            factors.append(.init(kind: "recovery_codes", enrolledAt: formatter.string(from: codes.createdAt), remaining: codes.remaining))
        }
        return AccountExportDocument(
            exportedAt: formatter.string(from: clock.now),
            profile: .init(
                id: user.id, username: user.username, attributes: user.claims, createdAt: formatter.string(from: user.createdAt),
                updatedAt: time(user.updatedAt), hasPassword: !user.passwordHash.isEmpty, pendingEmail: pendingEmail),
            linkedIdentities: try await store.federatedIdentities(userId: user.id).map {
                .init(provider: $0.provider, subject: $0.subject, linkedAt: formatter.string(from: $0.createdAt))
            },
            passkeys: try await store.passkeys(userId: user.id).map {
                .init(
                    credentialId: $0.id, name: $0.friendlyName, createdAt: formatter.string(from: $0.createdAt), lastUsedAt: time($0.lastUsedAt),
                    synced: $0.backedUp)
            },
            secondFactors: factors,
            sessions: try await SessionListing(store: store, clock: clock).body(of: user.id, caller: caller),
            consents: try await store.consents(userId: user.id).map {
                .init(
                    clientId: $0.clientId, scopes: $0.scopes, grantedAt: formatter.string(from: $0.grantedAt),
                    updatedAt: formatter.string(from: $0.updatedAt))
            },
            deletionDueAt: try await time(store.accountDeletion(userId: user.id)?.dueAt),
            auditEvents: events.prefix(Self.auditEventLimit).map {
                .init(
                    at: formatter.string(from: $0.at), type: $0.type.rawValue, outcome: $0.outcome.rawValue, clientId: $0.clientId,
                    clientAddress: $0.clientAddress, details: $0.details)
            },
            auditEventsTruncated: truncated)
    }
}

/// The account export's document (`GET /users/me/export`).
struct AccountExportDocument: Encodable {
    struct Profile: Encodable {
        var id: String
        var username: String
        /// Every claim the account has (name, email, phone number, locale …), as stored.
        var attributes: [String: String]
        var createdAt: String
        var updatedAt: String?
        /// Whether the account has a password (never the password or its hash).
        var hasPassword: Bool
        /// A new address waiting for its code.
        var pendingEmail: String?
        enum CodingKeys: String, CodingKey {
            case id, username, attributes, createdAt = "created_at", updatedAt = "updated_at", hasPassword = "has_password"
            case pendingEmail = "pending_email"
        }
    }
    struct LinkedIdentity: Encodable {
        var provider: String
        var subject: String
        var linkedAt: String
        enum CodingKeys: String, CodingKey { case provider, subject, linkedAt = "linked_at" }
    }
    struct Passkey: Encodable {
        var credentialId: String
        var name: String
        var createdAt: String
        var lastUsedAt: String?
        /// Synced by the platform (iCloud Keychain, Google Password Manager …).
        var synced: Bool
        enum CodingKeys: String, CodingKey {
            case credentialId = "credential_id", name, createdAt = "created_at", lastUsedAt = "last_used_at", synced
        }
    }
    struct SecondFactor: Encodable {
        var kind: String
        var enrolledAt: String
        /// Recovery codes only: how many are unused (the codes are not kept).
        var remaining: Int?
        enum CodingKeys: String, CodingKey { case kind, enrolledAt = "enrolled_at", remaining }
    }
    struct Consent: Encodable {
        var clientId: String
        var scopes: [String]
        var grantedAt: String
        var updatedAt: String
        enum CodingKeys: String, CodingKey { case clientId = "client_id", scopes, grantedAt = "granted_at", updatedAt = "updated_at" }
    }
    struct Event: Encodable {
        var at: String
        var type: String
        var outcome: String
        var clientId: String?
        var clientAddress: String?
        var details: [String: String]
        enum CodingKeys: String, CodingKey { case at, type, outcome, clientId = "client_id", clientAddress = "client_address", details }
    }

    var exportedAt: String
    var profile: Profile
    var linkedIdentities: [LinkedIdentity]
    var passkeys: [Passkey]
    var secondFactors: [SecondFactor]
    var sessions: SessionsBody
    var consents: [Consent]
    /// When the account is deleted, if its owner asked for it and a grace period keeps it until then.
    var deletionDueAt: String?
    /// Newest first.
    var auditEvents: [Event]
    var auditEventsTruncated: Bool

    enum CodingKeys: String, CodingKey {
        case exportedAt = "exported_at", profile, linkedIdentities = "linked_identities", passkeys, secondFactors = "second_factors"
        case sessions, consents, deletionDueAt = "deletion_due_at", auditEvents = "audit_events", auditEventsTruncated = "audit_events_truncated"
    }
}
