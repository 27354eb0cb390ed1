import Foundation
import GRDB

/// The audit trail's events.
extension SQLiteStore {
    /// Ordered and paged by (at, id) newest first; each filter (subject, type, client) has an index that ends in the
    /// same order, so a filtered page reads only its rows.
    static func migrateAuditEvents(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE audit_events (
                    id TEXT PRIMARY KEY, at REAL NOT NULL, type TEXT NOT NULL, outcome TEXT NOT NULL, actor TEXT NOT NULL,
                    subject TEXT, client_id TEXT, client_address TEXT, request_id TEXT, details TEXT NOT NULL);
                CREATE INDEX audit_events_at ON audit_events(at, id);
                CREATE INDEX audit_events_subject ON audit_events(subject, at, id);
                CREATE INDEX audit_events_type ON audit_events(type, at, id);
                CREATE INDEX audit_events_client ON audit_events(client_id, at, id);
                """)
    }

    public func insertAuditEvent(_ event: AuditEvent) async throws {
        let details = try Self.json(event.details)
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO audit_events (id, at, type, outcome, actor, subject, client_id, client_address, request_id, details)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    event.id, event.at.timeIntervalSince1970, event.type.rawValue, event.outcome.rawValue, event.actor, event.subject,
                    event.clientId, event.clientAddress, event.requestId, details
                ])
        }
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let since = query.since {
            conditions.append("at >= ?")
            arguments += [since.timeIntervalSince1970]
        }
        if let until = query.until {
            conditions.append("at < ?")
            arguments += [until.timeIntervalSince1970]
        }
        if let subject = query.subject {
            conditions.append("subject = ?")
            arguments += [subject]
        }
        if !query.types.isEmpty {
            conditions.append("type IN (" + query.types.map { _ in "?" }.joined(separator: ", ") + ")")
            arguments += StatementArguments(query.types.map(\.rawValue))
        }
        if let outcome = query.outcome {
            conditions.append("outcome = ?")
            arguments += [outcome.rawValue]
        }
        if let clientId = query.clientId {
            conditions.append("client_id = ?")
            arguments += [clientId]
        }
        if let after = query.after {
            conditions.append("(at < ? OR (at = ? AND id < ?))")
            arguments += [after.at.timeIntervalSince1970, after.at.timeIntervalSince1970, after.id]
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        arguments += [max(0, query.limit)]
        let sql = "SELECT * FROM audit_events \(filter) ORDER BY at DESC, id DESC LIMIT ?"
        let bound = arguments
        return try await pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: bound).compactMap { row in
                try Self.auditEvent(
                    id: row["id"], at: row["at"], type: row["type"], outcome: row["outcome"], actor: row["actor"],
                    subject: row["subject"], clientId: row["client_id"], clientAddress: row["client_address"],
                    requestId: row["request_id"], details: row["details"])
            }
        }
    }

    public func pruneAuditEvents(before: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM audit_events WHERE at < ?", arguments: [before.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// A stored event, or nil for a type or outcome this build does not know (written by a newer release).
    static func auditEvent(
        id: String, at: Double, type: String, outcome: String, actor: String, subject: String?, clientId: String?,
        clientAddress: String?, requestId: String?, details: String
    ) throws -> AuditEvent? {
        guard let kind = AuditEvent.Kind(rawValue: type), let outcome = AuditEvent.Outcome(rawValue: outcome) else { return nil }
        return AuditEvent(
            id: id, at: Date(timeIntervalSince1970: at), type: kind, outcome: outcome, actor: actor, subject: subject,
            clientId: clientId, clientAddress: clientAddress, requestId: requestId,
            details: (try? decode([String: String].self, details)) ?? [:])
    }
}
