import Foundation
import PostgresNIO

/// Pruning of expired rows.
extension PostgresStore {
    public func pruneExpired(now: Date, outboxBefore: Date) async throws -> Int {
        let t = now.epoch
        // Used authorization codes are kept a day past expiry: a replay within that day still revokes the family.
        let codesBefore = t - 24 * 3600
        let quietSince = t - 24 * 3600
        let outbox = outboxBefore.epoch
        let statements: [PostgresQuery] = [
            "DELETE FROM login_requests WHERE expires_at < \(t)",
            "DELETE FROM flow_executions WHERE expires_at < \(t)",
            "DELETE FROM authorization_codes WHERE expires_at < \(codesBefore)",
            "DELETE FROM access_tokens WHERE expires_at < \(t)",
            """
            DELETE FROM refresh_tokens WHERE expires_at < \(t)
               OR family_id IN (SELECT id FROM token_families WHERE revoked_at IS NOT NULL)
            """,
            // An ended session stays until its end is announced to the applications (`BackChannelLogout`).
            "DELETE FROM sessions WHERE (expires_at < \(t) AND ended_at IS NULL) OR (ended_at IS NOT NULL AND logout_announced)",
            // By the database's clock, which every instance shares, with the skew margin.
            "DELETE FROM consumed_token_ids WHERE expires_at < extract(epoch FROM now()) - \(SingleUseRetention.skewMargin)",
            "DELETE FROM pushed_requests WHERE expires_at < \(t)",
            "DELETE FROM device_authorizations WHERE expires_at < \(t)",
            "DELETE FROM passkey_challenges WHERE expires_at < \(t)",
            "DELETE FROM step_up_challenges WHERE expires_at < \(t)",
            "DELETE FROM federated_logins WHERE expires_at < \(t)",
            "DELETE FROM login_second_factors WHERE expires_at < \(t)",
            "DELETE FROM email_changes WHERE expires_at < \(t)",
            "DELETE FROM outbox WHERE created_at < \(outbox)",
            // Failures from an address that has been quiet for a day are forgotten (and its expired locks).
            "DELETE FROM login_attempts WHERE (locked_until IS NULL OR locked_until < \(t)) AND updated_at < \(quietSince)",
            // Per-address throttle events older than a day (no throttle window is longer).
            "DELETE FROM address_events WHERE at < \(t - 86400)",
            // Deliveries no loop will give up on: those of a webhook removed from the configuration.
            "DELETE FROM deliveries WHERE created_at < \(t - DeliveryRetention.pruneAfterSeconds)"
        ]
        // Each DELETE commits on its own (unlike SQLite's one write transaction), with its own deadline: pruning needs
        // no atomicity, and short statements hold no row locks across tables, so they cannot deadlock with requests
        // or hold the pool long. A row two instances prune at once is deleted (and counted) by one of them only. The
        // count comes back as one number (`WITH … RETURNING 1 … count(*)`), not as one row per deleted row.
        var deleted = 0
        for statement in statements {
            let counted = PostgresQuery(
                unsafeSQL: "WITH pruned AS (\(statement.sql) RETURNING 1) SELECT count(*) FROM pruned",
                binds: statement.binds)
            deleted += try await connection { connection -> Int in
                try await self.row(counted, on: connection)?.decode(Int.self) ?? 0
            }
        }
        return deleted
    }

    // MARK: Inspection (tests)

    /// Rows in one of the store's tables.
    func rowCount(table: String) async throws -> Int {
        guard table.allSatisfy({ $0.isLetter || $0 == "_" }) else { return -1 }
        return try await connection { connection -> Int in
            try await self.row(PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM \(table)"), on: connection)?.decode(Int.self) ?? 0
        }
    }
}
