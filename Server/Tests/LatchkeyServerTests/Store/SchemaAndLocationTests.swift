import LatchkeyTestSupport
import Foundation
import GRDB
@testable import LatchkeyServer
import Testing

/// Where the data lives (`--database`), the schema versions both stores record, and the refusal to run on a schema
/// a newer release wrote.
@Suite("Database location and schema versions")
struct SchemaAndLocationTests {
    // MARK: Location

    @Test("a PostgreSQL URL is parsed; its password is never part of what is shown or logged")
    func postgresURLHidesItsPassword() throws {
        let location = try DatabaseLocation("postgres://app:s3cr%40t@127.0.0.1:6543/latchkey")
        guard case .postgres(let postgres) = location else { Issue.record("not PostgreSQL: \(location)"); return }
        #expect(postgres.host == "127.0.0.1" && postgres.port == 6543 && postgres.username == "app" && postgres.database == "latchkey")
        #expect(postgres.password == "s3cr@t", "percent-encoding is undone")
        #expect(postgres.tls == .disable, "loopback needs no TLS")
        #expect(!location.description.contains("s3cr"), "\(location)")
        #expect(location.description == "postgres://app@127.0.0.1:6543/latchkey")
    }

    @Test("the password may come from PGPASSWORD; a remote host asks for TLS unless sslmode says otherwise")
    func passwordFromTheEnvironmentAndTLS() throws {
        let remote = try PostgresLocation(url: "postgresql://app@db.internal/latchkey", environment: ["PGPASSWORD": "from-env"])
        #expect(remote.password == "from-env" && remote.port == 5432 && remote.tls == .require)
        #expect(try PostgresLocation(url: "postgres://app@db.internal/latchkey?sslmode=require", environment: [:]).tls == .require)
        #expect(!remote.description.contains("from-env"))
    }

    @Test("several hosts, as libpq writes them: in order, default ports, IPv6, read-write by default, TLS unless all are loopback")
    func severalHosts() throws {
        let cluster = try PostgresLocation(
            url: "postgres://app@10.0.0.1:5433,db-2.internal,[fd00::3]:6543/latchkey?target_session_attrs=primary", environment: [:])
        #expect(
            cluster.endpoints == [
                .init(host: "10.0.0.1", port: 5433), .init(host: "db-2.internal", port: 5432), .init(host: "fd00::3", port: 6543)
            ])
        #expect(cluster.host == "10.0.0.1" && cluster.port == 5433 && cluster.targetSession == .primary && cluster.tls == .require)
        #expect(
            cluster.description
                == "postgres://app@10.0.0.1:5433,db-2.internal:5432,[fd00::3]:6543/latchkey?sslmode=require&target_session_attrs=primary")
        let local = try PostgresLocation(url: "postgresql://app:pw@127.0.0.1:5432,localhost:5433/latchkey", environment: [:])
        #expect(local.endpoints.count == 2 && local.tls == .disable && local.targetSession == .readWrite && local.password == "pw")
        #expect(local.description == "postgres://app@127.0.0.1:5432,localhost:5433/latchkey")
        let any = try PostgresLocation(url: "postgres://app@127.0.0.1/latchkey?target_session_attrs=any", environment: [:])
        #expect(any.targetSession == .any && any.endpoints == [.init(host: "127.0.0.1")])
    }

    @Test(
        "a malformed URL is a clear configuration error",
        arguments: [
            "postgres://127.0.0.1/latchkey",  // no user
            "postgres://app@127.0.0.1/",  // no database
            "postgres://app@/latchkey",  // no host
            "postgres://app@127.0.0.1/latchkey?sslmode=sometimes",
            "postgres://app@127.0.0.1,,127.0.0.2/latchkey",  // an empty host in the list
            "postgres://app@127.0.0.1:99999/latchkey",  // not a port
            "postgres://app@127.0.0.1:5432,127.0.0.2:x/latchkey",
            "postgres://app@[::1/latchkey",  // an unclosed bracket
            "postgres://app@127.0.0.1/latchkey?target_session_attrs=standby"  // Latchkey writes
        ])
    func malformedURLs(_ url: String) {
        #expect(throws: ConfigurationError.self) { try DatabaseLocation(url) }
    }

    @Test("a URL that forgot its host puts user:password where the host list is: the error does not show the password")
    func aMalformedURLsErrorHoldsNoPassword() {
        for url in ["postgres://app:s3cret-pw/latchkey", "postgres://app:s3cret-pw@127.0.0.1:s3cret-pw/latchkey"] {
            do {
                _ = try DatabaseLocation(url)
                Issue.record("accepted: \(url)")
            } catch {
                #expect(!String(describing: error).contains("s3cret"), "\(error)")
            }
        }
    }

    @Test("anything that is not a postgres URL is a SQLite path")
    func pathsAreSQLite() throws {
        #expect(try DatabaseLocation("latchkey.sqlite") == .sqlite(path: "latchkey.sqlite"))
        #expect(try DatabaseLocation("/var/lib/latchkey/postgres.sqlite") == .sqlite(path: "/var/lib/latchkey/postgres.sqlite"))
    }

    @Test("a PostgreSQL database needs the key-encryption key from the operator, also in development")
    func postgresNeedsASharedKey() async throws {
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: "postgres://app@127.0.0.1:1/latchkey")
        configuration.keyEncryptionKey = nil
        let fromEnvironment = ProcessInfo.processInfo.environment["LATCHKEY_KEY_ENCRYPTION_KEY"] != nil
        do {
            _ = try await IdentityServer.open(configuration: configuration)
            Issue.record("a server started on PostgreSQL without a shared key, or on an unreachable database")
        } catch let error as ConfigurationError {
            // With the key in this process's environment the refusal is the unreachable port instead.
            #expect(error.description.contains(fromEnvironment ? "cannot be reached" : "the same key-encryption key"), "\(error)")
        }
    }

    // MARK: SQLite schema versions

    @Test("SQLite: a new file is at version 0, migrate brings it to the latest, and status says so")
    func sqliteMigrateAndStatus() async throws {
        let path = TestServer.newSQLitePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: path)
        configuration.keyEncryptionKey = Data(repeating: 7, count: 32)
        #expect(try await IdentityServer.schemaStatus(configuration: configuration).current == 0)
        let (before, after) = try await IdentityServer.migrateDatabase(configuration: configuration)
        #expect(before.current == 0 && after.current == after.latest && after.latest == SQLiteStore.latestVersion)
        #expect(after.description.contains("up to date"))
    }

    @Test("SQLite: rotation and the reuse lookup find a family's one sealed row through the partial index, not a scan")
    func sqliteLiveSealStatementsUseTheirIndex() async throws {
        let path = TestServer.newSQLitePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try SQLiteStore(path: path)
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let statements: [(String, StatementArguments)] = [
            (SQLiteStore.dropSpentSealSQL, ["family", Data([1])]), (SQLiteStore.liveSealLookupSQL, ["family"])
        ]
        for (statement, arguments) in statements {
            let plan = try await queue.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement, arguments: arguments).map { $0["detail"] as String? ?? "" }
            }
            #expect(plan.contains { $0.contains("refresh_tokens_live_seal") }, "\(statement): \(plan)")
        }
    }

    @Test("SQLite: a file migrated by a newer release is refused at start, with a message that says so")
    func sqliteRefusesANewerSchema() async throws {
        let path = TestServer.newSQLitePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try SQLiteStore(path: path)
        let queue = try DatabaseQueue(path: path)
        try await queue.write { try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')") }
        try queue.close()

        #expect(throws: StoreError.schemaTooNew(found: SQLiteStore.latestVersion + 1, known: SQLiteStore.latestVersion)) {
            _ = try SQLiteStore(path: path)
        }
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: path)
        configuration.keyEncryptionKey = Data(repeating: 7, count: 32)
        do {
            _ = try await IdentityServer.open(configuration: configuration)
            Issue.record("a server started on a newer schema")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("newer"), "\(error)")
        }
        let status = try await IdentityServer.schemaStatus(configuration: configuration)
        #expect(status.current > status.latest && status.description.contains("newer"))
    }
}
