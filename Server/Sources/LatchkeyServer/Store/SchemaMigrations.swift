import Foundation
import GRDB
import Logging

/// Where a database's schema stands against this build: what `latchkey migrate` reports and does.
public struct SchemaStatus: Sendable, Equatable, CustomStringConvertible {
    /// Migrations applied to the database (0 for a new one).
    public var current: Int
    /// Migrations this build knows.
    public var latest: Int

    public var description: String {
        if current == latest { return "schema version \(current) (up to date)" }
        if current > latest { return "schema version \(current), newer than this build knows (\(latest)): run a newer Latchkey" }
        return "schema version \(current), this build migrates it to \(latest)"
    }
}

extension IdentityServer {
    /// The schema version of the configured database, without changing it (and without the key-encryption key).
    public static func schemaStatus(configuration: ServerConfiguration, logger: Logger = Logger(label: "latchkey.store")) async throws -> SchemaStatus
    {
        switch try configuration.databaseLocation {
        case .sqlite(let path):
            guard FileManager.default.fileExists(atPath: path) else { return SchemaStatus(current: 0, latest: SQLiteStore.latestVersion) }
            var readOnly = Configuration()
            readOnly.readonly = true
            let queue = try DatabaseQueue(path: path, configuration: readOnly)
            let current = try await queue.read { db in try SQLiteStore.migrator.appliedIdentifiers(db).count }
            return SchemaStatus(current: current, latest: SQLiteStore.latestVersion)
        case .postgres(let location):
            let store = try PostgresStore(
                location: location, sealer: nil, poolSize: 1, timeout: .seconds(configuration.databaseTimeoutSeconds),
                logger: logger)
            defer { store.close() }
            let current = try await store.guarded { _ in try await PostgresSchema.currentVersion(store.pool, logger: logger) }
            return SchemaStatus(current: current, latest: PostgresSchema.latestVersion)
        }
    }

    /// Brings the configured database to this build's schema (what every start does too), sealing secrets an older
    /// version kept in clear. Refuses a database migrated by a newer build. Returns the status before and after.
    public static func migrateDatabase(
        configuration: ServerConfiguration,
        logger: Logger = Logger(label: "latchkey.store")
    ) async throws -> (before: SchemaStatus, after: SchemaStatus) {
        let before = try await schemaStatus(configuration: configuration, logger: logger)
        if before.current > before.latest {
            throw ConfigurationError.invalid(before.description)
        }
        let sealer = try SecretSealer(keyEncryptionKey: try KeyEncryptionKeySource.resolve(configuration, logger: logger))
        let store = try await openStore(configuration, sealer: sealer, logger: logger)
        (store as? PostgresStore)?.close()
        return (before, try await schemaStatus(configuration: configuration, logger: logger))
    }
}
