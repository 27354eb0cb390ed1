import Foundation
import PostgresNIO

/// Password attempts: counted before the hash, settled after it (`Store.reserveLoginAttempt`).
///
/// Two counters: `login_attempts` per account and client address, and `users.failed_logins` for the account from all
/// addresses together (see `SQLiteStore+LoginAttempts.swift`). SQLite runs each method in a serialized write; here each
/// transaction first locks the account's `users` row (`FOR UPDATE`), so every reservation and settlement of one account
/// (on any instance) takes its turn and its several statements see one stable state. `replacePassword` updates the same
/// row first, so it takes its turn too.
extension PostgresStore {
    /// Locks the account's row until the transaction ends (nothing when the account does not exist).
    private func lockLoginAccount(_ userId: String, on connection: PostgresConnection) async throws {
        try await execute("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", on: connection)
    }

    public func reserveLoginAttempt(userId: String, address: String, now: Date, limits: LoginLimits) async throws -> LoginAttemptReservation {
        let t = now.epoch, perAccount = limits.perAccount, perAddress = limits.perAddress
        return try await transaction { connection in
            try await self.lockLoginAccount(userId, on: connection)
            let accountCounted = try await self.execute(
                """
                UPDATE users SET failed_logins = failed_logins + 1, locked_until = NULL
                WHERE id = \(userId) AND (locked_until IS NULL OR locked_until <= \(t)) AND failed_logins < \(perAccount)
                RETURNING 1
                """, on: connection)
            guard accountCounted == 1 else {
                let until = try await self.row("SELECT locked_until FROM users WHERE id = \(userId)", on: connection)?.decode(Double?.self)
                return .refused(lockedUntil: until.flatMap { $0 > t ? Date(timeIntervalSince1970: $0) : nil })
            }
            // Insert-if-absent that also locks an existing row (a no-op update instead of DO NOTHING): the pruning in
            // `pruneExpired` does not take the account's lock, and must not delete the row between this statement and
            // the next one (the next would then find nothing and refuse).
            try await self.execute(
                """
                INSERT INTO login_attempts (user_id, address, failed, locked_until, updated_at) VALUES (\(userId), \(address), 0, NULL, \(t))
                ON CONFLICT (user_id, address) DO UPDATE SET failed = login_attempts.failed
                """, on: connection)
            let addressCounted = try await self.execute(
                """
                UPDATE login_attempts SET failed = failed + 1, locked_until = NULL, updated_at = \(t)
                WHERE user_id = \(userId) AND address = \(address) AND (locked_until IS NULL OR locked_until <= \(t)) AND failed < \(perAddress)
                RETURNING 1
                """, on: connection)
            guard addressCounted == 1 else {
                // Not reserved after all: give the account-wide count back (same transaction).
                try await self.execute(
                    "UPDATE users SET failed_logins = failed_logins - 1 WHERE id = \(userId) AND failed_logins > 0",
                    on: connection)
                let until = try await self.row(
                    "SELECT locked_until FROM login_attempts WHERE user_id = \(userId) AND address = \(address)",
                    on: connection)?.decode(Double?.self)
                return .refused(lockedUntil: until.flatMap { $0 > t ? Date(timeIntervalSince1970: $0) : nil })
            }
            return .reserved
        }
    }

    public func settleLoginFailure(userId: String, address: String, now: Date, limits: LoginLimits) async throws -> Date? {
        let t = now.epoch, perAccount = limits.perAccount, perAddress = limits.perAddress
        let until = now.addingTimeInterval(limits.lockFor).epoch
        return try await transaction { connection in
            try await self.lockLoginAccount(userId, on: connection)
            // The failure was counted when reserved; only the locks are left to decide. Attempts still in flight were
            // counted too and are absorbed by a lock (their own settling changes nothing while it holds).
            let addressLocked =
                try await self.execute(
                    """
                    UPDATE login_attempts SET locked_until = \(until), failed = 0, updated_at = \(t)
                    WHERE user_id = \(userId) AND address = \(address) AND failed >= \(perAddress) AND (locked_until IS NULL OR locked_until <= \(t))
                    RETURNING 1
                    """, on: connection) == 1
            // Always run (not short-circuited by the address lock): both locks are decided, as in SQLite.
            let accountLocked =
                try await self.execute(
                    """
                    UPDATE users SET locked_until = \(until), failed_logins = 0
                    WHERE id = \(userId) AND failed_logins >= \(perAccount) AND (locked_until IS NULL OR locked_until <= \(t))
                    RETURNING 1
                    """, on: connection) == 1
            return addressLocked || accountLocked ? Date(timeIntervalSince1970: until) : nil
        }
    }

    public func releaseLoginAttempt(userId: String, address: String) async throws {
        try await transaction { connection in
            try await self.lockLoginAccount(userId, on: connection)
            try await self.execute(
                "UPDATE users SET failed_logins = failed_logins - 1 WHERE id = \(userId) AND failed_logins > 0",
                on: connection)
            try await self.execute(
                """
                UPDATE login_attempts SET failed = failed - 1 WHERE user_id = \(userId) AND address = \(address) AND failed > 0
                """, on: connection)
        }
    }

    public func settleLoginSuccess(userId: String, address: String, now: Date) async throws -> Bool {
        let t = now.epoch
        return try await transaction { connection in
            try await self.lockLoginAccount(userId, on: connection)
            let addressLocked =
                try await self.row(
                    """
                    SELECT 1 FROM login_attempts WHERE user_id = \(userId) AND address = \(address) AND locked_until > \(t)
                    """, on: connection) != nil
            guard !addressLocked else { return false }
            let cleared = try await self.execute(
                """
                UPDATE users SET failed_logins = 0, locked_until = NULL
                WHERE id = \(userId) AND (locked_until IS NULL OR locked_until <= \(t))
                RETURNING 1
                """, on: connection)
            guard cleared == 1 else { return false }
            try await self.execute("DELETE FROM login_attempts WHERE user_id = \(userId) AND address = \(address)", on: connection)
            return true
        }
    }

    public func lockout(userId: String, now: Date) async throws -> AccountLockout? {
        let t = now.epoch
        return try await connection { connection -> AccountLockout? in
            guard let user = try await self.row("SELECT failed_logins, locked_until FROM users WHERE id = \(userId)", on: connection) else {
                return nil
            }
            let (failed, until) = try user.decode((Int, Double?).self)
            let addresses = try await self.row(
                "SELECT COUNT(*)::BIGINT, MAX(locked_until) FROM login_attempts WHERE user_id = \(userId) AND locked_until > \(t)",
                on: connection)
            let (count, latest) = try addresses?.decode((Int, Double?).self) ?? (0, nil)
            return AccountLockout(
                lockedUntil: until.flatMap { $0 > t ? Date(timeIntervalSince1970: $0) : nil }, failedAttempts: failed, lockedAddresses: count,
                latestAddressLockUntil: latest.map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func clearLockout(userId: String) async throws -> Bool {
        try await transaction { connection in
            try await self.lockLoginAccount(userId, on: connection)
            let cleared = try await self.execute(
                "UPDATE users SET failed_logins = 0, locked_until = NULL WHERE id = \(userId) RETURNING 1", on: connection)
            guard cleared == 1 else { return false }
            try await self.execute("DELETE FROM login_attempts WHERE user_id = \(userId)", on: connection)
            return true
        }
    }
}
