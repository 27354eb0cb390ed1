import Foundation
import Latchkey
import LatchkeySDKTestSupport
import LatchkeyTestSupport
import Testing

/// The SDK's core (`LatchkeySession`, `AuthorizationCodeFlow`, `AppNativeFlow`, `LatchkeyConfig` in URLs) against the real server, and the
/// compatibility names giving the same answers over it.
@Suite("SDK ↔ server: the session value and the core under the compatibility names")
struct SDKSessionValueTests {
    static func code(_ error: any Error) -> LatchkeyError.Code? { (error as? LatchkeyError)?.code }

    /// A client with the default session signed in as demo and the session "work" as ada, each in a browser of its own.
    func twoAccounts(_ server: TestServer, http: any HTTPClient = productionHTTPClient()) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: http)
        try await client.initialize(config: server.sdkConfig())
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        _ = try await client.handleRedirectCallback(
            url: try await server.browse(
                try client.buildSignInURL(options: nil, sessionId: "work"), username: "ada@example.com", password: TestServer.adaPassword))
        return client
    }

    @Test func aNamedSessionHasTokensOfItsOwnAndTheFacadeGivesTheSameAnswers() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let client = try await twoAccounts(server)
        let personal = client.session(), work = client.session(named: "work")
        #expect(personal.name == nil && work.name == "work")
        #expect(work == client.session(named: "work") && work != personal && personal == client.session())

        let personalToken = try await personal.accessToken(), workToken = try await work.accessToken()
        #expect(personalToken != workToken)
        #expect(try await client.getAccessToken() == personalToken)
        #expect(try await client.getAccessToken(sessionId: "work") == workToken)

        let demo = try await personal.user(), ada = try await work.user()
        #expect(demo.email == "demo@example.com" && ada.email == "ada@example.com")
        #expect(try await client.getUser().sub == demo.sub)
        #expect(try await client.getUser(options: nil, sessionId: "work").sub == ada.sub)
        #expect(try await work.user(source: .userinfo).sub == ada.sub, "the server says the same of the token")
        #expect(try await work.check().sub == ada.sub)
        #expect(try await client.checkSession(sessionId: "work").sub == ada.sub)

        #expect(try await personal.profile().email == "demo@example.com")
        #expect(try await work.profile().email == "ada@example.com")
        #expect(try await client.getUserProfile(options: nil, sessionId: "work").id == (try await work.profile().id))

        let workAuthToken = try await work.authToken()
        #expect(workAuthToken.accessToken == workToken && workAuthToken.user?.email == "ada@example.com")
        #expect(try await client.authToken(sessionId: "work") == workAuthToken)

        let api = try #require(URL(string: server.base + "/oauth2/userinfo"))
        #expect(try await work.authorizationHeaders(method: "GET", url: api) == ["Authorization": "Bearer " + workToken])
        #expect(try await client.authorizationHeaders(method: "GET", url: api) == ["Authorization": "Bearer " + personalToken])
        #expect(try await work.sendAuthorized(HTTPRequest(url: api)).status == 200)
    }

    @Test func signingOutANamedSessionLeavesTheDefaultSignedIn() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let client = try await twoAccounts(server)
        let personal = client.session(), work = client.session(named: "work")
        let personalToken = try await personal.accessToken(), workToken = try await work.accessToken()

        let report = try await work.signOut()
        #expect(report.afterSignOutUrl == "http://127.0.0.1:7777/logout")
        #expect(report.refreshToken == .done && report.accessToken == .done)
        #expect(try await work.isSignedIn() == false)
        #expect(try await client.isSignedIn(sessionId: "work") == false)
        await #expect { try await work.accessToken() } throws: { Self.code($0) == .sessionExpired }
        #expect(try await server.userinfo(workToken).status == 401, "revoked at the server")

        #expect(try await personal.isSignedIn())
        #expect(try await client.isSignedIn())
        #expect(try await personal.accessToken() == personalToken, "the default session's tokens are untouched")
        #expect(try await server.userinfo(personalToken).status == 200)

        // `clear()` forgets locally without telling the server, and only that session.
        let again = try await twoAccounts(server)
        let againWork = try await again.session(named: "work").accessToken()
        try await again.session().clear()
        #expect(try await again.session().isSignedIn() == false)
        #expect(try await again.session(named: "work").accessToken() == againWork)
        #expect(try await server.userinfo(againWork).status == 200)
    }

    @Test func refreshRenewsOnlyThatSessionsTokens() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let client = try await twoAccounts(server, http: http)
        let personal = client.session(), work = client.session(named: "work")
        let personalToken = try await personal.accessToken(), workToken = try await work.accessToken()

        let before = http.refreshCount
        try await work.refresh()
        #expect(http.refreshCount == before + 1, "a refresh although the token was not due")
        let renewed = try await work.accessToken()
        #expect(renewed != workToken)
        #expect(try await server.userinfo(renewed).status == 200)
        #expect(try await personal.accessToken() == personalToken)
        #expect(http.refreshCount == before + 1)

        await #expect { try await client.session(named: "never-signed-in").refresh() } throws: { Self.code($0) == .sessionExpired }
    }

    @Test func aNamedSessionsSignInSessionsAreNotTheSlot() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig())
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL(options: nil, sessionId: "tablet")))
        let phone = client.session(), tablet = client.session(named: "tablet")

        let seen = try await tablet.sessions()
        #expect(seen.count == 2, "the same person, signed in twice")
        #expect(try await client.sessions(sessionId: "tablet").map(\.id) == seen.map(\.id))
        let tabletsOwn = try #require(seen.first { $0.isCurrent })
        let phonesOwn = try #require(try await phone.sessions().first { $0.isCurrent })
        #expect(tabletsOwn.id != phonesOwn.id)

        // The phone ends the tablet's sign-in session: the tablet's tokens are refused, the phone keeps its own.
        try await phone.endSession(id: tabletsOwn.id)
        #expect(try await phone.isSignedIn())
        await #expect { try await tablet.sessions() } throws: { Self.code($0) == .sessionExpired }
        #expect(try await phone.sessions().map(\.id) == [phonesOwn.id])
    }

    @Test func anAppNativeFlowSignsInToItsSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        var config = server.sdkConfig()
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        try await client.initialize(config: config)
        let flow = AppNativeFlow(
            client: client, request: EmbeddedFlowRequestConfig(flowType: .authentication), session: client.session(named: "app"))
        #expect(flow.session.name == "app" && flow.configuredRedirectURI == "http://127.0.0.1:7777/callback")

        let first = try await flow.step(EmbeddedSignInPayload())
        #expect(first.flowStatus == .promptOnly && first.inputs.map(\.identifier) == ["username", "password"])
        let done = try await flow.step(
            EmbeddedSignInPayload(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": "correct horse battery staple"]))
        #expect(done.flowStatus == .complete && done.user?.email == "demo@example.com")
        #expect(try await client.session(named: "app").isSignedIn())
        #expect(try await client.session().isSignedIn() == false, "stored in the flow's session, not the default")
        #expect(try await server.userinfo(try await client.session(named: "app").accessToken()).status == 200)

        // The runner over the same core: the default session this time.
        let runner = FlowRunner(flow: AppNativeFlow(client: client, request: EmbeddedFlowRequestConfig(flowType: .authentication)))
        guard case .step(let step) = await runner.start() else { Issue.record("no first step"); return }
        let end = await runner.submit(
            actionId: step.actions.first?.ref, inputs: ["username": "demo@example.com", "password": "correct horse battery staple"])
        guard case .completed = end else { Issue.record("not completed: \(end)"); return }
        #expect(try await client.session().isSignedIn())
        #expect(try await client.getAccessToken() != (try await client.session(named: "app").accessToken()))
    }

    @Test func aRedirectSignInIsAFlowIntoASession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig())
        let flow = AuthorizationCodeFlow(client: client, session: client.session(named: "work"))
        #expect(flow.session.name == "work" && AuthorizationCodeFlow(client: client).session == client.session())

        let url = try flow.start(options: SignInOptions(loginHint: "demo@example.com"))
        let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "code_challenge_method" }?.value == "S256")
        #expect(query.first { $0.name == "login_hint" }?.value == "demo@example.com")
        let callback = try await server.browse(url)
        // Another value resumes it: the request is the client's, and stores into the session it was started for.
        let user = try await AuthorizationCodeFlow(client: client).resume(with: callback)
        #expect(user.email == "demo@example.com")
        #expect(try await client.session(named: "work").isSignedIn())
        #expect(try await client.session().isSignedIn() == false)
        await #expect { try await flow.resume(with: callback) } throws: { Self.code($0) == .invalidGrant }

        // The compatibility pair is the same flow.
        let again = try await server.browse(try client.buildSignInURL())
        #expect(try await AuthorizationCodeFlow(client: client).resume(with: again).sub == user.sub)
        #expect(try await client.session().isSignedIn())
    }

    @Test func aConfigurationInURLsIsTheSameConfiguration() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let strings = server.sdkConfig()
        let urls = LatchkeyConfig(
            issuerURL: try #require(URL(string: server.issuer)), clientId: "latchkey-demo", scopes: strings.scopes,
            redirectURI: URL(string: "http://127.0.0.1:7777/callback"), postLogoutRedirectURI: URL(string: "http://127.0.0.1:7777/logout"))
        #expect(urls.baseUrl == strings.baseUrl && urls.issuer == strings.issuer)
        #expect(urls.afterSignInUrl == strings.afterSignInUrl && urls.afterSignOutUrl == strings.afterSignOutUrl)
        #expect(strings.issuerURL?.absoluteString == server.issuer && strings.redirectURI == URL(string: "http://127.0.0.1:7777/callback"))

        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: urls)
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        #expect(try await client.session().isSignedIn())
        #expect(try await client.session().signOut().afterSignOutUrl == "http://127.0.0.1:7777/logout")
    }
}
