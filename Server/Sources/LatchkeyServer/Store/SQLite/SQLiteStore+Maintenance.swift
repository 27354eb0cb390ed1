import Foundation
import GRDB

/// Pruning of expired rows and the indexes that keep lookups by identifier fast.
extension SQLiteStore {
    /// Sign-in by email looks the account up by its `email` claim: without an index every such lookup scans the
    /// whole table (slow on large tables, and a timing difference between known usernames and everything else).
    static func migrateEmailIndex(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX users_claim_email ON users(json_extract(claims, '$.email') COLLATE NOCASE)")
    }

    public func pruneExpired(now: Date, outboxBefore: Date) async throws -> Int {
        let t = now.timeIntervalSince1970
        // Used authorization codes are kept a day past expiry: a replay within that day still revokes the family.
        let codesBefore = t - 24 * 3600
        return try await pool.write { db in
            var deleted = 0
            let statements: [(String, StatementArguments)] = [
                ("DELETE FROM login_requests WHERE expires_at < ?", [t]),
                ("DELETE FROM flow_executions WHERE expires_at < ?", [t]),
                ("DELETE FROM authorization_codes WHERE expires_at < ?", [codesBefore]),
                ("DELETE FROM access_tokens WHERE expires_at < ?", [t]),
                (
                    """
                    DELETE FROM refresh_tokens WHERE expires_at < ?
                       OR family_id IN (SELECT id FROM token_families WHERE revoked_at IS NOT NULL)
                    """, [t]
                ),
                // An ended session stays until its end is announced to the applications (`BackChannelLogout`).
                ("DELETE FROM sessions WHERE (expires_at < ? AND ended_at IS NULL) OR (ended_at IS NOT NULL AND logout_announced = 1)", [t]),
                // By the database's clock (the machine's: every process on this file shares it), with the skew margin.
                (
                    "DELETE FROM consumed_token_ids WHERE expires_at < (julianday('now') - 2440587.5) * 86400.0 - ?",
                    [SingleUseRetention.skewMargin]
                ),
                ("DELETE FROM pushed_requests WHERE expires_at < ?", [t]),
                ("DELETE FROM device_authorizations WHERE expires_at < ?", [t]),
                ("DELETE FROM passkey_challenges WHERE expires_at < ?", [t]),
                ("DELETE FROM step_up_challenges WHERE expires_at < ?", [t]),
                ("DELETE FROM federated_logins WHERE expires_at < ?", [t]),
                ("DELETE FROM login_second_factors WHERE expires_at < ?", [t]),
                ("DELETE FROM email_changes WHERE expires_at < ?", [t]),
                ("DELETE FROM outbox WHERE created_at < ?", [outboxBefore.timeIntervalSince1970]),
                // Failures from an address that has been quiet for a day are forgotten (and its expired locks).
                ("DELETE FROM address_events WHERE at < ?", [t - 24 * 3600]),
                ("DELETE FROM login_attempts WHERE (locked_until IS NULL OR locked_until < ?) AND updated_at < ?", [t, t - 24 * 3600]),
                // Deliveries no loop will give up on: those of a webhook removed from the configuration.
                ("DELETE FROM deliveries WHERE created_at < ?", [t - DeliveryRetention.pruneAfterSeconds])
            ]
            for (sql, arguments) in statements {
                try db.execute(sql: sql, arguments: arguments)
                deleted += db.changesCount
            }
            return deleted
        }
    }

    // MARK: Inspection (tests)

    /// Rows in one of the store's tables.
    func rowCount(table: String) async throws -> Int {
        guard table.allSatisfy({ $0.isLetter || $0 == "_" }) else { return -1 }
        return try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0 }
    }

    /// SQLite's plan for the lookup of users by email (`users(claim: "email", …)`).
    func emailLookupPlan() async throws -> String {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN SELECT * FROM users WHERE json_extract(claims, '$.email') = ? COLLATE NOCASE",
                arguments: ["someone@example.com"]
            ).map { row -> String in row["detail"] }.joined(separator: "; ")
        }
    }
}
