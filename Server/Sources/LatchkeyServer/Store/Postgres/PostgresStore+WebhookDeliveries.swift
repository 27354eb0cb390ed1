import Foundation
import PostgresNIO

/// The webhook delivery queue (`QueuedWebhookDelivery` is declared beside the SQLite store).
extension PostgresStore {
    public func enqueueWebhookDelivery(_ delivery: QueuedWebhookDelivery, limit: Int, share: WebhookQueueShare?) async throws -> Bool {
        try await transaction { connection -> Bool in
            // The limit is about the webhook's whole queue (rows other instances may be inserting now): one advisory lock
            // per webhook makes count-then-insert atomic across instances, as SQLite's serialized write transaction does.
            try await self.lock("webhook_deliveries", delivery.webhookId, on: connection)
            let waiting =
                try await self.row(
                    "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = \(delivery.webhookId)", on: connection
                )?.decode(Int.self) ?? 0
            guard waiting < limit else { return false }
            if let share, share.covers(delivery.eventType) {
                let types = share.eventTypes
                let sharing =
                    try await self.row(
                        "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = \(delivery.webhookId) AND event_type = ANY(\(types))",
                        on: connection
                    )?.decode(Int.self) ?? 0
                guard sharing < share.limit else { return false }
            }
            _ = try await self.execute(
                """
                INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, body, attempts, next_attempt_at, created_at)
                VALUES (\(delivery.id), \(delivery.webhookId), \(delivery.eventId), \(delivery.eventType), \(delivery.body),
                    \(delivery.attempts), \(delivery.nextAttemptAt.epoch), \(delivery.createdAt.epoch))
                """, on: connection)
            return true
        }
    }

    public func claimDueWebhookDeliveries(webhookId: String, now: Date, leaseUntil: Date, limit: Int) async throws -> [QueuedWebhookDelivery] {
        let t = now.epoch
        let lease = leaseUntil.epoch
        // SQLite reads a negative LIMIT as "no limit"; PostgreSQL refuses it but reads LIMIT NULL that way.
        let rowLimit: Int? = limit >= 0 ? limit : nil
        return try await transaction { connection -> [QueuedWebhookDelivery] in
            // FOR UPDATE SKIP LOCKED, as the mail queue: a row another instance is claiming right now is skipped, not
            // claimed twice (nor waited for); a row whose lease that instance committed meanwhile is re-checked against
            // `next_attempt_at <= now` and no longer matches. So two instances never deliver one row at once.
            let due = try await self.rows(
                """
                SELECT * FROM webhook_deliveries WHERE webhook_id = \(webhookId) AND next_attempt_at <= \(t)
                ORDER BY next_attempt_at, created_at, id LIMIT \(rowLimit)
                FOR UPDATE SKIP LOCKED
                """, on: connection
            ).map { row -> QueuedWebhookDelivery in
                let c = Columns(row)
                return QueuedWebhookDelivery(
                    id: try c("id", as: String.self), webhookId: try c("webhook_id", as: String.self),
                    eventId: try c("event_id", as: String.self), eventType: try c("event_type", as: String.self),
                    body: try c("body", as: String.self), attempts: try c("attempts", as: Int.self),
                    nextAttemptAt: try c.date("next_attempt_at") ?? now, createdAt: try c.date("created_at") ?? now)
            }
            guard !due.isEmpty else { return [] }
            let ids = due.map(\.id)
            _ = try await self.execute("UPDATE webhook_deliveries SET next_attempt_at = \(lease) WHERE id = ANY(\(ids))", on: connection)
            return due
        }
    }

    public func rescheduleWebhookDelivery(id: String, attempts: Int, nextAttemptAt: Date) async throws {
        let next = nextAttemptAt.epoch
        try await connection { connection in
            _ = try await self.execute(
                "UPDATE webhook_deliveries SET attempts = \(attempts), next_attempt_at = \(next) WHERE id = \(id)", on: connection)
        }
    }

    public func deleteWebhookDelivery(id: String) async throws {
        try await connection { connection in
            _ = try await self.execute("DELETE FROM webhook_deliveries WHERE id = \(id)", on: connection)
        }
    }

    public func webhookQueueDepths() async throws -> [String: Int] {
        try await connection { connection -> [String: Int] in
            var depths: [String: Int] = [:]
            for row in try await self.rows("SELECT webhook_id, COUNT(*) FROM webhook_deliveries GROUP BY webhook_id", on: connection) {
                let (id, waiting) = try row.decode((String, Int).self)
                depths[id] = waiting
            }
            return depths
        }
    }
}
