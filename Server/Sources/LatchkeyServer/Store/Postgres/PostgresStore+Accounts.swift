import Foundation
import PostgresNIO

/// Profile writes with optimistic concurrency, and pending email changes.
extension PostgresStore {
    public func updateProfile(
        userId: String, username: String, claims: [String: String], disabled: Bool?, expectedVersion: Int,
        updatedAt: Date
    ) async throws -> Bool {
        let claimsJSON = try SQLiteStore.json(claims)
        let email = claims["email"] ?? ""
        let t = updatedAt.epoch
        do {
            return try await transaction { connection -> Bool in
                // Usernames and emails name accounts in one space. The directory checks that before writing; checked
                // again here under the lock every account write takes, two concurrent changes (in any instance) cannot
                // both pass it (a username that is someone's email, or the reverse). SQLite got this from its single
                // writer; in PostgreSQL the checks read rows another transaction may be about to write.
                try await self.lock("accounts", "all", on: connection)
                if try await self.row(
                    """
                    SELECT id FROM users WHERE lower(username COLLATE "C") = lower(\(username) COLLATE "C") AND id <> \(userId) LIMIT 1
                    """, on: connection) != nil
                {
                    throw StoreError.conflict("username")
                }
                if try await self.row(
                    """
                    SELECT id FROM users WHERE id <> \(userId) AND lower(((claims::jsonb) ->> 'email') COLLATE "C") = lower(\(username) COLLATE "C") LIMIT 1
                    """, on: connection) != nil
                {
                    throw StoreError.conflict("username")
                }
                if !email.isEmpty,
                    try await self.row(
                        """
                        SELECT id FROM users WHERE id <> \(userId) AND lower(username COLLATE "C") = lower(\(email) COLLATE "C") LIMIT 1
                        """, on: connection) != nil
                {
                    throw StoreError.conflict("email")
                }
                // One conditional UPDATE: the password hash is never written here, and `disabled` only when asked.
                return try await self.execute(
                    """
                    UPDATE users SET username = \(username), claims = \(claimsJSON), disabled = COALESCE(\(disabled), disabled),
                        updated_at = \(t), version = version + 1
                    WHERE id = \(userId) AND version = \(expectedVersion) RETURNING 1
                    """, on: connection) == 1
            }
        } catch let error where PostgresStore.isUniqueViolation(error) {
            // A writer that did not take the lock got the username first: the unique index on lower(username COLLATE "C") refused it.
            throw StoreError.conflict("username")
        }
    }

    public func replaceEmailChange(_ change: EmailChangeRecord) async throws {
        let createdAt = change.createdAt.epoch
        let expiresAt = change.expiresAt.epoch
        try await connection { connection in
            // One statement (SQLite: INSERT OR REPLACE): a new code replaces the pending one atomically.
            _ = try await self.execute(
                """
                INSERT INTO email_changes (user_id, email, code_digest, attempts, created_at, expires_at)
                VALUES (\(change.userId), \(change.email), \(change.codeDigest), \(change.attempts), \(createdAt), \(expiresAt))
                ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, code_digest = EXCLUDED.code_digest,
                    attempts = EXCLUDED.attempts, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
                """, on: connection)
        }
    }

    public func emailChange(userId: String) async throws -> EmailChangeRecord? {
        let found = try await connection { connection in
            try await self.row("SELECT * FROM email_changes WHERE user_id = \(userId)", on: connection)
        }
        return try found.map(Self.emailChangeRecord)
    }

    public func redeemEmailChange(userId: String, codeDigest: Data, maxAttempts: Int, now: Date) async throws -> EmailChangeRedemption {
        try await transaction { connection -> EmailChangeRedemption in
            // The row is locked (FOR UPDATE) from the check to the write: concurrent guesses take turns, each sees the
            // attempts of the one before, and a matching code is redeemed once.
            guard let row = try await self.row("SELECT * FROM email_changes WHERE user_id = \(userId) FOR UPDATE", on: connection) else {
                return .missing
            }
            let change = try Self.emailChangeRecord(row)
            if change.expiresAt <= now {
                try await self.execute("DELETE FROM email_changes WHERE user_id = \(userId)", on: connection)
                return .missing
            }
            if Secrets.constantTimeEquals(change.codeDigest, codeDigest) {
                try await self.execute("DELETE FROM email_changes WHERE user_id = \(userId)", on: connection)
                return .redeemed(change)
            }
            if change.attempts + 1 >= maxAttempts {
                try await self.execute("DELETE FROM email_changes WHERE user_id = \(userId)", on: connection)
                return .exhausted
            }
            try await self.execute("UPDATE email_changes SET attempts = attempts + 1 WHERE user_id = \(userId)", on: connection)
            return .wrongCode
        }
    }

    fileprivate static func emailChangeRecord(_ row: PostgresRow) throws -> EmailChangeRecord {
        let c = Columns(row)
        let userId: String = try c("user_id")
        let email: String = try c("email")
        let codeDigest: Data = try c("code_digest")
        let attempts: Int = try c("attempts")
        return EmailChangeRecord(
            userId: userId, email: email, codeDigest: codeDigest, attempts: attempts,
            createdAt: try c.date("created_at") ?? .distantPast, expiresAt: try c.date("expires_at") ?? .distantPast)
    }
}
