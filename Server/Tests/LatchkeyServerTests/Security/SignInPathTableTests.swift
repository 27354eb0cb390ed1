import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Security review 3, R3-1, as a table: every way to sign in, against an account with an emailed second factor (and
/// a linked provider identity, and an Apple ID for its verified address), for an application of each native sign-in
/// policy and one with `require_mfa`. No cell may end in a code, an assertion or a ticket that redeems for one: the
/// second factor is asked for, or the sign-in is refused.
@Suite("Security: no sign-in path yields tokens without the second factor (R3-1 table)")
struct SignInPathTableTests {
    enum Path: String, CaseIterable {
        case hostedPassword, hostedFederation, flowPassword, flowFederation, deviceGrant, reachFivePassword, nativeProvider, nativeApple
    }

    enum Outcome: String { case tokens, secondFactor, refused }

    static let applications = [DevelopmentDefaults.demoClientId, "ios-app", "web", "mfa-app"]
    static let callback = "http://127.0.0.1:7777/callback"

    /// Runs `path` for `clientId` up to where a code would be issued, and says how it ended.
    static func run(_ path: Path, clientId: String, _ native: NativeProviderSignInAttackTests.Native) async throws -> Outcome {
        let server = native.server
        var options = AuthorizeOptions()
        options.clientId = clientId
        let demo = (username: "demo@example.com", password: DevelopmentDefaults.demoPassword)
        func redeemed(_ ticket: String) async throws -> Outcome {
            var redeem = options
            redeem.extra["tkn"] = ticket
            let answer = try await TestBrowser().get(server.authorizeURL(redeem).replacingOccurrences(of: "/oauth2/", with: "/oauth/"))
            return answer.locationQuery["code"] != nil ? .tokens : .refused
        }
        switch path {
        case .hostedPassword:
            let browser = TestBrowser()
            let page = try await server.openLoginPage(browser, options)
            let done = try await server.submitLogin(browser, page: page, username: demo.username, password: demo.password)
            if done.locationQuery["code"] != nil { return .tokens }
            return HostedLoginSecondFactorTests.isCodeForm(done) ? .secondFactor : .refused
        case .hostedFederation:
            let back = try await native.fixture.signIn(TestBrowser(), options)
            if back.locationQuery["code"] != nil { return .tokens }
            return HostedLoginSecondFactorTests.isCodeForm(back) ? .secondFactor : .refused
        case .flowPassword:
            let answer = try await TestBrowser().postJSON(
                server.base + "/flow/execute",
                ["applicationId": clientId, "flowType": "AUTHENTICATION", "inputs": ["username": demo.username, "password": demo.password]])
            if answer.flowStatus == "COMPLETE" { return .tokens }
            return answer.flowStatus == "INCOMPLETE" && answer.text.contains("\"otp\"") ? .secondFactor : .refused
        case .flowFederation:
            // The FEDERATED action, the REDIRECTION step through the provider, and its code and state back to the flow.
            let flow = FlowDriver(server)
            try await flow.start("AUTHENTICATION", applicationId: clientId)
            let chosen = try await flow.submit("action_idp_corp", ["redirect_uri": Self.callback])
            guard chosen.flowStatus == "INCOMPLETE", let redirectURL = (try chosen.json()["data"] as? [String: Any])?["redirectURL"] as? String
            else { return .refused }
            let browser = TestBrowser()
            let back = try await native.fixture.follow(browser, from: try await browser.get(redirectURL))
            guard let code = back.locationQuery["code"], let state = back.locationQuery["state"] else { return .refused }
            let finished = try await flow.submit("action_idp_continue", ["code": code, "state": state])
            if finished.flowStatus == "COMPLETE" { return .tokens }
            return finished.flowStatus == "INCOMPLETE" && finished.text.contains("\"otp\"") ? .secondFactor : .refused
        case .deviceGrant:
            let started = try await TestBrowser().postForm(
                server.base + "/oauth2/device_authorization", ["client_id": clientId, "scope": "openid email offline_access"])
            guard let userCode = try started.json()["user_code"] as? String else { return .refused }
            let browser = TestBrowser()
            let entry = try await browser.get(server.base + "/device")
            let csrf = try #require(TestBrowser.hiddenField("csrf", in: entry.text))
            let page = try await browser.postForm(server.base + "/device", ["csrf": csrf, "user_code": userCode])
            guard page.status == 303, let location = page.location, location.hasPrefix("/login") else { return .refused }
            let login = try await browser.get(server.base + location)
            let done = try await server.submitLogin(browser, page: login, username: demo.username, password: demo.password)
            // Back on the device page signed in: the grant could be approved without the factor.
            if done.status == 303, done.location?.hasPrefix("/device") == true { return .tokens }
            return HostedLoginSecondFactorTests.isCodeForm(done) ? .secondFactor : .refused
        case .reachFivePassword:
            let answer = try await TestBrowser().postJSON(
                server.base + "/identity/v1/password/login",
                ["client_id": clientId, "email": demo.username, "password": demo.password, "grant_type": "password"])
            guard answer.status == 200, let ticket = try answer.json()["tkn"] as? String else { return .refused }
            if try await redeemed(ticket) == .tokens { return .tokens }
            return try answer.json()["mfa_required"] as? Bool == true ? .secondFactor : .refused
        case .nativeProvider, .nativeApple:
            // The server's nonce when it issues one to this application, else the attacker's own.
            let nonce = try await native.serverNonce(clientId) ?? "attacker-nonce"
            let answer =
                path == .nativeProvider
                ? try await native.exchange(idToken: try native.corpToken(nonce: nonce), nonce: nonce, clientId: clientId, options: options)
                : try await native.exchange(
                    provider: "apple", idToken: try native.appleToken(nonce: nonce), nonce: nonce, clientId: clientId, options: options)
            if answer.locationQuery["code"] != nil { return .tokens }
            if let ticket = answer.locationQuery["tkn"] {
                // The ticket of the second-factor answer must not redeem for a code either.
                return try await redeemed(ticket) == .tokens ? .tokens : .secondFactor
            }
            return .refused
        }
    }

    @Test("every sign-in path × every application policy: the second factor or a refusal, never tokens")
    func table() async throws {
        let native = try await NativeProviderSignInAttackTests.Native.start()
        defer { Task { await native.stop() } }
        _ = try await native.demoWithSecondFactorAndLinkedIdentity()
        var outcomes: [String: Outcome] = [:]
        for path in Path.allCases {
            for clientId in Self.applications {
                outcomes["\(path.rawValue) × \(clientId)"] = try await Self.run(path, clientId: clientId, native)
            }
        }
        let table = outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.rawValue)" }.joined(separator: "\n")
        #expect(!outcomes.values.contains(.tokens), "\n\(table)")
        // The whole table, so that no cell passes by failing some other way (a throttle, a broken fixture): a browser
        // application has no native door (refused on each), and every other cell reaches the second factor — the
        // account has one, so `require_mfa` asks for it too, and the development server waives the mobile attestation.
        let nativeDoors: Set<Path> = [.flowPassword, .flowFederation, .reachFivePassword, .nativeProvider, .nativeApple]
        for path in Path.allCases {
            for clientId in Self.applications {
                let expected: Outcome = clientId == "web" && nativeDoors.contains(path) ? .refused : .secondFactor
                #expect(outcomes["\(path.rawValue) × \(clientId)"] == expected, "\(path.rawValue) × \(clientId)\n\(table)")
            }
        }
    }

    @Test("a ticket that still owes the second factor (mfa_pending) gets the code form on the hosted page, never a code")
    func anMFAPendingTicketOnTheHostedPageAsksForTheFactor() async throws {
        let native = try await NativeProviderSignInAttackTests.Native.start()
        defer { Task { await native.stop() } }
        _ = try await native.demoWithSecondFactorAndLinkedIdentity()
        let server = native.server
        let login = try await TestBrowser().postJSON(
            server.base + "/identity/v1/password/login",
            ["client_id": DevelopmentDefaults.demoClientId, "email": "demo@example.com", "password": DevelopmentDefaults.demoPassword])
        #expect(try login.json()["mfa_required"] as? Bool == true, "\(login.text)")
        let ticket = try #require(try login.json()["tkn"] as? String)
        // The page's passkey button posts a ticket in place of the password: an mfa_pending one goes on to the factor.
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        let posted = try await browser.postForm(server.base + "/login", ["request": request, "csrf": csrf, "tkn": ticket])
        #expect(posted.locationQuery["code"] == nil, "\(posted.location ?? "")")
        #expect(HostedLoginSecondFactorTests.isCodeForm(posted), "\(posted.status) \(posted.text.prefix(300))")
        // Redeemed at the authorization endpoint instead (a fresh one: tickets are single use), no code either.
        let again = try await TestBrowser().postJSON(
            server.base + "/identity/v1/password/login",
            ["client_id": DevelopmentDefaults.demoClientId, "email": "demo@example.com", "password": DevelopmentDefaults.demoPassword])
        var redeem = AuthorizeOptions()
        redeem.extra["tkn"] = try #require(try again.json()["tkn"] as? String)
        let exchanged = try await TestBrowser().get(server.authorizeURL(redeem).replacingOccurrences(of: "/oauth2/", with: "/oauth/"))
        #expect(exchanged.locationQuery["code"] == nil && exchanged.locationQuery["error"] == "access_denied", "\(exchanged.location ?? "")")
    }
}
