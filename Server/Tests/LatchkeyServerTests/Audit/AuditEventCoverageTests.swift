import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The audit rows of the actions that had none: single sign-on by an existing session, a first federated sign-in that
/// links or creates an account, wrong codes in app-native flows and in reachFive's step-up, and decisions on the device
/// page. Each row is read back from the store; no code a person typed or was sent is in it.
@Suite("Audit trail: SSO, federation accounts, wrong codes, device decisions")
struct AuditEventCoverageTests {
    static func events(_ server: TestServer, _ types: AuditEvent.Kind...) async throws -> [AuditEvent] {
        try await server.server.store.auditEvents(AuditQuery(types: types, limit: 50))
    }

    static func userId(_ server: TestServer, _ username: String = "demo@example.com") async throws -> String {
        try #require(try await server.server.user(username: username)).id
    }

    /// The row as text holds none of `secrets`.
    static func expectNoSecrets(_ event: AuditEvent, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let text = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        for secret in secrets where !secret.isEmpty {
            #expect(!text.contains(secret), "\(secret) in \(text)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Single sign-on

    @Test("an authorization request answered by the browser's session: signin.session_reused with the session's methods")
    func sessionReused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.signIn(browser)
        #expect(try await Self.events(server, .signInSessionReused).isEmpty, "a sign-in with the password is not a reuse")
        let options = AuthorizeOptions()
        let again = try await browser.get(server.authorizeURL(options))
        #expect(again.status == 302 && again.location?.hasPrefix(options.redirectUri + "?") == true, "no page: SSO")
        #expect(again.locationQuery["code"] != nil)
        let reused = try await Self.events(server, .signInSessionReused)
        let event = try #require(reused.first)
        #expect(reused.count == 1)
        let demo = try await Self.userId(server)
        #expect(event.subject == demo && event.actor == demo && event.outcome == .success)
        #expect(event.clientId == "latchkey-demo" && event.clientAddress == "127.0.0.1" && event.requestId?.isEmpty == false)
        #expect(event.details == ["method": "password", "amr": "pwd"])
        try Self.expectNoSecrets(event, [again.locationQuery["code"] ?? ""] + browser.cookies.values.filter { $0.count >= 16 })
        #expect(try await Self.events(server, .signInSucceeded).count == 1, "the reuse is not counted as a new sign-in")
    }

    // MARK: Federation

    @Test("a first federated sign-in creates an account just in time: user.created (via federation) and federation.linked (how jit)")
    func federatedJustInTime() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        let first = try await fixture.tokens()
        let sub = try #require(first.id["sub"]?.stringValue)
        let server = fixture.server
        let created = try #require(try await Self.events(server, .userCreated).first)
        #expect(created.subject == sub && created.details == ["via": "federation", "provider": "corp"])
        #expect(created.clientId == "latchkey-demo" && created.clientAddress == "127.0.0.1")
        let linked = try #require(try await Self.events(server, .federatedIdentityLinked).first)
        #expect(linked.subject == sub && linked.outcome == .success && linked.details == ["provider": "corp", "how": "jit"])
        _ = try await fixture.tokens(TestBrowser())
        #expect(try await Self.events(server, .userCreated, .federatedIdentityLinked).count == 2, "the second sign-in uses the link")
    }

    @Test("a first federated sign-in linked by verified email: federation.linked (how automatic), no account created")
    func federatedAutomaticLink() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(sub: "upstream-demo", email: "demo@example.com", emailVerified: true),
            configure: { configuration in
                configuration.users = configuration.users.map { seed in
                    var seed = seed
                    if seed.username == "demo@example.com" { seed.claims["email"] = "demo@example.com"; seed.claims["email_verified"] = "true" }
                    return seed
                }
            })
        defer { Task { await fixture.stop() } }
        _ = try await fixture.tokens()
        let demo = try await Self.userId(fixture.server)
        let linked = try #require(try await Self.events(fixture.server, .federatedIdentityLinked).first)
        #expect(linked.subject == demo && linked.details == ["provider": "corp", "how": "automatic"])
        #expect(try await Self.events(fixture.server, .userCreated).isEmpty)
    }

    // MARK: Wrong codes

    @Test("a wrong TOTP code in an app-native flow: signin.failed (totp, invalid_code, via flow)")
    func flowWrongTOTP() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let demo = try await Self.userId(server)
        let secret = try await server.server.enrollTOTP(userId: demo).secret
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        _ = try await flow.submit("action_001", ["username": "demo@example.com", "password": "correct horse battery staple"])
        let wrong = wrongCode(OneTimeCodeBudgetTests.currentTOTP(server, secret))
        #expect(try await flow.submit("action_totp", ["otp": wrong]).flowErrorCode == "FET-1008")
        let event = try #require(try await Self.events(server, .signInFailed).first)
        #expect(event.subject == demo && event.outcome == .failure && event.clientId == "latchkey-demo")
        #expect(event.details == ["method": "totp", "reason": "invalid_code", "via": "flow"])
        try Self.expectNoSecrets(event, [wrong, secret])
    }

    @Test("a wrong emailed code in an app-native flow: signin.failed (email, invalid_code, via flow)")
    func flowWrongEmailCode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let grace = try await OneTimeCodeBudgetTests().emailOTPUser(server)
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        _ = try await flow.submit("action_001", ["username": "grace", "password": OneTimeCodeBudgetTests.password])
        let sent = try #require(try await server.server.outboxMessages(recipient: "grace@example.com").first?.code)
        #expect(try await flow.submit("action_email_otp", ["otp": wrongCode(sent)]).flowErrorCode == "FET-1008")
        let event = try #require(try await Self.events(server, .signInFailed).first)
        #expect(event.subject == grace && event.details == ["method": "email", "reason": "invalid_code", "via": "flow"])
        try Self.expectNoSecrets(event, [sent, wrongCode(sent)])
    }

    @Test("a wrong recovery code: password.reset failed (recovery_code, invalid_code), of the account or of nobody")
    func flowWrongRecoveryCode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (driver, code) = try await RecoveryCodeTests().recovery(server, "demo@example.com")
        let typed = "ZZZZZ-ZZZZZ"
        #expect(try await driver.submit("action_verify", ["confirmationCode": typed]).flowErrorCode != nil)
        let event = try #require(try await Self.events(server, .passwordReset).first)
        #expect(event.subject == (try await Self.userId(server)) && event.outcome == .failure)
        #expect(event.details == ["method": "recovery_code", "reason": "invalid_code", "via": "flow"])
        try Self.expectNoSecrets(event, [code, typed])

        // An identifier no account has: the same refusal, recorded without a subject.
        let unknown = FlowDriver(server)
        try await unknown.start("RECOVERY")
        _ = try await unknown.submit("action_recover", ["username": "nobody@example.com"])
        _ = try await unknown.submit("action_verify", ["confirmationCode": typed])
        let anonymous = try #require(try await Self.events(server, .passwordReset).first)
        #expect(anonymous.subject == nil && anonymous.actor == AuditEvent.anonymous && anonymous.outcome == .failure)
        try Self.expectNoSecrets(anonymous, ["nobody@example.com", typed])
    }

    @Test("a wrong code in reachFive's step-up: signin.failed (totp, invalid_code, via step_up)")
    func stepUpWrongCode() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let demo = try await Self.userId(server)
        let secret = try await server.server.enrollTOTP(userId: demo).secret
        let token = try await OneTimeCodeBudgetTests.stepUpToken(server)
        let challenge = try #require(try await OneTimeCodeBudgetTests.startChallenge(server, token).json()["challenge_id"] as? String)
        let wrong = wrongCode(OneTimeCodeBudgetTests.currentTOTP(server, secret))
        #expect(try await OneTimeCodeBudgetTests.verify(server, challenge, wrong).status == 400)
        let event = try #require(try await Self.events(server, .signInFailed).first)
        #expect(event.subject == demo && event.clientId == "latchkey-demo" && event.clientAddress == "127.0.0.1")
        #expect(event.details == ["method": "totp", "reason": "invalid_code", "via": "step_up"])
        try Self.expectNoSecrets(event, [wrong, secret, token, challenge])
    }

    // MARK: Device decisions

    @Test("allowing and denying a device on /device: device.approved and device.denied, with the scope and never the user code")
    func deviceDecisions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let allowed = try await DeviceAuthorizationTests.start(server)
        let allowedCode = try #require(allowed["user_code"] as? String)
        #expect(try await DeviceAuthorizationTests.decide(server, userCode: allowedCode, approve: true, browser: browser).status == 200)
        let denied = try await DeviceAuthorizationTests.start(server)
        let deniedCode = try #require(denied["user_code"] as? String)
        #expect(try await DeviceAuthorizationTests.decide(server, userCode: deniedCode, approve: false, browser: browser).status == 200)

        let demo = try await Self.userId(server)
        let approved = try #require(try await Self.events(server, .deviceApproved).first)
        let refused = try #require(try await Self.events(server, .deviceDenied).first)
        for event in [approved, refused] {
            #expect(event.subject == demo && event.actor == demo && event.outcome == .success)
            #expect(event.clientId == "latchkey-demo" && event.clientAddress == "127.0.0.1")
            #expect(event.details == ["scope": "openid email offline_access"])
            let codes = [allowedCode, deniedCode].flatMap { [$0, $0.replacingOccurrences(of: "-", with: "")] }
            try Self.expectNoSecrets(event, codes + [allowed["device_code"] as? String ?? "", denied["device_code"] as? String ?? ""])
        }
        #expect(try await Self.events(server, .deviceApproved, .deviceDenied).count == 2)
    }
}
