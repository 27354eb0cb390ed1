import Foundation
import GRDB

/// The `amr` columns of sessions, codes and refresh tokens, and the hosted page's pending second factors.
extension SQLiteStore {
    static func migrateAMRAndLoginSecondFactor(_ db: Database) throws {
        // Rows from before this migration have no amr (NULL): read as [], i.e. as a single-factor sign-in, so an
        // existing session never satisfies an account or application that requires a second factor.
        try db.execute(
            sql: """
                ALTER TABLE sessions ADD COLUMN amr TEXT;
                ALTER TABLE authorization_codes ADD COLUMN amr TEXT;
                ALTER TABLE refresh_tokens ADD COLUMN amr TEXT;
                CREATE TABLE login_second_factors (
                    request_id TEXT PRIMARY KEY, browser_hash BLOB NOT NULL, user_id TEXT NOT NULL, kind TEXT NOT NULL,
                    code_digest BLOB NOT NULL, attempts INTEGER NOT NULL, sends INTEGER NOT NULL, amr TEXT NOT NULL,
                    auth_time REAL NOT NULL, expires_at REAL NOT NULL);
                """)
    }

    /// An `amr` column: a JSON array of strings; NULL or unreadable is no method at all.
    static func amr(_ text: String?) -> [String] {
        guard let text, let data = text.data(using: .utf8) else { return [] }
        return (try? JSONDecoder().decode([String].self, from: data)) ?? []
    }

    public func insertLoginSecondFactor(_ p: LoginSecondFactorRecord, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM login_second_factors WHERE expires_at < ?", arguments: [now.timeIntervalSince1970])
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO login_second_factors (request_id, browser_hash, user_id, kind, code_digest, attempts, sends, amr,
                        auth_time, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    p.requestId, p.browserHash, p.userId, p.kind, p.codeDigest, p.attempts, p.sends, try Self.json(p.amr),
                    p.authTime.timeIntervalSince1970, p.expiresAt.timeIntervalSince1970
                ])
            return db.changesCount == 1
        }
    }

    public func loginSecondFactor(requestId: String) async throws -> LoginSecondFactorRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM login_second_factors WHERE request_id = ?", arguments: [requestId]).map { row in
                LoginSecondFactorRecord(
                    requestId: row["request_id"], browserHash: row["browser_hash"], userId: row["user_id"],
                    kind: row["kind"], codeDigest: row["code_digest"], attempts: row["attempts"], sends: row["sends"],
                    amr: Self.amr(row["amr"]), authTime: Self.date(row["auth_time"]) ?? .distantPast,
                    expiresAt: Self.date(row["expires_at"]) ?? .distantPast)
            }
        }
    }

    public func failLoginSecondFactor(requestId: String, maxAttempts: Int) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE login_second_factors SET attempts = attempts + 1 WHERE request_id = ?", arguments: [requestId])
            let attempts =
                try Int.fetchOne(
                    db, sql: "SELECT attempts FROM login_second_factors WHERE request_id = ?",
                    arguments: [requestId]) ?? maxAttempts
            if attempts >= maxAttempts { try db.execute(sql: "DELETE FROM login_second_factors WHERE request_id = ?", arguments: [requestId]) }
            return attempts < maxAttempts
        }
    }

    public func resendLoginSecondFactor(requestId: String, codeDigest: Data, expiresAt: Date, maxSends: Int) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE login_second_factors SET code_digest = ?, expires_at = ?, sends = sends + 1
                    WHERE request_id = ? AND kind = 'email' AND sends < ?
                    """, arguments: [codeDigest, expiresAt.timeIntervalSince1970, requestId, maxSends])
            return db.changesCount == 1
        }
    }

    public func takeLoginSecondFactor(requestId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM login_second_factors WHERE request_id = ?", arguments: [requestId])
            return db.changesCount == 1
        }
    }
}
