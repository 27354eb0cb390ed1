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

/// A PostgreSQL database: `postgres://user[:password]@host[:port][,host[:port]…]/database[?sslmode=…&target_session_attrs=…]`.
///
/// Several hosts, as libpq writes them, name the nodes of a highly available cluster (Patroni, say): the pool connects
/// to the first, in turn from the one that last worked, that accepts writes (`TargetSession`), so it finds a new primary
/// after a failover without a restart and never writes to a standby.
///
/// The password may instead come from `PGPASSWORD` (so it need not appear in a command line or a file). It is never part
/// of `description`, which is what the server logs and prints.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    /// One node of the cluster.
    public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int = 5432) {
            self.host = host
            self.port = port
        }

        public var description: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
    }

    /// Which session a connection must be (libpq's `target_session_attrs`). Latchkey writes, so the default is
    /// `read-write`, whatever the number of hosts; `standby` and the other read-only kinds are refused.
    public enum TargetSession: String, Sendable {
        /// `SHOW transaction_read_only` is `off`: a primary, and not one set read-only by its operator.
        case readWrite = "read-write"
        /// `pg_is_in_recovery()` is false.
        case primary
        /// No check (a connection pooler in front that answers for the cluster, say).
        case any
    }

    /// The hosts in the order the URL names them (at least one).
    public var endpoints: [Endpoint]
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    public var targetSession: TargetSession

    /// The first host (the only one, usually).
    public var host: String {
        get { endpoints[0].host }
        set { endpoints[0].host = newValue }
    }

    /// The first host's port.
    public var port: Int {
        get { endpoints[0].port }
        set { endpoints[0].port = newValue }
    }

    public init(url text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let shape = "the database URL must look like postgres://user@127.0.0.1:5432/latchkey"
        // URLComponents reads one host only: the host list is taken out by hand, and the rest of the URL read with a
        // placeholder host in its place.
        guard let schemeEnd = text.range(of: "://") else { throw ConfigurationError.invalid(shape) }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else { throw ConfigurationError.invalid(shape) }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let at = authority.lastIndex(of: "@")
        let userInfo = at.map { authority[..<$0] } ?? ""
        let hostList = at.map { authority[authority.index(after: $0)...] } ?? authority
        let endpoints = try hostList.split(separator: ",", omittingEmptySubsequences: false).map(Self.endpoint)
        guard !endpoints.isEmpty, !endpoints.contains(where: { $0.host.isEmpty }) else {
            throw ConfigurationError.invalid("the database URL names no host (postgres://user@HOST:5432/latchkey)")
        }
        let rest = "postgres://" + userInfo + (at == nil ? "" : "@") + "placeholder" + afterScheme[authorityEnd...]
        guard let components = URLComponents(string: rest) else { throw ConfigurationError.invalid(shape) }
        let first = endpoints[0].description
        guard let user = components.user, !user.isEmpty else {
            throw ConfigurationError.invalid("the database URL names no user (postgres://USER@\(first)/latchkey)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw ConfigurationError.invalid("the database URL names no database (postgres://\(user)@\(first)/DATABASE)")
        }
        self.endpoints = endpoints
        self.username = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 } ?? environment["PGPASSWORD"]
        self.database = database.removingPercentEncoding ?? database
        let query = components.queryItems ?? []
        if let mode = query.first(where: { $0.name == "sslmode" })?.value {
            guard let parsed = TLSMode(rawValue: mode) else {
                throw ConfigurationError.invalid("sslmode=\(mode) in the database URL: use disable, prefer or require")
            }
            self.tls = parsed
        } else {
            // On one machine TLS buys nothing; across a network it is required unless the URL says otherwise (with
            // "prefer" a man in the middle could strip TLS and be sent the password).
            self.tls = endpoints.allSatisfy { LoopbackHost.isLoopback($0.host) } ? .disable : .require
        }
        if let target = query.first(where: { $0.name == "target_session_attrs" })?.value {
            guard let parsed = TargetSession(rawValue: target) else {
                throw ConfigurationError.invalid(
                    "target_session_attrs=\(target) in the database URL: Latchkey writes, so use read-write (the default), "
                        + "primary or any")
            }
            self.targetSession = parsed
        } else {
            self.targetSession = .readWrite
        }
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`. Errors do not quote the text: in a URL without `@` it is
    /// `user:password`.
    private static func endpoint(_ text: Substring) throws -> Endpoint {
        let host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw ConfigurationError.invalid("a host in the database URL opens a [ it does not close")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ConfigurationError.invalid("a host in the database URL is malformed after its ]") }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
        }
        var port = 5432
        if let portText {
            guard let parsed = Int(portText), (1...65535).contains(parsed) else {
                throw ConfigurationError.invalid("a port in the database URL is not a number from 1 to 65535")
            }
            port = parsed
        }
        let decoded = host.removingPercentEncoding ?? String(host)
        return Endpoint(host: decoded, port: port)
    }

    public var description: String {
        var options: [String] = []
        if tls != .disable { options.append("sslmode=\(tls.rawValue)") }
        if targetSession != .readWrite { options.append("target_session_attrs=\(targetSession.rawValue)") }
        return "postgres://\(username)@\(endpoints.map(\.description).joined(separator: ","))/\(database)"
            + (options.isEmpty ? "" : "?" + options.joined(separator: "&"))
    }
}
