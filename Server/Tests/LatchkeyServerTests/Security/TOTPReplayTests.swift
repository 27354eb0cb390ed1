import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
@testable import LatchkeyServer
import Testing

/// A TOTP code is accepted once (RFC 6238 §5.2). Someone who watched a code being typed (or replays a captured
/// request) within its ±30 s window cannot use it again, in flows or in step-up.
@Suite("Security: TOTP codes are single use")
struct TOTPReplayTests {
    static let password = "correct horse battery staple"

    func signIn(_ server: TestServer, otp: String) async throws -> HTTPResult {
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        let prompt = try await flow.submit("action_001", ["username": "demo@example.com", "password": Self.password])
        #expect(prompt.flowStatus == "INCOMPLETE")
        return try await flow.submit("action_totp", ["otp": otp])
    }

    @Test("flow: a TOTP code accepted once is refused the second time; the next step's code works")
    func flowReplay() async throws {
        // The clock moves only when told: the code stays in its window through the flow's three requests, however
        // slowly they run (a loaded PostgreSQL round once took longer than the window).
        let server = try await TestServer.start(frozenClock: true)
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: user.id).secret
        let code = OneTimeCodeBudgetTests.currentTOTP(server, secret)
        #expect(try await signIn(server, otp: code).flowStatus == "COMPLETE")
        let replay = try await signIn(server, otp: code)
        #expect(replay.flowStatus == "INCOMPLETE" && replay.flowErrorCode == "FET-1008")
        #expect((try? replay.string("assertion")) == nil)
        // Two steps later (the replayed code is then out of the window anyway), a new code is accepted.
        server.advanceClock(60)
        #expect(try await signIn(server, otp: OneTimeCodeBudgetTests.currentTOTP(server, secret)).flowStatus == "COMPLETE")
    }

    @Test("step-up: a TOTP code accepted once is refused the second time, also after a flow used it")
    func stepUpReplay() async throws {
        // The clock moves only when told: the code stays in its 30-s window however slowly the requests run.
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo", frozenClock: true)
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: user.id).secret
        func stepUp(_ code: String) async throws -> HTTPResult {
            let token = try await OneTimeCodeBudgetTests.stepUpToken(server)
            let challenge = try #require(try await OneTimeCodeBudgetTests.startChallenge(server, token).json()["challenge_id"] as? String)
            return try await OneTimeCodeBudgetTests.verify(server, challenge, code)
        }
        let code = OneTimeCodeBudgetTests.currentTOTP(server, secret)
        let first = try await stepUp(code)
        #expect(try first.status == 200 && (try first.json()["code"] as? String) != nil)
        let replay = try await stepUp(code)
        #expect(try replay.status == 400 && (try replay.json()["code"]) == nil)
        #expect(try replay.json()["error_message_key"] as? String == "flows.executor.errors.invalid_otp")
        // One replay mark per factor, whoever checks the code: a code used in step-up is refused by a flow.
        #expect(try await signIn(server, otp: code).flowErrorCode == "FET-1008")
    }
}
