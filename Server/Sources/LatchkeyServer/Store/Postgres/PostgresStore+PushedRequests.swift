import Foundation
import PostgresNIO

/// Pushed authorization requests (RFC 9126): stored until their `request_uri` is used once, or expires.
extension PostgresStore {
    public func insertPushedRequest(_ request: PushedRequestRecord) async throws {
        let parameters = try SQLiteStore.json(request.parameters)
        let uriHash = request.uriHash
        let clientId = request.clientId
        let expiresAt = request.expiresAt.epoch
        try await connection { connection in
            _ = try await self.execute(
                """
                INSERT INTO pushed_requests (uri_hash, client_id, parameters, expires_at)
                VALUES (\(uriHash), \(clientId), \(parameters), \(expiresAt))
                """, on: connection)
        }
    }

    public func takePushedRequest(uriHash: Data, clientId: String, now: Date) async throws -> PushedRequestRecord? {
        // One DELETE … RETURNING takes the row out: of two concurrent uses (in any instance) exactly one gets it.
        // Deleted whether or not it is still valid: a request_uri is used once, a late one never again.
        let taken = try await connection { connection in
            try await self.row(
                """
                DELETE FROM pushed_requests WHERE uri_hash = \(uriHash) AND client_id = \(clientId) RETURNING client_id, parameters, expires_at
                """, on: connection)
        }
        guard let row = taken else { return nil }
        let c = Columns(row)
        let owner: String = try c("client_id")
        let stored: String = try c("parameters")
        guard let expiresAt = try c.date("expires_at"), expiresAt > now,
            let parameters = try? SQLiteStore.decode([String: [String]].self, stored)
        else { return nil }
        return PushedRequestRecord(uriHash: uriHash, clientId: owner, parameters: parameters, expiresAt: expiresAt)
    }
}
