import Foundation

/// What a queued delivery is, which decides the deliverer that sends it: the queue table has one row per delivery of
/// any kind (`deliveries.kind`).
public enum DeliveryKind: String, Sendable, CaseIterable {
    /// An email for the SMTP relay (`MailDeliverer`).
    case mail
    /// An audit event for one configured webhook (`WebhookDeliverer`).
    case auditWebhook = "audit_webhook"
    /// A logout token for one application's `backchannel_logout_uri` (`LogoutDeliverer`).
    case backchannelLogout = "backchannel_logout"
}

/// One message waiting in the store for delivery (`DeliveryStore`): it survives a restart, is claimed under a lease so
/// that instances sharing the store never send it at once, and is deleted once delivered or given up.
public struct QueuedDelivery: Sendable, Equatable {
    public var id: String
    public var kind: DeliveryKind
    /// Where it goes, in the kind's terms: a webhook's id, an application's client id, the relay (`MailDeliverer`).
    /// Each destination has its own queue: its limit, its order, and a receiver that does not answer holds up only it.
    public var destination: String
    /// The receiver's idempotence key: the same at every attempt (`Latchkey-Event-Id`, a logout token's `jti`, an
    /// email's `Message-ID`).
    public var eventId: String
    /// What it is about (`signin.failed`, `backchannel_logout`, `email`), for the logs and a queue's share.
    public var eventType: String
    /// The kind's payload, fixed when queued (a webhook's JSON body, a logout notice, an email), text.
    public var body: String
    /// Failed attempts so far.
    public var attempts: Int
    public var nextAttemptAt: Date
    public var createdAt: Date

    public init(
        id: String, kind: DeliveryKind, destination: String, eventId: String, eventType: String, body: String, attempts: Int = 0,
        nextAttemptAt: Date, createdAt: Date
    ) {
        self.id = id
        self.kind = kind
        self.destination = destination
        self.eventId = eventId
        self.eventType = eventType
        self.body = body
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
    }
}

/// The part of one destination's queue some event types may fill (`AuditWebhook.lowPriorityQueueLimit`).
public struct DeliveryQueueShare: Sendable, Equatable {
    /// The event types (`client.authentication_failed` …) that share the limit.
    public var eventTypes: [String]
    public var limit: Int

    public init(eventTypes: [String], limit: Int) {
        self.eventTypes = eventTypes
        self.limit = limit
    }

    /// Whether a delivery of `eventType` counts against this share.
    func covers(_ eventType: String) -> Bool { eventTypes.contains(eventType) }
}

/// How long a queued delivery may stay, whatever its kind's settings: rows older than this are pruned with the expired
/// rows, so that a destination removed from the configuration (whose rows no loop claims any more) leaves nothing
/// behind. Longer than the longest `max_age_seconds` a policy may have.
enum DeliveryRetention {
    static let maximumAgeSeconds: TimeInterval = 7 * 86400
    static let pruneAfterSeconds: TimeInterval = 8 * 86400
}
