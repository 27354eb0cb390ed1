import Foundation
import GRDB

/// Device authorizations (RFC 8628).
extension SQLiteStore {
    static func migrateDeviceAuthorizations(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE device_authorizations (
                    device_code_hash BLOB PRIMARY KEY, user_code_digest BLOB NOT NULL UNIQUE, client_id TEXT NOT NULL,
                    scope TEXT NOT NULL, status TEXT NOT NULL, user_id TEXT, session_id TEXT, auth_time REAL, amr TEXT,
                    created_at REAL NOT NULL, expires_at REAL NOT NULL, interval INTEGER NOT NULL, last_polled_at REAL);
                """)
    }

    public func insertDeviceAuthorization(_ a: DeviceAuthorizationRecord) async throws {
        let amr = try Self.json(a.amr)
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO device_authorizations (device_code_hash, user_code_digest, client_id, scope, status, user_id, session_id,
                        auth_time, amr, created_at, expires_at, interval, last_polled_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    a.deviceCodeHash, a.userCodeDigest, a.clientId, a.scope.joined(separator: " "), a.status.rawValue,
                    a.userId, a.sessionId, a.authTime?.timeIntervalSince1970, amr, a.createdAt.timeIntervalSince1970,
                    a.expiresAt.timeIntervalSince1970, a.interval, a.lastPolledAt?.timeIntervalSince1970
                ])
        }
    }

    public func pendingDeviceAuthorization(userCodeDigest: Data, now: Date) async throws -> DeviceAuthorizationRecord? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM device_authorizations WHERE user_code_digest = ? AND status = 'pending' AND expires_at > ?",
                arguments: [userCodeDigest, now.timeIntervalSince1970]
            ).map(Self.deviceAuthorization)
        }
    }

    public func decideDeviceAuthorization(
        userCodeDigest: Data, approve: Bool, userId: String, sessionId: String, authTime: Date,
        amr: [String], now: Date
    ) async throws -> Bool {
        let amrJSON = try Self.json(amr)
        return try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE device_authorizations SET status = ?, user_id = ?, session_id = ?, auth_time = ?, amr = ?
                    WHERE user_code_digest = ? AND status = 'pending' AND expires_at > ?
                    """,
                arguments: [
                    approve ? "approved" : "denied", userId, sessionId, authTime.timeIntervalSince1970, amrJSON,
                    userCodeDigest, now.timeIntervalSince1970
                ])
            return db.changesCount == 1
        }
    }

    public func pollDeviceAuthorization(deviceCodeHash: Data, clientId: String, now: Date) async throws -> DevicePoll {
        try await pool.write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM device_authorizations WHERE device_code_hash = ?",
                    arguments: [deviceCodeHash])
            else { return .notFound }
            let record = Self.deviceAuthorization(row)
            if record.status == .used || record.clientId != clientId { return .notFound }
            if record.expiresAt <= now { return .expired }
            if let last = record.lastPolledAt, now.timeIntervalSince(last) < TimeInterval(record.interval) {
                // RFC 8628 §3.5: every slow_down adds 5 seconds to the interval the device must keep.
                let interval = record.interval + 5
                try db.execute(
                    sql: "UPDATE device_authorizations SET interval = ?, last_polled_at = ? WHERE device_code_hash = ?",
                    arguments: [interval, now.timeIntervalSince1970, deviceCodeHash])
                return .slowDown(interval: interval)
            }
            try db.execute(
                sql: "UPDATE device_authorizations SET last_polled_at = ? WHERE device_code_hash = ?",
                arguments: [now.timeIntervalSince1970, deviceCodeHash])
            switch record.status {
            case .pending: return .pending
            case .denied:
                try db.execute(sql: "DELETE FROM device_authorizations WHERE device_code_hash = ?", arguments: [deviceCodeHash])
                return .denied
            case .approved:
                try db.execute(sql: "UPDATE device_authorizations SET status = 'used' WHERE device_code_hash = ?", arguments: [deviceCodeHash])
                return .approved(record)
            case .used: return .notFound
            }
        }
    }

    private static func deviceAuthorization(_ row: Row) -> DeviceAuthorizationRecord {
        DeviceAuthorizationRecord(
            deviceCodeHash: row["device_code_hash"], userCodeDigest: row["user_code_digest"], clientId: row["client_id"],
            scope: scopes(row["scope"]), status: DeviceAuthorizationRecord.Status(rawValue: row["status"]) ?? .denied,
            userId: row["user_id"], sessionId: row["session_id"], authTime: date(row["auth_time"]), amr: amr(row["amr"]),
            createdAt: date(row["created_at"]) ?? .distantPast, expiresAt: date(row["expires_at"]) ?? .distantPast,
            interval: row["interval"], lastPolledAt: date(row["last_polled_at"]))
    }
}
