import Foundation
import PostgresNIO

/// Applications: configured ones seeded at start, registered ones (RFC 7591) created and changed at runtime. Every
/// request reads its application's row, so a change made through one instance is in force on all of them at once.
extension PostgresStore {
    private struct ClientColumns: Sendable {
        var id: String
        var json: String
        var secretHash: Data?
        var origin: String
        var registrationTokenHash: Data?
        var previousSecretHash: Data?
        var previousSecretExpiresAt: Double?
        var issuedAt: Double?
        var registeredBy: String?

        init(_ client: ClientRecord) throws {
            var stored = client.configuration
            stored.clientSecret = nil  // only the hash is persisted
            id = client.configuration.clientId
            json = try SQLiteStore.json(stored)
            secretHash = client.secretHash
            origin = client.origin.rawValue
            registrationTokenHash = client.registrationTokenHash
            previousSecretHash = client.previousSecretHash
            previousSecretExpiresAt = client.previousSecretExpiresAt?.epoch
            issuedAt = client.issuedAt?.epoch
            registeredBy = client.registeredBy
        }
    }

    private func clientRecord(_ row: PostgresRow) throws -> ClientRecord {
        let c = Columns(row)
        return ClientRecord(
            configuration: try decodedClients.configuration(try c("configuration", as: String.self)),
            secretHash: try c("secret_hash", as: Data?.self),
            origin: ClientOrigin(rawValue: try c("origin", as: String.self)) ?? .configuration,
            registrationTokenHash: try c("registration_token_hash", as: Data?.self),
            previousSecretHash: try c("previous_secret_hash", as: Data?.self),
            previousSecretExpiresAt: try c.date("previous_secret_expires_at"), issuedAt: try c.date("issued_at"),
            registeredBy: try c("registered_by", as: String?.self))
    }

    public func upsertClient(_ client: ClientRecord) async throws {
        let v = try ClientColumns(client)
        try await connection { connection in
            try await self.execute(
                """
                INSERT INTO clients (id, configuration, secret_hash, origin, registration_token_hash, previous_secret_hash,
                    previous_secret_expires_at, issued_at, registered_by)
                VALUES (\(v.id), \(v.json), \(v.secretHash), \(v.origin), \(v.registrationTokenHash), \(v.previousSecretHash),
                    \(v.previousSecretExpiresAt), \(v.issuedAt), \(v.registeredBy))
                ON CONFLICT (id) DO UPDATE SET configuration = excluded.configuration, secret_hash = excluded.secret_hash,
                    origin = excluded.origin, registration_token_hash = excluded.registration_token_hash,
                    previous_secret_hash = excluded.previous_secret_hash,
                    previous_secret_expires_at = excluded.previous_secret_expires_at, issued_at = excluded.issued_at,
                    registered_by = excluded.registered_by
                """, on: connection)
        }
    }

    public func insertClient(_ client: ClientRecord) async throws {
        let v = try ClientColumns(client)
        do {
            try await connection { connection in
                try await self.execute(
                    """
                    INSERT INTO clients (id, configuration, secret_hash, origin, registration_token_hash, previous_secret_hash,
                        previous_secret_expires_at, issued_at, registered_by)
                    VALUES (\(v.id), \(v.json), \(v.secretHash), \(v.origin), \(v.registrationTokenHash), \(v.previousSecretHash),
                        \(v.previousSecretExpiresAt), \(v.issuedAt), \(v.registeredBy))
                    """, on: connection)
            }
        } catch  where Self.isUniqueViolation(error) {
            throw StoreError.conflict("client_id")
        }
    }

    public func updateClient(_ client: ClientRecord) async throws -> Bool {
        let v = try ClientColumns(client)
        return try await connection { connection in
            try await self.execute(
                """
                UPDATE clients SET configuration = \(v.json), secret_hash = \(v.secretHash), origin = \(v.origin),
                    registration_token_hash = \(v.registrationTokenHash), previous_secret_hash = \(v.previousSecretHash),
                    previous_secret_expires_at = \(v.previousSecretExpiresAt), issued_at = \(v.issuedAt),
                    registered_by = \(v.registeredBy)
                WHERE id = \(v.id) RETURNING 1
                """, on: connection) > 0
        }
    }

    public func deleteClient(id: String, now: Date) async throws -> Bool {
        let t = now.epoch
        return try await transaction { connection in
            guard try await self.execute("DELETE FROM clients WHERE id = \(id) RETURNING 1", on: connection) > 0 else { return false }
            try await self.execute(
                """
                UPDATE token_families SET revoked_at = \(t), revoked_reason = 'client_deleted'
                WHERE client_id = \(id) AND revoked_at IS NULL
                """, on: connection)
            try await self.execute(
                "UPDATE access_tokens SET revoked_at = \(t) WHERE client_id = \(id) AND revoked_at IS NULL", on: connection)
            try await self.execute("DELETE FROM authorization_codes WHERE client_id = \(id) AND used_at IS NULL", on: connection)
            try await self.execute("DELETE FROM pushed_requests WHERE client_id = \(id)", on: connection)
            try await self.execute("DELETE FROM device_authorizations WHERE client_id = \(id)", on: connection)
            try await self.execute("DELETE FROM consents WHERE client_id = \(id)", on: connection)
            return true
        }
    }

    public func client(id: String) async throws -> ClientRecord? {
        try await connection { connection in
            guard let row = try await self.row("SELECT * FROM clients WHERE id = \(id)", on: connection) else { return nil }
            return try self.clientRecord(row)
        }
    }

    public func clients() async throws -> [ClientRecord] {
        try await connection { connection in
            try await self.rows("SELECT * FROM clients ORDER BY id", on: connection).map { try self.clientRecord($0) }
        }
    }
}
