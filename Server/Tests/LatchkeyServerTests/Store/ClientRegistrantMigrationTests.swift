import Foundation
import GRDB
import Testing

@testable import LatchkeyServer

/// Review 3, R3-6: the migration that records who registered each application gives earlier registrations the actor
/// the audit trail names, so an automation keeps managing what it registered; an application the trail no longer
/// mentions, and every configured one, stays without a registrant (administrators only).
@Suite("Store: registrants of earlier registrations")
struct ClientRegistrantMigrationTests {
    @Test("v14-client-registrants takes the registrant from the audit trail (SQLite)")
    func registrantsComeFromTheAuditTrail() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-registrants-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pool = try DatabasePool(path: path)
        try SQLiteStore.migrator.migrate(pool, upTo: "v13-logout-announcements")
        try pool.write { db in
            for (id, origin) in [
                ("lk-automation", "registration"), ("lk-console", "registration"), ("lk-pruned", "registration"), ("web", "configuration")
            ] {
                try db.execute(sql: "INSERT INTO clients (id, configuration, origin) VALUES (?, '{}', ?)", arguments: [id, origin])
            }
            for (id, at, client, actor) in [
                ("e1", 10.0, "lk-automation", "client:automation"), ("e2", 20.0, "lk-console", "0d5c-admin-user"),
                ("e3", 30.0, "web", "client:automation")
            ] {
                try db.execute(
                    sql:
                        "INSERT INTO audit_events (id, at, type, outcome, actor, client_id, details) VALUES (?, ?, 'application.registered', 'success', ?, ?, '{}')",
                    arguments: [id, at, actor, client])
            }
            // A later event of another type does not name the registrant.
            try db.execute(
                sql:
                    "INSERT INTO audit_events (id, at, type, outcome, actor, client_id, details) VALUES ('e4', 40, 'application.updated', 'success', 'client:other', 'lk-automation', '{}')"
            )
        }
        try SQLiteStore.migrator.migrate(pool)
        let registrants = try pool.read { db in
            try Dictionary(
                uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT id, registered_by FROM clients").map { row in
                    (row["id"] as String, row["registered_by"] as String?)
                })
        }
        #expect(registrants["lk-automation"] == .some("client:automation"))
        #expect(registrants["lk-console"] == .some("0d5c-admin-user"))
        #expect(registrants["lk-pruned"] == .some(nil), "no event left: administrators only")
        #expect(registrants["web"] == .some(nil), "configured applications have no registrant")
    }
}
