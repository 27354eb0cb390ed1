import Foundation
import PostgresNIO

/// Recovery codes (`RecoveryCodeStore`): keyed digests, each used once.
extension PostgresStore {
    public func replaceRecoveryCodes(userId: String, digests: [Data], createdAt: Date) async throws {
        let createdAt = createdAt.epoch
        let digests = Array(Set(digests))
        try await transaction { connection in
            // One replacement at a time per account (on any instance): under READ COMMITTED a concurrent DELETE does not
            // see the other's new rows, and both sets would stay.
            try await self.lock("recovery_codes", userId, on: connection)
            try await self.execute("DELETE FROM recovery_codes WHERE user_id = \(userId)", on: connection)
            for digest in digests {
                try await self.execute(
                    "INSERT INTO recovery_codes (user_id, code_digest, created_at) VALUES (\(userId), \(digest), \(createdAt))", on: connection)
            }
        }
    }

    public func recoveryCodes(userId: String) async throws -> RecoveryCodeSummary? {
        let row = try await connection { connection in
            try await self.row(
                """
                SELECT COUNT(*)::BIGINT AS total, (COUNT(*) - COUNT(used_at))::BIGINT AS remaining, MAX(created_at) AS created_at
                FROM recovery_codes WHERE user_id = \(userId)
                """, on: connection)
        }
        guard let row else { return nil }
        let c = Columns(row)
        let total: Int = try c("total")
        guard total > 0, let createdAt = try c.date("created_at") else { return nil }
        return RecoveryCodeSummary(createdAt: createdAt, remaining: try c("remaining"), total: total)
    }

    public func useRecoveryCode(userId: String, digest: Data, at: Date) async throws -> Bool {
        let at = at.epoch
        return try await connection { connection in
            // One conditional UPDATE: of two requests presenting the same code, exactly one marks it used.
            try await self.execute(
                """
                UPDATE recovery_codes SET used_at = \(at)
                WHERE user_id = \(userId) AND code_digest = \(digest) AND used_at IS NULL
                RETURNING 1
                """, on: connection) == 1
        }
    }

    public func deleteRecoveryCodes(userId: String) async throws {
        try await connection { connection in
            try await self.execute("DELETE FROM recovery_codes WHERE user_id = \(userId)", on: connection)
        }
    }
}
