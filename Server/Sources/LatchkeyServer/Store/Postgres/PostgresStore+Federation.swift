import Foundation
import PostgresNIO

/// Federated identities (links) and federated sign-ins in progress.
extension PostgresStore {
    public func insertFederatedLogin(_ record: FederatedLoginRecord) async throws {
        try await connection { connection in
            try await self.execute(
                """
                INSERT INTO federated_logins (handle_hash, provider, purpose, payload, expires_at)
                VALUES (\(record.handleHash), \(record.provider), \(record.purpose), \(record.payload), \(record.expiresAt.epoch))
                """, on: connection)
        }
    }

    public func takeFederatedLogin(handleHash: Data, now: Date) async throws -> FederatedLoginRecord? {
        try await connection { connection in
            // Take-once in one statement: of two concurrent takes (on any instance) only one gets the row back.
            guard let row = try await self.row("DELETE FROM federated_logins WHERE handle_hash = \(handleHash) RETURNING *", on: connection)
            else { return nil }
            let c = Columns(row)
            let record = FederatedLoginRecord(
                handleHash: try c("handle_hash"), provider: try c("provider"), purpose: try c("purpose"), payload: try c("payload"),
                expiresAt: try c.date("expires_at") ?? .distantPast)
            return record.expiresAt > now ? record : nil
        }
    }

    public func federatedIdentities(userId: String) async throws -> [FederatedIdentityRecord] {
        try await connection { connection in
            try await self.rows(
                "SELECT * FROM federated_identities WHERE user_id = \(userId) ORDER BY created_at, provider", on: connection
            ).map(Self.federatedIdentity)
        }
    }

    public func keepFederatedRefreshToken(provider: String, subject: String, sealed: String) async throws {
        try await connection { connection in
            try await self.execute(
                "UPDATE federated_identities SET refresh_token_sealed = \(sealed) WHERE provider = \(provider) AND subject = \(subject)",
                on: connection)
        }
    }

    static func federatedIdentity(_ row: PostgresRow) throws -> FederatedIdentityRecord {
        let c = Columns(row)
        return FederatedIdentityRecord(
            provider: try c("provider"), subject: try c("subject"), userId: try c("user_id"), createdAt: try c.date("created_at") ?? .distantPast,
            sealedRefreshToken: try c("refresh_token_sealed", as: String?.self))
    }

    public func unlinkFederatedIdentity(provider: String, userId: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute(
                "DELETE FROM federated_identities WHERE provider = \(provider) AND user_id = \(userId) RETURNING 1", on: connection) > 0
        }
    }
}
