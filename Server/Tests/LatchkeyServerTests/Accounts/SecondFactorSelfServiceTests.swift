import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `/users/me/factors` over real loopback HTTP: a person adds an authenticator app (confirmed by its first code) or
/// emailed codes, lists and removes them; every change needs a recent sign-in, mails the person and is audited, and
/// the last factor stays where the application requires one.
@Suite("Second factors managed by their owner (/users/me/factors)")
struct SecondFactorSelfServiceTests {
    static let demo = "demo@example.com"

    static func demoId(_ server: TestServer) async throws -> String {
        try #require(try await server.server.user(username: demo)).id
    }

    /// Starts an enrollment; its `(key, enrollment)`.
    static func start(_ server: TestServer, _ token: String) async throws -> (key: String, enrollment: String) {
        let started = try await server.call("POST", "/users/me/factors/totp", token: token)
        #expect(started.status == 201, "\(started.text)")
        let secret = try #require(try started.string("secret"))
        return (try #require(TestServer.totpKey(fromBase32: secret)), try #require(try started.string("enrollment")))
    }

    static func confirm(_ server: TestServer, _ token: String, _ enrollment: String, code: String) async throws -> HTTPResult {
        try await server.call(
            "POST", "/users/me/factors/totp/verify", token: token, json: ["enrollment": enrollment, "code": code], contentType: "application/json")
    }

    @Test("an authenticator: the secret once with its otpauth URI, on only after a right first code, mailed, audited, the code spent")
    func enrollsAnAuthenticator() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let id = try await Self.demoId(server)

        let started = try await server.call("POST", "/users/me/factors/totp", token: tokens.accessToken)
        #expect(started.status == 201 && started.header("Cache-Control") == "no-store", "\(started.text)")
        let secret = try #require(try started.string("secret"))
        let uri = try #require(try started.string("uri"))
        // The server (its issuer's host) is the issuer: the factor guards the whole account; label and issuer escaped.
        #expect(uri == "otpauth://totp/127.0.0.1:demo%40example.com?secret=\(secret)&issuer=127.0.0.1", "\(uri)")
        let enrollment = try #require(try started.string("enrollment"))
        let key = try #require(TestServer.totpKey(fromBase32: secret))
        #expect(try await server.server.store.factors(userId: id).isEmpty, "nothing is on before the first code")

        let wrong = try await Self.confirm(server, tokens.accessToken, enrollment, code: "000000" == server.totpCode(key) ? "111111" : "000000")
        #expect(try wrong.status == 400 && wrong.string("code") == "MFA-1001", "\(wrong.text)")
        #expect(try await server.server.store.factors(userId: id).isEmpty)

        let code = server.totpCode(key)
        let confirmed = try await Self.confirm(server, tokens.accessToken, enrollment, code: code)
        #expect(confirmed.status == 201, "\(confirmed.text)")
        #expect(try confirmed.string("kind") == "totp")
        let factors = try await server.call("GET", "/users/me/factors", token: tokens.accessToken)
        #expect(try factors.string("factors.0.kind") == "totp" && factors.value("factors.0.usable") as? Bool == true)
        #expect(!factors.text.contains(secret) && !factors.text.contains(key), "the list never holds the secret")
        #expect(try await server.server.store.factors(userId: id).first?.secret == key)

        // The code that confirmed it cannot also complete a sign-in, and the request cannot be replayed.
        #expect(try await server.server.accounts.verifyTOTP(userId: id, code: code) == false)
        let replay = try await Self.confirm(server, tokens.accessToken, enrollment, code: code)
        #expect(try replay.status == 400 && replay.string("code") == "MFA-1002", "\(replay.text)")
        // Removed, the authenticator does not come back with the old enrollment: it is spent, not merely matched.
        #expect(try await server.call("DELETE", "/users/me/factors/totp", token: tokens.accessToken).status == 204)
        let revived = try await Self.confirm(server, tokens.accessToken, enrollment, code: code)
        #expect(try revived.status == 400 && revived.string("code") == "MFA-1002", "\(revived.text)")
        #expect(try await server.server.store.factors(userId: id).isEmpty)

        let notices = try await server.server.outboxMessages(recipient: Self.demo).map(\.subject)
        #expect(notices.filter { $0 == "An authenticator app was added to your account" }.count == 1, "\(notices)")
        #expect(notices.filter { $0 == "An authenticator app was removed from your account" }.count == 1, "\(notices)")
        let trail = try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.mfaEnrolled], limit: 10))
        #expect(trail.filter { $0.outcome == .success }.map(\.details) == [["factor": "totp"]])
        #expect(trail.filter { $0.outcome == .failure }.map { $0.details["reason"] } == ["invalid_code"])
        #expect(trail.allSatisfy { $0.actor == id && !"\($0.details)".contains(code) && !"\($0.details)".contains(secret) })
    }

    @Test("an enrollment opens only for its account and within ten minutes; an altered one never")
    func enrollmentsAreBoundAndExpire() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let demo = try await server.userTokens()
        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let (key, enrollment) = try await Self.start(server, demo.accessToken)

        let elsewhere = try await Self.confirm(server, ada.accessToken, enrollment, code: server.totpCode(key))
        #expect(try elsewhere.status == 400 && elsewhere.string("code") == "MFA-1002", "another account cannot confirm it")
        // A character in the middle (the last ones may carry only base64 padding bits, which decoding ignores).
        var altered = Array(enrollment)
        let middle = altered.count / 2
        altered[middle] = altered[middle] == "A" ? "B" : "A"
        let tampered = try await Self.confirm(server, demo.accessToken, String(altered), code: server.totpCode(key))
        #expect(try tampered.status == 400 && tampered.string("code") == "MFA-1002")

        server.advanceClock(SecondFactorChanges.enrollmentSeconds + 1)
        let fresh = try await server.userTokens()  // a recent sign-in: only the enrollment is too old
        let late = try await Self.confirm(server, fresh.accessToken, enrollment, code: server.totpCode(key))
        #expect(try late.status == 400 && late.string("code") == "MFA-1002", "\(late.text)")
        #expect(try await server.server.store.factors(userId: try await Self.demoId(server)).isEmpty)
    }

    @Test("wrong first codes spend the account's code budget: past it even the right code is refused")
    func wrongCodesAreBudgeted() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxCodeFailuresPerAccount = 2 }
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let (key, enrollment) = try await Self.start(server, tokens.accessToken)
        let right = server.totpCode(key)
        let wrong = right == "000000" ? "111111" : "000000"
        for _ in 0..<2 { #expect(try await Self.confirm(server, tokens.accessToken, enrollment, code: wrong).status == 400) }
        let refused = try await Self.confirm(server, tokens.accessToken, enrollment, code: right)
        #expect(try refused.status == 429 && refused.string("code") == "MFA-1006", "\(refused.text)")
        #expect(try await server.server.store.factors(userId: try await Self.demoId(server)).isEmpty)
    }

    @Test("emailed codes: only to a verified address, turned on once, removed with a notice; unknown kinds are not found")
    func emailCodesOnAndOff() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let id = try await Self.demoId(server)

        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let unverified = try await server.call("POST", "/users/me/factors/email", token: ada.accessToken)
        #expect(try unverified.status == 400 && unverified.string("code") == "MFA-1003", "\(unverified.text)")

        let on = try await server.call("POST", "/users/me/factors/email", token: tokens.accessToken)
        #expect(try on.status == 201 && on.string("kind") == "email", "\(on.text)")
        let again = try await server.call("POST", "/users/me/factors/email", token: tokens.accessToken)
        #expect(again.status == 200)
        #expect(try await server.server.store.factors(userId: id).map(\.kind) == [.emailOTP])

        let off = try await server.call("DELETE", "/users/me/factors/email", token: tokens.accessToken)
        #expect(off.status == 204, "\(off.text)")
        #expect(try await server.server.store.factors(userId: id).isEmpty)
        let gone = try await server.call("DELETE", "/users/me/factors/email", token: tokens.accessToken)
        #expect(try gone.status == 404 && gone.string("code") == "MFA-1004")
        let unknown = try await server.call("DELETE", "/users/me/factors/sms", token: tokens.accessToken)
        #expect(try unknown.status == 404 && unknown.string("code") == "MFA-1004", "\(unknown.text)")

        let notices = try await server.server.outboxMessages(recipient: Self.demo).map(\.subject)
        #expect(notices.filter { $0 == "Sign-in codes by email were turned on" }.count == 1, "\(notices)")
        #expect(notices.filter { $0 == "Sign-in codes by email were turned off" }.count == 1, "\(notices)")
        let removed = try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.mfaRemoved], limit: 5))
        #expect(removed.map(\.details) == [["factor": "email"]])
    }

    @Test("a new authenticator replaces the old one: the old key's codes stop working, the trail says replaced")
    func replacesTheAuthenticator() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let id = try await Self.demoId(server)
        let (old, first) = try await Self.start(server, tokens.accessToken)
        #expect(try await Self.confirm(server, tokens.accessToken, first, code: server.totpCode(old)).status == 201)
        let (new, second) = try await Self.start(server, tokens.accessToken)
        #expect(try await Self.confirm(server, tokens.accessToken, second, code: server.totpCode(new)).status == 201)
        #expect(try await server.server.store.factors(userId: id).map(\.secret) == [new])
        server.advanceClock(TOTPVerifier.period * 3)  // a fresh step for both keys
        #expect(try await server.server.accounts.verifyTOTP(userId: id, code: server.totpCode(old)) == false)
        #expect(try await server.server.accounts.verifyTOTP(userId: id, code: server.totpCode(new)))
        let trail = try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.mfaEnrolled], limit: 5))
        #expect(trail.map { $0.details["replaced"] }.sorted { ($0 ?? "") < ($1 ?? "") } == [nil, "true"])
    }

    @Test("where the application requires MFA the last factor stays; with another one left it can go")
    func lastFactorStaysWhereRequired() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let id = try await Self.demoId(server)
        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        #expect(try await server.call("POST", "/users/me/factors/email", token: tokens.accessToken).status == 201)
        // The application turns `require_mfa` on after these tokens were issued.
        var client = try #require(try await server.server.store.client(id: "latchkey-demo"))
        client.configuration.requireMFA = true
        try await server.server.store.upsertClient(client)

        let listed = try await server.call("GET", "/users/me/factors", token: tokens.accessToken)
        #expect(try listed.value("mfaRequired") as? Bool == true)
        let refused = try await server.call("DELETE", "/users/me/factors/email", token: tokens.accessToken)
        #expect(try refused.status == 409 && refused.string("code") == "MFA-1005", "\(refused.text)")
        #expect(try await server.server.store.factors(userId: id).map(\.kind) == [.emailOTP])
        let failure = try await server.server.store.auditEvents(AuditQuery(subject: id, types: [.mfaRemoved], limit: 5))
        #expect(failure.map(\.outcome) == [.failure] && failure.first?.details["reason"] == "last_factor")

        let (key, enrollment) = try await Self.start(server, tokens.accessToken)
        #expect(try await Self.confirm(server, tokens.accessToken, enrollment, code: server.totpCode(key)).status == 201)
        #expect(try await server.call("DELETE", "/users/me/factors/email", token: tokens.accessToken).status == 204)
        #expect(try await server.server.store.factors(userId: id).map(\.kind) == [.totp])

        // Emailed codes without a verified address ask for nothing at sign-in: removing them is never refused.
        let adaId = try #require(try await server.server.user(username: "ada@example.com")).id
        try await server.server.enrollEmailOTP(userId: adaId)
        let unusable = try await server.call("DELETE", "/users/me/factors/email", token: ada.accessToken)
        #expect(unusable.status == 204, "\(unusable.text)")
    }

    @Test("every change needs a recent sign-in (reading does not); a client's own token has no factors")
    func changesNeedARecentSignIn() async throws {
        let server = try await TestServer.start(frozenClock: true) { $0.recentAuthenticationSeconds = 60 }
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let (key, enrollment) = try await Self.start(server, tokens.accessToken)
        server.advanceClock(61)
        let changes: [(String, String, [String: String]?)] = [
            ("POST", "/users/me/factors/totp", nil),
            ("POST", "/users/me/factors/totp/verify", ["enrollment": enrollment, "code": server.totpCode(key)]),
            ("POST", "/users/me/factors/email", nil), ("DELETE", "/users/me/factors/email", nil),
            ("POST", "/users/me/factors/recovery-codes", nil)
        ]
        // A stale sign-in is told so before anything is read from the body.
        let malformed = try await server.call(
            "POST", "/users/me/factors/totp/verify", token: tokens.accessToken, body: Data("{".utf8), contentType: "application/json")
        #expect(try malformed.status == 401 && malformed.string("code") == "AUTH-4011", "\(malformed.text)")
        for (method, path, json) in changes {
            let answer = try await server.call(method, path, token: tokens.accessToken, json: json, contentType: "application/json")
            #expect(try answer.status == 401 && answer.string("code") == "AUTH-4011", "\(method) \(path): \(answer.text)")
        }
        #expect(try await server.server.store.factors(userId: try await Self.demoId(server)).isEmpty)
        #expect(try await server.call("GET", "/users/me/factors", token: tokens.accessToken).status == 200)
        let client = try await server.clientToken(scope: "api.read")
        #expect(try await server.call("GET", "/users/me/factors", token: client).status == 403)
    }
}
