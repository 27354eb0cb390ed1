import ArgumentParser
import Foundation
import LatchkeyServer
import Logging

/// `latchkey serve`: with no arguments, a development instance on http://localhost:8090 with a demo client and user.
/// With `--config` the server is a real one (emails delivered by SMTP, no `/dev/outbox`) unless `--dev` or
/// `"development": true` asks for development mode, which needs a loopback issuer.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the identity server (development defaults: http://localhost:8090, SQLite file latchkey.sqlite).")

    @Option(help: "Port to listen on (default 8090).")
    var port: Int?

    @Option(help: "Interface to bind (default 127.0.0.1). Non-loopback addresses need an https issuer behind a TLS proxy.")
    var host: String?

    @Option(
        help:
            "SQLite file (default latchkey.sqlite in the current directory) or PostgreSQL URL postgres://user@host:5432/db (several instances; the password from PGPASSWORD)."
    )
    var database: String?

    @Option(help: "JSON configuration file: issuer, clients, users, lifetimes (see docs/configuration.md).")
    var config: String?

    @Option(help: "Public issuer URL (default http://localhost:<port>).")
    var issuer: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Flag(
        help:
            "Development mode with --config: one-time codes readable at /dev/outbox, no emails sent, mobile attestation waived (loopback issuer only)."
    )
    var dev = false

    func run() async throws {
        // A configuration error is the message alone (the command line was fine: its usage would only bury it).
        do { try await serve() } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("latchkey: \(error.description)\n".utf8))
            throw ExitCode(1)
        }
    }

    private func serve() async throws {
        var configuration = DevelopmentDefaults.configuration(port: port ?? DevelopmentDefaults.port)
        if let config {
            // A configured server is a real one unless asked otherwise: development mode hands out every one-time code.
            configuration.development = false
            let file = try ConfigurationFile.load(path: config)
            if file.clients != nil && file.demo != true {
                configuration.clients = []
                configuration.users = []
            }
            try file.apply(to: &configuration)
            if file.issuer == nil, let filePort = file.port, port == nil {
                configuration.issuer = URL(string: "http://localhost:\(filePort)") ?? configuration.issuer
            }
        }
        if dev { configuration.development = true }
        if let port { configuration.port = port }
        if let host { configuration.host = host }
        if let database { configuration.databasePath = database }
        if let issuer {
            guard let url = URL(string: issuer) else { throw ValidationError("--issuer \(issuer) is not a URL") }
            configuration.issuer = url
        }
        var logger = Logger(label: "latchkey.server")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info

        let server: IdentityServer
        server = try await IdentityServer.open(configuration: configuration, logger: logger)
        let demo = configuration.clients.contains { $0.clientId == DevelopmentDefaults.demoClientId }
        // A PostgreSQL URL is shown without its password.
        let host = configuration.host, development = configuration.development
        let databaseShown = (try? configuration.databaseLocation)?.description ?? "-"
        try await server.run { boundPort in
            var lines = [
                "Latchkey identity server",
                "  issuer    \(server.issuer)",
                "  listening \(host):\(boundPort)",
                "  database  \(databaseShown)",
                "  discovery \(server.issuer)/.well-known/openid-configuration"
            ]
            if development {
                lines.append("  mode      development: one-time codes at /dev/outbox, no emails are sent")
            }
            if demo {
                lines += [
                    "  demo app  client_id \(DevelopmentDefaults.demoClientId) (public, PKCE), redirects http://127.0.0.1:<port>/callback, io.latchkey.demo:/callback",
                    "  demo user \(DevelopmentDefaults.demoUsername) / \(DevelopmentDefaults.demoPassword)"
                ]
            }
            Console.out(lines.joined(separator: "\n"))
        }
    }
}
