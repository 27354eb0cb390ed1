import Foundation
import PostgresNIO

/// The SMTP delivery queue (`QueuedMail` is declared beside the SQLite store).
extension PostgresStore {
    public func enqueueMail(_ mail: QueuedMail, limit: Int) async throws -> Bool {
        try await transaction { connection -> Bool in
            // The limit is about the whole queue (rows other instances may be inserting now): one advisory lock makes
            // count-then-insert atomic across instances, as SQLite's serialized write transaction does.
            try await self.lock("mail_queue", "all", on: connection)
            let waiting = try await self.row("SELECT COUNT(*) FROM mail_queue", on: connection)?.decode(Int.self) ?? 0
            guard waiting < limit else { return false }
            _ = try await self.execute(
                """
                INSERT INTO mail_queue (id, recipient, subject, body, attempts, next_attempt_at, created_at)
                VALUES (\(mail.id), \(mail.recipient), \(mail.subject), \(mail.body), \(mail.attempts), \(mail.nextAttemptAt.epoch),
                    \(mail.createdAt.epoch))
                """, on: connection)
            return true
        }
    }

    public func claimDueMail(now: Date, leaseUntil: Date, limit: Int) async throws -> [QueuedMail] {
        let t = now.epoch
        let lease = leaseUntil.epoch
        // SQLite reads a negative LIMIT as "no limit"; PostgreSQL refuses it but reads LIMIT NULL that way.
        let rowLimit: Int? = limit >= 0 ? limit : nil
        return try await transaction { connection -> [QueuedMail] in
            // FOR UPDATE SKIP LOCKED: a mail another instance is claiming right now is skipped instead of claimed twice
            // (or waited for); a row whose lease that instance committed meanwhile is re-checked against
            // `next_attempt_at <= now` and no longer matches. The rows are read before the lease is written so the
            // answer carries their due times and order exactly as SQLite's does.
            let due = try await self.rows(
                """
                SELECT * FROM mail_queue WHERE next_attempt_at <= \(t) ORDER BY next_attempt_at, created_at LIMIT \(rowLimit)
                FOR UPDATE SKIP LOCKED
                """, on: connection
            ).map { row -> QueuedMail in
                let c = Columns(row)
                return QueuedMail(
                    id: try c("id", as: String.self), recipient: try c("recipient", as: String.self),
                    subject: try c("subject", as: String.self), body: try c("body", as: String.self),
                    attempts: try c("attempts", as: Int.self), nextAttemptAt: try c.date("next_attempt_at") ?? now,
                    createdAt: try c.date("created_at") ?? now)
            }
            guard !due.isEmpty else { return [] }
            let ids = due.map(\.id)
            _ = try await self.execute("UPDATE mail_queue SET next_attempt_at = \(lease) WHERE id = ANY(\(ids))", on: connection)
            return due
        }
    }

    public func rescheduleMail(id: String, attempts: Int, nextAttemptAt: Date) async throws {
        let next = nextAttemptAt.epoch
        try await connection { connection in
            _ = try await self.execute(
                "UPDATE mail_queue SET attempts = \(attempts), next_attempt_at = \(next) WHERE id = \(id)",
                on: connection)
        }
    }

    public func deleteMail(id: String) async throws {
        try await connection { connection in
            _ = try await self.execute("DELETE FROM mail_queue WHERE id = \(id)", on: connection)
        }
    }
}
