import Foundation
import PostgresNIO

/// Device authorizations (RFC 8628).
extension PostgresStore {
    public func insertDeviceAuthorization(_ a: DeviceAuthorizationRecord) async throws {
        let amr = try SQLiteStore.json(a.amr)
        let scope = a.scope.joined(separator: " ")
        try await connection { connection in
            _ = try await self.execute(
                """
                INSERT INTO device_authorizations (device_code_hash, user_code_digest, client_id, scope, status, user_id, session_id,
                    auth_time, amr, created_at, expires_at, poll_interval, last_polled_at)
                VALUES (\(a.deviceCodeHash), \(a.userCodeDigest), \(a.clientId), \(scope), \(a.status.rawValue), \(a.userId),
                    \(a.sessionId), \(a.authTime?.epoch), \(amr), \(a.createdAt.epoch), \(a.expiresAt.epoch), \(a.interval),
                    \(a.lastPolledAt?.epoch))
                """, on: connection)
        }
    }

    public func pendingDeviceAuthorization(userCodeDigest: Data, now: Date) async throws -> DeviceAuthorizationRecord? {
        let t = now.epoch
        return try await connection { connection in
            try await self.row(
                """
                SELECT * FROM device_authorizations WHERE user_code_digest = \(userCodeDigest) AND status = 'pending' AND expires_at > \(t)
                """, on: connection
            ).map(PostgresStore.deviceAuthorization)
        }
    }

    public func decideDeviceAuthorization(
        userCodeDigest: Data, approve: Bool, userId: String, sessionId: String, authTime: Date,
        amr: [String], now: Date
    ) async throws -> Bool {
        let amrJSON = try SQLiteStore.json(amr)
        let status = approve ? "approved" : "denied"
        let authTimeEpoch = authTime.epoch
        let t = now.epoch
        // One conditional UPDATE: of two concurrent decisions (or a decision and an expiry) only one finds the row
        // still pending; the other changes nothing and gets false.
        return try await connection { connection in
            try await self.execute(
                """
                UPDATE device_authorizations SET status = \(status), user_id = \(userId), session_id = \(sessionId),
                    auth_time = \(authTimeEpoch), amr = \(amrJSON)
                WHERE user_code_digest = \(userCodeDigest) AND status = 'pending' AND expires_at > \(t)
                RETURNING 1
                """, on: connection) == 1
        }
    }

    public func pollDeviceAuthorization(deviceCodeHash: Data, clientId: String, now: Date) async throws -> DevicePoll {
        let t = now.epoch
        return try await transaction { connection -> DevicePoll in
            // FOR UPDATE: concurrent polls of the same device code (from any instance) run one after the other, so the
            // interval is enforced against the latest poll and an approval is handed out exactly once. A decision
            // waiting on the lock re-checks `status = 'pending'` after this transaction and finds it changed.
            guard
                let row = try await self.row(
                    "SELECT * FROM device_authorizations WHERE device_code_hash = \(deviceCodeHash) FOR UPDATE",
                    on: connection)
            else { return .notFound }
            let record = try PostgresStore.deviceAuthorization(row)
            if record.status == .used || record.clientId != clientId { return .notFound }
            if record.expiresAt <= now { return .expired }
            if let last = record.lastPolledAt, now.timeIntervalSince(last) < TimeInterval(record.interval) {
                // RFC 8628 §3.5: every slow_down adds 5 seconds to the interval the device must keep.
                let interval = record.interval + 5
                try await self.execute(
                    """
                    UPDATE device_authorizations SET poll_interval = \(interval), last_polled_at = \(t) WHERE device_code_hash = \(deviceCodeHash)
                    """, on: connection)
                return .slowDown(interval: interval)
            }
            try await self.execute(
                "UPDATE device_authorizations SET last_polled_at = \(t) WHERE device_code_hash = \(deviceCodeHash)",
                on: connection)
            switch record.status {
            case .pending: return .pending
            case .denied:
                try await self.execute("DELETE FROM device_authorizations WHERE device_code_hash = \(deviceCodeHash)", on: connection)
                return .denied
            case .approved:
                try await self.execute(
                    "UPDATE device_authorizations SET status = 'used' WHERE device_code_hash = \(deviceCodeHash)",
                    on: connection)
                return .approved(record)
            case .used: return .notFound
            }
        }
    }

    private static func deviceAuthorization(_ row: PostgresRow) throws -> DeviceAuthorizationRecord {
        let c = Columns(row)
        return DeviceAuthorizationRecord(
            deviceCodeHash: try c("device_code_hash", as: Data.self), userCodeDigest: try c("user_code_digest", as: Data.self),
            clientId: try c("client_id", as: String.self), scope: SQLiteStore.scopes(try c("scope", as: String.self)),
            status: DeviceAuthorizationRecord.Status(rawValue: try c("status", as: String.self)) ?? .denied,
            userId: try c("user_id", as: String?.self), sessionId: try c("session_id", as: String?.self),
            authTime: try c.date("auth_time"), amr: SQLiteStore.amr(try c("amr", as: String?.self)),
            createdAt: try c.date("created_at") ?? .distantPast, expiresAt: try c.date("expires_at") ?? .distantPast,
            interval: try c("poll_interval", as: Int.self), lastPolledAt: try c.date("last_polled_at"))
    }
}
