import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `DELETE /users/me` over real loopback HTTP: at once and with a grace period, the recent sign-in it needs, the
/// restore by signing in again, the notices, the audit trail without personal data, and exactly one deletion when
/// instances share the store.
@Suite("Account deletion by its owner (DELETE /users/me)")
struct AccountDeletionTests {
    static let demo = "demo@example.com"

    /// The demo account's id.
    static func demoId(_ server: TestServer) async throws -> String {
        try #require(try await server.server.user(username: demo)).id
    }

    /// Subjects of the notices sent to the demo account's address, newest first.
    static func notices(_ server: TestServer) async throws -> [String] {
        try await server.server.outboxMessages(recipient: demo).map(\.subject)
    }

    @Test("at once: the account and what it held are gone, every token is dead, the person is told, the trail names no one")
    func deletesAtOnce() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let id = try await Self.demoId(server)
        let sid = try #require(try await server.verifiedClaims(tokens.idToken ?? "")["sid"]?.stringValue)
        try await server.server.enrollEmailOTP(userId: id)
        _ = try await server.server.store.grantConsent(userId: id, clientId: "backend", scopes: ["openid"], now: server.clock.now)

        let deleted = try await server.call("DELETE", "/users/me", token: tokens.accessToken)
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(deleted.header("Cache-Control") == "no-store")

        #expect(try await server.server.store.user(id: id) == nil)
        #expect(try await server.server.store.factors(userId: id).isEmpty)
        #expect(try await server.server.store.consents(userId: id).isEmpty)
        #expect(try await server.server.store.session(id: sid)?.endedAt != nil, "the session ended (and is announced on the back channel)")
        #expect(try await server.call("GET", "/users/me", token: tokens.accessToken).status == 401, "the caller's own token is revoked")
        #expect(try await server.refresh(try #require(tokens.refreshToken)).status == 400, "the refresh token is dead")
        #expect(try await server.call("DELETE", "/users/me", token: tokens.accessToken).status == 401, "a second tap finds nothing to delete")

        #expect(try await Self.notices(server).contains("Your account was deleted"))
        let events = try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.userDeleted], limit: 5))
        #expect(events.count == 1 && events.first?.details == ["via": "self"] && events.first?.actor == id)
        let row = String(decoding: try JSONEncoder().encode(events), as: UTF8.self)
        #expect(!row.contains("demo@") && !row.contains("Demo"), "no personal data in the event: \(row)")
    }

    @Test("a sign-in older than recent_auth_seconds is refused with the RFC 9470 challenge, and nothing is deleted")
    func needsARecentSignIn() async throws {
        let server = try await TestServer.start(frozenClock: true) { $0.recentAuthenticationSeconds = 60 }
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        server.advanceClock(61)

        let refused = try await server.call("DELETE", "/users/me", token: tokens.accessToken)
        #expect(refused.status == 401)
        #expect(try refused.string("code") == "AUTH-4011")
        #expect(refused.header("WWW-Authenticate")?.contains("insufficient_user_authentication") == true)
        #expect(try await server.server.user(username: Self.demo) != nil)
        #expect(try await server.call("GET", "/users/me", token: tokens.accessToken).status == 200, "the session is untouched")
    }

    @Test("an application's own token (client credentials) has no account to delete")
    func refusesAClientToken() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.clientToken(scope: "api.read")
        let refused = try await server.call("DELETE", "/users/me", token: token)
        #expect(refused.status == 403)
        #expect(try refused.string("code") == "AUTH-4030")
    }

    @Test("with a grace period: kept without sessions, restored by signing in, deleted once the period ends")
    func graceRestoreAndDelete() async throws {
        let server = try await TestServer.start(frozenClock: true) { $0.accountDeletionGraceDays = 7 }
        defer { Task { await server.stop() } }
        let id = try await Self.demoId(server)
        let first = try await server.userTokens()
        let requestedAt = server.clock.now

        let scheduled = try await server.call("DELETE", "/users/me", token: first.accessToken)
        #expect(scheduled.status == 202, "\(scheduled.text)")
        let dueText = try #require(try scheduled.string("deletionDueAt"))
        let due = try #require(ISO8601DateFormatter().date(from: dueText))
        #expect(abs(due.timeIntervalSince(requestedAt) - 7 * 86_400) < 2)
        #expect(try await server.call("GET", "/users/me", token: first.accessToken).status == 401, "every token is revoked meanwhile")
        #expect(try await server.refresh(try #require(first.refreshToken)).status == 400)
        #expect(try await server.server.deleteDueAccounts() == 0, "not before the period ends")
        #expect(try await server.server.store.user(id: id) != nil)
        #expect(try await Self.notices(server).first == "Your account will be deleted")
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = try #require(TimeZone(identifier: "UTC"))
        let parts = utc.dateComponents([.year, .month, .day], from: due)
        let day = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
        let requested = try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.accountDeletionRequested], limit: 1))
        #expect(requested.first?.details == ["due": day], "the day, in UTC")
        let body = try #require(try await server.server.outboxMessages(recipient: Self.demo).first?.body)
        #expect(body.contains(day), "the notice names the day: \(body)")

        // Signing in again keeps the account.
        server.advanceClock(3 * 86_400)
        _ = try await server.userTokens()
        #expect(try await server.server.store.accountDeletion(userId: id) == nil)
        #expect(try await Self.notices(server).first == "Your account will not be deleted")
        #expect(try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.accountRestored], limit: 5)).count == 1)
        server.advanceClock(5 * 86_400)
        #expect(try await server.server.deleteDueAccounts() == 0, "a restored account is not deleted when the first period would have ended")

        // Asked again after a fresh sign-in, and left alone: deleted by the maintenance pass after the period.
        let third = try await server.userTokens()
        #expect(try await server.call("DELETE", "/users/me", token: third.accessToken).status == 202)
        server.advanceClock(7 * 86_400 - 10)
        #expect(try await server.server.deleteDueAccounts() == 0)
        server.advanceClock(11)
        #expect(try await server.server.pruneExpired() >= 1, "the periodic pruning deletes it too")
        #expect(try await server.server.store.user(id: id) == nil)
        #expect(try await Self.notices(server).first == "Your account was deleted")
        let events = try await server.server.store.auditEvents(
            AuditQuery(subject: id, types: [.accountDeletionRequested, .userDeleted], limit: 10))
        #expect(events.map(\.type) == [.userDeleted, .accountDeletionRequested, .accountDeletionRequested])
        #expect(events.first?.details == ["via": "grace_ended"])
    }

    @Test("instances sharing the store delete a due account exactly once")
    func exactlyOnceAcrossInstances() async throws {
        let first = try await TestServer.start(frozenClock: true) { $0.accountDeletionGraceDays = 1 }
        let second = try await TestServer.start(databasePath: first.databasePath, frozenClock: true) { $0.accountDeletionGraceDays = 1 }
        defer {
            Task {
                await second.stop(keepingDatabase: true)
                await first.stop()
            }
        }
        let id = try await Self.demoId(first)
        let tokens = try await first.userTokens()
        #expect(try await first.call("DELETE", "/users/me", token: tokens.accessToken).status == 202)
        first.advanceClock(86_400 + 1)
        second.advanceClock(86_400 + 1)

        async let a = first.server.deleteDueAccounts()
        async let b = second.server.deleteDueAccounts()
        async let c = first.server.deleteDueAccounts()
        async let d = second.server.deleteDueAccounts()
        let counts = try await [a, b, c, d]
        #expect(counts.reduce(0, +) == 1, "one instance deleted it: \(counts)")
        #expect(try await first.server.store.user(id: id) == nil)
        #expect(try await first.server.store.auditEvents(AuditQuery(subject: id, types: [.userDeleted], limit: 5)).count == 1)
        #expect(try await Self.notices(first).filter { $0 == "Your account was deleted" }.count == 1, "one notice")
    }

    @Test("account_deletion_grace_days is bounded")
    func graceIsBounded() throws {
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: TestServer.newSQLitePath(), host: "127.0.0.1")
        configuration.accountDeletionGraceDays = 366
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.accountDeletionGraceDays = 30
        try configuration.validate()
    }
}
