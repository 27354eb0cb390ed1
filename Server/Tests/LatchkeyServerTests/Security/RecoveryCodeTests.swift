import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// The codes that are all a recovery or an address verification asks for are long (ten
/// characters of Crockford's base32), wrong recovery codes have a budget all accounts share (an alarm against
/// guessing spread over many accounts and addresses), and wrong verification codes are counted per target address.
@Suite("Security: recovery and verification codes")
struct RecoveryCodeTests {
    /// Starts a recovery for `identifier` and returns the driver and the code mailed for it.
    func recovery(_ server: TestServer, _ identifier: String) async throws -> (FlowDriver, String) {
        let driver = FlowDriver(server)
        try await driver.start("RECOVERY")
        let sent = try await driver.submit("action_recover", ["username": identifier])
        #expect(sent.flowStatus == "INCOMPLETE" && sent.flowErrorCode == nil, "\(sent.text)")
        #expect(try sent.string("data.additionalData.otpLength") == "10" && sent.string("data.additionalData.otpNumericOnly") == "false")
        let code = try #require(try await server.server.outboxMessages(recipient: identifier).first?.code)
        return (driver, code)
    }

    @Test("a recovery code is ten characters of Crockford's base32; typed in lower case, spaced, or with O and l it still matches")
    func longCodesForgiveTyping() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (driver, code) = try await recovery(server, "demo@example.com")
        #expect(code.count == 11 && Array(code)[5] == "-", "\(code)")
        #expect(code.filter { $0 != "-" }.allSatisfy { LongCode.alphabet.contains($0) }, "\(code)")
        let typed = code.replacingOccurrences(of: "-", with: " ").lowercased().replacingOccurrences(of: "0", with: "o")
            .replacingOccurrences(of: "1", with: "l")
        let verified = try await driver.submit("action_verify", ["confirmationCode": typed])
        #expect(verified.flowStatus == "INCOMPLETE" && verified.flowErrorCode == nil, "\(verified.text)")
        #expect(try verified.value("data.inputs") != nil, "asks for the new password")
        // A hundred fresh codes: all distinct, every symbol of the alphabet seen (the generator is not stuck).
        let many = Set((0..<100).map { _ in LongCode.newCode() })
        #expect(many.count == 100)
        #expect(Set(many.joined().filter { $0 != "-" }) == Set(LongCode.alphabet))
    }

    @Test("past max_recovery_code_failures wrong codes over all accounts, no recovery code is checked (a right one neither); one warning, a metric")
    func sharedBudgetOfWrongRecoveryCodes() async throws {
        let capture = NoSecretsInLogsTests.Capture()
        let server = try await TestServer.start(logger: capture.logger("server")) {
            $0.loginPolicy.maxRecoveryCodeFailures = 3
            $0.metricsEnabled = true
        }
        defer { Task { await server.stop() } }
        for name in ["ann", "bob", "cy"] {
            _ = try await server.server.createUser(
                username: "\(name)@example.com", password: "a long enough password",
                claims: ["email": "\(name)@example.com", "email_verified": "true"])
        }
        // Three wrong codes spread over two accounts: each account is far below its own budget.
        let (ann, _) = try await recovery(server, "ann@example.com")
        let (bob, _) = try await recovery(server, "bob@example.com")
        for (driver, count) in [(ann, 2), (bob, 1)] {
            for _ in 0..<count {
                #expect(try await driver.submit("action_verify", ["confirmationCode": "WRONG-CODE0"]).flowErrorCode == "FET-1008")
            }
        }
        // A third account's right code is not checked now.
        let (cy, cyCode) = try await recovery(server, "cy@example.com")
        let refused = try await cy.submit("action_verify", ["confirmationCode": cyCode])
        #expect(refused.flowStatus == "ERROR" && refused.flowErrorKey == "codes.locked", "\(refused.text)")
        let (again, againCode) = try await recovery(server, "cy@example.com")
        #expect(try await again.submit("action_verify", ["confirmationCode": againCode]).flowErrorKey == "codes.locked")

        let warnings = capture.all.filter { $0.contains("max_recovery_code_failures") }
        #expect(warnings.count == 1 && warnings[0].contains("warning"), "one line per window: \(warnings)")
        let samples = try await MetricsTests.metrics(server).samples
        #expect(samples["latchkey_throttled_requests_total{limit=\"recovery_codes\"}"] == 2)

        // Once the window has passed, codes are checked again.
        server.advanceClock(3600 + 1)
        let (later, laterCode) = try await recovery(server, "cy@example.com")
        let accepted = try await later.submit("action_verify", ["confirmationCode": laterCode])
        #expect(accepted.flowStatus == "INCOMPLETE" && accepted.flowErrorCode == nil, "\(accepted.text)")
    }

    @Test("wrong verification codes count per target address, whichever account asked to move there")
    func verificationGuessesPerTargetAddress() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxCodeFailuresPerAccount = 6 }
        defer { Task { await server.stop() } }
        _ = try await server.server.createUser(
            username: "mallory@example.com", password: "a long enough password",
            claims: ["email": "mallory@example.com", "email_verified": "true"])
        let target = "not-yet-registered@example.org"
        func verify(_ token: String, _ code: String) async throws -> HTTPResult {
            try await server.call("POST", "/users/me/email/verify", token: token, json: ["code": code], contentType: "application/json")
        }
        var tokens: [String] = []
        for (username, password) in [("demo@example.com", "correct horse battery staple"), ("mallory@example.com", "a long enough password")] {
            let token = try await server.userTokens(username: username, password: password).accessToken
            let start = try await server.call("POST", "/users/me/email", token: token, json: ["email": target], contentType: "application/json")
            #expect(start.status == 202, "\(start.text)")
            tokens.append(token)
        }
        let codes = try await server.server.outboxMessages(recipient: target).compactMap(\.code)
        #expect(codes.count == 2 && codes.allSatisfy { $0.count == 11 }, "\(codes)")
        // The first account spends its five tries; the second gets one more, then the address is locked for everyone.
        for attempt in 1...5 {
            #expect(try await verify(tokens[0], "WRONG-CODE0").string("code") == (attempt < 5 ? "USR-1030" : "USR-1032"))
        }
        #expect(try await verify(tokens[1], "WRONG-CODE0").string("code") == "USR-1030")
        let locked = try await verify(tokens[1], codes.first ?? "")  // the newest: mallory's
        #expect(locked.status == 429, "even the right code waits: \(locked.status) \(locked.text)")
        #expect(try await server.server.store.user(username: "mallory@example.com")?.claims["email"] == "mallory@example.com")
    }
}
