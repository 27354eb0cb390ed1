import Foundation
import LatchkeyJOSE

/// One security-relevant event, as the audit trail keeps it: a row in the store (`AuditStore`), one structured log
/// line, and what `GET /admin/v1/audit-events` answers.
///
/// Never a secret: no password, code, token, secret or digest of one goes into any field. `details` holds only facts
/// from closed sets or identifiers (the sign-in method, a reason key, a provider id, attribute *names*), never
/// values a person typed.
public struct AuditEvent: Sendable, Equatable, Codable {
    /// What happened. The raw values are the stable names operators filter on (`type=signin.failed`).
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case signInSucceeded = "signin.succeeded"
        case signInFailed = "signin.failed"
        /// An existing browser session answered an authorization request (single sign-on): no credential was shown.
        case signInSessionReused = "signin.session_reused"
        /// Repeated wrong passwords locked the account (for the address, or for every address).
        case accountLocked = "account.locked"
        /// An administrator lifted an account's password lockout.
        case accountUnlocked = "account.unlocked"
        /// A second factor (TOTP, emailed codes) was enrolled, by an operator or by the person (`/users/me/factors`):
        /// `details.factor`, and `replaced` when a new authenticator took the place of the old one.
        case mfaEnrolled = "mfa.enrolled"
        /// The person removed one of their second factors (`details.factor`).
        case mfaRemoved = "mfa.removed"
        /// A recovery code stood in for the second factor at a sign-in (`details.remaining`: unused codes left,
        /// `details.via`). Generating a set is `mfa.enrolled` with `factor: recovery_codes`.
        case recoveryCodeUsed = "mfa.recovery_code_used"
        case passkeyAdded = "passkey.added"
        case passkeyRemoved = "passkey.removed"
        /// The signed-in user changed the password (knowing the current one).
        case passwordChanged = "password.changed"
        /// The password was set through a recovery (an emailed code), not knowing the current one.
        case passwordReset = "password.reset"
        case emailChangeRequested = "email.change_requested"
        case emailChangeConfirmed = "email.change_confirmed"
        /// A rotated refresh token was presented again: its family was revoked.
        case refreshTokenReplayed = "token.refresh_replayed"
        /// A client failed to authenticate at a token, revocation, introspection, PAR or device endpoint.
        case clientAuthenticationFailed = "client.authentication_failed"
        /// The failed client authentications of one address past its budget in one window
        /// (`max_audited_client_auth_failures_per_address` per `address_window_seconds`), which were not recorded one by
        /// one: `details.count` says how many. One per address and window, written once the window has closed.
        case clientAuthenticationFailedAggregated = "client.authentication_failed_aggregated"
        /// A token was revoked: by its client (RFC 7009), or a grant (a refresh-token family) by its user or an
        /// administrator (`details.via`).
        case tokenRevoked = "token.revoked"
        /// A sign-in session was ended by its user or an administrator (`details.sessions`: `one` or `all`), with
        /// the grants signed in through it.
        case sessionEnded = "session.ended"
        /// An identity at another provider was linked to an account: `how` is `manual` (the signed-in person linked it),
        /// `automatic` (a first sign-in, by the verified email both sides share) or `jit` (to the account a first sign-in
        /// created).
        case federatedIdentityLinked = "federation.linked"
        case federatedIdentityUnlinked = "federation.unlinked"
        /// An administrator created, changed or deleted an account (SCIM); `user.created` also for an account a first
        /// federated sign-in made just in time (`via: federation`).
        case userCreated = "user.created"
        case userUpdated = "user.updated"
        case userDeleted = "user.deleted"
        /// The account's owner asked to delete it and `account_deletion_grace_days` keeps it until `details.due`: its
        /// sessions ended and its tokens were revoked; signing in again restores it (`account.restored`). The deletion
        /// itself is `user.deleted` (`via: self` at once, `via: grace_ended` after the grace period).
        case accountDeletionRequested = "account.deletion_requested"
        /// The owner of an account scheduled for deletion signed in again: it is kept.
        case accountRestored = "account.restored"
        /// The person downloaded what the server holds about the account (`GET /users/me/export`).
        case accountExported = "account.exported"
        /// An application was registered through the API (RFC 7591), changed or deleted (RFC 7592), or its secret
        /// rotated; `details` name the changed settings, never a secret.
        case applicationRegistered = "application.registered"
        case applicationUpdated = "application.updated"
        case applicationDeleted = "application.deleted"
        case applicationSecretRotated = "application.secret_rotated"
        /// A signed-in person allowed a device's authorization request (RFC 8628) on the `/device` page.
        case deviceApproved = "device.approved"
        /// A signed-in person denied a device's authorization request on the `/device` page.
        case deviceDenied = "device.denied"
        /// A person consented to a third-party application's scopes on the consent page (`details.scope`: what the
        /// consent covers now).
        case consentGranted = "consent.granted"
        /// A person refused a third-party application on the consent page.
        case consentDenied = "consent.denied"
        /// A person (or an administrator) withdrew a consent; the application's grants for the person were revoked.
        case consentWithdrawn = "consent.withdrawn"
        /// Audit events that were not queued for a webhook (its queue, or its share for low-priority events, was full):
        /// recorded and sent to that webhook alone, ahead of the rest, once its queue has room again (`details.webhook`,
        /// `details.dropped`, `details.types`).
        case webhookGap = "webhook.gap"

        /// Events anyone can cause in bulk without credentials: a webhook keeps them to a share of its queue
        /// (`low_priority_queue_limit`), so that a flood of them cannot crowd out the events a SIEM must not miss.
        var isLowPriority: Bool {
            switch self {
            case .clientAuthenticationFailed, .clientAuthenticationFailedAggregated: true
            default: false
            }
        }
    }

    public enum Outcome: String, Sendable, Codable, CaseIterable {
        case success, failure
    }

    /// A unique, time-ordered id (also the pagination tiebreak for events of the same instant).
    public var id: String
    public var at: Date
    public var type: Kind
    public var outcome: Outcome
    /// Who acted: a user id, a client id (`client:<id>`), `operator` (the server's own API) or `anonymous`.
    public var actor: String
    /// The account the event is about, when there is one.
    public var subject: String?
    /// The application (client id) involved, when there is one.
    public var clientId: String?
    /// The caller's address (`ClientAddressMiddleware`: the peer, or the client a trusted proxy forwards for).
    public var clientAddress: String?
    /// The request's `X-Request-Id`: the key to its log lines.
    public var requestId: String?
    /// Small, non-secret facts: `method`, `reason`, `provider`, `attributes` …
    public var details: [String: String]

    public init(
        id: String, at: Date, type: Kind, outcome: Outcome, actor: String, subject: String? = nil, clientId: String? = nil,
        clientAddress: String? = nil, requestId: String? = nil, details: [String: String] = [:]
    ) {
        self.id = id
        self.at = at
        self.type = type
        self.outcome = outcome
        self.actor = actor
        self.subject = subject
        self.clientId = clientId
        self.clientAddress = clientAddress
        self.requestId = requestId
        self.details = details
    }

    /// The actor of an event no one identified caused.
    public static let anonymous = "anonymous"
    /// The actor of the server's own operator API (`IdentityServer.enrollTOTP` …).
    public static let operatorActor = "operator"
    /// The actor for a client acting for itself.
    public static func clientActor(_ clientId: String) -> String { "client:" + clientId }
}

/// Which events a query asks for (every filter optional, all of them must hold).
public struct AuditQuery: Sendable, Equatable {
    /// At or after.
    public var since: Date?
    /// Before.
    public var until: Date?
    public var subject: String?
    public var types: [AuditEvent.Kind]
    public var outcome: AuditEvent.Outcome?
    public var clientId: String?
    /// Events strictly older than this position in the (at, id) descending order: the last one of the previous page.
    public var after: AuditCursor?
    public var limit: Int

    public init(
        since: Date? = nil, until: Date? = nil, subject: String? = nil, types: [AuditEvent.Kind] = [],
        outcome: AuditEvent.Outcome? = nil, clientId: String? = nil, after: AuditCursor? = nil, limit: Int = 50
    ) {
        self.since = since
        self.until = until
        self.subject = subject
        self.types = types
        self.outcome = outcome
        self.clientId = clientId
        self.after = after
        self.limit = limit
    }
}

/// A keyset position in the newest-first order of events: stable while events are added (new ones come before the
/// first page, never inside a page already read) and while old ones are pruned.
public struct AuditCursor: Sendable, Equatable {
    public var at: Date
    public var id: String

    public init(at: Date, id: String) {
        self.at = at
        self.id = id
    }

    public init(after event: AuditEvent) { self.init(at: event.at, id: event.id) }

    /// Opaque to clients: base64url of `<seconds since 1970>|<id>`.
    public var token: String {
        Base64URL.encode(Data("\(at.timeIntervalSince1970.bitPattern)|\(id)".utf8))
    }

    public init?(token: String) {
        guard token.count <= 200, let data = Base64URL.decode(token), let text = String(data: data, encoding: .utf8) else { return nil }
        let parts = text.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let bits = UInt64(parts[0]), !parts[1].isEmpty else { return nil }
        let seconds = Double(bitPattern: bits)
        guard seconds.isFinite else { return nil }
        self.init(at: Date(timeIntervalSince1970: seconds), id: String(parts[1]))
    }
}
