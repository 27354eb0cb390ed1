import Foundation
import GRDB

/// Applications: configured ones seeded at start, registered ones (RFC 7591) created and changed at runtime.
extension SQLiteStore {
    /// Registered applications: where a row comes from, the registration access token's hash, the secret before the
    /// last rotation and until when it is accepted. Indexes by client on the token tables, so deleting an application
    /// finds its tokens without reading all of them.
    static func migrateRegisteredClients(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE clients ADD COLUMN origin TEXT NOT NULL DEFAULT 'configuration';
                ALTER TABLE clients ADD COLUMN registration_token_hash BLOB;
                ALTER TABLE clients ADD COLUMN previous_secret_hash BLOB;
                ALTER TABLE clients ADD COLUMN previous_secret_expires_at REAL;
                ALTER TABLE clients ADD COLUMN issued_at REAL;
                CREATE INDEX token_families_client ON token_families(client_id);
                CREATE INDEX access_tokens_client ON access_tokens(client_id);
                """)
    }

    /// Who registered each registered application (`ClientRecord.registeredBy`). Registrations made before are given
    /// the actor the audit trail recorded for them, while the trail still holds it; the others stay unowned, which
    /// leaves them to administrators (and their own registration access tokens).
    static func migrateClientRegistrants(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE clients ADD COLUMN registered_by TEXT;
                UPDATE clients SET registered_by = (
                    SELECT actor FROM audit_events
                    WHERE audit_events.type = 'application.registered' AND audit_events.client_id = clients.id
                    ORDER BY at, id LIMIT 1)
                WHERE origin = 'registration';
                """)
    }

    private static let clientColumns =
        "id, configuration, secret_hash, origin, registration_token_hash, previous_secret_hash, previous_secret_expires_at, issued_at, registered_by"

    private static func clientArguments(_ client: ClientRecord) throws -> StatementArguments {
        var stored = client.configuration
        stored.clientSecret = nil  // only the hash is persisted
        return [
            client.configuration.clientId, try json(stored), client.secretHash, client.origin.rawValue, client.registrationTokenHash,
            client.previousSecretHash, client.previousSecretExpiresAt?.timeIntervalSince1970, client.issuedAt?.timeIntervalSince1970,
            client.registeredBy
        ]
    }

    private func clientRecord(_ row: Row) throws -> ClientRecord {
        ClientRecord(
            configuration: try decodedClients.configuration(row["configuration"]), secretHash: row["secret_hash"],
            origin: ClientOrigin(rawValue: row["origin"] ?? "") ?? .configuration, registrationTokenHash: row["registration_token_hash"],
            previousSecretHash: row["previous_secret_hash"], previousSecretExpiresAt: Self.date(row["previous_secret_expires_at"]),
            issuedAt: Self.date(row["issued_at"]), registeredBy: row["registered_by"])
    }

    public func upsertClient(_ client: ClientRecord) async throws {
        let arguments = try Self.clientArguments(client)
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO clients (\(Self.clientColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET configuration = excluded.configuration, secret_hash = excluded.secret_hash,
                        origin = excluded.origin, registration_token_hash = excluded.registration_token_hash,
                        previous_secret_hash = excluded.previous_secret_hash,
                        previous_secret_expires_at = excluded.previous_secret_expires_at, issued_at = excluded.issued_at,
                        registered_by = excluded.registered_by
                    """, arguments: arguments)
        }
    }

    public func insertClient(_ client: ClientRecord) async throws {
        let arguments = try Self.clientArguments(client)
        try await pool.write { db in
            guard try Self.row(db, "SELECT id FROM clients WHERE id = ?", [client.configuration.clientId]) == nil else {
                throw StoreError.conflict("client_id")
            }
            try db.execute(sql: "INSERT INTO clients (\(Self.clientColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", arguments: arguments)
        }
    }

    public func updateClient(_ client: ClientRecord) async throws -> Bool {
        let arguments = try Self.clientArguments(client) + [client.configuration.clientId]
        return try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE clients SET id = ?, configuration = ?, secret_hash = ?, origin = ?, registration_token_hash = ?,
                        previous_secret_hash = ?, previous_secret_expires_at = ?, issued_at = ?, registered_by = ? WHERE id = ?
                    """, arguments: arguments)
            return db.changesCount > 0
        }
    }

    public func deleteClient(id: String, now: Date) async throws -> Bool {
        let t = now.timeIntervalSince1970
        return try await pool.write { db in
            try db.execute(sql: "DELETE FROM clients WHERE id = ?", arguments: [id])
            guard db.changesCount > 0 else { return false }
            try db.execute(
                sql: "UPDATE token_families SET revoked_at = ?, revoked_reason = 'client_deleted' WHERE client_id = ? AND revoked_at IS NULL",
                arguments: [t, id])
            try db.execute(sql: "UPDATE access_tokens SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL", arguments: [t, id])
            try db.execute(sql: "DELETE FROM authorization_codes WHERE client_id = ? AND used_at IS NULL", arguments: [id])
            try db.execute(sql: "DELETE FROM pushed_requests WHERE client_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM device_authorizations WHERE client_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM consents WHERE client_id = ?", arguments: [id])
            return true
        }
    }

    public func client(id: String) async throws -> ClientRecord? {
        try await pool.read { db in
            guard let row = try Self.row(db, "SELECT * FROM clients WHERE id = ?", [id]) else { return nil }
            return try self.clientRecord(row)
        }
    }

    public func clients() async throws -> [ClientRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM clients ORDER BY id").map { try self.clientRecord($0) }
        }
    }
}
