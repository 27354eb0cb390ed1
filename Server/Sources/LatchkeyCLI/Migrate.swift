import ArgumentParser
import Foundation
import LatchkeyServer

/// `latchkey migrate`: brings the database's schema to this build's (every `serve` does it too, under a lock, so
/// instances starting together migrate once). Run it before starting a new release on several instances, so none of
/// them serves while another is changing tables.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the database schema migrations of this release (or show the schema version with --status).")

    @Option(
        help: "SQLite file or PostgreSQL URL (postgres://user@127.0.0.1:5432/latchkey); default: the --config file's database, else latchkey.sqlite.")
    var database: String?

    @Option(help: "The server's JSON configuration file (its database and key_encryption_key_file).")
    var config: String?

    @Flag(help: "Only print the schema version; change nothing.")
    var status = false

    func run() async throws {
        let configuration = try Keys.storeConfiguration(database: database, config: config, requireKey: !status)
        let location = (try? configuration.databaseLocation)?.description ?? configuration.databasePath
        do {
            if status {
                let now = try await IdentityServer.schemaStatus(configuration: configuration)
                Console.out("\(location): \(now)")
                if now.current > now.latest { throw ExitCode(2) }
                return
            }
            let (before, after) = try await IdentityServer.migrateDatabase(configuration: configuration)
            if before.current == after.current {
                Console.out("\(location): \(after)")
            } else {
                Console.out("\(location): migrated from schema version \(before.current) to \(after.current)")
            }
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
    }
}
