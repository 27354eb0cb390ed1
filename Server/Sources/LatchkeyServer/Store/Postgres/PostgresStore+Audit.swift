import Foundation
import PostgresNIO

/// The audit trail's events.
extension PostgresStore {
    public func insertAuditEvent(_ event: AuditEvent) async throws {
        let details = try SQLiteStore.json(event.details)
        try await connection { connection in
            try await self.execute(
                """
                INSERT INTO audit_events (id, at, type, outcome, actor, subject, client_id, client_address, request_id, details)
                VALUES (\(event.id), \(event.at.epoch), \(event.type.rawValue), \(event.outcome.rawValue), \(event.actor),
                        \(event.subject), \(event.clientId), \(event.clientAddress), \(event.requestId), \(details))
                """, on: connection)
        }
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        var conditions: [String] = []
        var binds = PostgresBindings()
        func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        if let since = query.since { conditions.append("at >= \(bind(since.epoch))") }
        if let until = query.until { conditions.append("at < \(bind(until.epoch))") }
        if let subject = query.subject { conditions.append("subject = \(bind(subject))") }
        if !query.types.isEmpty { conditions.append("type IN (" + query.types.map { bind($0.rawValue) }.joined(separator: ", ") + ")") }
        if let outcome = query.outcome { conditions.append("outcome = \(bind(outcome.rawValue))") }
        if let clientId = query.clientId { conditions.append("client_id = \(bind(clientId))") }
        if let after = query.after {
            conditions.append("(at, id) < (\(bind(after.at.epoch)), \(bind(after.id)))")
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let limit = bind(max(0, query.limit))
        let statement = PostgresQuery(
            unsafeSQL: "SELECT * FROM audit_events \(filter) ORDER BY at DESC, id DESC LIMIT \(limit)", binds: binds)
        return try await connection { connection in
            try await self.rows(statement, on: connection).compactMap { row in
                let c = Columns(row)
                return try SQLiteStore.auditEvent(
                    id: try c("id"), at: try c("at"), type: try c("type"), outcome: try c("outcome"), actor: try c("actor"),
                    subject: try c("subject"), clientId: try c("client_id"), clientAddress: try c("client_address"),
                    requestId: try c("request_id"), details: try c("details"))
            }
        }
    }

    public func pruneAuditEvents(before: Date) async throws -> Int {
        try await connection { connection -> Int in
            try await self.row(
                "WITH pruned AS (DELETE FROM audit_events WHERE at < \(before.epoch) RETURNING 1) SELECT count(*) FROM pruned",
                on: connection)?.decode(Int.self) ?? 0
        }
    }
}
