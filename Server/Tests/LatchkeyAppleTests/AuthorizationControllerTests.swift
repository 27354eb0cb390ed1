import LatchkeyTestSupport
import AppleFrameworkStandIns
import Foundation
import Latchkey
import LatchkeyApple
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// Seed 002 `login(withRequest:usingModalAuthorizationFor:display:)` and seed 004 `signup(withRequest:)` through the
/// `ASAuthorizationController` stand-in, against the real server. The scripted platform signs passkey challenges with
/// the software authenticator the way iOS does (origin `https://<RP ID>`); the server verifies them.
@Suite("LatchkeyApple: native sign-in through ASAuthorizationController")
struct AuthorizationControllerTests {
    static let bundleId = "io.latchkey.demo"
    let device = StandInDevice()

    var shownSheets: Int { device.log.events.filter { if case .authorizationSheetShown = $0 { true } else { false } }.count }

    @Test("passkey: sign up through the registration sheet, then sign in through the assertion sheet; the server verifies both")
    func passkeySignupAndLogin() async throws {
        try await device.withAppleServer { server in
            let iCloudKeychain = SoftwareAuthenticator()
            device.authorization = ScriptedPlatform.behaviour(passkeys: iCloudKeychain)
            let window = await ASPresentationAnchor()
            let client = try await server.appleClient()
            let profile = ProfilePasskeySignupRequest(email: "ada@example.com", givenName: "Ada")
            let signedUp = try await client.signup(
                withRequest: PasskeySignupRequest(passkeyPofile: profile, friendlyName: "ada@example.com", anchor: window))
            let sub = try #require(signedUp.user?.id)
            #expect(try await iCloudKeychain.credentials().count == 1)

            let again = try await server.appleClient()
            let token = try await again.login(
                withRequest: NativeLoginRequest(anchor: window), usingModalAuthorizationFor: [.Passkey, .Password, .SignInWithApple],
                display: .IfImmediatelyAvailableCredentials)
            #expect(token.user?.id == sub)
            #expect(try await server.server.store.passkeys(userId: sub).first?.signCount == 1)
        }
    }

    @Test("password from the sheet, with the passkey and Apple requests offered beside it")
    func password() async throws {
        try await device.withAppleServer { server in
            let offered = LockedBox<[String]>([])
            let platform = ScriptedPlatform.behaviour(password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            device.authorization = AuthorizationBehaviour { sheet in
                offered.set(sheet.requests.map { String(describing: type(of: $0)) })
                return await platform.respond(sheet)
            }
            let window = await ASPresentationAnchor()
            let client = try await server.appleClient()
            let token = try await client.login(
                withRequest: NativeLoginRequest(anchor: window), usingModalAuthorizationFor: [.Passkey, .Password, .SignInWithApple],
                display: .Always)
            #expect(token.user?.email == "demo@example.com")
            #expect(
                offered.value == [
                    "ASAuthorizationPlatformPublicKeyCredentialAssertionRequest", "ASAuthorizationPasswordRequest", "ASAuthorizationAppleIDRequest"
                ],
                "the caller's order")
            #expect(shownSheets == 1)
        }
    }

    @Test("Sign in with Apple: the request's nonce is S256 of the verifier the server receives; the first-time name is kept")
    func signInWithApple() async throws {
        let apple = try await AppleStandIn.start()
        defer { Task { await apple.stop() } }
        try await device.withAppleServer(apple: apple) { server in
            var name = PersonNameComponents()
            name.givenName = "Grace"; name.familyName = "Hopper"
            device.authorization = ScriptedPlatform.behaviour(
                appleIDToken: { nonce in
                    try apple.identityToken(sub: "apple-grace", bundleId: Self.bundleId, nonceClaim: nonce, email: "grace@icloud.example")
                }, appleName: name)
            let client = try await server.appleClient()
            let token = try await client.login(
                withRequest: NativeLoginRequest(anchor: await ASPresentationAnchor()),
                usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
            #expect(token.user?.email == "grace@icloud.example")
            #expect(token.user?.givenName == "Grace" && token.user?.familyName == "Hopper")

            // A token whose nonce is not the one the SDK asked for is refused by the server.
            device.authorization = ScriptedPlatform.behaviour(appleIDToken: { _ in
                try apple.identityToken(sub: "apple-grace", bundleId: Self.bundleId, nonceClaim: "someone-elses-nonce", email: nil)
            })
            await #expect {
                try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
            } throws: {
                ($0 as? LatchkeyError)?.category == .authFailure
            }
        }
    }

    @Test("nothing available: IfImmediatelyAvailableCredentials is .canceled with no UI; Always shows the sheet and the closed sheet is .canceled")
    func nothingAvailable() async throws {
        try await device.withAppleServer { server in
            device.authorization = .nothingAvailable
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            let window = screen.window
            await #expect {
                try await client.login(
                    withRequest: NativeLoginRequest(anchor: window), usingModalAuthorizationFor: [.Passkey, .Password],
                    display: .IfImmediatelyAvailableCredentials)
            } throws: {
                guard let e = $0 as? LatchkeyError, let underlying = e.underlying else { return false }
                return e.code == .canceled && e.category == .authCanceled && ASAuthorizationError.canceled ~= underlying
            }
            #expect(shownSheets == 0)
            #expect(
                device.log.events.contains(
                    .authorizationAnsweredWithoutUI(requests: [
                        "ASAuthorizationPlatformPublicKeyCredentialAssertionRequest", "ASAuthorizationPasswordRequest"
                    ])))
            await #expect {
                try await client.login(
                    withRequest: NativeLoginRequest(anchor: window), usingModalAuthorizationFor: [.Passkey, .Password],
                    display: .Always)
            } throws: { ($0 as? LatchkeyError)?.code == .canceled }
            #expect(shownSheets == 1)
            #expect(!client.isLoading())
        }
    }

    @Test("system failures are technical errors with ASAuthorizationError's code; a passkey failure hints at associated domains")
    func systemFailures() async throws {
        try await device.withAppleServer { server in
            let client = try await server.appleClient()
            for code in [ASAuthorizationError.Code.failed, .invalidResponse, .notHandled, .unknown] {
                device.authorization = .fails(code)
                await #expect {
                    try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
                } throws: {
                    guard let e = $0 as? LatchkeyError else { return false }
                    return e.category == .technicalError && e.message.contains("\(code.rawValue)")
                        && (e.underlying as? ASAuthorizationError)?.code == code
                }
            }
            device.authorization = .fails(.failed)
            await #expect {
                try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .passkeyFailed && e.message.contains("webcredentials:localhost")
            }
        }
    }

    @Test("registerNewPasskey: a closed sheet is .passkeyCanceled; then the platform registers one the server lists")
    func registerNewPasskey() async throws {
        try await device.withAppleServer { server in
            let iCloudKeychain = SoftwareAuthenticator()
            device.authorization = ScriptedPlatform.behaviour(password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            let client = try await server.appleClient()
            let window = await ASPresentationAnchor()
            let token = try await client.login(
                withRequest: NativeLoginRequest(anchor: window), usingModalAuthorizationFor: [.Password], display: .Always)
            device.authorization = .userCancels
            await #expect {
                try await client.registerNewPasskey(withRequest: NewPasskeyRequest(anchor: window, friendlyName: "iPhone"), authToken: token)
            } throws: {
                ($0 as? LatchkeyError)?.code == .passkeyCanceled
            }
            device.authorization = ScriptedPlatform.behaviour(passkeys: iCloudKeychain)
            try await client.registerNewPasskey(withRequest: NewPasskeyRequest(anchor: window, friendlyName: "iPhone"), authToken: token)
            #expect(try await client.listWebAuthnCredentials(authToken: token).map(\.friendlyName) == ["iPhone"])
            #expect(try await iCloudKeychain.credentials().count == 1)
        }
    }

    @Test("exactly once: a delegate called twice, a controller cancelled with the task, a sheet that never answers")
    func exactlyOnce() async throws {
        try await device.withAppleServer { server in
            let client = try await server.appleClient()
            let password = ScriptedPlatform.behaviour(password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            device.authorization = AuthorizationBehaviour { sheet in
                guard case .authorized(let authorization, _) = await password.respond(sheet) else { return .neverCompletes }
                return .completesTwice(authorization)
            }
            let token = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
            #expect(token.user?.email == "demo@example.com", "the success is taken; the late error is ignored")

            device.authorization = .neverCompletes
            let before = device.log.events.count
            let call = Task { try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always) }
            // Cancelled once the sheet is up (not after a guessed delay: on a busy machine it may not be yet).
            #expect(await device.log.waitFor(since: before) { if case .authorizationRequested = $0 { true } else { false } })
            call.cancel()
            await #expect { try await call.value } throws: { error in
                // The SDK reports a cancelled task as a technical error, never as `.canceled` (apps would restart auto-fill).
                guard let e = error as? LatchkeyError else { return false }
                return e.code == .unknownError && e.underlying is CancellationError
            }
            // The controller is cancelled on the main actor after the call has returned: wait for it to happen.
            #expect(await device.log.waitFor(.authorizationCanceledByApp, since: before))
            #expect(!client.isLoading())
        }
    }
}
