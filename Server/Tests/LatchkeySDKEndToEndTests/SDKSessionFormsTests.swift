import Foundation
import Latchkey
import LatchkeySDKTestSupport
import LatchkeyTestSupport
import Testing

/// The entry points that named a session by string (`WebviewLoginRequest.sessionId`, `FlowRunner`'s `sessionId`)
/// have a form taking a `LatchkeySession`; against the real server, both store into the same session.
/// Who the scripted person signs in as.
final class Person: @unchecked Sendable {
    private let lock = NSLock()
    private var ada = true
    /// True: ada; false: demo. Guarded by `lock`.
    var isAda: Bool {
        get { lock.withLock { ada } }
        set { lock.withLock { ada = newValue } }
    }
}

@Suite("SDK ↔ server: the session forms of webviewLogin and FlowRunner")
struct SDKSessionFormsTests {
    static let demoPassword = "correct horse battery staple"
    static func code(_ error: any Error) -> LatchkeyError.Code? { (error as? LatchkeyError)?.code }

    @Test func aWebviewRequestSignsInToTheFlowsSession() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        // The person on the provider's page: ada while `asAda` is set, else demo.
        let asAda = Person()
        // A browser of its own each time: no provider session carries over from one person to the other.
        let agent = ScriptedBrowserUserAgent(browser: TestBrowser()) { url, _ in
            let ada = asAda.isAda
            return try await server.browse(
                url, browser: TestBrowser(), username: ada ? "ada@example.com" : "demo@example.com",
                password: ada ? TestServer.adaPassword : Self.demoPassword)
        }
        let client = LatchkeyClient(http: productionHTTPClient(), userAgent: agent)
        try await client.initialize(config: server.sdkConfig())
        let work = AuthorizationCodeFlow(client: client, session: client.session(named: "work"))

        let token = try await work.signIn(WebviewLoginRequest(state: "work-1"))
        #expect(token.user?.email == "ada@example.com")
        #expect(try await client.session(named: "work").accessToken() == token.accessToken)
        #expect(try await client.session().isSignedIn() == false, "stored in the flow's session, not the default")

        // The ReachFive-style name with the session's name: the same session, new tokens.
        let facade = try await client.webviewLogin(WebviewLoginRequest(state: "work-2", sessionId: "work"))
        #expect(facade.user?.id == token.user?.id && facade.accessToken != token.accessToken)
        #expect(try await client.session(named: "work").accessToken() == facade.accessToken)
        #expect(try await client.session().isSignedIn() == false)

        // Without a session name, the default one.
        asAda.isAda = false
        let demo = try await client.webviewLogin(WebviewLoginRequest())
        #expect(demo.user?.email == "demo@example.com")
        #expect(try await client.getAccessToken() == demo.accessToken)
        #expect(try await client.session(named: "work").accessToken() == facade.accessToken)

        // A request naming another session than the flow's is refused before anything is shown.
        await #expect { try await work.signIn(WebviewLoginRequest(sessionId: "home")) } throws: { Self.code($0) == .invalidInput }
        #expect(try await client.session(named: "home").isSignedIn() == false)
        asAda.isAda = true
        #expect(try await work.signIn(WebviewLoginRequest(state: "work-3", sessionId: "work")).user?.email == "ada@example.com")
    }

    @Test func aFlowRunnerForASessionAndOneForItsNameSignInToTheSameSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        var config = server.sdkConfig()
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        try await client.initialize(config: config)
        let request = EmbeddedFlowRequestConfig(flowType: .authentication)

        func signIn(_ runner: FlowRunner) async throws {
            guard case .step(let step) = await runner.start() else {
                Issue.record("no first step")
                return
            }
            let end = await runner.submit(actionId: step.actions.first?.ref, inputs: ["username": "demo@example.com", "password": Self.demoPassword])
            guard case .completed = end else {
                Issue.record("not completed: \(end)")
                return
            }
        }

        let core = FlowRunner(client: client, request: request, session: client.session(named: "kiosk"))
        #expect(core.flow.session == client.session(named: "kiosk"))
        try await signIn(core)
        let kioskToken = try await client.session(named: "kiosk").accessToken()
        #expect(try await server.userinfo(kioskToken).status == 200)
        #expect(try await client.session().isSignedIn() == false, "stored in the runner's session, not the default")

        let facade = FlowRunner(client: client, request: request, sessionId: "kiosk")
        #expect(facade.flow.session == core.flow.session)
        try await signIn(facade)
        let renewed = try await client.session(named: "kiosk").accessToken()
        #expect(renewed != kioskToken)
        #expect(try await server.userinfo(renewed).status == 200)
        #expect(try await client.session().isSignedIn() == false)

        #expect(FlowRunner(client: client, request: request).flow.session == client.session())
    }
}
