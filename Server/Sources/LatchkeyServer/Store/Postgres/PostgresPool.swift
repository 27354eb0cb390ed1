import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// Latchkey's connection pool: leases PostgresNIO connections, at most `maximumConnections` of them, opened on demand.
///
/// Why not PostgresNIO's own pool (`PostgresClient`): in postgres-nio 1.33 one failed attempt to open a connection (a
/// connect slower than its timeout, "too many connections") puts that pool in a state where every new request is
/// queued even while it holds idle, healthy connections, until a leased one is released, a 30 s keep-alive runs or a
/// connect succeeds (`docs/operating.md`, known limits). Here the rule is the other way round, by construction: a
/// request takes an idle connection whenever there is one, and only waits when there is none; what happens to
/// connection attempts never holds up a connection that exists.
///
/// - A waiting request is served, in order of arrival, by a released connection or by a new one. One whose caller
///   has given up (its `PostgresStore.Deadline` passed, or its task was cancelled) is dropped, not served.
/// - A failed connect is logged. When it proves that no host can serve now (every host refused the connection, or
///   the ones that answered are standbys), the requests waiting fail at once with its error: a database that is down,
///   or a cluster between primaries, answers 503 in the time of one connect attempt, not at the deadline. After any
///   other failure (a slow connect, "too many connections") they keep waiting while a connection is leased or another
///   connect is under way (one of them will serve them), and fail at once otherwise.
/// - A lease whose caller's deadline passed is abandoned: its connection is closed (a statement hung on a dead or
///   cut link fails with it) and its place in the pool is free at once, so requests are not held behind a statement
///   nobody waits for, and a pool that is closing does not wait for it either.
/// - A connection that failed for a reason other than its statement (its socket, a timeout) is closed, not pooled.
/// - A connection left idle for `idleTimeout` is closed (`closeIdleConnections`, run by the store's sweeper): every
///   open connection is a process on the database server, and a quiet instance should not hold its whole pool.
/// - Several hosts (a highly available cluster): a connect tries them in turn, from the one that last gave a
///   connection, and keeps the first whose session is what `target` asks (`read-write` unless told otherwise), so a
///   standby is passed over and a new primary found after a failover. A statement refused because the session is
///   read-only (SQLSTATE 25006: the host was demoted under a pooled connection) drops the idle connections and runs
///   once more on a new one; nothing was written, so nothing is done twice.
actor PostgresPool {
    private let configurations: [PostgresConnection.Configuration]
    private let target: PostgresLocation.TargetSession
    /// The host whose connect worked last: the next connect starts there.
    private var preferred = 0
    private let maximumConnections: Int
    private let logger: Logger
    /// How long a connection may stay idle before it is closed, and the clock that says so (tests move their own).
    let idleTimeout: Duration
    private let now: @Sendable () -> ContinuousClock.Instant

    /// Idle connections, the most recently given back last, each with the moment it was given back.
    private var idle: [(connection: PostgresConnection, since: ContinuousClock.Instant)] = []
    /// The connections now leased, each with its lease's number (a connection is leased many times in its life); a
    /// lease abandoned at its deadline is no longer here.
    private var leases: [ObjectIdentifier: Int] = [:]
    private var nextLease = 0
    private var leased: Int { leases.count }
    private var opening = 0
    private var waiters: [Waiter] = []
    private var closed = false
    private var drained: [CheckedContinuation<Void, Never>] = []
    private var nextWaiter = 0
    private var nextConnection = 0
    /// Connects that failed since the last one that worked (the log says the first and every tenth).
    private var failuresInARow = 0
    private var leasesThatWaited = 0
    private var connectsFailed = 0
    private var closedIdle = 0
    private var hostsPassedOver = 0
    private var readOnlyRetries = 0
    private var abandonedLeases = 0

    /// A connection as one caller holds it.
    struct Lease: Sendable {
        let connection: PostgresConnection
        let number: Int
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Lease, any Error>
        let deadline: PostgresStore.Deadline?
    }

    /// What a pool reports of itself (tests, metrics).
    struct Counts: Sendable, Equatable {
        var idle: Int
        var leased: Int
        var opening: Int
        var waiting: Int
        /// Since the pool was made: leases that had to wait (no idle connection), connects that failed.
        var leasesThatWaited = 0
        var connectsFailed = 0
        /// Since the pool was made: connections closed because they stayed idle for the idle timeout.
        var closedIdle = 0
        /// Since the pool was made: hosts connected to and left because their session was not the target (a standby);
        /// statements run again after a read-only refusal.
        var hostsPassedOver = 0
        var readOnlyRetries = 0
        /// Since the pool was made: leases given up at their caller's deadline (their connections closed).
        var abandonedLeases = 0
    }

    /// `configurations`: one per host, in the order to try them (at least one). `target`: the session a connection must
    /// be; `.any` skips the check.
    init(
        configurations: [PostgresConnection.Configuration], target: PostgresLocation.TargetSession = .readWrite,
        maximumConnections: Int, idleTimeout: Duration = .seconds(60), logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.configurations = configurations
        self.target = target
        self.maximumConnections = max(1, maximumConnections)
        self.idleTimeout = max(.milliseconds(1), idleTimeout)
        self.logger = logger
        self.now = now
    }

    /// Idle connections still open (one the server closed is dropped when next met), leased, being opened, waiting.
    var counts: Counts {
        Counts(
            idle: idle.filter { !$0.connection.isClosed }.count, leased: leased, opening: opening, waiting: waiters.count,
            leasesThatWaited: leasesThatWaited, connectsFailed: connectsFailed, closedIdle: closedIdle,
            hostsPassedOver: hostsPassedOver, readOnlyRetries: readOnlyRetries, abandonedLeases: abandonedLeases)
    }

    var isClosed: Bool { closed }

    /// Closes the connections that have been idle for `idleTimeout` or longer (by the pool's clock).
    func closeIdleConnections() async {
        let cutoff = now() - idleTimeout
        let stale = idle.filter { $0.since <= cutoff }
        guard !stale.isEmpty else { return }
        idle.removeAll { $0.since <= cutoff }
        closedIdle += stale.count
        for entry in stale { try? await entry.connection.close() }
    }

    /// Runs `closeIdleConnections` every so often (a tenth of the idle timeout, between 1 and 30 s) until the pool is
    /// closed or the task is cancelled: the store's sweeper.
    func sweepIdleConnections() async {
        let period = min(.seconds(30), max(.seconds(1), idleTimeout / 10))
        while !closed, !Task.isCancelled {
            do { try await Task.sleep(for: period) } catch { return }
            await closeIdleConnections()
        }
    }

    /// Runs `body` with a leased connection and gives the connection back (or closes it, when it failed for a reason
    /// other than its statement). `deadline`: a caller that stopped waiting is not served. Refused as read-only
    /// (the host is a standby now), `body` runs once more on a new connection, after the idle ones are dropped.
    nonisolated func withConnection<T: Sendable>(
        deadline: PostgresStore.Deadline? = nil, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            let lease = try await numberedLease(deadline: deadline)
            let connection = lease.connection
            deadline?.whenPassed { Task { await self.abandon(lease) } }
            do {
                let value = try await body(connection)
                await giveBack(connection, reusable: true)
                return value
            } catch {
                let demoted = Self.refusedAsReadOnly(error)
                await giveBack(connection, reusable: !demoted && Self.connectionSurvives(error))
                guard demoted, attempt == 1, target != .any, deadline?.passed != true else { throw error }
                await hostWasDemoted()
            }
        }
    }

    /// An idle connection at once; otherwise waits for a released or a new one.
    func lease(deadline: PostgresStore.Deadline? = nil) async throws -> PostgresConnection {
        try await numberedLease(deadline: deadline).connection
    }

    /// As `lease`, with the lease's number (what `abandon` checks, so it never closes a connection leased again since).
    func numberedLease(deadline: PostgresStore.Deadline?) async throws -> Lease {
        if closed { throw StoreError.unavailable("the connection pool is closed") }
        if let connection = takeIdle() { return markLeased(connection) }
        nextWaiter += 1
        let id = nextWaiter
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                leasesThatWaited += 1
                waiters.append(Waiter(id: id, continuation: continuation, deadline: deadline))
                openIfNeeded()
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    /// Returns a leased connection: to the first waiter still waiting, else to the idle list; closed instead when it
    /// is not `reusable`, was closed underneath, or the pool is closing.
    func giveBack(_ connection: PostgresConnection, reusable: Bool) {
        guard leases.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }  // abandoned: closed already
        if closed || !reusable || connection.isClosed {
            Task { try? await connection.close() }
            openIfNeeded()  // the waiters it would have served need a new one
            checkDrained()
            return
        }
        hand(connection)
    }

    /// Waits until the pool is closed (`close()`, or the cancellation of this call) and every connection is closed:
    /// the pool's run loop as a service of the application.
    func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if closed, leased == 0, opening == 0 {
                    continuation.resume()
                } else {
                    drained.append(continuation)
                }
            }
        } onCancel: {
            Task { await self.close() }
        }
    }

    /// Stops the pool: waiting requests fail, idle connections close now, leased ones when they are given back.
    func close() async {
        guard !closed else { return }
        closed = true
        let waiting = waiters
        waiters = []
        for waiter in waiting { waiter.continuation.resume(throwing: StoreError.unavailable("the connection pool is closed")) }
        let closing = idle
        idle = []
        for entry in closing { try? await entry.connection.close() }
        checkDrained()
    }

    /// The caller of a lease stopped waiting (its deadline passed): the connection is closed and no longer
    /// counted, so it neither holds a place nor keeps a closing pool waiting. Nothing when it was given back already.
    func abandon(_ lease: Lease) {
        let connection = lease.connection
        guard leases[ObjectIdentifier(connection)] == lease.number else { return }
        leases[ObjectIdentifier(connection)] = nil
        abandonedLeases += 1
        logger.warning("a PostgreSQL statement outlived its deadline: its connection is closed")
        Task { try? await connection.close() }
        openIfNeeded()
        checkDrained()
    }

    // MARK: Internals

    private func markLeased(_ connection: PostgresConnection) -> Lease {
        nextLease += 1
        leases[ObjectIdentifier(connection)] = nextLease
        return Lease(connection: connection, number: nextLease)
    }

    /// A pooled connection's host refused a write as read-only: the idle connections (to it, most likely) are closed,
    /// and the next connect looks for the writable host again.
    private func hostWasDemoted() async {
        readOnlyRetries += 1
        logger.warning("PostgreSQL refused a write as read-only (a standby now): reconnecting to the writable host")
        let closing = idle
        idle = []
        for entry in closing { try? await entry.connection.close() }
    }

    /// The most recently used idle connection that is still open (the warmest; the others may time out unused).
    private func takeIdle() -> PostgresConnection? {
        while let entry = idle.popLast() {
            if !entry.connection.isClosed { return entry.connection }
        }
        return nil
    }

    /// Gives `connection` to the first waiter whose caller still waits, or keeps it idle.
    private func hand(_ connection: PostgresConnection) {
        dropAbandonedWaiters()
        if waiters.isEmpty {
            idle.append((connection, now()))
        } else {
            let waiter = waiters.removeFirst()
            waiter.continuation.resume(returning: markLeased(connection))
        }
    }

    /// Opens as many connections as there are waiters not yet covered by a connect under way, within the maximum.
    private func openIfNeeded() {
        guard !closed else { return }
        dropAbandonedWaiters()
        let wanted = waiters.count - opening
        let room = maximumConnections - leased - opening - idle.count
        guard wanted > 0, room > 0 else { return }
        for _ in 0..<min(wanted, room) {
            opening += 1
            nextConnection += 1
            let id = nextConnection
            Task { await self.open(id: id) }
        }
    }

    private func open(id: Int) async {
        do {
            let (connection, host, passedOver) = try await connect(id: id)
            if passedOver > 0 || host != preferred {
                logger.notice(
                    "PostgreSQL: connected to another host of the list",
                    metadata: [
                        "host": .string("\(host + 1) of \(configurations.count)"), "passed_over": .string(String(passedOver))
                    ])
            }
            preferred = host
            opening -= 1
            failuresInARow = 0
            if closed {
                try? await connection.close()
                checkDrained()
                return
            }
            hand(connection)
        } catch {
            opening -= 1
            failuresInARow += 1
            connectsFailed += 1
            // Once per run of failures, then every tenth: a database that is down must not flood the log.
            if failuresInARow == 1 || failuresInARow % 10 == 0 {
                // A PSQLError's code only: its description may carry the connection's details.
                let reason = (error as? PSQLError).map { String(describing: $0.code) } ?? String(describing: type(of: error))
                logger.warning(
                    "a PostgreSQL connection could not be opened",
                    metadata: ["error": .string(reason), "failures_in_a_row": .string(String(failuresInARow))])
            }
            if closed {
                checkDrained()
                return
            }
            // No host can serve now, or nothing under way can serve the waiters: they fail now (503) rather than at
            // their deadline. A leased connection would only serve them if its host still takes writes.
            if opening == 0, leased == 0 || Self.noHostCanServe(error) {
                let waiting = waiters
                waiters = []
                for waiter in waiting { waiter.continuation.resume(throwing: error) }
            }
        }
    }

    private func cancelWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    /// Waiters whose caller stopped waiting (the deadline passed: it was already answered 503) are not served.
    private func dropAbandonedWaiters() {
        guard waiters.contains(where: { $0.deadline?.passed == true }) else { return }
        var kept: [Waiter] = []
        for waiter in waiters {
            if waiter.deadline?.passed == true {
                waiter.continuation.resume(throwing: StoreError.unavailable("gave up waiting for a connection"))
            } else {
                kept.append(waiter)
            }
        }
        waiters = kept
    }

    private func checkDrained() {
        guard closed, leased == 0, opening == 0 else { return }
        let waiting = drained
        drained = []
        for continuation in waiting { continuation.resume() }
    }

    /// The first host, in turn from the preferred one, that takes a connection whose session is `target`: the
    /// connection, the host's index, and how many hosts were connected to and left because their session was not the
    /// target. Throws the last connect's error, or `StoreError.unavailable` when every host that answered was read-only.
    private func connect(id: Int) async throws -> (PostgresConnection, host: Int, passedOver: Int) {
        var lastError: (any Error)?
        var passedOver = 0
        let start = preferred
        for step in 0..<configurations.count {
            let host = (start + step) % configurations.count
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(configuration: configurations[host], id: id, logger: logger)
            } catch {
                lastError = error
                continue
            }
            do {
                if try await Self.sessionIs(target, connection, logger: logger) { return (connection, host, passedOver) }
                passedOver += 1
                hostsPassedOver += 1
            } catch {
                lastError = error
            }
            try? await connection.close()
        }
        guard passedOver == 0, let lastError else {
            throw StoreError.unavailable(
                "no PostgreSQL host of \(configurations.count) is target_session_attrs=\(target.rawValue) (\(passedOver) passed over)")
        }
        throw lastError
    }

    /// Whether `connection`'s session is what `target` asks (libpq's checks for `target_session_attrs`).
    private static func sessionIs(_ target: PostgresLocation.TargetSession, _ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        switch target {
        case .any:
            return true
        case .readWrite:
            let rows = try await connection.query("SHOW transaction_read_only", logger: logger).collect()
            return try rows.first?.decode(String.self) == "off"
        case .primary:
            let rows = try await connection.query("SELECT pg_is_in_recovery()", logger: logger).collect()
            return try rows.first?.decode(Bool.self) == false
        }
    }

    /// Whether a failed connect proves that no host of the list can serve now: the ones that answered are standbys
    /// (`StoreError.unavailable` from `connect`), or the last host refused the TCP connection (nothing listens: a
    /// node that is down). Not for a connect that was slow, or a server that refused more connections.
    static func noHostCanServe(_ error: any Error) -> Bool {
        if error is StoreError { return true }
        var underlying: (any Error)? = error
        if let error = error as? PSQLError { underlying = error.underlying }
        if let error = underlying as? NIOConnectionError {
            underlying = error.connectionErrors.last?.error ?? error.dnsAError ?? error.dnsAAAAError
        }
        guard let error = underlying as? IOError else { return false }
        return error.errnoCode == ECONNREFUSED
    }

    /// SQLSTATE 25006, read_only_sql_transaction: a write on a standby (or a primary demoted under the connection).
    /// Latchkey declares no read-only transaction that writes, so this always means the host, not the statement.
    static func refusedAsReadOnly(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server else { return false }
        return error.serverInfo?[.sqlState] == "25006"
    }

    /// Whether a connection can be used again after `error`: yes after an error of the statement (the server said
    /// no: a constraint, a timeout it enforced, a lock it refused), no after anything that may have left the
    /// connection in an unknown state (its socket, a protocol error, a cancellation mid-statement).
    static func connectionSurvives(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return !(error is CancellationError) }
        return error.code == .server
    }
}
