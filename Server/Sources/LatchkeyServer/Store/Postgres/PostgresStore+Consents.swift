import Foundation
import PostgresNIO

/// Consents to third-party applications (`ConsentStore`).
extension PostgresStore {
    public func consent(userId: String, clientId: String) async throws -> ConsentRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM consents WHERE user_id = \(userId) AND client_id = \(clientId)", on: connection)
                .map(Self.consentRecord)
        }
    }

    public func grantConsent(userId: String, clientId: String, scopes: [String], now: Date) async throws -> ConsentRecord {
        // The row is locked while the scopes are merged, so two consents given at once (two tabs) both count.
        try await transaction { connection in
            let existing = try await self.row(
                "SELECT * FROM consents WHERE user_id = \(userId) AND client_id = \(clientId) FOR UPDATE", on: connection
            ).map(Self.consentRecord)
            let record = ConsentRecord(
                userId: userId, clientId: clientId, scopes: (existing?.scopes ?? []) + scopes, grantedAt: existing?.grantedAt ?? now,
                updatedAt: now)
            let joined = record.scopes.joined(separator: " ")
            try await self.execute(
                """
                INSERT INTO consents (user_id, client_id, scopes, granted_at, updated_at)
                VALUES (\(userId), \(clientId), \(joined), \(record.grantedAt.epoch), \(now.epoch))
                ON CONFLICT (user_id, client_id) DO UPDATE SET scopes = EXCLUDED.scopes, updated_at = EXCLUDED.updated_at
                """, on: connection)
            return record
        }
    }

    public func consents(userId: String) async throws -> [ConsentRecord] {
        try await connection { connection in
            try await self.rows("SELECT * FROM consents WHERE user_id = \(userId) ORDER BY client_id", on: connection).map(Self.consentRecord)
        }
    }

    public func withdrawConsent(userId: String, clientId: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute("DELETE FROM consents WHERE user_id = \(userId) AND client_id = \(clientId) RETURNING 1", on: connection) > 0
        }
    }

    private static func consentRecord(_ row: PostgresRow) throws -> ConsentRecord {
        let c = Columns(row)
        let scopes: String = try c("scopes")
        return ConsentRecord(
            userId: try c("user_id"), clientId: try c("client_id"), scopes: scopes.split(separator: " ").map(String.init),
            grantedAt: try c.date("granted_at") ?? .distantPast, updatedAt: try c.date("updated_at") ?? .distantPast)
    }
}
