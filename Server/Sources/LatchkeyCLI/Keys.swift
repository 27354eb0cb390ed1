import ArgumentParser
import Foundation
import LatchkeyServer

/// `latchkey keys rotate`: new signing keys; previous ones stay published until their tokens expire.
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage the server's signing keys.", subcommands: [Rotate.self, List.self])

    /// Enough configuration to open the server's database: its path and the key-encryption key that seals the signing
    /// keys (from `--config`'s `key_encryption_key_file`, `LATCHKEY_KEY_ENCRYPTION_KEY`, or the development key file).
    static func storeConfiguration(database: String?, config: String?, requireKey: Bool = true) throws -> ServerConfiguration {
        var configuration = DevelopmentDefaults.configuration()
        var path = database ?? DevelopmentDefaults.databasePath
        let isPostgres = { (text: String) in text.lowercased().hasPrefix("postgres://") || text.lowercased().hasPrefix("postgresql://") }
        if let config {
            let file = try ConfigurationFile.load(path: config)
            path = database ?? file.database ?? path
            configuration.keyEncryptionKeyFile = file.keyEncryptionKeyFile
            configuration.development = file.development ?? false
            try file.applyDatabaseSettings(to: &configuration)
        } else if requireKey, !isPostgres(path), ProcessInfo.processInfo.environment["LATCHKEY_KEY_ENCRYPTION_KEY"] == nil,
            FileManager.default.fileExists(atPath: path), !FileManager.default.fileExists(atPath: path + ".kek")
        {
            // An existing database without the development key file next to it belongs to a real server: a key made up
            // here would seal its secrets with a key that server does not have.
            throw ValidationError(
                "\(path) is not a development database: give --config (its key_encryption_key_file) or set LATCHKEY_KEY_ENCRYPTION_KEY")
        }
        configuration.databasePath = path
        configuration.clients = []
        configuration.users = []
        return configuration
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Generate new ES256 and RS256 signing keys and retire the current ones.")
        @Option(help: "SQLite file or PostgreSQL URL (default: the --config file's database, else latchkey.sqlite).")
        var database: String?
        @Option(help: "The server's JSON configuration file, for its key_encryption_key_file (or set LATCHKEY_KEY_ENCRYPTION_KEY).")
        var config: String?

        func run() async throws {
            let server = try await IdentityServer.open(configuration: try Keys.storeConfiguration(database: database, config: config))
            let kids = try await server.rotateKeys()
            Console.out("New signing keys: \(kids.joined(separator: ", ")). Running servers pick them up within 30 seconds;")
            Console.out("retired keys stay in the JWKS until the tokens they signed have expired.")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the published JWKS.")
        @Option(help: "SQLite file or PostgreSQL URL (default: the --config file's database, else latchkey.sqlite).")
        var database: String?
        @Option(help: "The server's JSON configuration file, for its key_encryption_key_file (or set LATCHKEY_KEY_ENCRYPTION_KEY).")
        var config: String?

        func run() async throws {
            let server = try await IdentityServer.open(configuration: try Keys.storeConfiguration(database: database, config: config))
            for key in try await server.jwks().keys { Console.out("\(key.kid ?? "-")  \(key.alg ?? key.kty)") }
        }
    }
}
