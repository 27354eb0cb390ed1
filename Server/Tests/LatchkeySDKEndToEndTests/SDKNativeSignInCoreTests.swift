import Foundation
import Latchkey
import LatchkeyTestSupport
@testable import LatchkeyServer
import Testing

/// The SDK's core for native sign-in (`NativeSignIn`) and device sign-in (`DeviceAuthorizationFlow`) against the real
/// server: each signs in to the session it was made for, and the ReachFive- and ThunderID-style names answer the same.
@Suite("SDK ↔ server: NativeSignIn and DeviceAuthorizationFlow into a session, under the compatibility names")
struct SDKNativeSignInCoreTests {
    static let demoPassword = "correct horse battery staple"
    static func code(_ error: any Error) -> LatchkeyError.Code? { (error as? LatchkeyError)?.code }

    func client(_ server: TestServer, passwords: [SoftwareCredentialProvider.SavedPassword] = [], authenticator: SoftwareAuthenticator)
        async throws -> LatchkeyClient
    {
        let client = LatchkeyClient(
            http: productionHTTPClient(),
            credentialProvider: SoftwareCredentialProvider(authenticator: authenticator, passwords: passwords),
            passkeyAuthenticator: authenticator)
        try await client.initialize(config: server.sdkConfig())
        return client
    }

    @Test func aNativeSignInIntoANamedSessionLeavesTheDefaultOneAlone() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let authenticator = SoftwareAuthenticator()
        let client = try await client(
            server, passwords: [.init(username: "demo@example.com", password: Self.demoPassword)], authenticator: authenticator)
        let personal = NativeSignIn(client: client), work = NativeSignIn(client: client, session: client.session(named: "work"))
        #expect(personal.session == client.session() && work.session.name == "work")

        // The default session through the ReachFive-style name, the work session through the core.
        let demo = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        let personalToken = try await client.session().accessToken()
        #expect(demo.accessToken == personalToken && demo.user?.email == "demo@example.com")

        let ada = try await work.signUp(
            PasskeySignupRequest(passkeyProfile: ProfilePasskeySignupRequest(email: "ada@example.com"), friendlyName: "Ada's phone"))
        #expect(ada.user?.email == "ada@example.com")
        #expect(try await client.session(named: "work").accessToken() == ada.accessToken)
        #expect(try await client.session(named: "work").user().email == "ada@example.com")
        #expect(try await client.session().accessToken() == personalToken, "the default session's tokens are untouched")
        #expect(try await client.session().user().email == "demo@example.com")

        // A username-first passkey sign-in into the work session replaces its tokens, and only its tokens.
        let again = try await work.signIn(username: .Email("ada@example.com"))
        #expect(again.user?.id == ada.user?.id && again.accessToken != ada.accessToken)
        #expect(try await client.session(named: "work").accessToken() == again.accessToken)
        #expect(try await server.userinfo(again.accessToken).status == 200)
        #expect(try await client.session().accessToken() == personalToken)

        // The discoverable sheet through the core and through the facade: the same account, each in its own session.
        let fresh = try await self.client(server, authenticator: authenticator)
        let byCore = try await NativeSignIn(client: fresh, session: fresh.session(named: "tablet")).signIn(offering: [.Passkey])
        let byFacade = try await fresh.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
        #expect(byCore.user?.id == ada.user?.id && byFacade.user?.id == ada.user?.id)
        #expect(try await fresh.session(named: "tablet").accessToken() == byCore.accessToken)
        #expect(try await fresh.getAccessToken() == byFacade.accessToken)
        #expect(byCore.accessToken != byFacade.accessToken)
    }

    @Test func aSecondFactorCompletesIntoTheSessionTheSignInWasFor() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let (secret, _) = try await server.server.enrollTOTP(userId: user.id)
        let client = try await client(
            server, passwords: [.init(username: "demo@example.com", password: Self.demoPassword)], authenticator: SoftwareAuthenticator())
        let work = NativeSignIn(client: client, session: client.session(named: "work"))
        func stepUp() async throws -> MfaStepUp {
            let error = try await #require(throws: LatchkeyError.self) { try await work.signIn(offering: [.Password]) }
            #expect(error.code == .mfaRequired)
            return try #require(error.mfaStepUp)
        }

        // Continued through the core.
        let challenge = try await work.startStepUp(try await stepUp(), authType: "otp")
        #expect(challenge.authType == "otp")
        let token = try await challenge.verify(code: server.totpCode(secret))
        #expect(token.user?.email == "demo@example.com")
        #expect(try await client.session(named: "work").accessToken() == token.accessToken)
        #expect(try await client.session().isSignedIn() == false, "the default session was never signed in")

        // Continued through the ReachFive-style name on the client: the step-up remembers its session.
        server.advanceClock(30)
        let facade = try await client.mfaStart(stepUp: try await stepUp(), authType: "otp")
        let second = try await facade.verify(code: server.totpCode(secret))
        #expect(try await client.session(named: "work").accessToken() == second.accessToken)
        #expect(second.accessToken != token.accessToken)
        #expect(try await client.session().isSignedIn() == false)
    }
}
