import Foundation
import GRDB

/// Profile writes with optimistic concurrency, and pending email changes.
extension SQLiteStore {
    static func migrateAccountVersionsAndEmailChanges(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE users ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE email_changes (
                    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE, email TEXT NOT NULL, code_digest BLOB NOT NULL,
                    attempts INTEGER NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL);
                """)
    }

    public func updateProfile(
        userId: String, username: String, claims: [String: String], disabled: Bool?, expectedVersion: Int,
        updatedAt: Date
    ) async throws -> Bool {
        let claimsJSON = try Self.json(claims)
        return try await pool.write { db in
            if try String.fetchOne(db, sql: "SELECT id FROM users WHERE username = ? AND id <> ?", arguments: [username, userId]) != nil {
                throw StoreError.conflict("username")
            }
            // Usernames and emails name accounts in one space. The directory checks that before writing; checked again
            // inside the write, two concurrent changes cannot both pass it (a username that is someone's email, or the
            // reverse).
            if try String.fetchOne(
                db, sql: "SELECT id FROM users WHERE id <> ? AND json_extract(claims, '$.email') = ? COLLATE NOCASE",
                arguments: [userId, username]) != nil
            {
                throw StoreError.conflict("username")
            }
            if let email = claims["email"], !email.isEmpty,
                try String.fetchOne(db, sql: "SELECT id FROM users WHERE id <> ? AND username = ? COLLATE NOCASE", arguments: [userId, email]) != nil
            {
                throw StoreError.conflict("email")
            }
            // One conditional UPDATE: the password hash is never written here, and `disabled` only when asked.
            try db.execute(
                sql: """
                    UPDATE users SET username = ?, claims = ?, disabled = COALESCE(?, disabled), updated_at = ?, version = version + 1
                    WHERE id = ? AND version = ?
                    """, arguments: [username, claimsJSON, disabled, updatedAt.timeIntervalSince1970, userId, expectedVersion])
            return db.changesCount == 1
        }
    }

    public func replaceEmailChange(_ change: EmailChangeRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO email_changes (user_id, email, code_digest, attempts, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    change.userId, change.email, change.codeDigest, change.attempts, change.createdAt.timeIntervalSince1970,
                    change.expiresAt.timeIntervalSince1970
                ])
        }
    }

    public func emailChange(userId: String) async throws -> EmailChangeRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM email_changes WHERE user_id = ?", arguments: [userId]).map(Self.emailChangeRecord)
        }
    }

    public func redeemEmailChange(userId: String, codeDigest: Data, maxAttempts: Int, now: Date) async throws -> EmailChangeRedemption {
        try await pool.write { db in
            guard
                let change = try Row.fetchOne(db, sql: "SELECT * FROM email_changes WHERE user_id = ?", arguments: [userId]).map(
                    Self.emailChangeRecord)
            else { return .missing }
            if change.expiresAt <= now {
                try db.execute(sql: "DELETE FROM email_changes WHERE user_id = ?", arguments: [userId])
                return .missing
            }
            if Secrets.constantTimeEquals(change.codeDigest, codeDigest) {
                try db.execute(sql: "DELETE FROM email_changes WHERE user_id = ?", arguments: [userId])
                return .redeemed(change)
            }
            if change.attempts + 1 >= maxAttempts {
                try db.execute(sql: "DELETE FROM email_changes WHERE user_id = ?", arguments: [userId])
                return .exhausted
            }
            try db.execute(sql: "UPDATE email_changes SET attempts = attempts + 1 WHERE user_id = ?", arguments: [userId])
            return .wrongCode
        }
    }

    static func emailChangeRecord(_ row: Row) -> EmailChangeRecord {
        EmailChangeRecord(
            userId: row["user_id"], email: row["email"], codeDigest: row["code_digest"], attempts: row["attempts"],
            createdAt: date(row["created_at"]) ?? .distantPast, expiresAt: date(row["expires_at"]) ?? .distantPast)
    }
}
