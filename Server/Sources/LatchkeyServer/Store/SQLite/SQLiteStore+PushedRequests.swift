import Foundation
import GRDB

/// Pushed authorization requests (RFC 9126): stored until their `request_uri` is used once, or expires.
extension SQLiteStore {
    static func migratePushedRequests(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE pushed_requests (
                    uri_hash BLOB PRIMARY KEY, client_id TEXT NOT NULL, parameters TEXT NOT NULL, expires_at REAL NOT NULL);
                """)
    }

    public func insertPushedRequest(_ request: PushedRequestRecord) async throws {
        let parameters = try Self.json(request.parameters)
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO pushed_requests (uri_hash, client_id, parameters, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [request.uriHash, request.clientId, parameters, request.expiresAt.timeIntervalSince1970])
        }
    }

    public func takePushedRequest(uriHash: Data, clientId: String, now: Date) async throws -> PushedRequestRecord? {
        try await pool.write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM pushed_requests WHERE uri_hash = ? AND client_id = ?",
                    arguments: [uriHash, clientId])
            else {
                return nil
            }
            // Deleted whether or not it is still valid: a request_uri is used once, a late one never again.
            try db.execute(sql: "DELETE FROM pushed_requests WHERE uri_hash = ? AND client_id = ?", arguments: [uriHash, clientId])
            guard let expiresAt = Self.date(row["expires_at"]), expiresAt > now,
                let parameters = try? Self.decode([String: [String]].self, row["parameters"] as String)
            else { return nil }
            return PushedRequestRecord(uriHash: uriHash, clientId: row["client_id"], parameters: parameters, expiresAt: expiresAt)
        }
    }
}
