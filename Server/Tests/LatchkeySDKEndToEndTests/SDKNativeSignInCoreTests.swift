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

    /// The person allows (or denies) `userCode` on the server's device page, signed in there as demo.
    static func decide(_ server: TestServer, userCode: String, approve: Bool) async throws {
        let browser = TestBrowser()
        let entry = try await browser.get(server.base + "/device")
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: entry.text))
        var page = try await browser.postForm(server.base + "/device", ["csrf": csrf, "user_code": userCode])
        if page.status == 303, let location = page.location, location.hasPrefix("/login") {
            let login = try await browser.get(server.base + location)
            let done = try await server.submitLogin(browser, page: login, username: "demo@example.com", password: demoPassword)
            page = try await browser.get(server.base + (done.location ?? "/device"))
        }
        let confirm = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        let decided = try await browser.postForm(
            server.base + "/device", ["csrf": confirm, "user_code": userCode, "decision": approve ? "approve" : "deny"])
        #expect(decided.status < 400)
    }

    @Test func aDeviceAuthorizationCompletesIntoANamedSession() async throws {
        let server = try await TestServer.start(frozenClock: true) { $0.lifetimes.devicePollingInterval = 1 }
        defer { Task { await server.stop() } }
        // The server's clock, moved by the SDK's waits between polls: no test waits for one.
        let clock = LatchkeyClock(
            now: { server.server.clock.now },
            sleep: { seconds in
                try Task.checkCancellation()
                server.advanceClock(seconds)
                await Task.yield()
            })
        let client = LatchkeyClient(http: productionHTTPClient(), clock: clock)
        try await client.initialize(config: server.sdkConfig())
        let tv = DeviceAuthorizationFlow(client: client, session: client.session(named: "tv"))
        #expect(tv.session.name == "tv" && DeviceAuthorizationFlow(client: client).session == client.session())

        let authorization = try await tv.start(scopes: ["openid", "email"])
        #expect(authorization.scopes == ["openid", "email"] && authorization.interval == 1)
        try await Self.decide(server, userCode: authorization.userCode, approve: true)
        let user = try await tv.resume(with: authorization)
        #expect(user.email == "demo@example.com")
        #expect(try await client.session(named: "tv").isSignedIn())
        #expect(try await client.session().isSignedIn() == false, "stored in the flow's session, not the default")
        let tvToken = try await client.session(named: "tv").accessToken()
        #expect(try await server.userinfo(tvToken).status == 200)

        // The compatibility pair is the same flow: started by one, completed into the default session by the other.
        let started = try await client.startDeviceAuthorization()
        try await Self.decide(server, userCode: started.userCode, approve: true)
        #expect(try await DeviceAuthorizationFlow(client: client).resume(with: started).sub == user.sub)
        #expect(try await client.session().isSignedIn())
        #expect(try await client.session(named: "tv").accessToken() == tvToken, "the tv session's tokens are untouched")

        let denied = try await tv.start()
        try await Self.decide(server, userCode: denied.userCode, approve: false)
        await #expect { try await client.completeDeviceAuthorization(denied, sessionId: "denied") } throws: {
            Self.code($0) == .authenticationFailed
        }
        #expect(try await client.session(named: "denied").isSignedIn() == false)
    }
}
