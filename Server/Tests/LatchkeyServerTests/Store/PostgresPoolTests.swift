import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import LatchkeyTestSupport
@testable import LatchkeyServer
import Testing

/// Latchkey's PostgreSQL pool against the test cluster: a failed connection attempt never holds up the connections
/// that exist (the defect of PostgresNIO's pool it replaces: `docs/operating.md`, known limits).
@Suite("PostgreSQL pool: idle connections serve requests whatever happens to connection attempts", .enabled(if: StoreKind.postgresURL != nil))
struct PostgresPoolTests {
    /// A database owned by a new role that may hold at most `limit` connections, opened with a pool larger than that.
    static func withLimitedRole(
        limit: Int, poolSize: Int, _ body: (PostgresStore, _ admin: PostgresLocation, _ role: String) async throws -> Void
    ) async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        let suffix = StoreFixture.hex(8)
        let (name, role) = ("latchkey_pool_" + suffix, "latchkey_pool_role_" + suffix)
        try await PostgresAdmin.execute("CREATE ROLE \(role) LOGIN CONNECTION LIMIT \(limit)", at: admin)
        try await PostgresAdmin.execute("CREATE DATABASE \(name) OWNER \(role)", at: admin)
        var location = admin
        location.database = name
        location.username = role
        location.password = nil
        var failure: (any Error)?
        do {
            // The deadline only catches a hang (the whole suite may load the machine many times over): what is asserted
            // is whether a request waited, from the pool's own counts, not how long it took.
            // The idle timeout out of reach too: the sweeper must not close one of the two while a busy machine runs the
            // test (it asserts both stay idle).
            let store = try await PostgresStore.open(
                location: location, sealer: nil, poolSize: poolSize, timeout: .seconds(120), idleTimeout: .seconds(86_400))
            do { try await body(store, admin, role) } catch { failure = error }
            store.close()
        } catch {
            failure = error
        }
        try? await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", at: admin)
        try? await PostgresAdmin.execute("DROP ROLE IF EXISTS \(role)", at: admin)
        if let failure { throw failure }
    }

    @Test("a role allowed 2 connections, a pool of 3: connects are refused, and every request is still served by the two")
    func refusedConnects() async throws {
        try await Self.withLimitedRole(limit: 2, poolSize: 3) { store, _, _ in
            let pool = store.pool
            // Both connections the role may have are held; a request then needs a third, whose connect is refused
            // ("too many connections for role"). It waits, and is served as soon as one of the two is given back.
            let first = try await pool.lease()
            let second = try await pool.lease()
            let waiting = Task { try await store.client(id: "nobody") }
            try await eventually("the third connect refused") { await pool.counts.connectsFailed >= 1 }
            await pool.giveBack(first, reusable: true)
            _ = try await waiting.value
            await pool.giveBack(second, reusable: true)
            let before = await pool.counts
            #expect(before.idle == 2 && before.leased == 0 && before.waiting == 0, "\(before)")
            // After the failed connect, requests one at a time go straight to an idle connection: none of them waits
            // (PostgresNIO's pool queued each of them until a keep-alive ran: 503 after the deadline, one success
            // every 30 s). And bursts wider than the two are served by the two in turn.
            for _ in 0..<20 { _ = try await store.client(id: "nobody") }
            let after = await pool.counts
            #expect(after.leasesThatWaited == before.leasesThatWaited && after.idle == 2, "\(after)")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<12 { group.addTask { _ = try await store.client(id: "nobody") } }
                try await group.waitForAll()
            }
            #expect(await pool.counts.idle == 2)
        }
    }

    @Test("no connection can be opened and none is idle: a request fails at once with the connect's error, as 503")
    func unreachableFailsFast() async throws {
        try await Self.withLimitedRole(limit: 1, poolSize: 2) { store, admin, role in
            let idle = await store.pool.counts.idle
            #expect(idle == 1, "the open's own connection, idle")
            // The database takes the pool's connection away and lets the role open none.
            try await PostgresAdmin.execute("ALTER ROLE \(role) CONNECTION LIMIT 0", at: admin)
            try await PostgresAdmin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'", at: admin)
            try await eventually("the pool sees its connection closed") { await store.pool.counts.idle == 0 }
            // The refused connect's own error (53300), not the deadline's "no answer within …": nobody waited for it.
            await #expect { _ = try await store.client(id: "nobody") } throws: { error in
                guard case .unavailable(let reason) = error as? StoreError else { return false }
                return reason.contains("53300")
            }
            let counts = await store.pool.counts
            #expect(counts.idle == 0 && counts.leased == 0 && counts.opening == 0 && counts.waiting == 0, "\(counts)")
            // The database lets it in again: served at once, without a restart.
            try await PostgresAdmin.execute("ALTER ROLE \(role) CONNECTION LIMIT 2", at: admin)
            _ = try await store.client(id: "nobody")
        }
    }

    @Test("a caller whose deadline passed is not served; a cancelled one leaves the queue; a closed pool refuses")
    func abandonedWaiters() async throws {
        try await Self.withLimitedRole(limit: 1, poolSize: 1) { store, _, _ in
            let pool = store.pool
            let held = try await pool.lease()
            let gaveUp = PostgresStore.Deadline()
            let late = Task { try await pool.lease(deadline: gaveUp) }
            let cancelled = Task { try await pool.lease() }
            try await eventually("both wait") { await pool.counts.waiting == 2 }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
            gaveUp.pass()
            await pool.giveBack(held, reusable: true)
            await #expect(throws: StoreError.self) { _ = try await late.value }
            let counts = await pool.counts
            #expect(counts.idle == 1 && counts.leased == 0 && counts.waiting == 0, "the connection went back idle: \(counts)")
            await pool.close()
            await #expect(throws: StoreError.self) { _ = try await pool.lease() }
        }
    }

    @Test("a connection left idle for the idle timeout is closed, by the pool's clock alone; a request then opens a new one")
    func idleConnectionsClose() async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        let clock = PoolClock()
        var configuration = PostgresConnection.Configuration(
            host: admin.host, port: admin.port, username: admin.username, password: admin.password, database: admin.database,
            tls: .disable)
        configuration.options.connectTimeout = .seconds(120)  // the whole suite may load the machine many times over
        let pool = PostgresPool(
            configurations: [configuration], maximumConnections: 2, idleTimeout: .seconds(60), logger: Logger(label: "test.pool"),
            now: { clock.now })
        let running = Task { await pool.run() }
        let first = try await pool.lease()
        let second = try await pool.lease()
        await pool.giveBack(first, reusable: true)
        clock.advance(by: .seconds(30))
        await pool.giveBack(second, reusable: true)
        clock.advance(by: .seconds(30))
        // The first has been idle 60 s, the second 30 s.
        await pool.closeIdleConnections()
        var counts = await pool.counts
        #expect(counts.idle == 1, "\(counts)")
        #expect(counts.closedIdle == 1)
        #expect(first.isClosed)
        #expect(!second.isClosed)
        clock.advance(by: .seconds(29))
        await pool.closeIdleConnections()
        #expect(await pool.counts.idle == 1, "29 s more: the second has been idle 59 s")
        clock.advance(by: .seconds(1))
        await pool.closeIdleConnections()
        counts = await pool.counts
        #expect(counts.idle == 0, "\(counts)")
        #expect(counts.closedIdle == 2)
        #expect(second.isClosed)
        // Nothing idle: the next request waits for a new connection, and is served by it.
        let third = try await pool.lease()
        #expect(!third.isClosed)
        await pool.giveBack(third, reusable: true)
        #expect(await pool.counts.leasesThatWaited == 3)
        await pool.close()
        await running.value
    }

    // MARK: Several hosts

    /// A connection's configuration for the test cluster, as `user` (the admin's when nil), or for a port where nothing
    /// listens.
    static func configuration(_ admin: PostgresLocation, user: String? = nil, port: Int? = nil) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: admin.host, port: port ?? admin.port, username: user ?? admin.username, password: user == nil ? admin.password : nil,
            database: admin.database, tls: .disable)
        configuration.options.connectTimeout = .seconds(120)  // the whole suite may load the machine many times over
        return configuration
    }

    /// A role whose sessions are read-only, as a standby's are (`SHOW transaction_read_only` is `on`), though the
    /// server is not in recovery: what tells `read-write` from `primary`.
    static func withReadOnlyRole(_ body: (PostgresLocation, _ role: String) async throws -> Void) async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        let role = "latchkey_pool_ro_" + StoreFixture.hex(8)
        try await PostgresAdmin.execute("CREATE ROLE \(role) LOGIN", at: admin)
        try await PostgresAdmin.execute("ALTER ROLE \(role) SET default_transaction_read_only = on", at: admin)
        var failure: (any Error)?
        do { try await body(admin, role) } catch { failure = error }
        try? await PostgresAdmin.execute("DROP ROLE IF EXISTS \(role)", at: admin)
        if let failure { throw failure }
    }

    static func currentUser(_ pool: PostgresPool) async throws -> String? {
        try await pool.withConnection { connection in
            try await connection.query("SELECT current_user::text", logger: Logger(label: "test.pool")).collect().first?.decode(String.self)
        }
    }

    @Test("several hosts: one where nothing listens and one whose session is read-only are passed over; the writable one serves")
    func severalHostsFindTheWritableOne() async throws {
        try await Self.withReadOnlyRole { admin, role in
            let dead = Self.configuration(admin, port: 1)
            let readOnly = Self.configuration(admin, user: role)
            let writable = Self.configuration(admin)
            let logger = Logger(label: "test.pool")

            let pool = PostgresPool(configurations: [dead, readOnly, writable], maximumConnections: 2, logger: logger)
            #expect(try await Self.currentUser(pool) == admin.username)
            var counts = await pool.counts
            #expect(counts.hostsPassedOver == 1 && counts.connectsFailed == 0, "\(counts)")
            // The next connect starts at the host that worked: nothing is passed over again.
            let first = try await pool.lease()
            let second = try await pool.lease()
            await pool.giveBack(first, reusable: true)
            await pool.giveBack(second, reusable: true)
            counts = await pool.counts
            #expect(counts.hostsPassedOver == 1 && counts.idle == 2, "\(counts)")
            await pool.close()

            // The check is what passes the read-only host over: without it (`any`) the first host that answers is kept;
            // `primary` asks only whether the server is in recovery, which this one is not.
            for (target, expected) in [(PostgresLocation.TargetSession.any, role), (.primary, role), (.readWrite, admin.username)] {
                let pool = PostgresPool(configurations: [readOnly, writable], target: target, maximumConnections: 1, logger: logger)
                #expect(try await Self.currentUser(pool) == expected, "\(target)")
                await pool.close()
            }

            // Only read-only hosts: the request fails at once (503), it does not wait for a writable one.
            let standbys = PostgresPool(configurations: [readOnly, dead], maximumConnections: 1, logger: logger)
            await #expect(throws: StoreError.self) { _ = try await Self.currentUser(standbys) }
            counts = await standbys.counts
            #expect(counts.connectsFailed == 1 && counts.hostsPassedOver == 1 && counts.waiting == 0, "\(counts)")
            await standbys.close()
        }
    }

    @Test("a write refused as read-only (the host demoted under a pooled connection) runs once more, on a new connection")
    func aWriteRefusedAsReadOnlyRunsAgain() async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        let logger = Logger(label: "test.pool")
        let table = "latchkey_pool_demoted_" + StoreFixture.hex(8)
        let pool = PostgresPool(configurations: [Self.configuration(admin)], maximumConnections: 2, logger: logger)
        // The pooled connection turns read-only, as every session of a primary demoted to a standby would.
        let demoted = try await pool.lease()
        try await demoted.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", logger: logger)
        await pool.giveBack(demoted, reusable: true)

        let attempts = NIOLockedValueBox(0)
        try await pool.withConnection { connection in
            attempts.withLockedValue { $0 += 1 }
            try await connection.query("BEGIN", logger: logger)
            do {
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (x int)"), logger: logger)
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
        #expect(attempts.withLockedValue { $0 } == 2, "refused once, then written on a new connection")
        #expect(demoted.isClosed, "the read-only connection is not pooled again")
        let counts = await pool.counts
        #expect(counts.readOnlyRetries == 1 && counts.idle == 1, "\(counts)")
        try await PostgresAdmin.execute("DROP TABLE \(table)", at: admin)

        // A statement error of any other kind is the caller's, as before: not run again.
        let again = NIOLockedValueBox(0)
        await #expect(throws: PSQLError.self) {
            try await pool.withConnection { connection in
                again.withLockedValue { $0 += 1 }
                try await connection.query("SELECT * FROM latchkey_no_such_table", logger: logger)
            }
        }
        #expect(again.withLockedValue { $0 } == 1)
        await pool.close()
    }

    @Test("the store's sweeper closes idle connections by itself while the store runs, and stops with it")
    func theStoresSweeperRuns() async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        let name = "latchkey_pool_" + StoreFixture.hex(8)
        try await PostgresAdmin.execute("CREATE DATABASE \(name)", at: admin)
        var location = admin
        location.database = name
        do {
            let store = try await PostgresStore.open(
                location: location, sealer: nil, poolSize: 2, timeout: .seconds(120), idleTimeout: .milliseconds(1))
            _ = try await store.client(id: "nobody")
            try await eventually("the idle connections closed by the sweeper") {
                let counts = await store.pool.counts
                return counts.closedIdle >= 1 && counts.idle == 0
            }
            _ = try await store.client(id: "nobody")
            store.close()
            try await eventually("the pool closed") { await store.pool.isClosed }
        } catch {
            try? await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", at: admin)
            throw error
        }
        try? await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", at: admin)
    }
}

/// The pool's clock in a test: it moves only when the test moves it.
private final class PoolClock: Sendable {
    private let offset = NIOLockedValueBox(Duration.zero)
    private let origin = ContinuousClock.now
    var now: ContinuousClock.Instant { origin + offset.withLockedValue { $0 } }
    func advance(by duration: Duration) { offset.withLockedValue { $0 += duration } }
}

// The pool in a failover or a partition: a statement nobody waits for, and a cluster with no writable host.
extension PostgresPoolTests {
    @Test("a statement that outlives its caller's deadline: its connection is closed and its place is free at once")
    func abandonedLease() async throws {
        try await Self.withLimitedRole(limit: 3, poolSize: 1) { store, _, _ in
            let pool = store.pool
            let deadline = PostgresStore.Deadline()
            // As a statement on a cut link: it would hold the pool's only connection for ten minutes.
            let hung = Task {
                try await pool.withConnection(deadline: deadline) { connection in
                    try await connection.query("SELECT pg_sleep(600)", logger: Logger(label: "test.pool")).collect().count
                }
            }
            try await eventually("the statement holds the only connection") { await pool.counts.leased == 1 }
            let waiting = Task { try await pool.lease() }
            try await eventually("a second request waits for it") { await pool.counts.waiting == 1 }
            deadline.pass()
            // Served by a new connection while the old statement would still be sleeping; the old lease's caller fails.
            let next = try await waiting.value
            await #expect(throws: (any Error).self) { _ = try await hung.value }
            var counts = await pool.counts
            #expect(counts.abandonedLeases == 1 && counts.leased == 1, "\(counts)")
            await pool.giveBack(next, reusable: true)
            counts = await pool.counts
            #expect(counts.leased == 0 && counts.idle == 1, "\(counts)")
            // An abandon that comes after its lease was given back, the connection leased again since, closes nothing.
            let earlier = try await pool.numberedLease(deadline: nil)
            await pool.giveBack(earlier.connection, reusable: true)
            let again = try await pool.numberedLease(deadline: nil)
            #expect(again.connection === earlier.connection, "the idle connection is leased again")
            await pool.abandon(earlier)
            #expect(!again.connection.isClosed)
            counts = await pool.counts
            #expect(counts.abandonedLeases == 1 && counts.leased == 1, "\(counts)")
            await pool.giveBack(again.connection, reusable: true)
        }
    }

    @Test("the only host turns standby while a connection is leased: a waiting request fails at once, not at the release")
    func noWritableHostFailsWaitersAtOnce() async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        let role = "latchkey_pool_demoted_" + StoreFixture.hex(8)
        try await PostgresAdmin.execute("CREATE ROLE \(role) LOGIN", at: admin)
        var failure: (any Error)?
        do {
            let pool = PostgresPool(
                configurations: [Self.configuration(admin, user: role)], maximumConnections: 2, logger: Logger(label: "test.pool"))
            let held = try await pool.lease()
            // New sessions of the role are read-only from now on, as a demoted primary's are.
            try await PostgresAdmin.execute("ALTER ROLE \(role) SET default_transaction_read_only = on", at: admin)
            let waiting = Task { try await pool.lease() }
            // Answered while the first connection is still leased (the old rule kept it waiting for that release).
            try await eventually("the waiting request fails with the connect") {
                let counts = await pool.counts
                return counts.connectsFailed >= 1 && counts.waiting == 0
            }
            let counts = await pool.counts
            #expect(counts.leased == 1 && counts.hostsPassedOver == 1, "\(counts)")
            await pool.giveBack(held, reusable: true)
            await #expect { _ = try await waiting.value } throws: { error in
                guard case .unavailable(let reason) = error as? StoreError else { return false }
                return reason.contains("target_session_attrs=read-write")
            }
            await pool.close()
        } catch {
            failure = error
        }
        try? await PostgresAdmin.execute("DROP ROLE IF EXISTS \(role)", at: admin)
        if let failure { throw failure }
    }

    @Test("which failed connects prove that no host can serve: refused, or only standbys; not a slow or full server")
    func noHostCanServe() async throws {
        let admin = try PostgresLocation(url: try #require(StoreKind.postgresURL))
        do {
            _ = try await PostgresConnection.connect(configuration: Self.configuration(admin, port: 1), id: 1, logger: Logger(label: "test.pool"))
            Issue.record("something listens on port 1")
        } catch {
            #expect(PostgresPool.noHostCanServe(error), "\(String(reflecting: error))")
        }
        #expect(PostgresPool.noHostCanServe(StoreError.unavailable("no PostgreSQL host of 2 is target_session_attrs=read-write")))
        #expect(!PostgresPool.noHostCanServe(CancellationError()))
        #expect(!PostgresPool.noHostCanServe(ChannelError.connectTimeout(.seconds(5))))
    }
}
