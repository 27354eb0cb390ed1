import Foundation
import GRDB

/// An email waiting for SMTP delivery. It survives a restart; it is deleted once delivered or abandoned.
public struct QueuedMail: Sendable, Equatable {
    public var id: String
    public var recipient: String
    public var subject: String
    public var body: String
    /// Failed deliveries so far.
    public var attempts: Int
    public var nextAttemptAt: Date
    public var createdAt: Date

    public init(id: String, recipient: String, subject: String, body: String, attempts: Int = 0, nextAttemptAt: Date, createdAt: Date) {
        self.id = id; self.recipient = recipient; self.subject = subject; self.body = body
        self.attempts = attempts; self.nextAttemptAt = nextAttemptAt; self.createdAt = createdAt
    }
}

/// The SMTP delivery queue.
extension SQLiteStore {
    static func migrateMailQueue(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE mail_queue (
                    id TEXT PRIMARY KEY, recipient TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, created_at REAL NOT NULL);
                CREATE INDEX mail_queue_due ON mail_queue(next_attempt_at);
                """)
    }

    public func enqueueMail(_ mail: QueuedMail, limit: Int) async throws -> Bool {
        try await pool.write { db in
            let waiting = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM mail_queue") ?? 0
            guard waiting < limit else { return false }
            try db.execute(
                sql: """
                    INSERT INTO mail_queue (id, recipient, subject, body, attempts, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    mail.id, mail.recipient, mail.subject, mail.body, mail.attempts,
                    mail.nextAttemptAt.timeIntervalSince1970, mail.createdAt.timeIntervalSince1970
                ])
            return true
        }
    }

    public func claimDueMail(now: Date, leaseUntil: Date, limit: Int) async throws -> [QueuedMail] {
        try await pool.write { db in
            let due = try Row.fetchAll(
                db, sql: "SELECT * FROM mail_queue WHERE next_attempt_at <= ? ORDER BY next_attempt_at, created_at LIMIT ?",
                arguments: [now.timeIntervalSince1970, limit]
            ).map { row in
                QueuedMail(
                    id: row["id"], recipient: row["recipient"], subject: row["subject"], body: row["body"], attempts: row["attempts"],
                    nextAttemptAt: Self.date(row["next_attempt_at"]) ?? now, createdAt: Self.date(row["created_at"]) ?? now)
            }
            for mail in due {
                try db.execute(sql: "UPDATE mail_queue SET next_attempt_at = ? WHERE id = ?", arguments: [leaseUntil.timeIntervalSince1970, mail.id])
            }
            return due
        }
    }

    public func rescheduleMail(id: String, attempts: Int, nextAttemptAt: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE mail_queue SET attempts = ?, next_attempt_at = ? WHERE id = ?",
                arguments: [attempts, nextAttemptAt.timeIntervalSince1970, id])
        }
    }

    public func deleteMail(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM mail_queue WHERE id = ?", arguments: [id]) }
    }
}
