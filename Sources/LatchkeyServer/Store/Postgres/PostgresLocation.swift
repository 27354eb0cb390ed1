import Foundation

/// Where the server keeps its data: a SQLite file (the embedded default) or a PostgreSQL database shared by several
/// instances. Parsed from the `--database` flag or the configuration file's `database` key.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresLocation)

    /// `postgres://…` or `postgresql://…` is PostgreSQL; anything else is a SQLite file path.
    public init(_ text: String) throws {
        let lowered = text.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            self = .postgres(try PostgresLocation(url: text))
        } else {
            self = .sqlite(path: text)
        }
    }

    /// For logs and the start-up banner: a PostgreSQL URL without its password.
    public var description: String {
        switch self {
        case .sqlite(let path): URL(fileURLWithPath: path).path
        case .postgres(let location): location.description
        }
    }
}

/// A PostgreSQL database: `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`.
///
/// The password may instead come from `PGPASSWORD` (so it need not appear in a command line or a file). It is never part
/// of `description`, which is what the server logs and prints.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(url text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw ConfigurationError.invalid("the database URL must look like postgres://user@127.0.0.1:5432/latchkey")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ConfigurationError.invalid("the database URL names no host (postgres://user@HOST:5432/latchkey)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw ConfigurationError.invalid("the database URL names no user (postgres://USER@\(host):5432/latchkey)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw ConfigurationError.invalid("the database URL names no database (postgres://\(user)@\(host):5432/DATABASE)")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = components.port ?? 5432
        self.username = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 } ?? environment["PGPASSWORD"]
        self.database = database.removingPercentEncoding ?? database
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value
        if let mode {
            guard let parsed = TLSMode(rawValue: mode) else {
                throw ConfigurationError.invalid("sslmode=\(mode) in the database URL: use disable, prefer or require")
            }
            self.tls = parsed
        } else {
            // On one machine TLS buys nothing; across a network it is required unless the URL says otherwise (with
            // "prefer" a man in the middle could strip TLS and be sent the password).
            self.tls = LoopbackHost.isLoopback(self.host) ? .disable : .require
        }
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(username)@\(shownHost):\(port)/\(database)" + (tls == .disable ? "" : "?sslmode=\(tls.rawValue)")
    }
}
