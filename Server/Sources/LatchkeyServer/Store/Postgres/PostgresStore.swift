import Foundation
import Logging
import NIOCore
import NIOConcurrencyHelpers
import NIOSSL
import PostgresNIO
import ServiceLifecycle

/// The shared `Store`: one PostgreSQL database behind any number of server instances.
///
/// Atomicity across instances comes from the database, never from this process: a state change is one conditional
/// `UPDATE … WHERE <expected state> RETURNING …`, or a transaction that locks the rows it reads (`SELECT … FOR UPDATE`),
/// or — where the rule is about rows that may not exist yet (a count in a window, "no other account has this email") —
/// a transaction-scoped advisory lock on the key (`lock(_:_:on:)`). Transactions run at READ COMMITTED.
///
/// Every call has a deadline (`timeout`): a database that is gone fails the call with `StoreError.unavailable` (503)
/// instead of holding the request, and the pool reconnects by itself when the database is back.
public final class PostgresStore: Store {
    /// The connections (Latchkey's pool over PostgresNIO connections: `PostgresPool` says why not PostgresNIO's).
    let pool: PostgresPool
    let sealer: SecretSealer?
    let logger: Logger
    let timeout: Duration
    /// Client configurations by their stored JSON (every token request reads its client).
    let decodedClients = DecodedClientConfigurations()
    /// The pool's run loop (`PostgresPool.run`: it returns once the pool is closed and its connections are), started at
    /// `open`; the application then owns it as a service (`PoolService`).
    private let runner: Task<Void, Never>

    /// Connects (the pool opens connections lazily, up to `poolSize`, and closes those idle for `idleTimeout`),
    /// migrates the schema, and checks that sealed secrets open with `sealer`'s key.
    public static func open(
        location: PostgresLocation, sealer: SecretSealer?, poolSize: Int = 10, timeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(60), logger: Logger = Logger(label: "latchkey.store")
    ) async throws -> PostgresStore {
        let store = try PostgresStore(
            location: location, sealer: sealer, poolSize: poolSize, timeout: timeout, idleTimeout: idleTimeout, logger: logger)
        do {
            // Reachable at all? (The normal deadline: a wrong host or port fails the start in seconds.) Then the
            // migration, which may wait for another instance's (the lock) and runs DDL: a longer deadline.
            try await store.connection { connection in try await store.execute("SELECT 1", on: connection) }
            try await store.guarded(timeout: .seconds(300)) { _ in try await PostgresSchema.migrate(store.pool, logger: store.logger) }
            try await store.checkSealedSecrets()
        } catch {
            store.close()
            throw error
        }
        return store
    }

    init(
        location: PostgresLocation, sealer: SecretSealer?, poolSize: Int, timeout: Duration, idleTimeout: Duration = .seconds(60),
        logger: Logger
    ) throws {
        let tls: PostgresConnection.Configuration.TLS
        switch location.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        // The server ends a statement or a lock wait that runs too long, so a connection is never held for ever.
        let statementMilliseconds = Int(timeout.components.seconds) * 1000
        let configurations = location.endpoints.map { endpoint in
            var configuration = PostgresConnection.Configuration(
                host: endpoint.host, port: endpoint.port, username: location.username,
                password: location.password, database: location.database, tls: tls)
            // A connect may take as long as a statement may: a slow but working database is not a failing one.
            configuration.options.connectTimeout = .seconds(max(5, timeout.components.seconds))
            configuration.options.additionalStartupParameters = [
                ("statement_timeout", "\(statementMilliseconds)"), ("lock_timeout", "\(statementMilliseconds)"),
                ("idle_in_transaction_session_timeout", "\(statementMilliseconds * 2)"), ("application_name", "latchkey")
            ]
            return configuration
        }
        // PostgresNIO logs every message it exchanges at debug and trace level, rows and bound values included (tokens'
        // digests, sealed secrets, codes): its logger never goes below warning, whatever the server's level.
        var driverLogger = logger
        if driverLogger.logLevel < .warning { driverLogger.logLevel = .warning }
        let pool = PostgresPool(
            configurations: configurations, target: location.targetSession, maximumConnections: poolSize, idleTimeout: idleTimeout,
            logger: driverLogger)
        self.pool = pool
        self.sealer = sealer
        self.logger = driverLogger
        // A little more than the server's own statement timeout, so the server's error normally comes first.
        self.timeout = timeout + .seconds(2)
        // The run loop, and beside it the sweeper of idle connections, which stops when the run loop has.
        self.runner = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await pool.sweepIdleConnections() }
                await pool.run()
                group.cancelAll()
            }
        }
    }

    /// Stops the pool (its connections close). The store cannot be used afterwards. An application of the server
    /// does this itself at shutdown (`PoolService`); call it when the store was used without one.
    public func close() {
        runner.cancel()
    }

    /// The connection pool as a service of the application's service group: it runs while the pool's run loop does,
    /// and at the group's graceful shutdown (or cancellation) it closes the pool and returns once the connections
    /// have closed. A service group stops its services in reverse order and Hummingbird's HTTP server is the last
    /// one, so the pool outlives every request, and the services listed after it (mail delivery).
    struct PoolService: Service {
        let store: PostgresStore

        func run() async {
            await withTaskCancellationOrGracefulShutdownHandler {
                await store.runner.value
            } onCancelOrGracefulShutdown: {
                store.close()
            }
        }
    }

    deinit { runner.cancel() }

    // MARK: Running statements

    /// Runs `body` in one transaction on one pooled connection: committed when it returns, rolled back when it throws
    /// (the error is passed on as it is). A deadlock or serialization failure, which PostgreSQL resolves by failing one
    /// of the transactions, is retried (up to three times).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await guarded { deadline in
                    try await self.pool.withConnection(deadline: deadline) { connection in
                        // Explicit: the lock-then-check paths need each statement to see what committed before it
                        // (a database whose default is REPEATABLE READ would take the snapshot before the lock).
                        try await connection.query("BEGIN ISOLATION LEVEL READ COMMITTED", logger: self.logger)
                        do {
                            let value = try await body(connection)
                            // The caller was already told 503: what it asked for must not happen behind its back.
                            guard !deadline.passed else { throw StoreError.unavailable("the deadline passed before COMMIT") }
                            try await connection.query("COMMIT", logger: self.logger)
                            return value
                        } catch {
                            _ = try? await connection.query("ROLLBACK", logger: self.logger)
                            throw error
                        }
                    }
                }
            } catch let error as PSQLError where attempt < 3 && Self.isRetryable(error) {
                continue
            }
        }
    }

    /// Runs `body` on one pooled connection, outside a transaction (single statements, reads).
    @discardableResult
    func connection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await guarded { deadline in try await self.pool.withConnection(deadline: deadline) { connection in try await body(connection) } }
    }

    /// The rows of one statement (bind values with `\(value)` inside the query literal).
    func rows(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> [PostgresRow] {
        try await connection.query(query, logger: logger).collect()
    }

    /// The first row of one statement, if any.
    func row(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> PostgresRow? {
        try await rows(query, on: connection).first
    }

    /// Runs a statement and returns how many rows it returned: write `… RETURNING 1` to count the rows a conditional
    /// `UPDATE` or `DELETE` changed.
    @discardableResult
    func execute(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> Int {
        try await rows(query, on: connection).count
    }

    /// Takes a transaction-scoped advisory lock on `namespace:key`: concurrent transactions that lock the same key (in
    /// any instance) run one after the other; the lock ends with the transaction.
    func lock(_ namespace: String, _ key: String, on connection: PostgresConnection) async throws {
        try await execute("SELECT pg_advisory_xact_lock(hashtextextended(\(namespace + ":" + key), 0))", on: connection)
    }

    /// A unique constraint was violated (SQLSTATE 23505): the caller turns it into `StoreError.conflict`.
    static func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == "23505"
    }

    private static func isRetryable(_ error: PSQLError) -> Bool {
        let state = error.serverInfo?[.sqlState]
        return state == "40001" || state == "40P01"
    }

    /// Whether the caller of an operation stopped waiting for it (`guarded`).
    final class Deadline: Sendable {
        private let state = NIOLockedValueBox<(passed: Bool, handlers: [@Sendable () -> Void])>((false, []))
        var passed: Bool { state.withLockedValue { $0.passed } }

        /// Marks it passed and runs what was registered with `whenPassed` (once).
        func pass() {
            let handlers = state.withLockedValue { current -> [@Sendable () -> Void] in
                guard !current.passed else { return [] }
                current.passed = true
                defer { current.handlers = [] }
                return current.handlers
            }
            for handler in handlers { handler() }
        }

        /// Runs `handler` when the deadline passes (at once if it has).
        func whenPassed(_ handler: @escaping @Sendable () -> Void) {
            let already = state.withLockedValue { current -> Bool in
                if !current.passed { current.handlers.append(handler) }
                return current.passed
            }
            if already { handler() }
        }
    }

    /// The deadline and the translation of "the database is not there" into `StoreError.unavailable`.
    ///
    /// The operation runs in a task of its own and the caller waits for whichever comes first, the operation or the
    /// deadline: PostgresNIO does not abandon a statement when its task is cancelled, so a database that stopped
    /// answering without closing the socket would otherwise hold the request until TCP gives up. At the deadline the
    /// pool closes the operation's connection (`PostgresPool.abandon`), so the abandoned operation fails soon after; a
    /// transaction that reaches COMMIT after its deadline rolls back instead (`Deadline`), so a 503 never hides a
    /// committed change — unless COMMIT was already under way.
    @discardableResult
    func guarded<T: Sendable>(timeout given: Duration? = nil, _ operation: @escaping @Sendable (Deadline) async throws -> T) async throws -> T {
        let timeout = given ?? self.timeout
        let deadline = Deadline()
        do {
            return try await Self.firstOf(timeout: timeout, deadline: deadline) { try await operation(deadline) }
        } catch let error as PSQLError {
            let state = error.serverInfo?[.sqlState]
            if state == "22021" || state == "22P05" { throw StoreError.invalidInput }  // a NUL or unencodable character
            if let reason = Self.unavailability(error) {
                logger.warning("PostgreSQL unavailable", metadata: ["reason": .string(reason)])
                throw StoreError.unavailable(reason)
            }
            throw error
        } catch let error as StoreError {
            if case .unavailable(let reason) = error { logger.warning("PostgreSQL unavailable", metadata: ["reason": .string(reason)]) }
            throw error
        }
    }

    /// The operation's result, or `StoreError.unavailable` once `timeout` has passed (then `deadline` is marked).
    private static func firstOf<T: Sendable>(
        timeout: Duration, deadline: Deadline,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let settled = NIOLockedValueBox<CheckedContinuation<T, any Error>?>(nil)
        let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            settled.withLockedValue { $0 = continuation }
            @Sendable func settle(_ result: Result<T, any Error>) -> Bool {
                guard
                    let waiting = settled.withLockedValue({ current -> CheckedContinuation<T, any Error>? in
                        defer { current = nil }
                        return current
                    })
                else { return false }
                waiting.resume(with: result)
                return true
            }
            // The timer first, so the operation always finds it to cancel (no sleeping task outlives a fast call).
            timer.withLockedValue { current in
                current = Task {
                    try? await Task.sleep(for: timeout)
                    guard !Task.isCancelled else { return }
                    deadline.pass()
                    _ = settle(.failure(StoreError.unavailable("no answer from PostgreSQL within \(timeout)")))
                }
            }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                if settle(result) { timer.withLockedValue { $0?.cancel() } }
            }
        }
    }

    /// Why an error means the database cannot serve now (and a retry later may work); nil for errors of the statement.
    static func unavailability(_ error: PSQLError) -> String? {
        switch error.code {
        case .server:
            guard let state = error.serverInfo?[.sqlState] else { return nil }
            // 08: connection exceptions; 57: shut down, cancelled (statement_timeout), too many connections (53300);
            // 55P03: lock_timeout.
            if state.hasPrefix("08") || state.hasPrefix("57") || state == "53300" || state == "55P03" {
                return "PostgreSQL error \(state)"
            }
            return nil
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection, .poolClosed,
            .queryCancelled:
            return "PostgreSQL connection: \(error.code)"
        default:
            return nil
        }
    }

    // MARK: Secrets at rest

    /// Every sealed signing key and TOTP secret must open with the configured key: a wrong key is a start-up error,
    /// not a failure at the first sign-in. (Nothing is ever stored in clear here: this store seals from its first row.)
    func checkSealedSecrets() async throws {
        guard let sealer else { return }
        let (keys, factors) = try await connection { connection in
            let keys = try await self.rows("SELECT kid, pem FROM signing_keys", on: connection)
            let factors = try await self.rows("SELECT user_id, kind, secret FROM user_factors WHERE secret <> ''", on: connection)
            return (keys, factors)
        }
        for row in keys {
            let (kid, pem) = try row.decode((String, String).self)
            _ = try sealer.open(pem, context: SQLiteStore.signingKeyContext(kid))
        }
        for row in factors {
            let (userId, kind, secret) = try row.decode((String, String, String).self)
            _ = try sealer.open(secret, context: SQLiteStore.factorContext(userId: userId, kind: kind))
        }
    }
}

/// Named column access on a result row: `let c = Columns(row); let id: String = try c("id"); let at = try c.date("at")`.
struct Columns {
    private let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) { self.row = row.makeRandomAccess() }

    func callAsFunction<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        try row[name].decode(T.self)
    }

    /// A time column (seconds since 1970), nil when NULL.
    func date(_ name: String) throws -> Date? {
        try row[name].decode(Double?.self).map(Date.init(timeIntervalSince1970:))
    }

    /// A JSON-encoded text column.
    func json<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        try SQLiteStore.decode(T.self, try row[name].decode(String.self))
    }
}

extension Date {
    /// Seconds since 1970: how both stores keep times.
    var epoch: Double { timeIntervalSince1970 }
}
