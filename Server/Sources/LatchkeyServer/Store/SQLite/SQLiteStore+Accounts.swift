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

/// Account queries and deletion (SCIM administration).
extension SQLiteStore {
    public func users(matching query: UserQuery, offset: Int, limit: Int) async throws -> UserPage {
        var clauses: [String] = []
        var arguments = StatementArguments()
        for condition in query.conditions {
            switch condition {
            case .id(let id):
                clauses.append("id = ?")
                arguments += [id]
            case .username(let username):
                // SQLite's NOCASE stops comparing at a NUL (see `user(username:)`): such a name names nobody.
                if username.contains("\u{0}") { return UserPage(total: 0, users: []) }
                clauses.append("username = ?")
                arguments += [username]
            case .email(let email):
                if email.contains("\u{0}") { return UserPage(total: 0, users: []) }
                clauses.append("json_extract(claims, '$.email') = ? COLLATE NOCASE")
                arguments += [email]
            case .disabled(let disabled):
                clauses.append("disabled = ?")
                arguments += [disabled]
            case .modifiedFrom(let date):
                clauses.append("COALESCE(updated_at, created_at) >= ?")
                arguments += [date.timeIntervalSince1970]
            case .modifiedBefore(let date):
                clauses.append("COALESCE(updated_at, created_at) < ?")
                arguments += [date.timeIntervalSince1970]
            }
        }
        let whereClause = clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND ")
        let countArguments = arguments
        let pageArguments = arguments + [max(0, limit), max(0, offset)]
        return try await pool.read { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM users" + whereClause, arguments: countArguments) ?? 0
            let users = try Row.fetchAll(
                db, sql: "SELECT * FROM users" + whereClause + " ORDER BY created_at, id LIMIT ? OFFSET ?", arguments: pageArguments
            ).map(Self.user)
            return UserPage(total: total, users: users)
        }
    }

    public func deleteUser(id: String, now: Date) async throws -> Bool {
        try await pool.write { db in try Self.deleteUserRows(db, id: id, now: now) }
    }

    /// The account and everything it held, in the caller's transaction (`deleteUser`, `deleteScheduledUser`).
    static func deleteUserRows(_ db: Database, id: String, now: Date) throws -> Bool {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [id]) == true else { return false }
        try endAccountAccess(db, userId: id, reason: "account deleted", now: now)
        // Factors, passkeys, federated links, consents, the pending email change, a scheduled deletion and login
        // attempts cascade.
        try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [id])
        return db.changesCount == 1
    }

    /// Ends every session, revokes every token and deletes what could still turn into tokens or a sign-in for the
    /// account (these tables name users without a key): deleting it, or scheduling its deletion.
    static func endAccountAccess(_ db: Database, userId id: String, reason: String, now: Date) throws {
        try revokeUserSessions(db, userId: id, keepingSession: nil, keepingFamily: nil, reason: reason, now: now)
        try db.execute(sql: "DELETE FROM authorization_codes WHERE user_id = ? AND used_at IS NULL", arguments: [id])
        try db.execute(sql: "DELETE FROM login_second_factors WHERE user_id = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM device_authorizations WHERE user_id = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM passkey_challenges WHERE user_id = ?", arguments: [id])
    }
}
