import Foundation
import GRDB

/// Recovery codes (`RecoveryCodeStore`): keyed digests, each used once.
extension SQLiteStore {
    static func migrateRecoveryCodes(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE recovery_codes (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, code_digest BLOB NOT NULL,
                    created_at REAL NOT NULL, used_at REAL, PRIMARY KEY (user_id, code_digest))
                """)
    }

    public func replaceRecoveryCodes(userId: String, digests: [Data], createdAt: Date) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM recovery_codes WHERE user_id = ?", arguments: [userId])
            for digest in Set(digests) {
                try db.execute(
                    sql: "INSERT INTO recovery_codes (user_id, code_digest, created_at) VALUES (?, ?, ?)",
                    arguments: [userId, digest, createdAt.timeIntervalSince1970])
            }
        }
    }

    public func recoveryCodes(userId: String) async throws -> RecoveryCodeSummary? {
        try await pool.read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS total, COUNT(*) - COUNT(used_at) AS remaining, MAX(created_at) AS created_at
                    FROM recovery_codes WHERE user_id = ?
                    """, arguments: [userId])
            guard let row, let total: Int = row["total"], total > 0, let createdAt = Self.date(row["created_at"]) else { return nil }
            return RecoveryCodeSummary(createdAt: createdAt, remaining: row["remaining"] ?? 0, total: total)
        }
    }

    public func useRecoveryCode(userId: String, digest: Data, at: Date) async throws -> Bool {
        try await pool.write { db in
            // One conditional UPDATE: of two requests presenting the same code, exactly one marks it used.
            try db.execute(
                sql: "UPDATE recovery_codes SET used_at = ? WHERE user_id = ? AND code_digest = ? AND used_at IS NULL",
                arguments: [at.timeIntervalSince1970, userId, digest])
            return db.changesCount == 1
        }
    }

    public func deleteRecoveryCodes(userId: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM recovery_codes WHERE user_id = ?", arguments: [userId])
        }
    }
}
