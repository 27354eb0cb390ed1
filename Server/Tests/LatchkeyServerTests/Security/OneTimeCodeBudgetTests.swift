import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
@testable import LatchkeyServer
import Testing

/// One-time codes cannot be brute-forced by starting over. Wrong codes are counted per account across resends,
/// flow executions and step-up challenges; recovery (which needs no credentials) has its own account budget and a
/// limit on emails. Every step goes over loopback HTTP as an attacker's script would send it.
@Suite("Security: one-time code budgets per account")
struct OneTimeCodeBudgetTests {
    static let password = "compiler pioneer"

    /// A user with the emailed second factor.
    func emailOTPUser(_ server: TestServer) async throws -> String {
        let id = try await server.server.createUser(
            username: "grace", password: Self.password, claims: ["email": "grace@example.com", "email_verified": "true"])
        try await server.server.enrollEmailOTP(userId: id)
        return id
    }

    func latestCode(_ server: TestServer, _ recipient: String) async throws -> String {
        try #require(try await server.server.outboxMessages(recipient: recipient).first?.code)
    }

    @Test("a resend does not reset the attempts; wrong codes across executions lock the account's codes, even the right one")
    func resendDoesNotResetTheBudget() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxCodeFailuresPerAccount = 7 }
        defer { Task { await server.stop() } }
        _ = try await emailOTPUser(server)

        // Execution 1: 3 wrong codes, resend, 1 wrong, resend, and the 5th wrong code ends the execution (a resend
        // used to give five fresh attempts).
        let first = FlowDriver(server)
        try await first.start("AUTHENTICATION")
        let prompt = try await first.submit("action_001", ["username": "grace", "password": Self.password])
        #expect(prompt.flowStatus == "INCOMPLETE" && prompt.flowErrorCode == nil)
        var code = try await latestCode(server, "grace@example.com")
        for _ in 0..<3 { #expect(try await first.submit("action_email_otp", ["otp": wrongCode(code)]).flowErrorCode == "FET-1008") }
        for _ in 0..<2 {
            #expect(try await first.submit("action_resend").flowStatus == "INCOMPLETE")
            code = try await latestCode(server, "grace@example.com")
            let wrong = try await first.submit("action_email_otp", ["otp": wrongCode(code)])
            if wrong.flowStatus == "ERROR" {
                #expect(wrong.flowErrorCode == "FET-1009")
                break
            }
            #expect(wrong.flowErrorCode == "FET-1008")
        }
        let over = try await first.submit("action_email_otp", ["otp": code])
        #expect(over.flowStatus != "COMPLETE" && (try? over.string("assertion")) == nil, "the execution is over after 5 wrong codes")

        // Execution 2: two more wrong codes reach the account budget (7); then the right code is refused.
        let second = FlowDriver(server)
        try await second.start("AUTHENTICATION")
        _ = try await second.submit("action_001", ["username": "grace", "password": Self.password])
        let right = try await latestCode(server, "grace@example.com")
        for _ in 0..<2 { #expect(try await second.submit("action_email_otp", ["otp": wrongCode(right)]).flowErrorCode == "FET-1008") }
        let refused = try await second.submit("action_email_otp", ["otp": right])
        #expect(refused.flowStatus == "ERROR" && refused.flowErrorCode == "FET-1009" && refused.flowErrorKey == "codes.locked")
        #expect(try refused.string("assertion") == nil)

        // Execution 3: a locked account is not even sent a code.
        let sent = try await server.server.outboxMessages(recipient: "grace@example.com").count
        let third = FlowDriver(server)
        try await third.start("AUTHENTICATION")
        let locked = try await third.submit("action_001", ["username": "grace", "password": Self.password])
        #expect(locked.flowStatus == "ERROR" && locked.flowErrorKey == "codes.locked")
        #expect(try await server.server.outboxMessages(recipient: "grace@example.com").count == sent)

        // After the window, the owner signs in with a right code.
        server.advanceClock(3601)
        let later = FlowDriver(server)
        try await later.start("AUTHENTICATION")
        _ = try await later.submit("action_001", ["username": "grace", "password": Self.password])
        let done = try await later.submit("action_email_otp", ["otp": try await latestCode(server, "grace@example.com")])
        #expect(done.flowStatus == "COMPLETE")
    }

    @Test("many recovery executions for one account cannot exceed its code budget")
    func recoveryExecutionsShareTheAccountBudget() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // Default budget: 10 wrong codes per hour. Executions of 4 + 4 + 2 wrong codes (each below the per-execution
        // limit), then the right code is refused.
        var last: FlowDriver?
        var code = ""
        for wrongCount in [4, 4, 2] {
            let recovery = FlowDriver(server)
            try await recovery.start("RECOVERY")
            let sent = try await recovery.submit("action_recover", ["username": "demo@example.com"])
            #expect(sent.flowStatus == "INCOMPLETE" && sent.flowErrorCode == nil)
            code = try await latestCode(server, "demo@example.com")
            for _ in 0..<wrongCount {
                #expect(try await recovery.submit("action_verify", ["confirmationCode": wrongCode(code)]).flowErrorCode == "FET-1008")
            }
            last = recovery
        }
        let refused = try await #require(last).submit("action_verify", ["confirmationCode": code])
        #expect(refused.flowStatus == "ERROR" && refused.flowErrorKey == "codes.locked")
        #expect(try refused.value("data.inputs") == nil, "no new-password prompt")

        // A new execution is refused before any email is sent.
        let sent = try await server.server.outboxMessages(recipient: "demo@example.com").count
        let again = FlowDriver(server)
        try await again.start("RECOVERY")
        let locked = try await again.submit("action_recover", ["username": "demo@example.com"])
        #expect(locked.flowStatus == "ERROR" && locked.flowErrorKey == "codes.locked")
        #expect(try await server.server.outboxMessages(recipient: "demo@example.com").count == sent)
        // The second factor has its own budget: a stranger flooding recovery does not lock the owner's sign-in.
        let signIn = FlowDriver(server)
        try await signIn.start("AUTHENTICATION")
        #expect(
            try await signIn.submit("action_001", ["username": "demo@example.com", "password": "correct horse battery staple"]).flowStatus
                == "COMPLETE")
    }

    @Test("recovery emails are limited per account, and unknown identifiers are answered alike")
    func recoveryEmailsPerAccount() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for identifier in ["demo@example.com", "nobody@example.com"] {
            for attempt in 1...6 {
                let recovery = FlowDriver(server)
                try await recovery.start("RECOVERY")
                let result = try await recovery.submit("action_recover", ["username": identifier])
                if attempt <= 5 {
                    #expect(result.flowStatus == "INCOMPLETE" && result.flowErrorCode == nil, "\(identifier) #\(attempt)")
                } else {
                    #expect(result.flowStatus == "ERROR" && result.flowErrorKey == "codes.recovery_throttled", "\(identifier) #\(attempt)")
                }
            }
        }
        #expect(try await server.server.outboxMessages(recipient: "demo@example.com").count == 5)
        #expect(try await server.server.outboxMessages(recipient: "nobody@example.com").isEmpty)
    }

    // MARK: Step-up

    static func stepUpToken(_ server: TestServer) async throws -> String {
        let login = try await server.call(
            "POST", "/identity/v1/password/login", token: nil,
            json: ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"],
            contentType: "application/json")
        let stepUp = try await server.call(
            "POST", "/identity/v1/mfa/stepup", token: nil,
            json: [
                "tkn": try #require(try login.json()["tkn"] as? String), "client_id": "latchkey-demo",
                "redirect_uri": "http://127.0.0.1:7777/callback", "code_challenge": TestPKCE().challenge,
                "code_challenge_method": "S256", "scope": "openid"
            ],
            contentType: "application/json")
        return try #require(try stepUp.json()["token"] as? String)
    }

    static func startChallenge(_ server: TestServer, _ token: String) async throws -> HTTPResult {
        try await server.call(
            "POST", "/identity/v1/passwordless/start", token: nil, json: ["step_up": token, "auth_type": "otp"],
            contentType: "application/json")
    }

    static func verify(_ server: TestServer, _ challengeId: String, _ code: String) async throws -> HTTPResult {
        try await server.call(
            "POST", "/identity/v1/passwordless/verify", token: nil,
            json: ["challenge_id": challengeId, "verification_code": code], contentType: "application/json")
    }

    static func currentTOTP(_ server: TestServer, _ secret: String) -> String {
        server.totpCode(secret)
    }

    @Test("calling passwordless/start again with the same step-up token gives no fresh attempts")
    func stepUpRestartKeepsAttempts() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: user.id).secret
        let token = try await Self.stepUpToken(server)

        let first = try await Self.startChallenge(server, token)
        let firstId = try #require(try first.json()["challenge_id"] as? String)
        for _ in 0..<4 {
            let wrong = try await Self.verify(server, firstId, wrongCode(Self.currentTOTP(server, secret)))
            #expect(try wrong.status == 400 && (try wrong.json()["error_message_key"] as? String) == "flows.executor.errors.invalid_otp")
        }
        // Starting again replaces the challenge but keeps its 4 spent attempts: one remains.
        let second = try await Self.startChallenge(server, token)
        #expect(second.status == 200)
        let secondId = try #require(try second.json()["challenge_id"] as? String)
        #expect(try await Self.verify(server, firstId, Self.currentTOTP(server, secret)).status == 400, "the replaced challenge is gone")
        let fifth = try await Self.verify(server, secondId, wrongCode(Self.currentTOTP(server, secret)))
        #expect(try fifth.json()["error_message_key"] as? String == "flows.executor.errors.otp_attempts")
        let right = try await Self.verify(server, secondId, Self.currentTOTP(server, secret))
        #expect(try right.status == 400 && (try right.json()["code"]) == nil)
        // And the exhausted token cannot start over.
        let third = try await Self.startChallenge(server, token)
        #expect(try third.status == 400 && (try third.json()["error_message_key"] as? String) == "flows.executor.errors.otp_attempts")
    }

    @Test("TOTP failures count per account across step-up tokens and flow executions")
    func totpFailuresCountPerAccount() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: user.id).secret
        // 5 wrong codes in a flow execution (it ends), then 5 through a step-up token: 10, the default budget.
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        _ = try await flow.submit("action_001", ["username": "demo@example.com", "password": "correct horse battery staple"])
        for _ in 0..<5 { _ = try await flow.submit("action_totp", ["otp": wrongCode(Self.currentTOTP(server, secret))]) }
        let token = try await Self.stepUpToken(server)
        let challenge = try #require(try await Self.startChallenge(server, token).json()["challenge_id"] as? String)
        for _ in 0..<5 { _ = try await Self.verify(server, challenge, wrongCode(Self.currentTOTP(server, secret))) }

        // A new step-up token cannot start a challenge, and a new execution refuses even the right code.
        let fresh = try await Self.startChallenge(server, try await Self.stepUpToken(server))
        #expect(try fresh.status == 429 && (try fresh.json()["error_message_key"] as? String) == "codes.locked")
        let next = FlowDriver(server)
        try await next.start("AUTHENTICATION")
        _ = try await next.submit("action_001", ["username": "demo@example.com", "password": "correct horse battery staple"])
        let refused = try await next.submit("action_totp", ["otp": Self.currentTOTP(server, secret)])
        #expect(refused.flowStatus == "ERROR" && refused.flowErrorKey == "codes.locked")
    }
}
