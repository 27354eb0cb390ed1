import Foundation
import GRDB

/// Consents to third-party applications (`ConsentStore`).
extension SQLiteStore {
    static func migrateConsents(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE consents (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, client_id TEXT NOT NULL, scopes TEXT NOT NULL,
                    granted_at REAL NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (user_id, client_id));
                """)
    }

    public func consent(userId: String, clientId: String) async throws -> ConsentRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM consents WHERE user_id = ? AND client_id = ?", arguments: [userId, clientId])
                .map(Self.consentRecord)
        }
    }

    public func grantConsent(userId: String, clientId: String, scopes: [String], now: Date) async throws -> ConsentRecord {
        try await pool.write { db in
            let existing = try Row.fetchOne(
                db, sql: "SELECT * FROM consents WHERE user_id = ? AND client_id = ?", arguments: [userId, clientId]
            ).map(Self.consentRecord)
            let record = ConsentRecord(
                userId: userId, clientId: clientId, scopes: (existing?.scopes ?? []) + scopes, grantedAt: existing?.grantedAt ?? now,
                updatedAt: now)
            try db.execute(
                sql: """
                    INSERT INTO consents (user_id, client_id, scopes, granted_at, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, client_id) DO UPDATE SET scopes = excluded.scopes, updated_at = excluded.updated_at
                    """,
                arguments: [
                    userId, clientId, record.scopes.joined(separator: " "), record.grantedAt.timeIntervalSince1970,
                    now.timeIntervalSince1970
                ])
            return record
        }
    }

    public func consents(userId: String) async throws -> [ConsentRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM consents WHERE user_id = ? ORDER BY client_id", arguments: [userId]).map(Self.consentRecord)
        }
    }

    public func withdrawConsent(userId: String, clientId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM consents WHERE user_id = ? AND client_id = ?", arguments: [userId, clientId])
            return db.changesCount > 0
        }
    }

    private static func consentRecord(_ row: Row) -> ConsentRecord {
        let scopes: String = row["scopes"]
        return ConsentRecord(
            userId: row["user_id"], clientId: row["client_id"], scopes: scopes.split(separator: " ").map(String.init),
            grantedAt: date(row["granted_at"]) ?? .distantPast, updatedAt: date(row["updated_at"]) ?? .distantPast)
    }
}
