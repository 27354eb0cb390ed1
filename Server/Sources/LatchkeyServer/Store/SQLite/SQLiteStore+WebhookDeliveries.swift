import Foundation
import GRDB

/// An audit event waiting for delivery to one webhook (`AuditWebhooks`): one row per event and webhook that selects
/// it. It survives a restart; it is deleted once delivered or given up.
public struct QueuedWebhookDelivery: Sendable, Equatable {
    public var id: String
    /// The configured webhook's id (`audit_webhooks[].id`).
    public var webhookId: String
    /// The audit event's id: the receiver's idempotence key (`Latchkey-Event-Id`).
    public var eventId: String
    /// The audit event's type (`signin.failed`), for the logs and the `Latchkey-Event-Type` header.
    public var eventType: String
    /// The JSON body, fixed when queued (the event as `GET /admin/v1/audit-events` shows it); signed at each attempt.
    public var body: String
    /// Failed attempts so far.
    public var attempts: Int
    public var nextAttemptAt: Date
    public var createdAt: Date

    public init(
        id: String, webhookId: String, eventId: String, eventType: String, body: String, attempts: Int = 0, nextAttemptAt: Date,
        createdAt: Date
    ) {
        self.id = id
        self.webhookId = webhookId
        self.eventId = eventId
        self.eventType = eventType
        self.body = body
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
    }
}

/// How long a queued delivery may stay, whatever the webhook's settings: rows older than this are pruned with the
/// expired rows, so that a webhook removed from the configuration (whose rows no loop claims any more) leaves nothing
/// behind. Longer than the longest `max_age_seconds` a webhook may have.
enum WebhookDeliveryRetention {
    static let maximumAgeSeconds: TimeInterval = 7 * 86400
    static let pruneAfterSeconds: TimeInterval = 8 * 86400
}

/// The webhook delivery queue.
extension SQLiteStore {
    static func migrateWebhookDeliveries(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE webhook_deliveries (
                    id TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL, body TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, created_at REAL NOT NULL);
                CREATE INDEX webhook_deliveries_due ON webhook_deliveries(webhook_id, next_attempt_at, created_at);
                CREATE INDEX webhook_deliveries_created ON webhook_deliveries(created_at);
                """)
    }

    public func enqueueWebhookDelivery(_ delivery: QueuedWebhookDelivery, limit: Int, share: WebhookQueueShare?) async throws -> Bool {
        try await pool.write { db in
            let waiting =
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ?", arguments: [delivery.webhookId]) ?? 0
            guard waiting < limit else { return false }
            if let share, share.covers(delivery.eventType) {
                let marks = share.eventTypes.map { _ in "?" }.joined(separator: ", ")
                let sharing =
                    try Int.fetchOne(
                        db, sql: "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ? AND event_type IN (\(marks))",
                        arguments: StatementArguments([delivery.webhookId] + share.eventTypes)) ?? 0
                guard sharing < share.limit else { return false }
            }
            try db.execute(
                sql: """
                    INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    delivery.id, delivery.webhookId, delivery.eventId, delivery.eventType, delivery.body, delivery.attempts,
                    delivery.nextAttemptAt.timeIntervalSince1970, delivery.createdAt.timeIntervalSince1970
                ])
            return true
        }
    }

    public func claimDueWebhookDeliveries(webhookId: String, now: Date, leaseUntil: Date, limit: Int) async throws -> [QueuedWebhookDelivery] {
        try await pool.write { db in
            let due = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND next_attempt_at <= ?
                    ORDER BY next_attempt_at, created_at, id LIMIT ?
                    """,
                arguments: [webhookId, now.timeIntervalSince1970, limit]
            ).map { row in
                QueuedWebhookDelivery(
                    id: row["id"], webhookId: row["webhook_id"], eventId: row["event_id"], eventType: row["event_type"], body: row["body"],
                    attempts: row["attempts"], nextAttemptAt: Self.date(row["next_attempt_at"]) ?? now,
                    createdAt: Self.date(row["created_at"]) ?? now)
            }
            for delivery in due {
                try db.execute(
                    sql: "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ?",
                    arguments: [leaseUntil.timeIntervalSince1970, delivery.id])
            }
            return due
        }
    }

    public func rescheduleWebhookDelivery(id: String, attempts: Int, nextAttemptAt: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE webhook_deliveries SET attempts = ?, next_attempt_at = ? WHERE id = ?",
                arguments: [attempts, nextAttemptAt.timeIntervalSince1970, id])
        }
    }

    public func deleteWebhookDelivery(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM webhook_deliveries WHERE id = ?", arguments: [id]) }
    }

    public func webhookQueueDepths() async throws -> [String: Int] {
        try await pool.read { db in
            var depths: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT webhook_id, COUNT(*) AS waiting FROM webhook_deliveries GROUP BY webhook_id") {
                depths[row["webhook_id"]] = row["waiting"]
            }
            return depths
        }
    }
}
