import Foundation
import GRDB

/// Per-account budgets of one-time codes (wrong codes, recovery emails), TOTP replay protection, and step-up
/// challenges keyed by their step-up token's digest.
extension SQLiteStore {
    static func migrateCodeBudgets(_ db: Database) throws {
        // Step-up challenges are short-lived (minutes): the old table, which kept the whole step-up JWT, is dropped
        // rather than converted (a pending step-up just starts again).
        try db.execute(
            sql: """
                CREATE TABLE account_events (key TEXT NOT NULL, at REAL NOT NULL);
                CREATE INDEX account_events_key ON account_events(key, at);
                CREATE INDEX account_events_at ON account_events(at);
                ALTER TABLE user_factors ADD COLUMN totp_last_step INTEGER;
                DROP TABLE step_up_challenges;
                CREATE TABLE step_up_challenges (
                    id TEXT PRIMARY KEY, step_up_hash BLOB NOT NULL UNIQUE, claims TEXT NOT NULL, kind TEXT NOT NULL,
                    code_digest BLOB NOT NULL, attempts INTEGER NOT NULL, expires_at REAL NOT NULL);
                """)
    }

    // MARK: Account event budgets

    public func admitAccountEvent(key: String, now: Date, window: TimeInterval, limit: Int) async throws -> (
        admitted: Bool, events: AccountEventCount
    ) {
        try await pool.write { db in
            // Check and record in one write transaction: concurrent attempts cannot all pass a count taken before any
            // of them was recorded.
            try Self.pruneAccountEvents(db, now: now, window: window)
            let current = try Self.countAccountEvents(db, key: key)
            guard current.count < limit else { return (false, current) }
            try db.execute(sql: "INSERT INTO account_events (key, at) VALUES (?, ?)", arguments: [key, now.timeIntervalSince1970])
            return (true, try Self.countAccountEvents(db, key: key))
        }
    }

    public func accountEvents(key: String, now: Date, window: TimeInterval) async throws -> AccountEventCount {
        try await pool.read { db in
            let row = try Row.fetchOne(
                db, sql: "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM account_events WHERE key = ? AND at > ?",
                arguments: [key, now.timeIntervalSince1970 - window])
            return AccountEventCount(count: row?["n"] ?? 0, oldest: Self.date(row?["oldest"]))
        }
    }

    public func clearAccountEvents(key: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM account_events WHERE key = ?", arguments: [key]) }
    }

    /// Events older than the window are dropped for every key, not only this one: keys of unknown recovery
    /// identifiers are made up by strangers, and the table must not grow with them.
    private static func pruneAccountEvents(_ db: Database, now: Date, window: TimeInterval) throws {
        try db.execute(sql: "DELETE FROM account_events WHERE at <= ?", arguments: [now.timeIntervalSince1970 - window])
    }

    private static func countAccountEvents(_ db: Database, key: String) throws -> AccountEventCount {
        let row = try Row.fetchOne(db, sql: "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM account_events WHERE key = ?", arguments: [key])
        return AccountEventCount(count: row?["n"] ?? 0, oldest: date(row?["oldest"]))
    }

    // MARK: TOTP replay

    public func acceptTOTPStep(userId: String, step: Int64) async throws -> Bool {
        try await pool.write { db in
            // One conditional UPDATE: of two requests presenting the same code, exactly one moves the step forward.
            try db.execute(
                sql: """
                    UPDATE user_factors SET totp_last_step = ?
                    WHERE user_id = ? AND kind = 'totp' AND (totp_last_step IS NULL OR totp_last_step < ?)
                    """, arguments: [step, userId, step])
            return db.changesCount == 1
        }
    }
}
