import Foundation
import Logging
import PostgresNIO

/// Throwaway PostgreSQL databases for test servers, on the cluster `scripts/test.sh` starts
/// (`LATCHKEY_TEST_SERVER_POSTGRES_URL`: an administrative URL, e.g. postgres://latchkey@127.0.0.1:55432/postgres).
package enum TestDatabases {
    package static var adminURL: String? { ProcessInfo.processInfo.environment["LATCHKEY_TEST_SERVER_POSTGRES_URL"] }

    /// A new, empty database's URL, or nil when the suites run on SQLite.
    package static func createIfConfigured() async throws -> String? {
        guard let admin = adminURL else { return nil }
        return try await create(adminURL: admin, prefix: "latchkey_server")
    }

    /// Creates `<prefix>_<random>` and returns its URL.
    package static func create(adminURL admin: String, prefix: String) async throws -> String {
        let name = prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await run(admin, "CREATE DATABASE \(name)")
        guard var components = URLComponents(string: admin) else { throw TestFailure("bad admin URL") }
        components.path = "/" + name
        guard let url = components.string else { throw TestFailure("bad admin URL") }
        return url
    }

    /// Drops a database `create` made (ignored for SQLite paths and other names).
    package static func dropIfCreated(_ url: String) async {
        guard let admin = adminURL ?? ProcessInfo.processInfo.environment["LATCHKEY_TEST_POSTGRES_URL"],
            url.hasPrefix("postgres"), let name = URLComponents(string: url)?.path.dropFirst(),
            name.hasPrefix("latchkey_"), name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
        else { return }
        try? await run(admin, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// One statement on a short-lived connection to the administrative database.
    package static func run(_ admin: String, _ sql: String) async throws {
        guard let components = URLComponents(string: admin), let host = components.host, let user = components.user else {
            throw TestFailure("bad admin URL \(admin)")
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: user,
            password: components.password, database: String(components.path.dropFirst()),
            tls: .disable)
        // The whole suite on PostgreSQL starts hundreds of servers, each creating its database, on two cores: a connect
        // can wait past the driver's default 10 s (it did once in CI). A saturated machine is not what the tests test.
        configuration.options.connectTimeout = .seconds(30)
        var connection: PostgresConnection?
        for attempt in 1...3 where connection == nil {
            do {
                connection = try await PostgresConnection.connect(configuration: configuration, id: attempt, logger: Logger(label: "test.databases"))
            } catch _ where attempt < 3 {
                try await Task.sleep(for: .seconds(attempt))
            } catch {
                throw TestFailure("cannot connect to \(host) after \(attempt) attempts: \(String(reflecting: error))")
            }
        }
        guard let connection else { throw TestFailure("cannot connect to \(host)") }
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test.databases"))
        } catch {
            try? await connection.close()
            throw TestFailure("\(sql): \(String(reflecting: error))")
        }
        try await connection.close()
    }
}
