import ArgumentParser
import Foundation
import LatchkeyServer

/// `latchkey keys rotate`: new signing keys; previous ones stay published until their tokens expire.
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage the server's signing keys.", subcommands: [Rotate.self, List.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Generate new ES256 and RS256 signing keys and retire the current ones.")
        @Option(help: "SQLite database file (default latchkey.sqlite).")
        var database: String = DevelopmentDefaults.databasePath

        func run() async throws {
            var configuration = DevelopmentDefaults.configuration(databasePath: database)
            configuration.clients = []
            configuration.users = []
            let server = try await IdentityServer.open(configuration: configuration)
            let kids = try await server.rotateKeys()
            Console.out("New signing keys: \(kids.joined(separator: ", ")). Running servers pick them up within 30 seconds;")
            Console.out("retired keys stay in the JWKS until the tokens they signed have expired.")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the published JWKS.")
        @Option(help: "SQLite database file (default latchkey.sqlite).")
        var database: String = DevelopmentDefaults.databasePath

        func run() async throws {
            var configuration = DevelopmentDefaults.configuration(databasePath: database)
            configuration.clients = []
            configuration.users = []
            let server = try await IdentityServer.open(configuration: configuration)
            for key in try await server.jwks().keys { Console.out("\(key.kid ?? "-")  \(key.alg ?? key.kty)") }
        }
    }
}
