import Foundation
import PostgresNIO

/// The delivery queue (`DeliveryStore`): one table for every kind of delivery.
extension PostgresStore {
    public func enqueueDelivery(_ delivery: QueuedDelivery, limit: Int, share: DeliveryQueueShare?) async throws -> Bool {
        let kind = delivery.kind.rawValue
        return try await transaction { connection -> Bool in
            // The limit is about the destination's whole queue (rows other instances may be inserting now): one advisory
            // lock per queue makes count-then-insert atomic across instances, as SQLite's serialized write transaction does.
            try await self.lock("deliveries:" + kind, delivery.destination, on: connection)
            let waiting =
                try await self.row(
                    "SELECT COUNT(*) FROM deliveries WHERE kind = \(kind) AND destination = \(delivery.destination)", on: connection
                )?.decode(Int.self) ?? 0
            guard waiting < limit else { return false }
            if let share, share.covers(delivery.eventType) {
                let types = share.eventTypes
                let sharing =
                    try await self.row(
                        """
                        SELECT COUNT(*) FROM deliveries WHERE kind = \(kind) AND destination = \(delivery.destination)
                            AND event_type = ANY(\(types))
                        """,
                        on: connection
                    )?.decode(Int.self) ?? 0
                guard sharing < share.limit else { return false }
            }
            _ = try await self.execute(
                """
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                VALUES (\(delivery.id), \(kind), \(delivery.destination), \(delivery.eventId), \(delivery.eventType), \(delivery.body),
                    \(delivery.attempts), \(delivery.nextAttemptAt.epoch), \(delivery.createdAt.epoch))
                """, on: connection)
            return true
        }
    }

    public func claimDueDeliveries(kind: DeliveryKind, destination: String, now: Date, leaseUntil: Date, limit: Int) async throws
        -> [QueuedDelivery]
    {
        let t = now.epoch
        let lease = leaseUntil.epoch
        // SQLite reads a negative LIMIT as "no limit"; PostgreSQL refuses it but reads LIMIT NULL that way.
        let rowLimit: Int? = limit >= 0 ? limit : nil
        return try await transaction { connection -> [QueuedDelivery] in
            // FOR UPDATE SKIP LOCKED: a row another instance is claiming right now is skipped, not claimed twice (nor
            // waited for); a row whose lease that instance committed meanwhile is re-checked against
            // `next_attempt_at <= now` and no longer matches. So two instances never deliver one row at once. The rows
            // are read before the lease is written so the answer carries their due times and order as SQLite's does.
            let due = try await self.rows(
                """
                SELECT * FROM deliveries WHERE kind = \(kind.rawValue) AND destination = \(destination) AND next_attempt_at <= \(t)
                ORDER BY next_attempt_at, created_at, id LIMIT \(rowLimit)
                FOR UPDATE SKIP LOCKED
                """, on: connection
            ).map { row -> QueuedDelivery in
                let c = Columns(row)
                return QueuedDelivery(
                    id: try c("id", as: String.self), kind: kind, destination: try c("destination", as: String.self),
                    eventId: try c("event_id", as: String.self), eventType: try c("event_type", as: String.self),
                    body: try c("body", as: String.self), attempts: try c("attempts", as: Int.self),
                    nextAttemptAt: try c.date("next_attempt_at") ?? now, createdAt: try c.date("created_at") ?? now)
            }
            guard !due.isEmpty else { return [] }
            let ids = due.map(\.id)
            _ = try await self.execute("UPDATE deliveries SET next_attempt_at = \(lease) WHERE id = ANY(\(ids))", on: connection)
            return due
        }
    }

    public func rescheduleDelivery(id: String, attempts: Int, nextAttemptAt: Date) async throws {
        let next = nextAttemptAt.epoch
        try await connection { connection in
            _ = try await self.execute(
                "UPDATE deliveries SET attempts = \(attempts), next_attempt_at = \(next) WHERE id = \(id)", on: connection)
        }
    }

    public func deleteDelivery(id: String) async throws {
        try await connection { connection in
            _ = try await self.execute("DELETE FROM deliveries WHERE id = \(id)", on: connection)
        }
    }

    public func deliveryQueueDepths(kind: DeliveryKind) async throws -> [String: Int] {
        try await connection { connection -> [String: Int] in
            var depths: [String: Int] = [:]
            for row in try await self.rows(
                "SELECT destination, COUNT(*) FROM deliveries WHERE kind = \(kind.rawValue) GROUP BY destination", on: connection)
            {
                let (destination, waiting) = try row.decode((String, Int).self)
                depths[destination] = waiting
            }
            return depths
        }
    }
}
