import Foundation
import PostgresNIO

/// Per-account budgets of one-time codes (wrong codes, recovery emails), TOTP replay protection, and step-up
/// challenges keyed by their step-up token's digest.
extension PostgresStore {
    // MARK: Account event budgets

    public func admitAccountEvent(key: String, now: Date, window: TimeInterval, limit: Int) async throws -> (
        admitted: Bool, events: AccountEventCount
    ) {
        let t = now.epoch
        let cutoff = t - window
        return try await transaction { connection -> (admitted: Bool, events: AccountEventCount) in
            // Check and record under a lock on the key: the events of a key are rows that may not exist yet, so no row
            // lock can order two concurrent attempts; the advisory lock makes them take turns in every instance, and
            // they cannot all pass a count taken before any of them was recorded.
            try await self.lock("account_events", key, on: connection)
            try await self.pruneAccountEvents(before: cutoff, on: connection)
            // Only events within the window are counted (what is left after SQLite's prune): the prune skips rows
            // another transaction is pruning, so the count must not depend on it.
            let row = try await self.row(
                """
                SELECT COUNT(*) AS n, MIN(at) AS oldest FROM account_events WHERE key = \(key) AND at > \(cutoff)
                """, on: connection)
            let (count, oldest) = try Self.accountEventWindow(row)
            guard count < limit else { return (false, AccountEventCount(count: count, oldest: oldest.map(Date.init(timeIntervalSince1970:)))) }
            try await self.execute("INSERT INTO account_events (key, at) VALUES (\(key), \(t))", on: connection)
            // Under the key's lock nobody else adds events of this key: afterwards there is exactly this one more (the
            // times compared as stored, so the result is what a second count would read).
            return (true, AccountEventCount(count: count + 1, oldest: Date(timeIntervalSince1970: min(oldest ?? t, t))))
        }
    }

    public func accountEvents(key: String, now: Date, window: TimeInterval) async throws -> AccountEventCount {
        let cutoff = now.epoch - window
        let row = try await connection { connection in
            try await self.row(
                """
                SELECT COUNT(*) AS n, MIN(at) AS oldest FROM account_events WHERE key = \(key) AND at > \(cutoff)
                """, on: connection)
        }
        let (count, oldest) = try Self.accountEventWindow(row)
        return AccountEventCount(count: count, oldest: oldest.map(Date.init(timeIntervalSince1970:)))
    }

    public func clearAccountEvents(key: String) async throws {
        try await transaction { connection in
            // The key's lock: a clear falls before or after a concurrent admission, never between its count and insert.
            try await self.lock("account_events", key, on: connection)
            try await self.execute("DELETE FROM account_events WHERE key = \(key)", on: connection)
        }
    }

    /// Events older than the window are dropped for every key, not only this one: keys of unknown recovery
    /// identifiers are made up by strangers, and the table must not grow with them. Rows another transaction is
    /// pruning at the same moment are skipped (SKIP LOCKED) rather than waited for: concurrent admissions of different
    /// keys neither queue nor deadlock on each other's housekeeping.
    private func pruneAccountEvents(before cutoff: Double, on connection: PostgresConnection) async throws {
        try await execute(
            """
            DELETE FROM account_events WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM account_events WHERE at <= \(cutoff) FOR UPDATE SKIP LOCKED))
            """, on: connection)
    }

    /// The count and the oldest time (seconds since 1970, as stored) of a `COUNT(*) AS n, MIN(at) AS oldest` row.
    private static func accountEventWindow(_ row: PostgresRow?) throws -> (count: Int, oldest: Double?) {
        guard let row else { return (0, nil) }
        let c = Columns(row)
        let count: Int = try c("n")
        let oldest: Double? = try c("oldest")
        return (count, oldest)
    }

    // MARK: TOTP replay

    public func acceptTOTPStep(userId: String, step: Int64) async throws -> Bool {
        try await connection { connection in
            // One conditional UPDATE: of two requests presenting the same code, exactly one moves the step forward.
            try await self.execute(
                """
                UPDATE user_factors SET totp_last_step = \(step)
                WHERE user_id = \(userId) AND kind = 'totp' AND (totp_last_step IS NULL OR totp_last_step < \(step))
                RETURNING 1
                """, on: connection) == 1
        }
    }
}
