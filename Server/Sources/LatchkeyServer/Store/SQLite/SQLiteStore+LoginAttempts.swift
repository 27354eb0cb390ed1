import Foundation
import GRDB

/// Password attempts: counted before the hash, settled after it (`Store.reserveLoginAttempt`).
///
/// Two counters: `login_attempts` per account and client address (the lock most people meet: wrong guesses from
/// one network lock the account for that network only, so nobody can lock someone else out with a few requests),
/// and `users.failed_logins` for the account from all addresses together (a higher limit that bounds guessing
/// spread over many addresses).
extension SQLiteStore {
    static func migrateLoginAttempts(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE login_attempts (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, address TEXT NOT NULL,
                    failed INTEGER NOT NULL DEFAULT 0, locked_until REAL, updated_at REAL NOT NULL, PRIMARY KEY (user_id, address));
                """)
    }

    public func reserveLoginAttempt(userId: String, address: String, now: Date, limits: LoginLimits) async throws -> LoginAttemptReservation {
        let t = now.timeIntervalSince1970
        return try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE users SET failed_logins = failed_logins + 1, locked_until = NULL
                    WHERE id = ? AND (locked_until IS NULL OR locked_until <= ?) AND failed_logins < ?
                    """, arguments: [userId, t, limits.perAccount])
            guard db.changesCount == 1 else {
                let until = try Double.fetchOne(db, sql: "SELECT locked_until FROM users WHERE id = ?", arguments: [userId])
                return .refused(lockedUntil: until.flatMap { $0 > t ? Date(timeIntervalSince1970: $0) : nil })
            }
            try db.execute(
                sql: """
                    INSERT INTO login_attempts (user_id, address, failed, locked_until, updated_at) VALUES (?, ?, 0, NULL, ?)
                    ON CONFLICT(user_id, address) DO NOTHING
                    """, arguments: [userId, address, t])
            try db.execute(
                sql: """
                    UPDATE login_attempts SET failed = failed + 1, locked_until = NULL, updated_at = ?
                    WHERE user_id = ? AND address = ? AND (locked_until IS NULL OR locked_until <= ?) AND failed < ?
                    """, arguments: [t, userId, address, t, limits.perAddress])
            guard db.changesCount == 1 else {
                // Not reserved after all: give the account-wide count back (same transaction).
                try db.execute(sql: "UPDATE users SET failed_logins = failed_logins - 1 WHERE id = ? AND failed_logins > 0", arguments: [userId])
                let until = try Double.fetchOne(
                    db, sql: "SELECT locked_until FROM login_attempts WHERE user_id = ? AND address = ?",
                    arguments: [userId, address])
                return .refused(lockedUntil: until.flatMap { $0 > t ? Date(timeIntervalSince1970: $0) : nil })
            }
            return .reserved
        }
    }

    public func settleLoginFailure(userId: String, address: String, now: Date, limits: LoginLimits) async throws -> Date? {
        let t = now.timeIntervalSince1970
        let until = now.addingTimeInterval(limits.lockFor).timeIntervalSince1970
        return try await pool.write { db in
            // The failure was counted when reserved; only the locks are left to decide. Attempts still in flight were
            // counted too and are absorbed by a lock (their own settling changes nothing while it holds).
            try db.execute(
                sql: """
                    UPDATE login_attempts SET locked_until = ?, failed = 0, updated_at = ?
                    WHERE user_id = ? AND address = ? AND failed >= ? AND (locked_until IS NULL OR locked_until <= ?)
                    """, arguments: [until, t, userId, address, limits.perAddress, t])
            var locked = db.changesCount == 1
            try db.execute(
                sql: """
                    UPDATE users SET locked_until = ?, failed_logins = 0
                    WHERE id = ? AND failed_logins >= ? AND (locked_until IS NULL OR locked_until <= ?)
                    """, arguments: [until, userId, limits.perAccount, t])
            locked = locked || db.changesCount == 1
            return locked ? Date(timeIntervalSince1970: until) : nil
        }
    }

    public func releaseLoginAttempt(userId: String, address: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE users SET failed_logins = failed_logins - 1 WHERE id = ? AND failed_logins > 0", arguments: [userId])
            try db.execute(
                sql: "UPDATE login_attempts SET failed = failed - 1 WHERE user_id = ? AND address = ? AND failed > 0",
                arguments: [userId, address])
        }
    }

    public func settleLoginSuccess(userId: String, address: String, now: Date) async throws -> Bool {
        let t = now.timeIntervalSince1970
        return try await pool.write { db in
            let addressLocked =
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT 1 FROM login_attempts WHERE user_id = ? AND address = ? AND locked_until > ?
                        """, arguments: [userId, address, t]) ?? false
            guard !addressLocked else { return false }
            try db.execute(
                sql: """
                    UPDATE users SET failed_logins = 0, locked_until = NULL WHERE id = ? AND (locked_until IS NULL OR locked_until <= ?)
                    """, arguments: [userId, t])
            guard db.changesCount == 1 else { return false }
            try db.execute(sql: "DELETE FROM login_attempts WHERE user_id = ? AND address = ?", arguments: [userId, address])
            return true
        }
    }

    public func lockout(userId: String, now: Date) async throws -> AccountLockout? {
        let t = now.timeIntervalSince1970
        return try await pool.read { db -> AccountLockout? in
            guard let user = try Row.fetchOne(db, sql: "SELECT failed_logins, locked_until FROM users WHERE id = ?", arguments: [userId]) else {
                return nil
            }
            let addresses = try Row.fetchOne(
                db, sql: "SELECT COUNT(*) AS n, MAX(locked_until) AS latest FROM login_attempts WHERE user_id = ? AND locked_until > ?",
                arguments: [userId, t])
            let lockedUntil: Double? = user["locked_until"]
            return AccountLockout(
                lockedUntil: lockedUntil.flatMap { $0 > t ? Date(timeIntervalSince1970: $0) : nil }, failedAttempts: user["failed_logins"],
                lockedAddresses: addresses?["n"] ?? 0, latestAddressLockUntil: Self.date(addresses?["latest"]))
        }
    }

    public func clearLockout(userId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE users SET failed_logins = 0, locked_until = NULL WHERE id = ?", arguments: [userId])
            guard db.changesCount == 1 else { return false }
            try db.execute(sql: "DELETE FROM login_attempts WHERE user_id = ?", arguments: [userId])
            return true
        }
    }
}
