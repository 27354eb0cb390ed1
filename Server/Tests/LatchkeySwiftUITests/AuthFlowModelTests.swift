import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
import Latchkey
@testable import LatchkeyServer
import LatchkeySwiftUI
import Testing

/// The flow view model behind `SignIn`/`SignUp` (the vendor's `SignInState`) and the terminal flows, driven through
/// whole flows against the real server: every field error where its field is, no stuck state after an error.
@MainActor
@Suite("SwiftUI view models: sign-in, sign-up and recovery flows")
struct AuthFlowModelTests {
    static let demo = ("demo@example.com", "correct horse battery staple")

    @Test("password: wrong (username kept, password cleared, the server's message) then right; the state is signed in before onComplete")
    func passwordWrongThenRight() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        let model = await AuthFlowModel.started(state)
        #expect(model.phase == .step && model.inputIdentifiers == ["username", "password"])
        #expect(model.inputs.first?.label == "Username or email" && model.title != nil)
        #expect(model.passkeyAction?.ref == "action_passkey", "the flow offers a passkey; the model says so")
        var signedInAtCompletion: Bool?
        model.onComplete = { _ in signedInAtCompletion = state.isSignedIn }
        var errors: [String] = []
        model.onError = { errors.append($0) }

        await model.fill(["username": Self.demo.0, "password": "wrong password"])
        #expect(model.phase == .step && model.errorCode == .authenticationFailed)
        #expect(model.error == "The email or password is incorrect." && errors == ["The email or password is incorrect."])
        #expect(model.value(for: "username") == Self.demo.0 && model.value(for: "password").isEmpty)
        #expect(!model.isLoading && model.loadingActionId == nil)

        await model.fill(["password": Self.demo.1])
        #expect(model.phase == .completed && model.isCompleted && model.error == nil)
        #expect(model.user?.email == Self.demo.0 && state.user?.email == Self.demo.0 && signedInAtCompletion == true)
        #expect(model.value(for: "password").isEmpty, "no secret outlives the flow")
    }

    @Test("one submission at a time: a double tap sends one request, and only that action shows a spinner")
    func noDoubleSubmission() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let state = server.uiState(http: http)
        let model = await AuthFlowModel.started(state)
        let before = http.requests(pathEndingWith: "/flow/execute").count
        model.setValue(Self.demo.0, for: "username")
        model.setValue(Self.demo.1, for: "password")
        http.hold()
        model.submit(actionId: "action_001")
        model.submit(actionId: "action_001")
        try await eventually { http.heldCount > 0 }
        #expect(model.isLoading && model.isLoading(actionId: "action_001") && !model.isLoading(actionId: "action_passkey"))
        await model.perform(actionId: "action_001")  // ignored too
        http.release()
        await model.waitUntilIdle()
        try await eventually { model.phase == .completed }
        #expect(model.phase == .completed && http.requests(pathEndingWith: "/flow/execute").count == before + 1)
    }

    @Test("TOTP: a wrong code is refused at the code field's step (the code cleared), the right one signs in")
    func totp() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let userId = try await server.server.createUser(username: "ada", password: "analytical engine", claims: ["email": "ada@example.com"])
        let secret = try await server.server.enrollTOTP(userId: userId).secret
        let state = server.uiState()
        let model = await AuthFlowModel.started(state)
        await model.fill(["username": "ada", "password": "analytical engine"])
        #expect(model.inputIdentifiers == ["otp"] && !state.isSignedIn)
        #expect(!model.acceptsRecoveryCode && model.codeIsNumeric, "no recovery codes: a number pad, no switch")
        #expect(model.value(for: "password").isEmpty && model.value(for: "username") == "ada", "a new step forgets the password")
        let code = server.totpCode(secret)
        await model.fill(["otp": String(format: "%06d", ((Int(code) ?? 0) + 500_000) % 1_000_000)])
        #expect(model.errorCode == .mfaFailed && model.inputIdentifiers == ["otp"] && model.value(for: "otp").isEmpty)
        await model.fill(["otp": code])
        #expect(model.phase == .completed && state.user?.sub == userId)
    }

    @Test("a recovery code: offered where the account has unused ones, the field switched to letters, and it signs in")
    func recoveryCode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let userId = try await server.server.createUser(username: "ada", password: "analytical engine", claims: ["email": "ada@example.com"])
        _ = try await server.server.enrollTOTP(userId: userId)
        let codes = try await server.server.accounts.generateRecoveryCodes(userId: userId).codes
        let state = server.uiState()
        let model = await AuthFlowModel.started(state)
        await model.fill(["username": "ada", "password": "analytical engine"])
        #expect(model.inputIdentifiers == ["otp"] && model.acceptsRecoveryCode && model.codeIsNumeric && !model.isEnteringRecoveryCode)
        model.useRecoveryCode()
        #expect(model.isEnteringRecoveryCode && !model.codeIsNumeric)
        await model.fill(["otp": "AAAAA-AAAAA"])
        #expect(model.errorCode == .mfaFailed && model.inputIdentifiers == ["otp"])
        #expect(model.isEnteringRecoveryCode, "a wrong code keeps the field as it was")
        await model.fill(["otp": codes[0].lowercased()])
        #expect(model.phase == .completed && state.user?.sub == userId)
        #expect(!model.isEnteringRecoveryCode, "a step without recovery codes resets the switch")
    }

    @Test("emailed code: the notice, a resend (a new code), then the code from the outbox")
    func emailedCode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let userId = try await server.server.createUser(
            username: "grace", password: "compiler pioneer",
            claims: ["email": "grace@example.com", "email_verified": "true"])
        try await server.server.enrollEmailOTP(userId: userId)
        let state = server.uiState()
        let model = await AuthFlowModel.started(state)
        await model.fill(["username": "grace", "password": "compiler pioneer"])
        #expect(model.inputIdentifiers == ["otp"] && model.notice == UIStrings.text(.codeSent, language: "en"))
        #expect(model.primaryAction?.ref == "action_email_otp" && model.secondaryActions.map(\.ref) == ["action_resend"])
        await model.perform(actionId: "action_resend")
        #expect(model.phase == .step && model.error == nil)
        let code = try #require(try await server.server.outboxMessages(recipient: "grace@example.com").first?.code)
        await model.fill(["otp": code])
        #expect(model.phase == .completed && state.user?.sub == userId)
    }

    @Test("registration: field errors at their fields (client check, server check), a taken email, then success")
    func registration() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        let model = await AuthFlowModel.started(state, .registration)
        #expect(model.flowType == .registration && model.inputIdentifiers == ["username", "password"])
        await model.fill(["username": "newbie", "password": "short"])
        #expect(model.phase == .step && model.fieldError(for: "password") != nil && model.fieldError(for: "username") == nil)
        #expect(model.value(for: "username") == "newbie" && model.value(for: "password") == "short", "a client-side check keeps what was typed")
        model.setValue("long enough password", for: "password")
        #expect(model.fieldError(for: "password") == nil, "editing a field clears its error")
        await model.fill([:])
        #expect(model.inputIdentifiers == ["email"])
        await model.fill(["email": "not-an-email"])
        #expect(model.fieldError(for: "email") != nil && model.error == nil)
        await model.fill(["email": "DEMO@example.com"])
        #expect(model.errorCode == .userAlreadyExists && model.error != nil && model.value(for: "email") == "DEMO@example.com")
        await model.fill(["email": "newbie@example.com"])
        #expect(model.phase == .completed && state.isSignedIn && state.user?.username == "newbie")
    }

    @Test("invitation-only registration: a wrong code, then the invitation, then the account")
    func invitationOnly() async throws {
        let server = try await startServer { config in
            config.clients.append(ClientConfiguration(clientId: "invite-app", grantTypes: [.tokenExchange, .refreshToken], registration: .inviteOnly))
        }
        defer { Task { await server.stop() } }
        let state = server.uiState(clientId: "invite-app")
        let model = await AuthFlowModel.started(state, .registration)
        #expect(model.inputIdentifiers == ["invitationCode"])
        await model.fill(["invitationCode": "guess"])
        #expect(model.errorCode == .invitationCodeInvalid && model.phase == .step)
        let code = try await server.server.createInvitation(applicationId: "invite-app", email: "invitee@example.com")
        await model.fill(["invitationCode": code])
        #expect(model.inputIdentifiers == ["username", "password"] && model.error == nil)
        await model.fill(["username": "invitee", "password": "invited password"])
        #expect(model.phase == .completed && state.user?.email == "invitee@example.com")
    }

    @Test("recovery: the code step, a wrong code, the new password; the user is not signed in by it")
    func recovery() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        let model = await AuthFlowModel.started(state, .recovery)
        #expect(model.inputIdentifiers == ["username"])
        await model.fill(["username": Self.demo.0])
        #expect(model.inputIdentifiers == ["confirmationCode"] && model.notice != nil)
        let code = try #require(try await server.server.outboxMessages(recipient: Self.demo.0).first?.code)
        await model.fill(["confirmationCode": code == "123456" ? "654321" : "123456"], action: "action_verify")
        #expect(model.errorCode == .confirmationCodeInvalid && model.inputIdentifiers == ["confirmationCode"])
        await model.fill(["confirmationCode": code], action: "action_verify")
        #expect(model.inputIdentifiers == ["password"])
        var completed = false
        model.onComplete = { _ in completed = true }
        await model.fill(["password": "a brand new passphrase"])
        #expect(model.phase == .completed && completed && !state.isSignedIn && model.user == nil)
    }

    @Test("a custom flow with a SELECT step: an option not offered is refused at the field (in the user's language), then sign-in")
    func customFlowWithSelect() async throws {
        let graph = FlowGraph.teamSignIn
        let server = try await startServer { config in config.clients[0].flows = [.authentication: graph] }
        defer { Task { await server.stop() } }
        let state = server.uiState(locale: "de")
        let model = await AuthFlowModel.started(state)
        #expect(model.inputs.first?.isSelect == true && model.inputs.first?.options == ["red", "blue"])
        await model.fill(["team": "green"])
        #expect(model.fieldError(for: "team") == UIStrings.text(.chooseOption, language: "de"))
        await model.fill(["team": "blue"])
        #expect(model.inputIdentifiers == ["username", "password"])
        await model.fill(["username": Self.demo.0, "password": Self.demo.1])
        #expect(model.phase == .completed && state.isSignedIn)
    }

    @Test("an expired execution starts a new flow by itself, keeping what was typed, and the next submission signs in")
    func expiredExecution() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        let model = await AuthFlowModel.started(state)
        let firstExecution = model.step?.flowId
        server.advanceClock(901)  // past the execution's lifetime
        await model.fill(["username": Self.demo.0, "password": Self.demo.1])
        #expect(model.phase == .step && model.step?.flowId != firstExecution)
        #expect(model.error == UIStrings.text(.flowExpired, language: "en") && model.errorCode == .sessionExpired)
        #expect(model.value(for: "username") == Self.demo.0 && model.value(for: "password").isEmpty)
        await model.fill(["password": Self.demo.1])
        #expect(model.phase == .completed && state.isSignedIn)
    }

    @Test("service down: a clear message; the start is retried with restart(), a step by submitting again")
    func serviceDown() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let state = server.uiState(http: http)
        await state.start()
        let model = AuthFlowModel(state: state)
        var outage = http.rewriteRequests { $0.toClosedPort }  // the server gone: the platform's own "connection refused"
        await model.start()
        #expect(model.phase == .failed && model.canRestart && model.errorCode == .networkError)
        #expect(model.error == UIStrings.text(.networkError, language: "en"))
        http.remove(outage)
        await model.restart()
        #expect(model.phase == .step && model.error == nil)

        outage = http.rewriteRequests { $0.toClosedPort }
        await model.fill(["username": Self.demo.0, "password": Self.demo.1])
        #expect(model.phase == .step && model.errorCode == .networkError && model.value(for: "username") == Self.demo.0)
        http.remove(outage)
        await model.fill(["password": Self.demo.1])
        #expect(model.phase == .completed && state.isSignedIn)
    }

    @Test("language switch mid-flow: the model's own texts and the server's next answer come in the new language")
    func languageSwitchMidFlow() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState(locale: "en")
        let model = await AuthFlowModel.started(state)
        #expect(model.inputs.first?.label == "Username or email")
        state.setLocale("fr-CA")
        await model.fill([:])
        #expect(model.fieldError(for: "username") == UIStrings.text(.fieldRequired, language: "fr"))
        await model.fill(["username": Self.demo.0, "password": "wrong password"])
        #expect(model.error == "L'adresse e-mail ou le mot de passe est incorrect.")
        #expect(model.inputs.first?.label == "Nom d'utilisateur ou e-mail")
        await model.fill(["password": Self.demo.1])
        #expect(model.phase == .completed)
    }

    @Test("the passkey alternative: choosing it brings a passkey step whose ceremony the model runs and sends")
    func passkeyAlternative() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let authenticator = SoftwareAuthenticator()
        let enrol = LatchkeyClient(credentialProvider: SoftwareCredentialProvider(authenticator: authenticator), passkeyAuthenticator: authenticator)
        try await enrol.initialize(config: server.sdkConfig())
        let profile = ProfilePasskeySignupRequest(email: "ada@example.com", givenName: "Ada")
        let signedUp = try await enrol.signup(withRequest: PasskeySignupRequest(passkeyProfile: profile, friendlyName: "Ada's key"))

        let state = server.uiState(passkeys: authenticator)
        let model = await AuthFlowModel.started(state)
        let passkey = try #require(model.passkeyAction)
        await model.perform(actionId: passkey.ref)
        #expect(model.asksForPasskey && model.visibleInputs.isEmpty && model.phase == .step)
        await model.submitPasskey()
        #expect(model.phase == .completed && state.user?.sub == signedUp.user?.id)
    }
}
