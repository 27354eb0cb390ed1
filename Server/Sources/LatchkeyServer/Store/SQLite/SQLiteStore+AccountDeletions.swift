import Foundation
import GRDB

/// Scheduled account deletions (`AccountDeletionStore`).
extension SQLiteStore {
    static func migrateAccountDeletions(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE account_deletions (
                    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE, requested_at REAL NOT NULL, due_at REAL NOT NULL);
                CREATE INDEX account_deletions_due ON account_deletions(due_at);
                """)
    }

    public func scheduleAccountDeletion(_ deletion: AccountDeletionRecord, now: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO account_deletions (user_id, requested_at, due_at) VALUES (?, ?, ?)
                    ON CONFLICT (user_id) DO UPDATE SET requested_at = excluded.requested_at, due_at = excluded.due_at
                    """,
                arguments: [deletion.userId, deletion.requestedAt.timeIntervalSince1970, deletion.dueAt.timeIntervalSince1970])
            try Self.endAccountAccess(db, userId: deletion.userId, reason: "account deletion requested", now: now)
        }
    }

    public func accountDeletion(userId: String) async throws -> AccountDeletionRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM account_deletions WHERE user_id = ?", arguments: [userId]).map(Self.accountDeletion)
        }
    }

    public func cancelAccountDeletion(userId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM account_deletions WHERE user_id = ?", arguments: [userId])
            return db.changesCount == 1
        }
    }

    public func dueAccountDeletions(now: Date, limit: Int) async throws -> [AccountDeletionRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM account_deletions WHERE due_at <= ? ORDER BY due_at, user_id LIMIT ?",
                arguments: [now.timeIntervalSince1970, limit]
            ).map(Self.accountDeletion)
        }
    }

    public func deleteScheduledUser(id: String, now: Date) async throws -> Bool {
        // One writer at a time: the check and the deletion see the same row.
        try await pool.write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM account_deletions WHERE user_id = ? AND due_at <= ?", arguments: [id, now.timeIntervalSince1970])
                    == true
            else { return false }
            return try Self.deleteUserRows(db, id: id, now: now)
        }
    }

    private static func accountDeletion(_ row: Row) -> AccountDeletionRecord {
        AccountDeletionRecord(
            userId: row["user_id"], requestedAt: date(row["requested_at"]) ?? .distantPast, dueAt: date(row["due_at"]) ?? .distantPast)
    }
}
