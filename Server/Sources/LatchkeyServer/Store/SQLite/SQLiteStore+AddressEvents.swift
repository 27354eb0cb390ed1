import Foundation
import GRDB

/// Per-address throttle events (`Store.reserveAddressEvent`). A server on SQLite is one instance and keeps its address
/// throttles in memory; the table exists so the store fulfils the whole contract (and tools can share it).
extension SQLiteStore {
    static func migrateAddressEvents(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE address_events (bucket TEXT NOT NULL, address TEXT NOT NULL, at REAL NOT NULL);
                CREATE INDEX address_events_key ON address_events(bucket, address, at);
                CREATE INDEX address_events_at ON address_events(at);
                """)
    }

    public func reserveAddressEvent(bucket: String, address: String, now: Date, window: TimeInterval, limit: Int) async throws -> Int? {
        try await pool.write { db in
            let row = try Row.fetchOne(
                db, sql: "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM address_events WHERE bucket = ? AND address = ? AND at > ?",
                arguments: [bucket, address, now.timeIntervalSince1970 - window])
            let count: Int = row?["n"] ?? 0
            if count >= limit {
                return AddressThrottle.secondsUntilFree(oldest: Self.date(row?["oldest"]) ?? now, window: window, now: now)
            }
            try db.execute(
                sql: "INSERT INTO address_events (bucket, address, at) VALUES (?, ?, ?)",
                arguments: [bucket, address, now.timeIntervalSince1970])
            return nil
        }
    }

    public func releaseAddressEvent(bucket: String, address: String, at: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    DELETE FROM address_events WHERE rowid IN (
                        SELECT rowid FROM address_events WHERE bucket = ? AND address = ? AND at = ? LIMIT 1)
                    """, arguments: [bucket, address, at.timeIntervalSince1970])
        }
    }
}
