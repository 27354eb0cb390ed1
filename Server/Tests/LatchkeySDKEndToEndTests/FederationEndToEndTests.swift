import Foundation
import HummingbirdOTP
import Latchkey
import LatchkeyJOSE
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Identity federation (issue 27) end to end: the SDK against the real server, whose identity provider "corp" is an
/// OpenID provider double on another loopback port. The SDK's user agent is a test browser that goes wherever it is
/// sent (the server, the provider, the server's callback) until it reaches the app's redirect URI.
@Suite("SDK ↔ server ↔ upstream provider: federated sign-in, providers, linking, app-native redirection")
struct FederationEndToEndTests {
    static let signInRequest = EmbeddedFlowRequestConfig(flowType: .authentication)

    // MARK: Sign-in

    @Test("webviewLogin(provider: corp): the page skipped, PKCE, nonce and state upstream; amr fed, idp corp; the same sub again")
    func webviewLoginWithProvider() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let storage = InMemoryStorageAdapter()
        let http = ProgrammableHTTPClient()
        let (client, agent) = try await rig.client(storage: storage, http: http)

        let token = try await client.webviewLogin(WebviewLoginRequest(provider: "corp"))
        let idToken = try #require(token.idToken)
        let claims = try await rig.server.verifiedClaims(idToken)
        let amr = claims["amr"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(amr.contains("fed") && claims["idp"]?.stringValue == "corp", "\(claims)")
        #expect(!amr.contains { $0.hasPrefix("idp:") }, "the internal provider marker stays out of the token: \(amr)")
        #expect(claims["aud"]?.stringValue == "latchkey-demo" && claims["iss"]?.stringValue == rig.server.issuer)
        let access = try await rig.server.verifiedClaims(token.accessToken)
        #expect(access["idp"]?.stringValue == "corp" && access["amr"]?.arrayValue?.contains(.string("fed")) == true)
        #expect(try await rig.server.userinfo(token.accessToken).status == 200)
        let user = try await client.getUser()
        #expect(user.email == "ada@upstream.example" && user.displayName == "Ada Lovelace" && user.sub == claims["sub"]?.stringValue)
        #expect(await storage.get("latchkey.session.default") != nil)

        // The SDK pushed the request (RFC 9126: the server offers PAR) with `provider=corp`; the server skipped its page
        // (no 200 on the way: /login with the hint `idp=corp` redirects at once) and sent the browser straight upstream,
        // then to its own callback, then to the app.
        let hops = agent.hops
        #expect(hops.first?.url.hasPrefix(rig.server.issuer + "/oauth2/authorize?") == true)
        let pushed = http.requests.first { $0.url.path.hasSuffix("/par") }
        #expect(pushed.map { String(decoding: $0.body ?? Data(), as: UTF8.self) }?.contains("provider=corp") == true)
        #expect(hops.count > 1 && hops[1].url.hasPrefix(rig.server.issuer + "/login?") && hops[1].url.hasSuffix("&idp=corp"))
        #expect(hops.allSatisfy { (300..<400).contains($0.status) }, "only redirects: \(hops)")
        #expect(hops.contains { $0.url.hasPrefix(rig.upstream.base + "/authorize?") })
        #expect(hops.last?.url.hasPrefix(rig.server.issuer + "/federation/corp/callback?") == true)

        // Upstream: the server's client, its callback, the code with S256 PKCE, a nonce and a state.
        let upstream = rig.upstream.lastAuthorizationQuery
        #expect(upstream["client_id"] == rig.upstream.clientId && upstream["response_type"] == "code")
        #expect(upstream["redirect_uri"] == rig.server.issuer + "/federation/corp/callback")
        #expect(upstream["code_challenge_method"] == "S256" && upstream["code_challenge"]?.count == 43)
        #expect(upstream["nonce"]?.isEmpty == false && upstream["state"]?.isEmpty == false)
        #expect(upstream["scope"]?.split(separator: " ").contains("openid") == true)
        #expect(rig.upstream.lastTokenForm["code_verifier"] != nil && rig.upstream.tokenRequests == 1)

        // Again, in another browser (no session at the server): upstream once more, the same account.
        let (again, _) = try await rig.client()
        let second = try await again.signInWithBrowser(options: SignInOptions(provider: "corp"))
        #expect(second.sub == user.sub && rig.upstream.authorizationRequests == 2)
        #expect(rig.upstream.lastAuthorizationQuery["nonce"] != upstream["nonce"], "a new nonce each time")
        #expect(rig.upstream.lastAuthorizationQuery["state"] != upstream["state"], "a new state each time")
    }

    @Test("getProviders(): the application's providers with their names; none for an application without any")
    func providerList() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let (client, _) = try await rig.client()
        let providers = try await client.getProviders()
        #expect(providers.map(\.provider) == ["corp"])
        #expect(providers.first?.name == "Corp SSO" && providers.first?.type == "oidc" && providers.first?.providerWithVariant == "corp")

        let backend = LatchkeyClient(http: productionHTTPClient())
        try await backend.initialize(config: LatchkeyConfig(baseUrl: rig.server.issuer, clientId: TestServer.confidentialClient.clientId))
        #expect(try await backend.getProviders().isEmpty)
        let unknown = LatchkeyClient(http: productionHTTPClient())
        try await unknown.initialize(config: LatchkeyConfig(baseUrl: rig.server.issuer, clientId: "nobody"))
        await #expect { try await unknown.getProviders() } throws: { $0 is LatchkeyError }
    }

    // MARK: Linking

    @Test("link corp to the password account, sign in with it there, unlink; a federated-only account keeps its only way in; a stale sign-in")
    func linkSignInUnlinkAndReauthentication() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let (client, agent) = try await rig.client()
        // The demo account, by password on the hosted page.
        let signInURL = try client.buildSignInURL()
        let password = try await client.handleRedirectCallback(url: try await rig.server.browse(signInURL, browser: agent.browser))
        #expect(password.email == "demo@example.com")

        let before = try await client.linkedIdentities()
        #expect(before.identities.isEmpty && before.available.map(\.provider) == ["corp"] && before.available.first?.name == "Corp SSO")

        let linked = try await client.linkIdentity(provider: "corp")
        #expect(linked.provider == "corp" && linked.name == "Corp SSO")
        // The browser went upstream and came back through the server's callback to the app with a one-time code.
        #expect(agent.hops.contains { $0.url.hasPrefix(rig.upstream.base + "/authorize?") })
        #expect(agent.lastArrival?.hasPrefix("http://127.0.0.1:7777/callback?") == true)
        let arrival = URLComponents(string: agent.lastArrival ?? "")?.queryItems ?? []
        #expect(arrival.contains { $0.name == "code" } && arrival.contains { $0.name == "state" } && !arrival.contains { $0.name == "error" })
        let after = try await client.linkedIdentities()
        #expect(after.identities.map(\.provider) == ["corp"] && after.identities.first?.name == "Corp SSO")
        #expect(after.identities.first?.linkedAt != nil && after.available.isEmpty)

        // Signing in with corp (another browser) now enters the demo account, although the addresses differ.
        let (viaCorp, _) = try await rig.client()
        let token = try await viaCorp.webviewLogin(WebviewLoginRequest(provider: "corp"))
        let claims = try await rig.server.verifiedClaims(try #require(token.idToken))
        #expect(claims["sub"]?.stringValue == password.sub && claims["idp"]?.stringValue == "corp")
        #expect(try await viaCorp.getUser().email == "demo@example.com")

        // The demo account has a password: corp may go.
        try await client.unlinkIdentity(provider: "corp")
        #expect(try await client.linkedIdentities().identities.isEmpty)
        await #expect { try await client.unlinkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .invalidInput && ($0 as? LatchkeyError)?.statusCode == 404
        }

        // Unlinked, the same corp person gets an account of their own (just in time) …
        let (federatedOnly, _) = try await rig.client()
        let jit = try await federatedOnly.signInWithBrowser(options: SignInOptions(provider: "corp"))
        #expect(jit.sub != password.sub && jit.email == "ada@upstream.example")
        #expect(try await federatedOnly.linkedIdentities().identities.map(\.provider) == ["corp"])
        // … whose only way in corp is: unlinking it is refused (409), and it stays linked.
        await #expect { try await federatedOnly.unlinkIdentity(provider: "corp") } throws: {
            let error = $0 as? LatchkeyError
            return error?.code == .invalidInput && error?.statusCode == 409 && error?.serverCode == "FED-1005"
        }
        #expect(try await federatedOnly.linkedIdentities().identities.map(\.provider) == ["corp"])

        // That corp identity now belongs to the new account: linking it to the demo account again is refused.
        await #expect { try await client.linkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .userAlreadyExists && ($0 as? LatchkeyError)?.statusCode == 409
        }
        #expect(try await client.linkedIdentities().identities.isEmpty)

        // A sign-in older than recent_auth_seconds (300 by default) may not change links; the session stays valid.
        rig.server.advanceClock(301)
        let upstreamVisits = rig.upstream.authorizationRequests
        // The server answers as its other self-service changes do, 401 `insufficient_user_authentication` (RFC 9470,
        // AUTH-4011), where the contract said 403; the SDK maps both to `.reauthenticationRequired`.
        await #expect { try await client.linkIdentity(provider: "corp") } throws: {
            let error = $0 as? LatchkeyError
            return error?.code == .reauthenticationRequired && [401, 403].contains(error?.statusCode ?? 0)
        }
        #expect(rig.upstream.authorizationRequests == upstreamVisits, "refused before any page was shown")
        await #expect { try await federatedOnly.unlinkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .reauthenticationRequired
        }
        #expect(try await client.linkedIdentities().available.map(\.provider) == ["corp"], "listing needs no recent sign-in")
        #expect(try await client.isSignedIn())
        #expect(try await federatedOnly.isSignedIn())
    }

    @Test("a link the provider refuses (access_denied) or vouches for badly (wrong nonce) links nothing")
    func linkRefused() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let (client, agent) = try await rig.client()
        _ = try await client.handleRedirectCallback(url: try await rig.server.browse(try client.buildSignInURL(), browser: agent.browser))

        rig.upstream.setBehavior { $0.denyConsent = true }
        await #expect { try await client.linkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .authenticationFailed
        }
        #expect(URLComponents(string: agent.lastArrival ?? "")?.queryItems?.first { $0.name == "error" }?.value == "access_denied")

        rig.upstream.setBehavior {
            $0.denyConsent = false
            $0.wrongNonce = true
        }
        await #expect { try await client.linkIdentity(provider: "corp") } throws: {
            ($0 as? LatchkeyError)?.code == .authenticationFailed
        }
        #expect(rig.upstream.tokenRequests == 1, "the code was exchanged, and the ID token refused")
        #expect(try await client.linkedIdentities().identities.isEmpty)
        await #expect { try await client.linkIdentity(provider: "github") } throws: { ($0 as? LatchkeyError)?.code == .invalidInput }
    }

    // MARK: App-native flows

    @Test("FlowRunner: the FEDERATED action, a REDIRECTION step upstream, followRedirection() to COMPLETE; idp corp in the session")
    func appNativeFederatedSignIn() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let (client, agent) = try await rig.client()
        let runner = FlowRunner(client: client, request: Self.signInRequest)
        guard case .step(let first) = await runner.start() else {
            Issue.record("no first step")
            return
        }
        let federated = try #require(first.actions.first { $0.ref == "action_idp_corp" })
        #expect(federated.type == "FEDERATED" && federated.label == "Corp SSO")
        #expect(first.actions.first?.ref == "action_001", "the password action stays first")

        guard case .step(let redirection) = await runner.submit(actionId: "action_idp_corp", inputs: [:]) else {
            Issue.record("no redirection step: \(await runner.state)")
            return
        }
        #expect(redirection.type == .redirection && redirection.flowId == first.flowId && redirection.error == nil)
        let page = try #require(redirection.redirectURL.flatMap { URLComponents(string: $0) })
        #expect(redirection.redirectURL?.hasPrefix(rig.upstream.base + "/authorize?") == true)
        let pageQuery = Dictionary((page.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(pageQuery["redirect_uri"] == rig.server.issuer + "/federation/corp/callback" && pageQuery["code_challenge_method"] == "S256")
        #expect(redirection.additionalData["idpName"] == "Corp SSO" && redirection.additionalData["idpId"] == "corp")
        #expect(redirection.inputs.map(\.identifier) == ["code", "state"] && redirection.actions.map(\.ref) == ["action_idp_continue"])
        #expect(try await !client.isSignedIn())

        guard case .completed(let done) = await runner.followRedirection() else {
            Issue.record("not completed: \(await runner.state)")
            return
        }
        // The browser came back to the app's redirect URI (the SDK sent afterSignInUrl with the action).
        let arrival = try #require(agent.lastArrival)
        #expect(arrival.hasPrefix("http://127.0.0.1:7777/callback?"))
        #expect(agent.hops.first?.url.hasPrefix(rig.upstream.base + "/authorize?") == true)
        // The assertion was exchanged for a session whose tokens say how it was signed in.
        let user = try #require(done.user)
        #expect(user.email == "ada@upstream.example" && user.claims["idp"]?.stringValue == "corp")
        #expect(user.claims["amr"]?.arrayValue?.contains(.string("fed")) == true)
        #expect(try await client.isSignedIn())
        let access = try await rig.server.verifiedClaims(try await client.getAccessToken())
        #expect(access["idp"]?.stringValue == "corp" && access["sub"]?.stringValue == user.sub)

        // The same person by the hosted page's route is the same account.
        let (viaPage, _) = try await rig.client()
        #expect(try await viaPage.signInWithBrowser(options: SignInOptions(provider: "corp")).sub == user.sub)
    }

    @Test("the flow over the wire: the handoff code and state, the assertion (amr fed, idp corp), exchanged for tokens")
    func appNativeFederatedSignInOnTheWire() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let app = TestBrowser()
        let execute = rig.server.base + "/flow/execute"
        let started = try await app.postJSON(execute, ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION"]).json()
        let executionId = try #require(started["executionId"] as? String)
        let actions = ((started["data"] as? [String: Any])?["actions"] as? [[String: Any]]) ?? []
        #expect(actions.contains { $0["ref"] as? String == "action_idp_corp" && $0["type"] as? String == "FEDERATED" })
        let redirectURI = "io.latchkey.demo:/callback"
        let chosen = try await app.postJSON(
            execute,
            [
                "executionId": executionId, "challengeToken": try #require(started["challengeToken"] as? String),
                "action": "action_idp_corp", "inputs": ["redirect_uri": redirectURI]
            ]
        ).json()
        #expect(chosen["flowStatus"] as? String == "INCOMPLETE" && chosen["type"] as? String == "REDIRECTION", "\(chosen)")
        let redirectURL = try #require((chosen["data"] as? [String: Any])?["redirectURL"] as? String)

        let agent = FederatingUserAgent(serverBase: rig.server.base)
        let callback = try await agent.follow(try #require(URL(string: redirectURL)), until: redirectURI)
        let query = Dictionary(
            (URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
            uniquingKeysWith: { a, _ in a })
        #expect(callback.absoluteString.hasPrefix(redirectURI + "?"), "the custom scheme the app asked for")
        let code = try #require(query["code"]), state = try #require(query["state"])
        #expect(state == rig.upstream.lastAuthorizationQuery["state"], "the upstream state comes back with the handoff code")

        let finished = try await app.postJSON(
            execute,
            [
                "executionId": executionId, "challengeToken": try #require(chosen["challengeToken"] as? String),
                "action": "action_idp_continue", "inputs": ["code": code, "state": state]
            ]
        ).json()
        #expect(finished["flowStatus"] as? String == "COMPLETE", "\(finished)")
        let assertion = try #require(finished["assertion"] as? String)
        let asserted = try await rig.server.verifiedClaims(assertion)
        #expect(asserted["token_use"]?.stringValue == "flow_assertion" && asserted["amr"]?.arrayValue?.contains(.string("fed")) == true)
        let exchange: [String: String] = [
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "client_id": "latchkey-demo",
            "subject_token": assertion, "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "scope": "openid email"
        ]
        let tokens = try await app.postForm(rig.server.base + "/oauth2/token", exchange)
        let json = try tokens.json()
        #expect(tokens.status == 200, "\(json)")
        let idClaims = try await rig.server.verifiedClaims(try #require(json["id_token"] as? String))
        let accessClaims = try await rig.server.verifiedClaims(try #require(json["access_token"] as? String))
        #expect(idClaims["idp"]?.stringValue == "corp" && accessClaims["idp"]?.stringValue == "corp")
        #expect(idClaims["amr"]?.arrayValue?.contains(.string("fed")) == true && idClaims["sub"] == asserted["sub"])

        // The handoff code is single use: a replay in a new execution finds nothing.
        let replayStart = try await app.postJSON(execute, ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION"]).json()
        let replayChosen = try await app.postJSON(
            execute,
            [
                "executionId": try #require(replayStart["executionId"] as? String),
                "challengeToken": try #require(replayStart["challengeToken"] as? String), "action": "action_idp_corp",
                "inputs": [String: String]()
            ]
        ).json()
        let replay = try await app.postJSON(
            execute,
            [
                "executionId": try #require(replayStart["executionId"] as? String),
                "challengeToken": try #require(replayChosen["challengeToken"] as? String), "action": "action_idp_continue",
                "inputs": ["code": code, "state": state]
            ]
        ).json()
        #expect(replay["flowStatus"] as? String != "COMPLETE" && replay["assertion"] == nil, "\(replay)")
    }

    @Test("the provider refuses (access_denied): the flow ends failed with the provider's answer, nobody signed in")
    func appNativeFederatedSignInDenied() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let storage = InMemoryStorageAdapter()
        let (client, agent) = try await rig.client(storage: storage)
        let runner = FlowRunner(client: client, request: Self.signInRequest)
        await runner.start()
        guard case .step(let redirection) = await runner.submit(actionId: "action_idp_corp", inputs: [:]), redirection.type == .redirection
        else {
            Issue.record("no redirection step: \(await runner.state)")
            return
        }
        rig.upstream.setBehavior { $0.denyConsent = true }
        guard case .failed(let failure) = await runner.followRedirection() else {
            Issue.record("expected a failure, got \(await runner.state)")
            return
        }
        #expect(failure.code == .authenticationFailed && failure.serverCode == "access_denied", "\(failure)")
        #expect(!failure.message.isEmpty)
        let arrival = URLComponents(string: agent.lastArrival ?? "")?.queryItems ?? []
        #expect(arrival.first { $0.name == "error" }?.value == "access_denied" && arrival.contains { $0.name == "state" })
        #expect(!arrival.contains { $0.name == "code" })
        #expect(rig.upstream.tokenRequests == 0)
        #expect(try await !client.isSignedIn())
        #expect(await storage.get("latchkey.session.default") == nil)

        // Starting over works once the provider agrees.
        rig.upstream.setBehavior { $0.denyConsent = false }
        await runner.restart()
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        guard case .completed = await runner.followRedirection() else {
            Issue.record("not completed after the restart: \(await runner.state)")
            return
        }
        #expect(try await client.isSignedIn())
    }

    @Test("a federated sign-in is followed by the account's own second factor when the provider asserted none")
    func appNativeFederatedSignInThenTOTP() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        // The account the corp person gets on a first sign-in, with a TOTP enrolled afterwards.
        let (first, _) = try await rig.client()
        let sub = try await first.signInWithBrowser(options: SignInOptions(provider: "corp")).sub
        let secret = try await rig.server.server.enrollTOTP(userId: sub).secret

        let (client, _) = try await rig.client()
        let runner = FlowRunner(client: client, request: Self.signInRequest)
        await runner.start()
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        guard case .step(let otp) = await runner.followRedirection() else {
            Issue.record("expected the second-factor step, got \(await runner.state)")
            return
        }
        #expect(otp.inputs.map(\.identifier) == ["otp"] && otp.additionalData["mfaMethod"] == "totp")
        #expect(try await !client.isSignedIn(), "the provider's word alone does not sign in an account with a second factor")
        let code = rig.server.totpCode(secret)
        guard case .completed(let done) = await runner.submit(actionId: otp.actions.first?.ref, inputs: ["otp": code]) else {
            Issue.record("not completed: \(await runner.state)")
            return
        }
        #expect(done.user?.sub == sub && done.user?.claims["idp"]?.stringValue == "corp")
        let amr = done.user?.claims["amr"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(amr.contains("fed") && amr.contains("otp"), "\(amr)")
    }

    // MARK: Failures upstream

    @Test("the provider's ID token has another nonce: a LatchkeyError, the server's page says why, nothing stored")
    func wrongNonceFailsTheSignIn() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        rig.upstream.setBehavior { $0.wrongNonce = true }
        let storage = InMemoryStorageAdapter()
        let (client, agent) = try await rig.client(storage: storage)
        // The browser stops on the server's login page (the callback shows it again with the failure, HTTP 4xx) and the
        // person closes it: the SDK's answer is `.canceled`, as for any page left without coming back.
        await #expect { try await client.webviewLogin(WebviewLoginRequest(provider: "corp")) } throws: {
            ($0 as? LatchkeyError)?.code == .canceled
        }
        let page = try #require(agent.lastPage)
        #expect((400..<500).contains(page.status) && page.text.contains("class=\"error\""), "\(page.status)")
        #expect(agent.hops.last?.url.hasPrefix(rig.server.issuer + "/federation/corp/callback?") == true)
        #expect(rig.upstream.tokenRequests == 1, "the code was exchanged, and the ID token refused")
        #expect(try await !client.isSignedIn())
        #expect(await storage.get("latchkey.session.default") == nil)

        // The same in an app-native flow: the flow ends failed, and nobody is signed in.
        let runner = FlowRunner(client: client, request: Self.signInRequest)
        await runner.start()
        _ = await runner.submit(actionId: "action_idp_corp", inputs: [:])
        guard case .failed(let failure) = await runner.followRedirection() else {
            Issue.record("expected a failure, got \(await runner.state)")
            return
        }
        #expect(failure.code == .authenticationFailed, "\(failure)")
        #expect(try await !client.isSignedIn())
        #expect(await storage.get("latchkey.session.default") == nil)
    }
}
