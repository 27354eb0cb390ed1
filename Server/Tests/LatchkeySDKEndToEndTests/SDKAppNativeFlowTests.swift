import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
import Latchkey
import LatchkeyServer
import Testing

/// Seed 003's app-native loop against the real server: every step over loopback HTTP, the assertion exchanged for
/// a real session, and every error code the flows can produce.
@Suite("SDK ↔ server: app-native sign-in, sign-up, recovery, sign-out (Flow Execution API)")
struct SDKAppNativeFlowTests {
    static let signInRequest = EmbeddedFlowRequestConfig(flowType: .authentication)

    /// The tests move the server's clock forward (expiry); the SDK's ID-token check tolerates that skew.
    func client(_ server: TestServer, http: any HTTPClient = productionHTTPClient()) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: http)
        var config = server.sdkConfig()
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        try await client.initialize(config: config)
        return client
    }

    /// Starts a sign-in and submits username + password.
    func credentials(_ client: LatchkeyClient, _ username: String, _ password: String, flowId: String? = nil) async throws -> EmbeddedFlowResponse {
        var id = flowId
        if id == nil { id = try await client.signIn(payload: .init(), request: Self.signInRequest).flowId }
        return try await client.signIn(
            payload: .init(flowId: id, actionId: "action_001", inputs: ["username": username, "password": password]),
            request: Self.signInRequest)
    }

    @Test func passwordSignInWrongThenRightThenRefreshAndSignOut() async throws {
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }  // inside the SDK's 30 s refresh skew
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let client = try await client(server, http: http)

        let first = try await client.signIn(payload: .init(), request: Self.signInRequest)
        #expect(first.flowStatus == .promptOnly && first.type == .view && first.flowType == .authentication)
        #expect(first.inputs.map(\.identifier) == ["username", "password"])
        #expect(first.inputs.map(\.type) == ["TEXT_INPUT", "PASSWORD_INPUT"] && first.inputs[1].isSecret && first.inputs.allSatisfy(\.required))
        #expect(first.actions.map(\.ref) == ["action_001", "action_passkey"])
        // Labels come from the verbose component tree, resolved with /flow/meta translations.
        #expect(first.inputs[0].label == "Username or email" && first.actions[0].label == "Sign in")
        #expect(first.components.first?.label == "Sign in" && first.components.first?.type == "TEXT")

        let wrong = try await client.signIn(
            payload: .init(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": "wrong password"]),
            request: Self.signInRequest)
        #expect(wrong.flowStatus == .promptOnly && wrong.flowId == first.flowId)
        #expect(wrong.error?.code == .authenticationFailed && wrong.error?.serverCode == "FET-1005")
        #expect(wrong.error?.message == "The email or password is incorrect." && wrong.error?.messageKey == "login.invalid_credentials")
        #expect(wrong.inputs.map(\.identifier) == ["username", "password"], "the same step again")
        #expect(try await client.isSignedIn() == false)

        let done = try await client.signIn(
            payload: .init(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": "correct horse battery staple"]),
            request: Self.signInRequest)
        #expect(done.flowStatus == .complete && done.error == nil)
        #expect(done.user?.email == "demo@example.com")
        #expect(try await client.isSignedIn())
        let access = try await client.getAccessToken()
        #expect(try await server.userinfo(access).status == 200, "a real access token, not the assertion")
        let user = try await client.getUser()
        #expect(user.sub == done.user?.sub && user.displayName == "Demo User")
        #expect(!client.isLoading())

        // Refresh works after app-native sign-in: the access token is due, the SDK refreshes once.
        let before = http.refreshCount
        let refreshed = try await client.getAccessToken()
        #expect(before >= 1 && refreshed != access && http.refreshCount == before + 1)

        // Sign-out revokes the refresh token on the server.
        try await client.signOut()
        #expect(try await client.isSignedIn() == false)
        #expect(http.statuses(pathEndingWith: "/revoke") == [200, 200], "the refresh token, then the access token")
        #expect(try await server.userinfo(refreshed).status == 401)
    }

    @Test func initiationWithInputsRunsThroughAndAssertionIsSingleUse() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // The wire: inputs on the initiating request satisfy the first prompt, so one call completes the flow.
        let browser = TestBrowser()
        let started = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "applicationId": "latchkey-demo", "flowType": "AUTHENTICATION",
                "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ])
        let body = try started.json()
        #expect(started.status == 200 && body["flowStatus"] as? String == "COMPLETE")
        let assertion = try #require(body["assertion"] as? String)
        let claims = try await server.verifiedClaims(assertion)
        #expect(claims["aud"]?.stringValue == "latchkey-demo" && claims["iss"]?.stringValue == server.issuer)
        #expect(claims["jti"]?.stringValue != nil && claims["exp"] != nil && claims["iat"] != nil && claims["sid"] != nil)
        #expect(claims["token_use"]?.stringValue == "flow_assertion" && claims["amr"] == .array([.string("pwd")]))
        // Not an access token: userinfo refuses it.
        #expect(try await server.userinfo(assertion).status == 401)

        let exchange: [String: String] = [
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "client_id": "latchkey-demo",
            "subject_token": assertion, "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "scope": "openid profile email offline_access"
        ]
        // Declared as an ID token it is refused (it would dodge the single-use check).
        var asIDToken = exchange
        asIDToken["subject_token_type"] = "urn:ietf:params:oauth:token-type:id_token"
        #expect(try await browser.postForm(server.base + "/oauth2/token", asIDToken).status == 400)
        // Another application cannot redeem it.
        var other = exchange
        other["client_id"] = "backend"
        #expect(
            try await browser.postForm(
                server.base + "/oauth2/token", other, headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")]
            ).status == 400)
        let tokens = try await browser.postForm(server.base + "/oauth2/token", exchange)
        let json = try tokens.json()
        #expect(tokens.status == 200 && json["refresh_token"] is String && json["id_token"] is String && json["access_token"] is String)
        let replay = try await browser.postForm(server.base + "/oauth2/token", exchange)
        #expect(try replay.status == 400 && (try replay.json()["error"] as? String) == "invalid_grant")

        // An assertion not redeemed within its 5 minutes is dead.
        let late = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "applicationId": "latchkey-demo", "flowType": "AUTHENTICATION",
                "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ]
        ).json()
        var lateExchange = exchange
        lateExchange["subject_token"] = try #require(late["assertion"] as? String)
        server.advanceClock(301)
        let expired = try await browser.postForm(server.base + "/oauth2/token", lateExchange)
        #expect(try expired.status == 400 && (expired.json()["error_description"] as? String)?.contains("expired") == true)
    }

    @Test func lockoutAndDisabledAccount() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let flowId = try await client.signIn(payload: .init(), request: Self.signInRequest).flowId
        var last: EmbeddedFlowResponse?
        for _ in 0..<5 { last = try await credentials(client, "demo@example.com", "wrong password", flowId: flowId) }
        // The lock is not announced (it would tell who has an account): the answer stays the wrong-password one.
        #expect(last?.error?.code == .authenticationFailed && last?.error?.serverCode == "FET-1005")
        let stillLocked = try await credentials(client, "demo@example.com", "correct horse battery staple", flowId: flowId)
        #expect(stillLocked.flowStatus == .promptOnly && stillLocked.error?.serverCode == "FET-1005", "the right password is refused while locked")

        // An unknown account gets exactly the wrong-password answer (no enumeration).
        let unknown = try await credentials(client, "nobody@example.com", "wrong password")
        let wrong = try await credentials(client, "disabled@example.com", "wrong password")
        #expect(unknown.error?.serverCode == "FET-1005" && unknown.error == wrong.error && unknown.flowStatus == .promptOnly)
        let disabled = try await credentials(client, "disabled@example.com", "disabled password")
        #expect(disabled.flowStatus == .error && disabled.error?.code == .userAccountDisabled && disabled.error?.serverCode == "FET-1091")
        // The execution is over: continuing it is refused.
        await #expect { _ = try await credentials(client, "demo@example.com", "x", flowId: disabled.flowId) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidInput
        }
    }

    @Test func totpSecondFactor() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let userId = try await server.server.createUser(username: "ada", password: "analytical engine", claims: ["email": "ada@example.com"])
        let secret = try await server.server.enrollTOTP(userId: userId).secret
        let client = try await client(server)
        let step = try await credentials(client, "ada", "analytical engine")
        #expect(step.flowStatus == .promptOnly && step.inputs.map(\.identifier) == ["otp"] && step.inputs[0].type == "OTP_INPUT")
        #expect(step.additionalData["mfaMethod"] == "totp" && step.inputs[0].oneTimeUse)
        #expect(try await client.isSignedIn() == false, "a password alone does not sign in")
        let code = server.totpCode(secret)
        let wrongCode = String(format: "%06d", (Int(code)! + 500_000) % 1_000_000)
        let wrong = try await client.signIn(
            payload: .init(flowId: step.flowId, actionId: "action_totp", inputs: ["otp": wrongCode]), request: Self.signInRequest)
        #expect(wrong.error?.code == .mfaFailed && wrong.error?.serverCode == "FET-1008" && wrong.flowStatus == .promptOnly)
        let done = try await client.signIn(
            payload: .init(flowId: step.flowId, actionId: "action_totp", inputs: ["otp": code]), request: Self.signInRequest)
        #expect(done.flowStatus == .complete && done.user?.sub == userId)
    }

    @Test func emailCodeSecondFactor() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // Codes go only to a verified address.
        let userId = try await server.server.createUser(
            username: "grace", password: "compiler pioneer",
            claims: ["email": "grace@example.com", "email_verified": "true"])
        try await server.server.enrollEmailOTP(userId: userId)
        let client = try await client(server)
        let step = try await credentials(client, "grace", "compiler pioneer")
        #expect(step.inputs.map(\.identifier) == ["otp"] && step.additionalData["emailSent"] == "true")
        #expect(step.actions.map(\.ref) == ["action_email_otp", "action_resend"])
        // The development outbox (HTTP, as the CLI reads it) has the message.
        let outbox = try await TestBrowser().get(server.base + "/dev/outbox?recipient=grace@example.com")
        let messages = try #require(try outbox.json()["messages"] as? [[String: Any]])
        let code = try #require(messages.first?["code"] as? String)
        #expect(messages.count == 1 && (messages.first?["body"] as? String)?.contains(code) == true)

        let wrong = try await client.signIn(
            payload: .init(flowId: step.flowId, actionId: "action_email_otp", inputs: ["otp": code == "000000" ? "111111" : "000000"]),
            request: Self.signInRequest)
        #expect(wrong.error?.code == .mfaFailed)
        // Resend needs no inputs and invalidates the first code.
        let resent = try await client.signIn(payload: .init(flowId: step.flowId, actionId: "action_resend"), request: Self.signInRequest)
        #expect(resent.flowStatus == .promptOnly && resent.error == nil)
        let newCode = try #require(try await server.server.outboxMessages(recipient: "grace@example.com").first?.code)
        if newCode != code {
            let stale = try await client.signIn(
                payload: .init(flowId: step.flowId, actionId: "action_email_otp", inputs: ["otp": code]), request: Self.signInRequest)
            #expect(stale.error?.code == .mfaFailed)
        }
        let done = try await client.signIn(
            payload: .init(flowId: step.flowId, actionId: "action_email_otp", inputs: ["otp": newCode]), request: Self.signInRequest)
        #expect(done.flowStatus == .complete && done.user?.sub == userId)
    }

    @Test func mfaRequiredWithoutFactor() async throws {
        let server = try await TestServer.start { config in
            config.clients[0].requireMFA = true
        }
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let result = try await credentials(client, "demo@example.com", "correct horse battery staple")
        #expect(result.flowStatus == .error && result.error?.code == .mfaRequired && result.error?.serverCode == "FET-1092")
    }

    @Test func registrationWithRequiredAttributesFieldErrorsAndDuplicates() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let first = try await client.signUp()
        #expect(first.flowType == .registration && first.inputs.map(\.identifier) == ["username", "password"])
        #expect(first.inputs[1].validation.first?.type == "minLength")
        let id = first.flowId
        func submit(_ action: String, _ inputs: [String: String]) async throws -> EmbeddedFlowResponse {
            try await client.signUp(payload: .init(flowId: id, actionId: action, inputs: inputs), request: .init(flowType: .registration))
        }
        let short = try await submit("action_credentials", ["username": "newbie", "password": "short"])
        #expect(short.fieldErrors.map(\.identifier) == ["password"] && short.flowStatus == .promptOnly)
        let taken = try await submit("action_credentials", ["username": "demo@example.com", "password": "long enough password"])
        #expect(taken.error?.code == .userAlreadyExists && taken.error?.serverCode == "FET-1007")
        let attributes = try await submit("action_credentials", ["username": "newbie", "password": "long enough password"])
        #expect(attributes.inputs.map(\.identifier) == ["email"] && attributes.inputs[0].type == "EMAIL_INPUT")
        #expect(attributes.actions.map(\.ref) == ["action_attributes"])
        #expect(
            attributes.components.flatMap(\.components).contains { $0.ref == "email" && $0.label == "Email address" },
            "the dynamic placeholder became an input component with its label")
        let badEmail = try await submit("action_attributes", ["email": "not-an-email"])
        #expect(badEmail.fieldErrors.first?.identifier == "email" && badEmail.inputs.map(\.identifier) == ["email"])
        let usedEmail = try await submit("action_attributes", ["email": "DEMO@example.com"])
        #expect(usedEmail.error?.code == .userAlreadyExists && usedEmail.error?.serverCode == "FET-1061")
        let done = try await submit("action_attributes", ["email": "newbie@example.com"])
        #expect(done.flowStatus == .complete && done.user?.username == "newbie")
        #expect(try await client.isSignedIn())
        #expect(try await client.getUser().email == "newbie@example.com")
        // The account works for a password sign-in too.
        let again = try await credentials(try await self.client(server), "newbie", "long enough password")
        #expect(again.flowStatus == .complete)
    }

    @Test func registrationDisabledAndInvitations() async throws {
        let server = try await TestServer.start { config in
            config.clients.append(ClientConfiguration(clientId: "closed-app", grantTypes: [.tokenExchange, .refreshToken], registration: .disabled))
            config.clients.append(ClientConfiguration(clientId: "invite-app", grantTypes: [.tokenExchange, .refreshToken], registration: .inviteOnly))
        }
        defer { Task { await server.stop() } }
        let client = try await client(server)
        await #expect { _ = try await client.signUp(payload: nil, request: .init(applicationId: "closed-app", flowType: .registration)) } throws: {
            let e = $0 as? LatchkeyError
            return e?.code == .registrationDisabled && e?.serverCode == "FES-1006" && e?.statusCode == 400 && e?.errorUserMsg != nil
        }

        let invited = LatchkeyClient(http: productionHTTPClient())
        try await invited.initialize(
            config: LatchkeyConfig(
                baseUrl: server.issuer, clientId: "invite-app", scopes: ["openid", "email", "offline_access"],
                tokenValidation: TokenValidation(clockTolerance: 3600)))
        let request = EmbeddedFlowRequestConfig(flowType: .registration)
        let first = try await invited.signUp(payload: nil, request: request)
        #expect(first.inputs.map(\.identifier) == ["invitationCode"])
        let bad = try await invited.signUp(
            payload: .init(flowId: first.flowId, actionId: "action_invitation", inputs: ["invitationCode": "guess"]), request: request)
        #expect(bad.error?.code == .invitationCodeInvalid)
        let expiring = try await server.server.createInvitation(applicationId: "invite-app", validFor: 60)
        let code = try await server.server.createInvitation(applicationId: "invite-app", email: "invitee@example.com")
        let otherApp = try await server.server.createInvitation(applicationId: "latchkey-demo")
        let wrongApp = try await invited.signUp(
            payload: .init(flowId: first.flowId, actionId: "action_invitation", inputs: ["invitationCode": otherApp]), request: request)
        #expect(wrongApp.error?.code == .invitationCodeInvalid, "an invitation is for one application")
        server.advanceClock(120)
        let expired = try await invited.signUp(
            payload: .init(flowId: first.flowId, actionId: "action_invitation", inputs: ["invitationCode": expiring]), request: request)
        #expect(expired.error?.code == .invitationCodeExpired && expired.error?.serverCode == "FET-1074")
        let accepted = try await invited.signUp(
            payload: .init(flowId: first.flowId, actionId: "action_invitation", inputs: ["invitationCode": code]), request: request)
        #expect(accepted.inputs.map(\.identifier) == ["username", "password"])
        let done = try await invited.signUp(
            payload: .init(
                flowId: first.flowId, actionId: "action_credentials",
                inputs: ["username": "invitee", "password": "invited password"]), request: request)
        #expect(done.flowStatus == .complete, "the invited address needs no attribute step")
        #expect(try await invited.getUser().email == "invitee@example.com")
        // Used once only.
        let again = try await invited.signUp(payload: nil, request: request)
        let reused = try await invited.signUp(
            payload: .init(flowId: again.flowId, actionId: "action_invitation", inputs: ["invitationCode": code]), request: request)
        #expect(reused.error?.code == .invitationCodeInvalid)
    }

    @Test func passwordRecovery() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let recovery = EmbeddedFlowRequestConfig(flowType: .recovery)
        func step(_ id: String?, _ action: String?, _ inputs: [String: String] = [:]) async throws -> EmbeddedFlowResponse {
            try await client.signIn(payload: .init(flowId: id, actionId: action, inputs: inputs), request: recovery)
        }
        let first = try await step(nil, nil)
        #expect(first.flowType == .recovery && first.inputs.map(\.identifier) == ["username"])
        // An unknown account gets the same answer (no enumeration) and no message is sent.
        let unknown = try await step(try await step(nil, nil).flowId, "action_recover", ["username": "nobody@example.com"])
        #expect(unknown.inputs.map(\.identifier) == ["confirmationCode"] && unknown.additionalData["emailSent"] == "true")
        #expect(try await server.server.outboxMessages(recipient: "nobody@example.com").isEmpty)

        let sent = try await step(first.flowId, "action_recover", ["username": "demo@example.com"])
        #expect(sent.inputs.map(\.identifier) == ["confirmationCode"])
        let code = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first?.code)
        let wrong = try await step(first.flowId, "action_verify", ["confirmationCode": code == "123456" ? "654321" : "123456"])
        #expect(wrong.error?.code == .confirmationCodeInvalid && wrong.error?.serverCode == "FET-1008")
        server.advanceClock(601)
        let expired = try await step(first.flowId, "action_verify", ["confirmationCode": code])
        #expect(expired.error?.code == .confirmationCodeExpired && expired.error?.serverCode == "FET-1093")
        _ = try await step(first.flowId, "action_resend")
        let fresh = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first?.code)
        let newPassword = try await step(first.flowId, "action_verify", ["confirmationCode": fresh])
        #expect(newPassword.inputs.map(\.identifier) == ["password"])
        let weak = try await step(first.flowId, "action_reset", ["password": "short"])
        #expect(weak.fieldErrors.first?.identifier == "password")
        let done = try await step(first.flowId, "action_reset", ["password": "a brand new passphrase"])
        #expect(done.flowStatus == .complete && done.user == nil, "recovery does not sign in by itself")
        #expect(try await credentials(client, "demo@example.com", "correct horse battery staple").error?.code == .authenticationFailed)
        #expect(try await credentials(client, "demo@example.com", "a brand new passphrase").flowStatus == .complete)
    }

    @Test func recoveryFailsAfterTooManyWrongCodesAndWhenDisabled() async throws {
        let server = try await TestServer.start { config in
            config.clients.append(ClientConfiguration(clientId: "no-recovery", grantTypes: [.tokenExchange], recoveryEnabled: false))
        }
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let recovery = EmbeddedFlowRequestConfig(flowType: .recovery)
        let first = try await client.signIn(payload: .init(), request: recovery)
        _ = try await client.signIn(
            payload: .init(flowId: first.flowId, actionId: "action_recover", inputs: ["username": "demo@example.com"]), request: recovery)
        var last: EmbeddedFlowResponse?
        for _ in 0..<5 {
            last = try await client.signIn(
                payload: .init(flowId: first.flowId, actionId: "action_verify", inputs: ["confirmationCode": "99999x"]), request: recovery)
        }
        #expect(last?.flowStatus == .error && last?.error?.code == .recoveryFailed)
        await #expect { _ = try await client.signIn(payload: .init(), request: .init(applicationId: "no-recovery", flowType: .recovery)) } throws: {
            ($0 as? LatchkeyError)?.code == .recoveryFailed && ($0 as? LatchkeyError)?.serverCode == "FES-1009"
        }
    }

    @Test func signOutFlowEndsTheServerSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server)
        #expect(try await credentials(client, "demo@example.com", "correct horse battery staple").flowStatus == .complete)
        let access = try await client.getAccessToken()
        let done = try await client.signIn(payload: .init(), request: .init(flowType: .signOut))
        #expect(done.flowStatus == .complete && done.additionalData["signedOut"] == "true")
        #expect(try await client.isSignedIn() == false)
        #expect(try await server.userinfo(access).status == 401, "the session's tokens are revoked server-side")
    }

    @Test func staleAndConcurrentChallengeTokens() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // Wire level: the token rotates, a replayed one gets ICS-1002, and the right one still works afterwards.
        let browser = TestBrowser()
        let start = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION"]).json()
        let id = try #require(start["executionId"] as? String)
        let token1 = try #require(start["challengeToken"] as? String)
        let wrong = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "executionId": id, "challengeToken": token1, "action": "action_001", "inputs": ["username": "demo@example.com", "password": "nope"]
            ]
        ).json()
        let token2 = try #require(wrong["challengeToken"] as? String)
        #expect(token2 != token1 && (wrong["error"] as? [String: Any])?["code"] as? String == "FET-1005")
        let replay = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "executionId": id, "challengeToken": token1, "action": "action_001",
                "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ])
        let replayBody = try replay.json()
        #expect(replay.status == 200 && replayBody["flowStatus"] as? String == "ERROR")
        #expect((replayBody["error"] as? [String: Any])?["code"] as? String == "ICS-1002" && replayBody["assertion"] == nil)
        let missing = try await browser.postJSON(server.base + "/flow/execute", ["executionId": id, "action": "action_001"]).json()
        #expect((missing["error"] as? [String: Any])?["code"] as? String == "ICS-1002")
        let ok = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "executionId": id, "challengeToken": token2, "action": "action_001",
                "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ]
        ).json()
        #expect(ok["flowStatus"] as? String == "COMPLETE" && ok["assertion"] is String)

        // An execution left alone longer than its lifetime (15 minutes) is gone, even with the right token.
        let idle = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION"]).json()
        server.advanceClock(901)
        let stale = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "executionId": try #require(idle["executionId"] as? String), "challengeToken": try #require(idle["challengeToken"] as? String),
                "action": "action_001", "inputs": ["username": "demo@example.com", "password": "correct horse battery staple"]
            ])
        #expect(try stale.status == 400 && (stale.json()["code"] as? String) == "FES-1004")

        // SDK level: two submissions of one step race; one wins, the other gets ICS-1002 and the flow goes on.
        let client = try await client(server)
        let first = try await client.signIn(payload: .init(), request: Self.signInRequest)
        let payload = EmbeddedSignInPayload(
            flowId: first.flowId, actionId: "action_001", inputs: ["username": "demo@example.com", "password": "wrong one"])
        async let a = client.signIn(payload: payload, request: Self.signInRequest)
        async let b = client.signIn(payload: payload, request: Self.signInRequest)
        let results = try await [a, b]
        #expect(results.filter { $0.error?.serverCode == "ICS-1002" && $0.flowStatus == .error }.count == 1)
        #expect(results.filter { $0.error?.serverCode == "FET-1005" }.count == 1)
        let done = try await credentials(client, "demo@example.com", "correct horse battery staple", flowId: first.flowId)
        #expect(done.flowStatus == .complete)
    }

    @Test func customFlowWithSelectInputAndRunner() async throws {
        // Flows are data: an application brings its own graph (a SELECT step before the password).
        let graph = FlowGraph.teamSignIn
        let server = try await TestServer.start { config in config.clients[0].flows = [.authentication: graph] }
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let runner = FlowRunner(client: client, request: Self.signInRequest)
        guard case .step(let choose) = await runner.start() else { Issue.record("no first step"); return }
        #expect(choose.inputs.first?.options == ["red", "blue"] && choose.inputs.first?.isSelect == true)
        // Checked before sending: an option not offered.
        guard case .step(let rejected) = await runner.submit(actionId: "action_team", inputs: ["team": "green"]) else {
            Issue.record("no step"); return
        }
        #expect(rejected.fieldErrors.first?.identifier == "team" && rejected.flowId == choose.flowId)
        // The server checks it too.
        let raw = try await client.signIn(
            payload: .init(flowId: choose.flowId, actionId: "action_team", inputs: ["team": "green"]), request: Self.signInRequest)
        #expect(raw.fieldErrors.first?.identifier == "team")
        guard case .step(let creds) = await runner.submit(actionId: "action_team", inputs: ["team": "blue"]) else {
            Issue.record("no credentials step"); return
        }
        #expect(creds.inputs.map(\.identifier) == ["username", "password"])
        guard
            case .step(let retry) = await runner.submit(
                actionId: "action_login", inputs: ["username": "demo@example.com", "password": "bad password"])
        else {
            Issue.record("no retry"); return
        }
        #expect(retry.error?.code == .authenticationFailed)
        guard
            case .completed(let done) = await runner.submit(
                actionId: "action_login",
                inputs: ["username": "demo@example.com", "password": "correct horse battery staple"])
        else {
            Issue.record("not completed"); return
        }
        #expect(done.user?.email == "demo@example.com")
        #expect(try await client.isSignedIn())
    }

    @Test func mobileApplicationsNeedAttestationOutsideDevelopment() async throws {
        struct FixedVerifier: AttestationVerifier {
            func verify(_ token: String, applicationId: String) -> Bool { token == "genuine-app-\(applicationId)" }
        }
        let unconfigured = try await TestServer.start { config in
            config.development = false
            config.clients.append(ClientConfiguration(clientId: "ios-app", grantTypes: [.tokenExchange, .refreshToken], appType: .mobile))
            config.clients.append(ClientConfiguration(clientId: "web-app", redirectUris: ["https://web.example/cb"], appType: .browser))
        }
        defer { Task { await unconfigured.stop() } }
        let browser = TestBrowser()
        let noVerifier = try await browser.postJSON(unconfigured.base + "/flow/execute", ["applicationId": "ios-app", "flowType": "AUTHENTICATION"])
        #expect(try noVerifier.status == 400 && (try noVerifier.json()["code"] as? String) == "FES-1016")
        let web = try await browser.postJSON(unconfigured.base + "/flow/execute", ["applicationId": "web-app", "flowType": "AUTHENTICATION"])
        #expect(try web.status == 403 && (try web.json()["code"] as? String) == "FES-1010")
        #expect(try await browser.get(unconfigured.base + "/dev/outbox?recipient=demo@example.com").status == 404, "development only")
        // Registration is never restricted by attestation.
        #expect(
            try await browser.postJSON(unconfigured.base + "/flow/execute", ["applicationId": "ios-app", "flowType": "REGISTRATION"]).status == 200)

        let server = try await TestServer.start { config in
            config.development = false
            config.attestationVerifier = FixedVerifier()
            config.clients.append(ClientConfiguration(clientId: "ios-app", grantTypes: [.tokenExchange, .refreshToken], appType: .mobile))
        }
        defer { Task { await server.stop() } }
        let missing = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "ios-app", "flowType": "AUTHENTICATION"])
        #expect(try missing.status == 401 && (try missing.json()["code"] as? String) == "FES-1014")
        let forged = try await browser.postJSON(
            server.base + "/flow/execute", ["applicationId": "ios-app", "flowType": "AUTHENTICATION"],
            headers: ["Attestation-Token": "forged"])
        #expect(try forged.status == 401 && (try forged.json()["code"] as? String) == "FES-1015")
        let app = LatchkeyClient(http: productionHTTPClient())
        try await app.initialize(
            config: LatchkeyConfig(
                baseUrl: server.issuer, clientId: "ios-app", scopes: ["openid", "offline_access"],
                attestationTokenProvider: { "genuine-app-ios-app" }))
        let step = try await app.signIn(payload: .init(), request: Self.signInRequest)
        #expect(step.flowStatus == .promptOnly)
    }

    @Test func flowMetaAndServiceErrors() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server)
        let meta = try await client.getFlowMeta()
        #expect(meta.isRegistrationFlowEnabled && meta.isRecoveryFlowEnabled && meta.application?.name == "Latchkey Demo")
        #expect(meta.translations["signin"]?["forms.credentials.title"] == "Sign in" && meta.language == "en")
        #expect(meta.resolve("{{ t(signin:forms.credentials.title) }} to {{ meta(application.name) }}") == "Sign in to Latchkey Demo")
        await #expect { _ = try await client.signIn(payload: .init(), request: .init(applicationId: "nope")) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidConfiguration && ($0 as? LatchkeyError)?.serverCode == "FES-1003"
        }
        let browser = TestBrowser()
        let badType = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "PASSWORD_RECOVERY"])
        #expect(try badType.status == 400 && (try badType.json()["code"] as? String) == "FES-1005")
        let badExecution = try await browser.postJSON(server.base + "/flow/execute", ["executionId": "nope", "challengeToken": "x"])
        #expect(try badExecution.status == 400 && (try badExecution.json()["code"] as? String) == "FES-1004")
        let badJSON = try await browser.send(
            server.base + "/flow/execute", method: "POST", body: Data("{".utf8), headers: ["Content-Type": "application/json"])
        let badJSONBody = try badJSON.json()
        #expect(badJSON.status == 400 && badJSONBody["code"] as? String == "FES-1001" && (badJSONBody["message"] as? [String: Any])?["key"] != nil)
        // An action the step does not offer.
        let first = try await client.signIn(payload: .init(), request: Self.signInRequest)
        let invalid = try await client.signIn(
            payload: .init(flowId: first.flowId, actionId: "action_admin", inputs: ["username": "x"]), request: Self.signInRequest)
        #expect(invalid.error?.code == .invalidInput && invalid.error?.serverCode == "FET-1064")
    }
}
