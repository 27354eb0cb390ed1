import Foundation
import GRDB
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The delivery queue's migration (issue 39, part 1): emails waiting in `mail_queue`, audit events in
/// `webhook_deliveries`, and logout notices (queued there under `backchannel_logout:<client>`) move to `deliveries`
/// with their kind, destination, attempts and due times, so an upgrade delivers everything that was queued.
@Suite("Store: the delivery queue's migration")
struct DeliveryQueueMigrationTests {
    /// The rows the old tables hold before the migration, and what each must become.
    static let mailBody = "123456 is your code\n\"quoted\" é"
    static let oldRows: [String] = [
        """
        INSERT INTO mail_queue (id, recipient, subject, body, attempts, next_attempt_at, created_at)
        VALUES ('mail-1', 'ada@example.com', 'Your code', '\(mailBody.replacingOccurrences(of: "'", with: "''"))', 2, 120, 100)
        """,
        """
        INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, body, attempts, next_attempt_at, created_at)
        VALUES ('hook-1', 'siem', 'e1', 'signin.failed', '{"id":"e1"}', 1, 130, 101)
        """,
        """
        INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, body, attempts, next_attempt_at, created_at)
        VALUES ('logout-1', 'backchannel_logout:web-app', 'j1', 'backchannel_logout', '{"sid":"s1","sub":"u1"}', 0, 140, 102)
        """
    ]

    /// Every moved row, claimed through the store as the delivery loop claims it.
    static func expectMoved(_ store: any Store) async throws {
        let now = Date(timeIntervalSince1970: 1000), lease = Date(timeIntervalSince1970: 2000)
        let mail = try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: now, leaseUntil: lease, limit: 10)
        #expect(mail.map(\.id) == ["mail-1"] && mail.first?.attempts == 2 && mail.first?.eventId == "mail-1")
        #expect(mail.first?.nextAttemptAt == Date(timeIntervalSince1970: 120) && mail.first?.createdAt == Date(timeIntervalSince1970: 100))
        let decoded = try JSONDecoder().decode(MailDeliverer.Mail.self, from: Data(try #require(mail.first).body.utf8))
        #expect(decoded == MailDeliverer.Mail(recipient: "ada@example.com", subject: "Your code", body: mailBody), "the email as queued")
        let hooks = try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: now, leaseUntil: lease, limit: 10)
        #expect(
            hooks == [
                QueuedDelivery(
                    id: "hook-1", kind: .auditWebhook, destination: "siem", eventId: "e1", eventType: "signin.failed", body: #"{"id":"e1"}"#,
                    attempts: 1, nextAttemptAt: Date(timeIntervalSince1970: 130), createdAt: Date(timeIntervalSince1970: 101))
            ])
        let logout = try await store.claimDueDeliveries(kind: .backchannelLogout, destination: "web-app", now: now, leaseUntil: lease, limit: 10)
        #expect(
            logout == [
                QueuedDelivery(
                    id: "logout-1", kind: .backchannelLogout, destination: "web-app", eventId: "j1", eventType: "backchannel_logout",
                    body: #"{"sid":"s1","sub":"u1"}"#, attempts: 0, nextAttemptAt: Date(timeIntervalSince1970: 140),
                    createdAt: Date(timeIntervalSince1970: 102))
            ], "a logout notice is its own kind, its destination the client id")
        #expect(try await store.deliveryQueueDepths(kind: .auditWebhook) == ["siem": 1], "no logout notice among the webhooks' rows")
    }

    @Test("v21-deliveries moves every queued row (SQLite)")
    func sqliteMovesQueuedRows() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-deliveries-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let pool = try DatabasePool(path: path)
            try SQLiteStore.migrator.migrate(pool, upTo: "v20-recovery-codes")
            try await pool.write { db in
                for statement in Self.oldRows { try db.execute(sql: statement) }
            }
        }
        let store = try SQLiteStore(path: path)
        try await Self.expectMoved(store)
    }

    @Test("migration 16 moves every queued row (PostgreSQL)", .enabled(if: StoreKind.postgresURL != nil))
    func postgresMovesQueuedRows() async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        await PostgresGate.shared.acquire()
        let name = "latchkey_migration_" + StoreFixture.hex(8)
        var location = admin
        location.database = name
        var failure: (any Error)?
        do {
            try await PostgresAdmin.execute("CREATE DATABASE \(name)", at: admin)
            // The schema as the release before the delivery queue left it, then the old rows.
            var statements = [
                """
                CREATE TABLE latchkey_schema_migrations (
                    version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """
            ]
            for migration in PostgresSchema.migrations where migration.version <= 15 {
                statements += migration.statements
                statements.append("INSERT INTO latchkey_schema_migrations (version, name) VALUES (\(migration.version), '\(migration.name)')")
            }
            try await PostgresAdmin.execute(statements + Self.oldRows, at: location)
            let store = try await PostgresStore.open(location: location, sealer: nil, poolSize: 2, timeout: .seconds(600))
            do { try await Self.expectMoved(store) } catch { failure = error }
            store.close()
        } catch {
            failure = error
        }
        try? await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", at: admin)
        await PostgresGate.shared.release()
        if let failure { throw failure }
    }
}
