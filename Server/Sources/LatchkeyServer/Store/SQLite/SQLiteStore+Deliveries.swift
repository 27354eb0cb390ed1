import Foundation
import GRDB

/// The delivery queue (`DeliveryStore`): one table for every kind of delivery.
extension SQLiteStore {
    /// The mail queue of schema v4 (superseded by `deliveries`, v21).
    static func migrateMailQueue(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE mail_queue (
                    id TEXT PRIMARY KEY, recipient TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, created_at REAL NOT NULL);
                CREATE INDEX mail_queue_due ON mail_queue(next_attempt_at);
                """)
    }

    /// The webhook queue of schema v11 (superseded by `deliveries`, v21).
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

    /// The first schema kept mail in `mail_queue` and audit webhooks (and, under the prefix `backchannel_logout:`,
    /// logout notices) in `webhook_deliveries`: their waiting rows move to `deliveries` with their attempts and due
    /// times, so an upgrade loses nothing queued.
    static func migrateDeliveries(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE deliveries (
                    id TEXT PRIMARY KEY, kind TEXT NOT NULL, destination TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL,
                    body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, created_at REAL NOT NULL);
                CREATE INDEX deliveries_due ON deliveries(kind, destination, next_attempt_at, created_at);
                CREATE INDEX deliveries_created ON deliveries(created_at);
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    SELECT id, 'mail', 'relay', id, 'email', json_object('recipient', recipient, 'subject', subject, 'body', body),
                        attempts, next_attempt_at, created_at
                    FROM mail_queue;
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    SELECT id, 'backchannel_logout', substr(webhook_id, 20), event_id, event_type, body, attempts, next_attempt_at, created_at
                    FROM webhook_deliveries WHERE substr(webhook_id, 1, 19) = 'backchannel_logout:';
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    SELECT id, 'audit_webhook', webhook_id, event_id, event_type, body, attempts, next_attempt_at, created_at
                    FROM webhook_deliveries WHERE substr(webhook_id, 1, 19) <> 'backchannel_logout:';
                DROP TABLE mail_queue;
                DROP TABLE webhook_deliveries;
                """)
    }

    public func enqueueDelivery(_ delivery: QueuedDelivery, limit: Int, share: DeliveryQueueShare?) async throws -> Bool {
        try await pool.write { db in
            let queue: [any DatabaseValueConvertible] = [delivery.kind.rawValue, delivery.destination]
            let waiting =
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM deliveries WHERE kind = ? AND destination = ?", arguments: StatementArguments(queue))
                ?? 0
            guard waiting < limit else { return false }
            if let share, share.covers(delivery.eventType) {
                let marks = share.eventTypes.map { _ in "?" }.joined(separator: ", ")
                let sharing =
                    try Int.fetchOne(
                        db, sql: "SELECT COUNT(*) FROM deliveries WHERE kind = ? AND destination = ? AND event_type IN (\(marks))",
                        arguments: StatementArguments(queue + share.eventTypes)) ?? 0
                guard sharing < share.limit else { return false }
            }
            try db.execute(
                sql: """
                    INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    delivery.id, delivery.kind.rawValue, delivery.destination, delivery.eventId, delivery.eventType, delivery.body,
                    delivery.attempts, delivery.nextAttemptAt.timeIntervalSince1970, delivery.createdAt.timeIntervalSince1970
                ])
            return true
        }
    }

    public func claimDueDeliveries(kind: DeliveryKind, destination: String, now: Date, leaseUntil: Date, limit: Int) async throws
        -> [QueuedDelivery]
    {
        try await pool.write { db in
            let due = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM deliveries WHERE kind = ? AND destination = ? AND next_attempt_at <= ?
                    ORDER BY next_attempt_at, created_at, id LIMIT ?
                    """,
                arguments: [kind.rawValue, destination, now.timeIntervalSince1970, limit]
            ).map { row in
                QueuedDelivery(
                    id: row["id"], kind: kind, destination: row["destination"], eventId: row["event_id"], eventType: row["event_type"],
                    body: row["body"], attempts: row["attempts"], nextAttemptAt: Self.date(row["next_attempt_at"]) ?? now,
                    createdAt: Self.date(row["created_at"]) ?? now)
            }
            for delivery in due {
                try db.execute(
                    sql: "UPDATE deliveries SET next_attempt_at = ? WHERE id = ?", arguments: [leaseUntil.timeIntervalSince1970, delivery.id])
            }
            return due
        }
    }

    public func rescheduleDelivery(id: String, attempts: Int, nextAttemptAt: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE deliveries SET attempts = ?, next_attempt_at = ? WHERE id = ?",
                arguments: [attempts, nextAttemptAt.timeIntervalSince1970, id])
        }
    }

    public func deleteDelivery(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM deliveries WHERE id = ?", arguments: [id]) }
    }

    public func deliveryQueueDepths(kind: DeliveryKind) async throws -> [String: Int] {
        try await pool.read { db in
            var depths: [String: Int] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT destination, COUNT(*) AS waiting FROM deliveries WHERE kind = ? GROUP BY destination",
                arguments: [kind.rawValue])
            {
                depths[row["destination"]] = row["waiting"]
            }
            return depths
        }
    }
}
