import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyServer
import LatchkeySwiftUI
import Testing

/// The keyboard's passkey suggestions on the `SignIn` form (`AuthFlowModel.runPasskeyAutoFill(anchor:)` over
/// `PasskeyAutoFillModel`), against the real server: when the form offers them, a passkey signing the form in, and
/// every way they stop — the form going away, the person picking another way, the step changing.
@MainActor
@Suite("SwiftUI view models: passkey AutoFill on the sign-in form")
struct PasskeyAutoFillModelTests {
    /// A keyboard whose suggestions nobody taps: it records what it was asked, then waits until the request is
    /// cancelled (the way the system's AutoFill request waits), and never answers.
    final class UntappedKeyboard: CredentialProvider, @unchecked Sendable {
        private let lock = NSLock()
        private var _asked: [CredentialPresentation] = []
        private var _ended = 0
        /// Kept so the streams stay open until their waiting task is cancelled.
        private var open: [AsyncStream<Never>.Continuation] = []

        var asked: [CredentialPresentation] { lock.withLock { _asked } }
        var ended: Int { lock.withLock { _ended } }

        func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
            let (stream, continuation) = AsyncStream<Never>.makeStream()
            lock.withLock {
                _asked.append(request.presentation)
                open.append(continuation)
            }
            for await _ in stream {}  // ends only when the calling task is cancelled
            lock.withLock { _ended += 1 }
            throw CancellationError()
        }
    }

    func signedUpPasskey(_ server: TestServer) async throws -> (SoftwareAuthenticator, String) {
        let authenticator = SoftwareAuthenticator()
        let enrol = LatchkeyClient(credentialProvider: SoftwareCredentialProvider(authenticator: authenticator), passkeyAuthenticator: authenticator)
        try await enrol.initialize(config: server.sdkConfig())
        let profile = ProfilePasskeySignupRequest(email: "ada@example.com", givenName: "Ada")
        let token = try await enrol.signup(withRequest: PasskeySignupRequest(passkeyProfile: profile, friendlyName: "Ada's key"))
        return (authenticator, try #require(token.user?.id))
    }

    @Test("offered on the sign-in step's username field when the client has passkeys; the username field is the account's name")
    func whenItIsOffered() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let withPasskeys = await AuthFlowModel.started(server.uiState(passkeys: SoftwareAuthenticator()))
        #expect(withPasskeys.offersPasskeyAutoFill)
        let username = try #require(withPasskeys.inputs.first { $0.identifier == "username" })
        let password = try #require(withPasskeys.inputs.first { $0.identifier == "password" })
        #expect(withPasskeys.isUsernameField(username) && !withPasskeys.isUsernameField(password))

        let withoutPasskeys = await AuthFlowModel.started(server.uiState())
        #expect(!withoutPasskeys.offersPasskeyAutoFill, "no credential provider, no authenticator: nothing to offer")
        await withoutPasskeys.runPasskeyAutoFill()
        #expect(!withoutPasskeys.passkeyAutoFill.isRunning && withoutPasskeys.phase == .step)

        let registration = await AuthFlowModel.started(server.uiState(passkeys: SoftwareAuthenticator()), .registration)
        #expect(!registration.offersPasskeyAutoFill, "a sign-up form offers no sign-in")
        let email = FlowInput(ref: "input_email", identifier: "email", type: "EMAIL_INPUT", required: true)
        #expect(!registration.isUsernameField(email) && withPasskeys.isUsernameField(email))
    }

    @Test("a passkey from the keyboard signs the form in: the state shows the user first, then onComplete, once")
    func signsIn() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let (authenticator, sub) = try await signedUpPasskey(server)
        let state = server.uiState(passkeys: authenticator)
        let model = await AuthFlowModel.started(state)
        var completions: [String?] = []
        var signedInAtCompletion: Bool?
        model.onComplete = { user in
            completions.append(user?.sub)
            signedInAtCompletion = state.isSignedIn
        }
        await model.runPasskeyAutoFill()
        #expect(model.phase == .completed && model.isCompleted && model.user?.sub == sub)
        #expect(state.user?.sub == sub && signedInAtCompletion == true && completions == [sub])
        #expect(!model.passkeyAutoFill.isRunning && model.passkeyAutoFill.error == nil && !state.isLoading)
        #expect(!model.offersPasskeyAutoFill, "a completed form offers nothing more")
    }

    @Test("nothing to offer (no passkey on this device): it ends quietly, the form stays as it was")
    func nothingToOffer() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let state = server.uiState(passkeys: SoftwareAuthenticator())
        let model = await AuthFlowModel.started(state)
        await model.runPasskeyAutoFill()
        #expect(model.phase == .step && model.error == nil && model.passkeyAutoFill.error == nil)
        #expect(!model.passkeyAutoFill.isRunning && !state.isSignedIn && state.error == nil)
    }

    @Test("it stops when the view goes away (the calling task is cancelled) and when the person picks another way")
    func stops() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let keyboard = UntappedKeyboard()
        let state = server.uiState(passkeys: SoftwareAuthenticator(), credentialProvider: keyboard)
        let model = await AuthFlowModel.started(state)

        // The view goes away: SwiftUI cancels the `.task` that runs it.
        let shown = Task { await model.runPasskeyAutoFill() }
        try await eventually("AutoFill is offered") { keyboard.asked.count == 1 }
        #expect(keyboard.asked == [.autoFill] && model.passkeyAutoFill.isRunning && !state.isLoading, "waiting is not loading")
        shown.cancel()
        await shown.value
        try await eventually("the request is cancelled") { keyboard.ended == 1 }
        #expect(!model.passkeyAutoFill.isRunning && model.passkeyAutoFill.error == nil && model.phase == .step)

        // The person picks another way: the flow's passkey alternative replaces the username step.
        let again = Task { await model.runPasskeyAutoFill() }
        try await eventually("AutoFill is offered again") { keyboard.asked.count == 2 }
        let passkey = try #require(model.passkeyAction)
        await model.perform(actionId: passkey.ref)
        await again.value
        #expect(keyboard.ended == 2 && !model.passkeyAutoFill.isRunning && !model.offersPasskeyAutoFill)
        #expect(model.asksForPasskey && model.error == nil && !state.isSignedIn)

        // An explicit stop (a button of the app's own) ends it too, without an error.
        let restarted = await AuthFlowModel.started(state)
        let third = Task { await restarted.runPasskeyAutoFill() }
        try await eventually("AutoFill is offered a third time") { keyboard.asked.count == 3 }
        restarted.stopPasskeyAutoFill()
        await third.value
        try await eventually("the third request is cancelled") { keyboard.ended == 3 }
        #expect(!restarted.passkeyAutoFill.isRunning && restarted.passkeyAutoFill.error == nil)
    }

    @Test("a failure that is not the person's doing is kept in the person's language and not retried by itself")
    func failureInWords() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        struct NotAssociated: CredentialProvider {
            func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
                throw LatchkeyError(.passkeyDomainNotAssociated, "the app is not associated with localhost")
            }
        }
        let state = server.uiState(locale: "fr", passkeys: SoftwareAuthenticator(), credentialProvider: NotAssociated())
        let autoFill = PasskeyAutoFillModel(state: state)
        await state.start()
        await autoFill.run()
        #expect(autoFill.errorCode == .passkeyDomainNotAssociated && !autoFill.isRunning)
        #expect(autoFill.error == PasskeyErrorMessages.message(for: .passkeyDomainNotAssociated, language: "fr"))
        #expect(!state.isSignedIn)
    }
}
