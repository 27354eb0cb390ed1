import Foundation
import PostgresNIO

/// Scheduled account deletions (`AccountDeletionStore`).
extension PostgresStore {
    public func scheduleAccountDeletion(_ deletion: AccountDeletionRecord, now: Date) async throws {
        try await transaction { connection in
            try await self.execute(
                """
                INSERT INTO account_deletions (user_id, requested_at, due_at)
                VALUES (\(deletion.userId), \(deletion.requestedAt.epoch), \(deletion.dueAt.epoch))
                ON CONFLICT (user_id) DO UPDATE SET requested_at = EXCLUDED.requested_at, due_at = EXCLUDED.due_at
                """, on: connection)
            try await self.endAccountAccess(userId: deletion.userId, reason: "account deletion requested", now: now, on: connection)
        }
    }

    public func accountDeletion(userId: String) async throws -> AccountDeletionRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM account_deletions WHERE user_id = \(userId)", on: connection).map(Self.accountDeletion)
        }
    }

    public func cancelAccountDeletion(userId: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute("DELETE FROM account_deletions WHERE user_id = \(userId) RETURNING 1", on: connection) > 0
        }
    }

    public func dueAccountDeletions(now: Date, limit: Int) async throws -> [AccountDeletionRecord] {
        try await connection { connection in
            try await self.rows(
                "SELECT * FROM account_deletions WHERE due_at <= \(now.epoch) ORDER BY due_at, user_id COLLATE \"C\" LIMIT \(limit)",
                on: connection
            ).map(Self.accountDeletion)
        }
    }

    public func deleteScheduledUser(id: String, now: Date) async throws -> Bool {
        try await transaction { connection in
            // The row lock orders racing instances (and a restore, which deletes the row): the second finds no row.
            guard
                try await self.row(
                    "SELECT 1 FROM account_deletions WHERE user_id = \(id) AND due_at <= \(now.epoch) FOR UPDATE", on: connection) != nil
            else { return false }
            return try await self.deleteUserRows(id: id, now: now, on: connection)
        }
    }

    private static func accountDeletion(_ row: PostgresRow) throws -> AccountDeletionRecord {
        let c = Columns(row)
        return AccountDeletionRecord(
            userId: try c("user_id"), requestedAt: try c.date("requested_at") ?? .distantPast, dueAt: try c.date("due_at") ?? .distantPast)
    }
}
