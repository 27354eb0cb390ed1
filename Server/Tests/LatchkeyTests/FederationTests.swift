import Foundation
@testable import Latchkey
import LatchkeySDKTestSupport
import Testing

/// A user agent with a scripted person: `person` gets each page shown (its URL and presentation) and returns the URL
/// the browser came back to, or throws (`.canceled`: the page was closed). It records what it showed, the redirect
/// URIs it reserved (`prepared`: what `prepareRedirectURI()` hands out, as the loopback user agent does) and those
/// given back.
final class ScriptedUserAgent: AuthorizationUserAgent, @unchecked Sendable {
    typealias Person = @Sendable (URL, AuthorizationPresentation) async throws -> URL
    private let lock = NSLock()
    private let prepared: String?
    private var person: Person
    private var _shown: [(url: URL, presentation: AuthorizationPresentation)] = []
    private var _released: [String] = []

    init(prepared: String? = nil, person: @escaping Person = { _, _ in throw LatchkeyError(.canceled, "closed") }) {
        self.prepared = prepared
        self.person = person
    }

    /// What the person does on the next pages.
    func script(_ person: @escaping Person) { lock.withLock { self.person = person } }
    var shown: [(url: URL, presentation: AuthorizationPresentation)] { lock.withLock { _shown } }
    var released: [String] { lock.withLock { _released } }

    func prepareRedirectURI() async throws -> String? { prepared }
    func release(redirectURI: String) { lock.withLock { _released.append(redirectURI) } }
    func authorize(url: URL) async throws -> URL { throw LatchkeyError(.invalidConfiguration, "needs a presentation") }
    func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL {
        let person = lock.withLock {
            _shown.append((url, presentation))
            return self.person
        }
        return try await person(url, presentation)
    }

    /// A person who signs in at once on the scripted provider: the authorization request is sent to `server` and the
    /// redirect it answers is where the browser comes back.
    static func signsIn(at server: ScriptedIdentityServer) -> Person {
        { url, _ in
            let answer = try await server.http.send(HTTPRequest(url: url))
            guard let location = answer.location, let back = URL(string: location) else {
                throw LatchkeyError(.canceled, "the provider showed a page")
            }
            return back
        }
    }
}

@Suite("Identity federation: providers, sign-in with a provider, linked identities")
struct FederationTests {
    static let redirect = "com.example.app:/callback"

    func client(_ server: ScriptedIdentityServer, agent: ScriptedUserAgent) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: server.http, userAgent: agent)
        try await client.initialize(
            config: LatchkeyConfig(
                baseUrl: ScriptedIdentityServer.issuer, clientId: "app", scopes: ["openid", "email", "offline_access"],
                afterSignInUrl: Self.redirect))
        server.reset()
        return client
    }

    /// A client signed in through the browser (the scripted provider), its records forgotten.
    func signedInClient(_ server: ScriptedIdentityServer, agent: ScriptedUserAgent) async throws -> (LatchkeyClient, String) {
        let client = try await client(server, agent: agent)
        agent.script(ScriptedUserAgent.signsIn(at: server))
        let token = try await client.webviewLogin(WebviewLoginRequest())
        server.reset()
        return (client, token.accessToken)
    }

    static func json(_ request: HTTPRequest) -> [String: JSONValue] {
        (try? JSONDecoder().decode([String: JSONValue].self, from: request.body ?? Data())) ?? [:]
    }

    // MARK: Sign-in with a provider

    @Test func webviewLoginWithAProviderSendsProviderAndOrigin() async throws {
        let server = ScriptedIdentityServer()
        let agent = ScriptedUserAgent()
        let client = try await client(server, agent: agent)
        agent.script(ScriptedUserAgent.signsIn(at: server))
        // ReachFive's labels and order; `sessionId` still follows them.
        let request = WebviewLoginRequest(
            state: "zf3ifjfmdkj", nonce: "n-0S6_PzA3Ze", scope: ["openid", "email"], presentationContextProvider: nil,
            origin: "checkout", provider: "corp", sessionId: nil)
        #expect(request.provider == "corp" && request.origin == "checkout")
        let token = try await client.webviewLogin(request)
        let authorize = try server.query(of: "/oauth/authorize")
        #expect(authorize["provider"] == "corp" && authorize["origin"] == "checkout")
        #expect(authorize["state"] == "zf3ifjfmdkj" && authorize["nonce"] == "n-0S6_PzA3Ze" && authorize["scope"] == "openid email")
        #expect(authorize["redirect_uri"] == Self.redirect && agent.shown.first?.presentation.redirectURI == Self.redirect)
        #expect(token.user?.email == "ada@example.com")
        #expect(try await client.isSignedIn())

        // Without a provider (the seeds' four labels, and the existing sessionId label), neither parameter is sent.
        server.reset()
        _ = try await client.webviewLogin(WebviewLoginRequest(scope: ["openid"], sessionId: "second"))
        let plain = try server.query(of: "/oauth/authorize")
        #expect(plain["provider"] == nil && plain["origin"] == nil)
        server.reset()
        _ = try await client.webviewLogin(WebviewLoginRequest(provider: ""))
        #expect(try server.query(of: "/oauth/authorize")["provider"] == nil)
    }

    @Test func buildSignInURLTakesAProvider() async throws {
        let server = ScriptedIdentityServer()
        let client = try await client(server, agent: ScriptedUserAgent())
        let url = try client.buildSignInURL(options: SignInOptions(provider: "google:web", extra: ["provider": "other"]))
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items.filter { $0.name == "provider" }.map(\.value) == ["google:web"])  // extra never replaces it
        let none = try client.buildSignInURL(options: SignInOptions(loginHint: "ada"))
        #expect(URLComponents(url: none, resolvingAgainstBaseURL: false)?.queryItems?.contains { $0.name == "provider" } == false)
    }

    @Test func aProviderThatRefusesIsAnAuthenticationFailure() async throws {
        let server = ScriptedIdentityServer()
        let agent = ScriptedUserAgent()
        let client = try await client(server, agent: agent)
        agent.script { url, _ in
            let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value ?? ""
            return try #require(
                URL(
                    string:
                        "\(Self.redirect)?error=access_denied&error_description=Corp%20SSO%20refused&state=\(state)&iss=\(ScriptedIdentityServer.issuer)"
                ))
        }
        await #expect {
            try await client.webviewLogin(WebviewLoginRequest(provider: "corp"))
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .authenticationFailed && e?.category == .authFailure && e?.message.contains("Corp SSO refused") == true
        }
        #expect(server.calls.isEmpty)  // no token request
    }

    // MARK: Providers

    @Test func getProvidersListsTheApplicationsProviders() async throws {
        let server = ScriptedIdentityServer()
        server.route(
            "GET", "/identity/v1/providers",
            json: """
                {"items":[{"provider":"corp","name":"Corp SSO","type":"oidc"},{"provider":"google","variant":"ios","client_id":"g-ios",
                "scope":"openid email"},{"name":"no id"},{"provider":"github","scope":["read:user","user:email"]}],"status":"success"}
                """)
        let client = try await client(server, agent: ScriptedUserAgent())
        let providers = try await client.getProviders()
        #expect(try server.query(of: "/identity/v1/providers") == ["client_id": "app"])
        #expect(server.requests.last?.headers["Authorization"] == nil)
        #expect(
            providers == [
                ProviderConfig(provider: "corp", name: "Corp SSO", type: "oidc"),
                ProviderConfig(provider: "google", variant: "ios", clientId: "g-ios", scope: ["openid", "email"]),
                ProviderConfig(provider: "github", scope: ["read:user", "user:email"])
            ])
        #expect(providers.map(\.providerWithVariant) == ["corp", "google:ios", "github"])
        #expect(providers.map(\.id) == ["corp", "google:ios", "github"])

        server.route("GET", "/identity/v1/providers", json: #"{"items":[],"status":"success"}"#)
        #expect(try await client.getProviders().isEmpty)
        server.route("GET", "/identity/v1/providers", json: #"{"status":"success"}"#)
        await #expect { try await client.getProviders() } throws: { ($0 as? LatchkeyError)?.code == .serverError }
        server.route(
            "GET", "/identity/v1/providers", status: 400,
            json: #"{"error":"invalid_client","error_description":"unknown client","error_message_key":"client.unknown"}"#)
        await #expect { try await client.getProviders() } throws: { error in
            let e = error as? LatchkeyError
            return e?.statusCode == 400 && e?.category == .requestError && e?.apiError?.errorDescription == "unknown client"
        }
        await #expect { try await LatchkeyClient(http: server.http).getProviders() } throws: {
            ($0 as? LatchkeyError)?.code == .sdkNotInitialized
        }
    }

    // MARK: Linked identities

    @Test func linkedIdentitiesAreReadWithTheAccessToken() async throws {
        let server = ScriptedIdentityServer()
        let (client, accessToken) = try await signedInClient(server, agent: ScriptedUserAgent())
        server.route(
            "GET", "/users/me/identities",
            json: """
                {"identities":[{"provider":"corp","name":"Corp SSO","linked_at":"2025-03-04T05:06:07Z"},
                {"provider":"github","linked_at":"2025-03-04T05:06:07.250Z"},{"name":"no id"}],
                "available":[{"provider":"corp","name":"Corp SSO"},{"provider":"google","name":"Google"}]}
                """)
        let linked = try await client.linkedIdentities()
        #expect(server.requests.last?.headers["Authorization"] == "Bearer \(accessToken)")
        #expect(linked.identities.map(\.provider) == ["corp", "github"] && linked.identities.first?.name == "Corp SSO")
        #expect(linked.identities.first?.linkedAt == Date(timeIntervalSince1970: 1_741_064_767))
        #expect(linked.identities.last?.linkedAt == Date(timeIntervalSince1970: 1_741_064_767.25))
        #expect(linked.available == [ProviderConfig(provider: "corp", name: "Corp SSO"), ProviderConfig(provider: "google", name: "Google")])

        server.route("GET", "/users/me/identities", json: #"{"identities":[]}"#)
        #expect(try await client.linkedIdentities() == LinkedIdentities(identities: []))
        server.route("GET", "/users/me/identities", json: #"{"items":[]}"#)
        await #expect { try await client.linkedIdentities() } throws: { ($0 as? LatchkeyError)?.code == .serverError }
        server.route(
            "GET", "/users/me/identities", status: 401,
            json:
                #"{"code":"AUTH-4011","message":{"key":"error.reauthentication_required","defaultValue":"Please sign in again to make this change."}}"#
        )
        await #expect { try await client.linkedIdentities() } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .reauthenticationRequired && e?.statusCode == 401 && e?.serverCode == "AUTH-4011"
                && e?.userMessage == "Please sign in again to make this change."
        }
        server.route("GET", "/users/me/identities", status: 401, json: #"{"code":"AUTH-4010","message":{"defaultValue":"Sign in."}}"#)
        await #expect { try await client.linkedIdentities() } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
        try await client.clearSessionAndWait()
        await #expect { try await client.linkedIdentities() } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
    }

    @Test func linkIdentityOpensTheProviderAndCompletesWithTheCallbackCode() async throws {
        let server = ScriptedIdentityServer()
        let agent = ScriptedUserAgent()
        let (client, accessToken) = try await signedInClient(server, agent: agent)
        server.route("POST", "/users/me/identities/corp") { request in
            #expect(Self.json(request) == ["redirect_uri": .string(Self.redirect)])
            return ScriptedIdentityServer.json(
                200, #"{"authorization_url":"https://corp.example.com/authorize?client_id=up&state=up-state","state":"link-state"}"#)
        }
        server.route(
            "POST", "/users/me/identities/corp/complete",
            json: #"{"provider":"corp","name":"Corp SSO","linked_at":"2025-03-04T05:06:07Z"}"#)
        agent.script { url, presentation in
            #expect(url.absoluteString == "https://corp.example.com/authorize?client_id=up&state=up-state")
            #expect(presentation.redirectURI == Self.redirect && presentation.state == "link-state")
            return try #require(URL(string: "\(Self.redirect)?code=handoff-1&state=link-state"))
        }
        let linked = try await client.linkIdentity(provider: "corp", presentationContextProvider: nil)
        #expect(linked == LinkedIdentity(provider: "corp", name: "Corp SSO", linkedAt: Date(timeIntervalSince1970: 1_741_064_767)))
        #expect(server.calls == ["POST /users/me/identities/corp", "POST /users/me/identities/corp/complete"])
        #expect(server.requests.allSatisfy { $0.headers["Authorization"] == "Bearer \(accessToken)" })
        #expect(try server.body(of: "/users/me/identities/corp/complete") == ["code": .string("handoff-1"), "state": .string("link-state")])
        #expect(agent.released.isEmpty)

        // A completion answered without a body still names the provider.
        server.route("POST", "/users/me/identities/corp/complete") { _ in HTTPResponse(status: 204, headers: [:], body: Data()) }
        #expect(try await client.linkIdentity(provider: "corp") == LinkedIdentity(provider: "corp"))
    }

    @Test func linkIdentityUsesTheUserAgentsRedirectURIAndGivesItBack() async throws {
        let server = ScriptedIdentityServer()
        let loopback = "http://127.0.0.1:49152/callback"
        let agent = ScriptedUserAgent(prepared: loopback)
        let client = LatchkeyClient(http: server.http, userAgent: agent)
        try await client.initialize(config: LatchkeyConfig(baseUrl: ScriptedIdentityServer.issuer, clientId: "app", scopes: ["openid"]))
        agent.script(ScriptedUserAgent.signsIn(at: server))
        _ = try await client.webviewLogin(WebviewLoginRequest())
        server.reset()

        server.route(
            "POST", "/users/me/identities/corp", status: 401,
            json: #"{"code":"AUTH-4011","message":{"defaultValue":"Please sign in again to make this change."}}"#)
        await #expect { try await client.linkIdentity(provider: "corp") } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .reauthenticationRequired && e?.category == .authFailure && e?.message.contains("recent sign-in") == true
        }
        #expect(try server.body(of: "/users/me/identities/corp") == ["redirect_uri": .string(loopback)])
        #expect(agent.released == [loopback])  // the listener reserved for it is closed
        #expect(agent.shown.count == 1)  // only the sign-in's page

        server.route(
            "POST", "/users/me/identities/corp",
            json: #"{"authorization_url":"https://corp.example.com/authorize","state":"s-2"}"#)
        server.route("POST", "/users/me/identities/corp/complete", json: #"{"provider":"corp"}"#)
        agent.script { _, presentation in
            #expect(presentation.redirectURI == loopback)
            return try #require(URL(string: "\(loopback)?code=c&state=s-2"))
        }
        #expect(try await client.linkIdentity(provider: "corp").provider == "corp")
    }

    @Test func aLinkingCallbackIsCheckedBeforeAnythingIsCompleted() async throws {
        let server = ScriptedIdentityServer()
        let agent = ScriptedUserAgent()
        let (client, _) = try await signedInClient(server, agent: agent)
        server.route(
            "POST", "/users/me/identities/corp",
            json: #"{"authorization_url":"https://corp.example.com/authorize","state":"link-state"}"#)
        server.route("POST", "/users/me/identities/corp/complete", json: #"{"provider":"corp"}"#)

        func linking(returning callback: String) async -> LatchkeyError? {
            agent.script { _, _ in try #require(URL(string: callback)) }
            do {
                _ = try await client.linkIdentity(provider: "corp")
                return nil
            } catch {
                return error as? LatchkeyError
            }
        }
        let refused = await linking(
            returning: "\(Self.redirect)?error=access_denied&error_description=The+person+said+no&state=link-state")
        #expect(refused?.code == .authenticationFailed && refused?.serverCode == "access_denied")
        #expect(refused?.message.contains("The person said no") == true && refused?.message.contains("corp") == true)
        #expect(await linking(returning: "\(Self.redirect)?error=server_error&state=link-state")?.code == .serverError)
        #expect(await linking(returning: "\(Self.redirect)?code=c&state=another")?.code == .invalidGrant)
        #expect(await linking(returning: "\(Self.redirect)?error=access_denied")?.code == .invalidGrant)  // not this linking's
        #expect(await linking(returning: "\(Self.redirect)?state=link-state")?.code == .invalidGrant)
        #expect(await linking(returning: "com.example.app:/elsewhere?code=c&state=link-state")?.code == .invalidRedirectUri)
        agent.script { _, _ in throw LatchkeyError(.canceled, "the person closed the page") }
        await #expect { try await client.linkIdentity(provider: "corp") } throws: { ($0 as? LatchkeyError)?.code == .canceled }
        agent.script { _, _ in throw BrowserGone() }
        await #expect { try await client.linkIdentity(provider: "corp") } throws: { ($0 as? LatchkeyError)?.code == .canceled }
        #expect(!server.calls.contains("POST /users/me/identities/corp/complete"))

        // The server's own refusals of the completion.
        server.route(
            "POST", "/users/me/identities/corp/complete", status: 409,
            json: #"{"code":"FED-4091","message":{"defaultValue":"This account is linked to someone else."}}"#)
        let taken = await linking(returning: "\(Self.redirect)?code=c&state=link-state")
        #expect(taken?.code == .userAlreadyExists && taken?.userMessage == "This account is linked to someone else.")
        await #expect { try await client.linkIdentity(provider: "") } throws: { ($0 as? LatchkeyError)?.code == .invalidInput }
        server.route("POST", "/users/me/identities/corp", json: #"{"state":"x"}"#)
        await #expect { try await client.linkIdentity(provider: "corp") } throws: { ($0 as? LatchkeyError)?.code == .serverError }
    }

    @Test func unlinkIdentityExplainsTheLastWayToSignIn() async throws {
        let server = ScriptedIdentityServer()
        let (client, accessToken) = try await signedInClient(server, agent: ScriptedUserAgent())
        server.route("DELETE", "/users/me/identities/corp") { _ in HTTPResponse(status: 204, headers: [:], body: Data()) }
        try await client.unlinkIdentity(provider: "corp")
        #expect(server.calls == ["DELETE /users/me/identities/corp"])
        #expect(server.requests.last?.headers["Authorization"] == "Bearer \(accessToken)")

        server.route(
            "DELETE", "/users/me/identities/corp", status: 409,
            json: #"{"code":"FED-4092","message":{"defaultValue":"This is your only way to sign in."}}"#)
        await #expect { try await client.unlinkIdentity(provider: "corp") } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .invalidInput && e?.statusCode == 409 && e?.category == .technicalError
                && e?.message.contains("only way to sign in") == true && e?.userMessage == "This is your only way to sign in."
        }
        server.route("DELETE", "/users/me/identities/corp", status: 401, json: #"{"code":"AUTH-4011"}"#)
        await #expect { try await client.unlinkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .reauthenticationRequired
        }
        // A 403 is not a stale sign-in (a client's own token, say): it says so.
        server.route("DELETE", "/users/me/identities/corp", status: 403, json: #"{"code":"AUTH-4030"}"#)
        await #expect { try await client.unlinkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .authenticationFailed
        }
        // Not a provider of the application (the double has no route: 404); the id is one path segment.
        await #expect { try await client.unlinkIdentity(provider: "a/b") } throws: { ($0 as? LatchkeyError)?.code == .invalidInput }
        #expect(server.requests.last?.url.absoluteString.hasSuffix("/users/me/identities/a%2Fb") == true)
    }
}

/// A failure of the browser that is not the SDK's (the user agent's own error type).
struct BrowserGone: Error {}

// MARK: - Flows

/// A scripted `/flow/execute` for a sign-in with a federated provider: the first prompt offers a password and
/// "Continue with Corp SSO"; choosing it answers a REDIRECTION step; submitting its code and state answers the next
/// step (a second factor).
final class FederatedFlowServer: Sendable {
    let server = ScriptedIdentityServer()
    static let page = "https://corp.example.com/authorize?client_id=up&state=up-state"

    init(federatedAnswer: String? = nil) {
        server.route("POST", "/flow/execute") { request in
            let body = FederationTests.json(request)
            let action = body["action"]?.stringValue
            let answer: String
            switch action {
            case nil:
                answer = """
                    {"executionId":"e-1","flowStatus":"INCOMPLETE","type":"VIEW","challengeToken":"ct-1","data":{
                     "inputs":[{"identifier":"username","type":"TEXT_INPUT","required":true},
                               {"identifier":"password","type":"PASSWORD_INPUT","required":true}],
                     "actions":[{"ref":"action_submit","type":"SUBMIT"},
                                {"ref":"action_idp_corp","type":"FEDERATED","nextNode":"idp_corp_start"}]}}
                    """
            case "action_idp_corp":
                answer =
                    federatedAnswer
                        ?? """
                        {"executionId":"e-1","flowStatus":"INCOMPLETE","type":"REDIRECTION","challengeToken":"ct-2","data":{
                         "redirectURL":"\(FederatedFlowServer.page)",
                         "inputs":[{"identifier":"code","type":"TEXT_INPUT","required":true},
                                   {"identifier":"state","type":"TEXT_INPUT","required":true}],
                         "actions":[{"ref":"action_idp_continue","type":"SUBMIT"}],
                         "additionalData":{"idpName":"Corp SSO","idpId":"corp"}}}
                        """
            case "action_idp_continue":
                answer = """
                    {"executionId":"e-1","flowStatus":"INCOMPLETE","type":"VIEW","challengeToken":"ct-3","data":{
                     "inputs":[{"identifier":"otp","type":"OTP_INPUT","required":true}],"actions":[{"ref":"action_otp","type":"SUBMIT"}]}}
                    """
            default:
                return ScriptedIdentityServer.json(400, #"{"code":"FLW-4000"}"#)
            }
            return ScriptedIdentityServer.json(200, answer)
        }
    }

    /// The bodies of the `/flow/execute` calls, in order.
    var steps: [[String: JSONValue]] { server.requests.filter { $0.url.path == "/flow/execute" }.map(FederationTests.json) }
}

@Suite("App-native flows through a federated provider")
struct FederatedFlowTests {
    func runner(_ flow: FederatedFlowServer, agent: ScriptedUserAgent, afterSignInUrl: String? = FederationTests.redirect) async throws
        -> FlowRunner
    {
        let client = LatchkeyClient(http: flow.server.http, userAgent: agent)
        try await client.initialize(
            config: LatchkeyConfig(baseUrl: ScriptedIdentityServer.issuer, clientId: "app", afterSignInUrl: afterSignInUrl))
        let runner = FlowRunner(client: client, request: EmbeddedFlowRequestConfig(verbose: false))
        #expect(await runner.start().isStep)
        return runner
    }

    @Test func choosingTheProviderFollowingItAndContinuing() async throws {
        let flow = FederatedFlowServer()
        let agent = ScriptedUserAgent()
        let runner = try await runner(flow, agent: agent)
        // The federated action carries the app's redirect URI; no client-side checks (the password is not needed).
        let redirection = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        #expect(redirection.isRedirection)
        #expect(flow.steps.last?["inputs"] == .object(["redirect_uri": .string(FederationTests.redirect)]))
        #expect(flow.steps.last?["action"] == .string("action_idp_corp"))
        guard case .step(let step) = redirection else { return }
        #expect(step.redirectURL == FederatedFlowServer.page && step.additionalData["idpName"] == "Corp SSO")

        agent.script { url, presentation in
            #expect(url.absoluteString == FederatedFlowServer.page && presentation.redirectURI == FederationTests.redirect)
            return try #require(URL(string: "\(FederationTests.redirect)?code=handoff&state=flow-state&iss=x"))
        }
        let next = await runner.followRedirection()
        guard case .step(let otp) = next else {
            Issue.record("expected the next step, got \(next)")
            return
        }
        #expect(otp.inputs.map(\.identifier) == ["otp"])
        #expect(flow.steps.last?["action"] == .string("action_idp_continue"))
        #expect(flow.steps.last?["inputs"] == .object(["code": .string("handoff"), "state": .string("flow-state")]))
        #expect(flow.steps.last?["challengeToken"] == .string("ct-2"))
        #expect(agent.shown.count == 1)
        // Not a redirection any more: following does nothing.
        let again = await runner.followRedirection()
        #expect(again == next)
        #expect(agent.shown.count == 1)
    }

    @Test func closingThePageLeavesTheStep() async throws {
        let flow = FederatedFlowServer()
        let agent = ScriptedUserAgent()
        let runner = try await runner(flow, agent: agent)
        let redirection = await runner.submit(actionId: "action_idp_corp", inputs: ["username": "ada"])
        let sent = flow.steps.count
        agent.script { _, _ in throw LatchkeyError(.canceled, "closed") }
        let closed = await runner.followRedirection()
        #expect(closed == redirection)
        #expect(flow.steps.count == sent)
        let submitting = await runner.isSubmitting
        #expect(!submitting)
        // Following again shows the page again, and goes on.
        agent.script { _, _ in try #require(URL(string: "\(FederationTests.redirect)?code=c&state=s")) }
        let retried = await runner.followRedirection()
        #expect(retried.isStep)
        #expect(agent.shown.count == 2 && flow.steps.last?["action"] == .string("action_idp_continue"))
    }

    @Test func aPageThatCannotBeShownKeepsTheStepWithTheError() async throws {
        let flow = FederatedFlowServer()
        let agent = ScriptedUserAgent()
        let runner = try await runner(flow, agent: agent)
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        agent.script { _, _ in throw LatchkeyError(.invalidConfiguration, "no presentation context") }
        let state = await runner.followRedirection()
        guard case .step(let step) = state else {
            Issue.record("expected the step, got \(state)")
            return
        }
        #expect(step.type == .redirection && step.error?.code == .invalidConfiguration)
        #expect(step.error?.message.contains("no presentation context") == true)
    }

    @Test func aCallbackWithAnErrorFailsTheFlowClearly() async throws {
        let flow = FederatedFlowServer()
        let agent = ScriptedUserAgent()
        let runner = try await runner(flow, agent: agent)
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        let sent = flow.steps.count
        agent.script { _, _ in
            try #require(URL(string: "\(FederationTests.redirect)?error=access_denied&error_description=You+declined+at+Corp+SSO&state=s"))
        }
        let failed = await runner.followRedirection()
        #expect(failed == .failed(FlowRunnerFailure(code: .authenticationFailed, message: "You declined at Corp SSO", serverCode: "access_denied")))
        #expect(flow.steps.count == sent)  // nothing submitted
    }

    @Test func continueRedirectTakesACallbackTheAppReceived() async throws {
        let flow = FederatedFlowServer()
        let runner = try await runner(flow, agent: ScriptedUserAgent())
        // Not a redirection step yet: nothing happens.
        let first = await runner.state
        let early = try #require(URL(string: "\(FederationTests.redirect)?code=c&state=s"))
        let unchanged = await runner.continueRedirect(callback: early)
        #expect(unchanged == first)
        #expect(flow.steps.count == 1)

        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        let codeOnly = try #require(URL(string: "\(FederationTests.redirect)?code=c"))
        let missing = await runner.continueRedirect(callback: codeOnly)
        guard case .failed(let failure) = missing else {
            Issue.record("expected a failure, got \(missing)")
            return
        }
        #expect(failure.code == .invalidGrant && failure.message.contains("Corp SSO"))

        _ = await runner.restart()
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        let unavailable = try #require(URL(string: "\(FederationTests.redirect)?error=temporarily_unavailable"))
        let refused = await runner.continueRedirect(callback: unavailable)
        #expect(
            refused
                == .failed(
                    FlowRunnerFailure(
                        code: .serverError, message: "Corp SSO did not sign you in (temporarily_unavailable).", serverCode: "temporarily_unavailable")
                ))

        _ = await runner.restart()
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        let good = try #require(URL(string: "\(FederationTests.redirect)?state=s2&code=c2&extra=1"))
        let next = await runner.continueRedirect(callback: good)
        #expect(next.isStep && !next.isRedirection)
        #expect(flow.steps.last?["inputs"] == .object(["code": .string("c2"), "state": .string("s2")]))
    }

    @Test func aLoopbackRedirectURIIsUsedAndGivenBackWhenUnused() async throws {
        let loopback = "http://127.0.0.1:49153/callback"
        // The server refuses the provider: the reserved listener is released.
        let refusing = FederatedFlowServer(
            federatedAnswer:
                #"{"executionId":"e-1","flowStatus":"ERROR","error":{"code":"FED-5001","message":{"defaultValue":"Corp SSO is unavailable."}}}"#)
        let agent = ScriptedUserAgent(prepared: loopback)
        let refusingRunner = try await runner(refusing, agent: agent, afterSignInUrl: nil)
        let failed = await refusingRunner.submit(actionId: "action_idp_corp", inputs: [:])
        #expect(refusing.steps.last?["inputs"] == .object(["redirect_uri": .string(loopback)]))
        #expect(
            failed
                == .failed(
                    FlowRunnerFailure(
                        code: .unknownError, message: "Corp SSO is unavailable.", serverCode: "FED-5001", userMessage: "Corp SSO is unavailable.")))
        #expect(agent.released == [loopback])

        // Redirected: the page is shown with the loopback redirect URI; once used, nothing is given back.
        let flow = FederatedFlowServer()
        let loopbackAgent = ScriptedUserAgent(prepared: loopback)
        let second = try await runner(flow, agent: loopbackAgent, afterSignInUrl: nil)
        _ = await second.submit(actionId: "action_idp_corp", inputs: [:])
        loopbackAgent.script { _, presentation in
            #expect(presentation.redirectURI == loopback)
            return try #require(URL(string: "\(loopback)?code=c&state=s"))
        }
        let followed = await second.followRedirection()
        #expect(followed.isStep)
        #expect(loopbackAgent.released.isEmpty)

        // Left without following (start over): the reserved listener is given back.
        let third = FederatedFlowServer()
        let leavingAgent = ScriptedUserAgent(prepared: loopback)
        let leaving = try await runner(third, agent: leavingAgent, afterSignInUrl: nil)
        _ = await leaving.submit(actionId: "action_idp_corp", inputs: [:])
        #expect(leavingAgent.released.isEmpty)
        _ = await leaving.restart()
        #expect(leavingAgent.released == [loopback])

        // An app that names its own redirect URI keeps it, and the user agent reserves nothing.
        let fourth = FederatedFlowServer()
        let ownAgent = ScriptedUserAgent(prepared: loopback)
        let own = try await runner(fourth, agent: ownAgent)
        _ = await own.submit(actionId: "action_idp_corp", inputs: ["redirect_uri": "com.example.app:/federated"])
        #expect(fourth.steps.last?["inputs"] == .object(["redirect_uri": .string("com.example.app:/federated")]))
        ownAgent.script { _, presentation in
            #expect(presentation.redirectURI == "com.example.app:/federated")
            return try #require(URL(string: "com.example.app:/federated?code=c&state=s"))
        }
        let ownFollowed = await own.followRedirection()
        #expect(ownFollowed.isStep)
        #expect(ownAgent.released.isEmpty)
    }

    @Test func aCallbackElsewhereIsRefused() async throws {
        let flow = FederatedFlowServer()
        let agent = ScriptedUserAgent()
        let runner = try await runner(flow, agent: agent)
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        agent.script { _, _ in try #require(URL(string: "com.example.app:/other?code=c&state=s")) }
        let state = await runner.followRedirection()
        guard case .failed(let failure) = state else {
            Issue.record("expected a failure, got \(state)")
            return
        }
        #expect(failure.code == .invalidRedirectUri)
    }
}

// End to end against the real server: Tests/LatchkeySDKEndToEndTests/FederationEndToEndTests.swift.
