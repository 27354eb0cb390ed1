import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// Bounded bcrypt (a full queue is refused at once), per-address limits on registrations, flow starts and
/// authorization requests, and pruning of expired rows.
@Suite("Resource limits: bcrypt queue, start and registration throttles, pruning")
struct ResourceLimitTests {
    static func startFlow(_ server: TestServer, _ type: String) async throws -> HTTPResult {
        try await server.call(
            "POST", "/flow/execute", token: nil, json: ["applicationId": "latchkey-demo", "flowType": type],
            contentType: "application/json")
    }

    @Test("with every hash slot and queue place taken, a password check is refused at once with 503 server.busy")
    func fullHashQueueIsRefusedFast() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxConcurrentHashes = 1
            $0.loginPolicy.maxQueuedHashes = 1
        }
        defer { Task { await server.stop() } }
        let hold = HashHold.install(on: server, holding: [.verify, .decoy, .hash])
        defer { Task { await hold.release() } }
        let running = Task { try await server.passwordLogin("ghost1@example.com", "guess") }
        try await eventually("one hash running") { await hold.count(.decoy) == 1 }
        let queued = Task { try await server.passwordLogin("ghost2@example.com", "guess") }
        try await eventually("one hash queued") { await server.server.hasher.gate.waiting == 1 }
        // Answered while the other two are still held: it did not wait for a slot.
        let refused = try await server.passwordLogin("ghost3@example.com", "guess")
        #expect(refused.status == 503 && refused.messageKey == "server.busy", "\(refused.text)")
        // A real account's attempt that could not be judged is given back: piling them up must never lock the account.
        let unjudged = try await server.passwordLogin("demo@example.com", "guess")
        #expect(unjudged.status == 503)
        #expect(try await server.server.store.user(username: "demo@example.com")?.failedLogins == 0)
        #expect(await hold.count(.decoy) == 1)
        await hold.release()
        #expect(try await running.value.status == 401)
        #expect(try await queued.value.status == 401)
        // Slots are given back: the gate is idle again.
        let gate = server.server.hasher.gate
        let (slotsTaken, waiters) = (await gate.running, await gate.waiting)
        #expect(slotsTaken == 0 && waiters == 0)
    }

    @Test("registrations are limited per address: REGISTRATION flow starts and passkey sign-up share max_registrations_per_address")
    func registrationIsThrottled() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxRegistrationsPerAddress = 2 }
        defer { Task { await server.stop() } }
        #expect(try await Self.startFlow(server, "REGISTRATION").status == 200)
        #expect(try await Self.startFlow(server, "REGISTRATION").status == 200)
        let third = try await Self.startFlow(server, "REGISTRATION")
        #expect(third.status == 429 && third.messageKey == "request.throttled", "\(third.text)")
        let signup = try await server.call(
            "POST", "/identity/v1/webauthn/signup-options", token: nil,
            json: ["client_id": "latchkey-demo", "origin": server.base, "profile": ["email": "new@example.com"]] as [String: Any],
            contentType: "application/json")
        #expect(signup.status == 429 && signup.messageKey == "request.throttled", "\(signup.text)")
        #expect(try await Self.startFlow(server, "AUTHENTICATION").status == 200, "sign-in is not a registration")
        server.advanceClock(5 * 60 + 1)
        #expect(try await Self.startFlow(server, "REGISTRATION").status == 200, "the window slides")
    }

    @Test("authorization requests and flow starts are limited per address (max_starts_per_address)")
    func startsAreThrottled() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxStartsPerAddress = 3 }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        for _ in 0..<2 { #expect(try await browser.get(server.authorizeURL(AuthorizeOptions())).status == 302) }
        #expect(try await Self.startFlow(server, "AUTHENTICATION").status == 200)
        let rows = try await server.rowCount("login_requests")
        let limited = try await browser.get(server.authorizeURL(AuthorizeOptions()))
        #expect(limited.status == 429, "\(limited.text)")
        #expect(try await server.rowCount("login_requests") == rows, "a refused request stores nothing")
        let flow = try await Self.startFlow(server, "AUTHENTICATION")
        #expect(flow.status == 429 && flow.messageKey == "request.throttled")
    }

    @Test("pruning deletes expired and dead rows and keeps live ones")
    func pruningRemovesExpiredRows() async throws {
        let server = try await TestServer.start { $0.pruneIntervalSeconds = 0 }
        defer { Task { await server.stop() } }
        let store = server.server.store
        let now = server.server.clock.now
        // Live rows over HTTP: a pending login and a flow execution.
        #expect(try await TestBrowser().get(server.authorizeURL(AuthorizeOptions())).status == 302)
        #expect(try await Self.startFlow(server, "AUTHENTICATION").status == 200)
        let user = try #require(try await store.user(username: "demo@example.com"))
        // Rows that expire with the clock, and dead ones: an ended session, a revoked family's refresh token.
        try await store.insertAccessToken(
            AccessTokenRecord(
                jti: "old", familyId: nil, clientId: "latchkey-demo", subject: user.id,
                expiresAt: now.addingTimeInterval(3600), revokedAt: nil))
        try await store.insertSession(
            SessionRecord(
                id: "ended", secretHash: Data("a".utf8), userId: user.id, authTime: now, createdAt: now,
                expiresAt: now.addingTimeInterval(30 * 24 * 3600), endedAt: nil))
        try await store.endSession(id: "ended", now: now)
        try await store.insertFamily(
            TokenFamilyRecord(
                id: "revoked", clientId: "latchkey-demo", userId: user.id, createdAt: now,
                revokedAt: nil, revokedReason: nil))
        try await store.insertRefreshToken(
            RefreshTokenRecord(
                tokenHash: Data("r".utf8), familyId: "revoked", clientId: "latchkey-demo",
                userId: user.id, scope: ["openid"], sessionId: nil, authTime: now, createdAt: now,
                expiresAt: now.addingTimeInterval(30 * 24 * 3600), usedAt: nil))
        try await store.revokeFamily(id: "revoked", reason: "test", now: now)
        // Consumed ids are pruned by the database's clock (not the server's, which the test moves): this one is past
        // its acceptance and the skew margin in real time.
        _ = try await store.consumeTokenId("jti-1", expiresAt: Date().addingTimeInterval(-SingleUseRetention.skewMargin - 60))
        try await store.insertOutboxMessage(
            OutboxMessage(
                id: "m1", channel: .email, recipient: "demo@example.com", subject: "s", body: "b",
                code: nil, createdAt: now))
        for table in ["login_requests", "flow_executions", "access_tokens", "sessions", "refresh_tokens", "consumed_token_ids", "outbox"] {
            #expect(try await server.rowCount(table) >= 1, "\(table) has a row before")
        }
        // Nothing has expired yet: only the dead rows go (an ended session once its end is announced to the applications).
        await server.server.deliverBackChannelLogouts()
        try await server.server.pruneExpired()
        #expect(try await server.rowCount("sessions") == 0)
        #expect(try await server.rowCount("refresh_tokens") == 0)
        for table in ["login_requests", "flow_executions", "access_tokens"] {
            #expect(try await server.rowCount(table) == 1, "\(table) is still live")
        }

        server.advanceClock(2 * 24 * 3600)
        try await server.server.pruneExpired()
        for table in ["login_requests", "flow_executions", "access_tokens", "consumed_token_ids", "outbox"] {
            #expect(try await server.rowCount(table) == 0, "\(table) is pruned")
        }
    }

    @Test("pruning runs by itself once the interval has passed, driven by new authorization requests")
    func pruningIsPeriodic() async throws {
        let server = try await TestServer.start { $0.pruneIntervalSeconds = 600 }
        defer { Task { await server.stop() } }
        #expect(try await TestBrowser().get(server.authorizeURL(AuthorizeOptions())).status == 302)  // prunes (first time) and stores one
        try await eventually("the first pruning ran") { await server.server.pruner.schedule.hasRun }
        server.advanceClock(3600)
        #expect(try await TestBrowser().get(server.authorizeURL(AuthorizeOptions())).status == 302)
        // The first login request has expired (10 minutes) and goes; the new one stays.
        try await eventually("the expired login request was pruned") { try await server.rowCount("login_requests") == 1 }
    }
}
