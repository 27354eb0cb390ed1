import Foundation
import GRDB

/// Federated identities (links) and federated sign-ins in progress.
extension SQLiteStore {
    static func migrateFederatedLogins(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE federated_logins (
                    handle_hash BLOB PRIMARY KEY, provider TEXT NOT NULL, purpose TEXT NOT NULL, payload BLOB NOT NULL,
                    expires_at REAL NOT NULL);
                CREATE INDEX federated_logins_expires ON federated_logins(expires_at);
                CREATE INDEX federated_identities_user ON federated_identities(user_id);
                """)
    }

    public func insertFederatedLogin(_ record: FederatedLoginRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO federated_logins (handle_hash, provider, purpose, payload, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [record.handleHash, record.provider, record.purpose, record.payload, record.expiresAt.timeIntervalSince1970])
        }
    }

    public func takeFederatedLogin(handleHash: Data, now: Date) async throws -> FederatedLoginRecord? {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM federated_logins WHERE handle_hash = ?", arguments: [handleHash]) else {
                return nil
            }
            try db.execute(sql: "DELETE FROM federated_logins WHERE handle_hash = ?", arguments: [handleHash])
            let record = FederatedLoginRecord(
                handleHash: row["handle_hash"], provider: row["provider"], purpose: row["purpose"], payload: row["payload"],
                expiresAt: Self.date(row["expires_at"]) ?? .distantPast)
            return record.expiresAt > now ? record : nil
        }
    }

    public func federatedIdentities(userId: String) async throws -> [FederatedIdentityRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM federated_identities WHERE user_id = ? ORDER BY created_at, provider", arguments: [userId]
            ).map(Self.federatedIdentity)
        }
    }

    public func keepFederatedRefreshToken(provider: String, subject: String, sealed: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE federated_identities SET refresh_token_sealed = ? WHERE provider = ? AND subject = ?",
                arguments: [sealed, provider, subject])
        }
    }

    static func federatedIdentity(_ row: Row) -> FederatedIdentityRecord {
        FederatedIdentityRecord(
            provider: row["provider"], subject: row["subject"], userId: row["user_id"], createdAt: date(row["created_at"]) ?? .distantPast,
            sealedRefreshToken: row["refresh_token_sealed"])
    }

    public func unlinkFederatedIdentity(provider: String, userId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM federated_identities WHERE provider = ? AND user_id = ?", arguments: [provider, userId])
            return db.changesCount > 0
        }
    }
}
