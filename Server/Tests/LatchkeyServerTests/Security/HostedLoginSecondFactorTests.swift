import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// The hosted login page asks for the enrolled second factor (TOTP or emailed code) and honours `require_mfa`;
/// the SSO session and the code exist only after it, and an SSO session made with a password alone does not
/// satisfy a later authorization for an account with a second factor. Tokens say how the user signed in (`amr`).
@Suite("Hosted login: second factor, require_mfa, SSO strength, amr")
struct HostedLoginSecondFactorTests {
    static let password = "correct horse battery staple"

    /// The 6-digit TOTP codes the server accepts now (±1 step), by its clock (which stops here: `TestServer.totpCode`).
    static func acceptedCodes(_ secret: String, _ server: TestServer) -> [String] {
        [-30.0, 0, 30].map { server.totpCode(secret, offsetSeconds: $0) }
    }

    /// The code of the server's current time step (its clock stops here: `TestServer.totpCode`).
    static func currentCode(_ secret: String, _ server: TestServer) -> String {
        server.totpCode(secret)
    }

    /// A code the server does not accept now.
    static func wrongCode(_ secret: String, _ server: TestServer) -> String {
        let accepted = acceptedCodes(secret, server)
        return ["000000", "111111", "222222", "333333"].first { !accepted.contains($0) } ?? "444444"
    }

    static func demoUserId(_ server: TestServer) async throws -> String {
        try #require(try await server.server.user(username: "demo@example.com")).id
    }

    /// Posts the code form of `page` (as a person would: the page's own hidden fields).
    static func submitCode(
        _ server: TestServer, _ browser: TestBrowser, page: HTTPResult, code: String?,
        resend: Bool = false
    ) async throws -> HTTPResult {
        var form = [
            "request": try #require(TestBrowser.hiddenField("request", in: page.text)),
            "csrf": try #require(TestBrowser.hiddenField("csrf", in: page.text))
        ]
        if let code { form["otp"] = code }
        if resend { form["resend"] = "1" }
        return try await browser.postForm(server.base + "/login", form)
    }

    static func isCodeForm(_ page: HTTPResult) -> Bool {
        page.text.contains("name=\"otp\"") && page.text.contains("autocomplete=\"one-time-code\"")
    }

    static func amr(_ claims: [String: JSONValue]) -> [String] {
        guard case .array(let values)? = claims["amr"] else { return [] }
        return values.compactMap(\.stringValue)
    }

    /// The unverified claims of an access token (verified by the resource calls elsewhere).
    static func accessClaims(_ token: String) throws -> [String: JSONValue] {
        try CompactJWS(parsing: token).claims(as: [String: JSONValue].self)
    }

    // MARK: The attack, and the second step

    @Test("TOTP enrolled: the password alone gets the code form, no authorization code and no SSO session")
    func passwordAloneIsNotEnough() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        let browser = TestBrowser()
        let o = AuthorizeOptions()
        let page = try await server.openLoginPage(browser, o)
        let afterPassword = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: Self.password)
        // Before the fix this was a 303 to the redirect URI with a code.
        #expect(afterPassword.status == 200)
        #expect(afterPassword.location == nil)
        #expect(Self.isCodeForm(afterPassword))
        #expect(afterPassword.text.contains("authenticator app"))
        #expect(afterPassword.header("Content-Security-Policy")?.contains("script-src") == false, "the code page runs no script")
        #expect(!afterPassword.text.contains("<script"))
        #expect(browser.cookies["lk_session"] == nil, "no SSO session before the second factor")
        #expect(browser.cookies["lk_mfa"] != nil, "the pending step is bound to this browser")

        // The stale password form is refused (its CSRF token was for the previous rendering)...
        let stale = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: Self.password)
        #expect(stale.status == 403)
        #expect(stale.location == nil)
        // ...and sending the password again with a current token does not skip (or restart) the second step.
        let again = try await server.submitLogin(browser, page: afterPassword, username: "demo@example.com", password: Self.password)
        #expect(again.status == 200)
        #expect(again.location == nil)
        #expect(Self.isCodeForm(again))

        // The right code finishes the sign-in.
        let done = try await Self.submitCode(server, browser, page: again, code: Self.currentCode(secret, server))
        #expect(done.status == 303, "\(done.status) \(done.text.prefix(300))")
        let code = try #require(done.locationQuery["code"])
        #expect(done.locationQuery["state"] == o.state)
        #expect(browser.cookies["lk_session"] != nil)
        #expect(browser.cookies["lk_mfa"] == nil)
        let tokens = try await server.exchangeCode(code, o)
        #expect(tokens.status == 200, "\(tokens.text)")
        let json = try tokens.json()
        let id = try await server.verifiedClaims(try #require(json["id_token"] as? String))
        #expect(Self.amr(id) == ["pwd", "otp", "mfa"])
        #expect(id["acr"]?.stringValue == AuthenticationMethods.multiFactorACR)
        let access = try Self.accessClaims(try #require(json["access_token"] as? String))
        #expect(Self.amr(access) == ["pwd", "otp", "mfa"])
        // Refresh keeps the original methods.
        let refreshed = try await server.refresh(try #require(json["refresh_token"] as? String))
        #expect(refreshed.status == 200)
        let refreshedID = try await server.verifiedClaims(try #require(try refreshed.json()["id_token"] as? String))
        #expect(Self.amr(refreshedID) == ["pwd", "otp", "mfa"])
        #expect(Self.amr(try Self.accessClaims(try #require(try refreshed.json()["access_token"] as? String))) == ["pwd", "otp", "mfa"])
    }

    @Test("wrong TOTP codes are counted: four get the form again, the fifth ends the sign-in, then even the right code fails")
    func wrongCodesAreLimited() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        let browser = TestBrowser()
        var page = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, AuthorizeOptions()),
            username: "demo@example.com", password: Self.password)
        #expect(Self.isCodeForm(page))
        let first = page
        for attempt in 1...4 {
            page = try await Self.submitCode(server, browser, page: page, code: Self.wrongCode(secret, server))
            #expect(page.status == 401, "attempt \(attempt)")
            #expect(page.text.contains("The code is incorrect."))
            #expect(Self.isCodeForm(page))
        }
        let fifth = try await Self.submitCode(server, browser, page: page, code: Self.wrongCode(secret, server))
        #expect(fifth.status == 429)
        #expect(fifth.text.contains("Too many incorrect codes"))
        #expect(fifth.location == nil)
        // The sign-in is over: neither the right code nor the password brings it back.
        let late = try await Self.submitCode(server, browser, page: first, code: Self.currentCode(secret, server))
        #expect(late.status == 400)
        #expect(late.location == nil)
        let password = try await server.submitLogin(browser, page: first, username: "demo@example.com", password: Self.password)
        #expect(password.location == nil)
        #expect(browser.cookies["lk_session"] == nil)
    }

    @Test("the pending second step is bound to the browser that passed the password")
    func boundToTheBrowser() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        let victim = TestBrowser()
        let page = try await server.submitLogin(
            victim, page: try await server.openLoginPage(victim, AuthorizeOptions()),
            username: "demo@example.com", password: Self.password)
        #expect(Self.isCodeForm(page))
        let requestId = try #require(TestBrowser.hiddenField("request", in: page.text))
        // Another browser that learned the login request id gets its own valid CSRF pair, but not the binding cookie.
        let other = TestBrowser()
        let otherPage = try await other.get(server.base + "/login?request=" + requestId)
        #expect(!Self.isCodeForm(otherPage), "another browser does not see the code form")
        let stolen = try await other.postForm(
            server.base + "/login",
            [
                "request": requestId, "csrf": try #require(TestBrowser.hiddenField("csrf", in: otherPage.text)),
                "otp": Self.currentCode(secret, server)
            ])
        #expect(stolen.status == 403)
        #expect(stolen.location == nil)
        // The victim's browser still finishes.
        let done = try await Self.submitCode(server, victim, page: page, code: Self.currentCode(secret, server))
        #expect(done.status == 303)
    }

    @Test("emailed code: sent to the outbox, wrong one refused, a resend replaces it, the right one signs in with pwd otp mfa")
    func emailedCode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.server.enrollEmailOTP(userId: try await Self.demoUserId(server))
        let browser = TestBrowser()
        let o = AuthorizeOptions()
        let page = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, o),
            username: "demo@example.com", password: Self.password)
        #expect(page.status == 200 && page.location == nil)
        #expect(Self.isCodeForm(page))
        #expect(page.text.contains("We emailed you a 6-digit code"))
        #expect(page.text.contains("id=\"resend\""))
        let firstCode = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first?.code)
        let wrong = firstCode == "000000" ? "000001" : "000000"
        let refused = try await Self.submitCode(server, browser, page: page, code: wrong)
        #expect(refused.status == 401)
        #expect(refused.location == nil)

        let resent = try await Self.submitCode(server, browser, page: refused, code: nil, resend: true)
        #expect(resent.status == 200)
        #expect(resent.text.contains("A new code is on its way"))
        let messages = try await server.server.outboxMessages(recipient: "demo@example.com")
        #expect(messages.count == 2)
        let secondCode = try #require(messages.first?.code)
        var current = resent
        if secondCode != firstCode {
            current = try await Self.submitCode(server, browser, page: resent, code: firstCode)
            #expect(current.status == 401, "a resend replaces the previous code")
        }
        let done = try await Self.submitCode(server, browser, page: current, code: secondCode)
        #expect(done.status == 303, "\(done.status) \(done.text.prefix(300))")
        let tokens = try await server.exchangeCode(try #require(done.locationQuery["code"]), o)
        let id = try await server.verifiedClaims(try #require(try tokens.json()["id_token"] as? String))
        #expect(Self.amr(id) == ["pwd", "otp", "mfa"])
    }

    @Test("emailed codes: five sends per sign-in, and resending does not reset the wrong-code counter")
    func emailSendsAreLimited() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.server.enrollEmailOTP(userId: try await Self.demoUserId(server))
        let browser = TestBrowser()
        var page = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, AuthorizeOptions()),
            username: "demo@example.com", password: Self.password)
        for _ in 1...4 {
            page = try await Self.submitCode(server, browser, page: page, code: nil, resend: true)
            #expect(page.status == 200)
        }
        let sixth = try await Self.submitCode(server, browser, page: page, code: nil, resend: true)
        #expect(sixth.status == 429)
        #expect(sixth.text.contains("No more codes can be sent"))
        #expect(try await server.server.outboxMessages(recipient: "demo@example.com").count == 5)
        // Four wrong codes, then the fifth ends it even though codes were resent in between.
        page = sixth
        for _ in 1...4 { page = try await Self.submitCode(server, browser, page: page, code: "not-a-code") }
        #expect(page.status == 401)
        let last = try await Self.submitCode(server, browser, page: page, code: "not-a-code")
        #expect(last.status == 429)
    }

    // MARK: require_mfa

    @Test("require_mfa: an account without a second factor is refused with a localized message; with TOTP it signs in")
    func requireMFA() async throws {
        let server = try await TestServer.startRequiringMFA()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let refused = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, AuthorizeOptions()),
            username: "demo@example.com", password: Self.password)
        #expect(refused.status == 403)
        #expect(refused.location == nil)
        #expect(refused.text.contains("This application needs a second sign-in step, which your account does not have yet."))
        #expect(browser.cookies["lk_session"] == nil)

        var german = AuthorizeOptions()
        german.extra = ["ui_locales": "de"]
        let deBrowser = TestBrowser()
        let deRefused = try await server.submitLogin(
            deBrowser, page: try await server.openLoginPage(deBrowser, german),
            username: "demo@example.com", password: Self.password)
        #expect(deRefused.status == 403)
        let germanText = try #require(MessageCatalog.text("login.mfa_not_enrolled", locale: .de))
        #expect(deRefused.text.contains(HTML.escape(germanText)))

        // The reachFive tkn path is refused on require_mfa apps too (password/login refuses to mint one already).
        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        let page = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, AuthorizeOptions()),
            username: "demo@example.com", password: Self.password)
        #expect(Self.isCodeForm(page))
        let done = try await Self.submitCode(server, browser, page: page, code: Self.currentCode(secret, server))
        #expect(done.status == 303)
        #expect(done.locationQuery["code"] != nil)
    }

    // MARK: SSO

    @Test("a password-only SSO session does not satisfy a later authorize once the account has a second factor")
    func ssoReuseDoesNotBypass() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        // No factor yet: a password session, reused silently as before.
        _ = try await server.signIn(browser)
        let silent = try await browser.get(server.authorizeURL(AuthorizeOptions()))
        #expect(silent.status == 302)
        #expect(silent.locationQuery["code"] != nil, "a single-factor account keeps silent SSO")

        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        // Now the old session is not enough: the login page, and prompt=none says login_required.
        let again = try await browser.get(server.authorizeURL(AuthorizeOptions()))
        #expect(again.status == 302)
        #expect(again.location?.hasPrefix("/login?request=") == true, "expected the login page, got \(again.location ?? "")")
        var none = AuthorizeOptions()
        none.prompt = "none"
        let noPrompt = try await browser.get(server.authorizeURL(none))
        #expect(noPrompt.locationQuery["error"] == "login_required")
        #expect(noPrompt.locationQuery["code"] == nil)

        // After password + TOTP, the new session is reused silently, and its tokens still say mfa.
        let page = try await server.submitLogin(
            browser, page: try await browser.get(server.base + (again.location ?? "")),
            username: "demo@example.com", password: Self.password)
        let done = try await Self.submitCode(server, browser, page: page, code: Self.currentCode(secret, server))
        #expect(done.status == 303)
        let o = AuthorizeOptions()
        let reuse = try await browser.get(server.authorizeURL(o))
        let code = try #require(reuse.locationQuery["code"], "\(reuse.location ?? "")")
        let tokens = try await server.exchangeCode(code, o)
        let id = try await server.verifiedClaims(try #require(try tokens.json()["id_token"] as? String))
        #expect(Self.amr(id) == ["pwd", "otp", "mfa"])
    }

    // MARK: amr on the other paths

    @Test("amr: a password-only hosted sign-in says pwd (no acr); the flow assertion exchange says pwd")
    func amrOnPasswordAndFlowPaths() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let id = try await server.verifiedClaims(try #require(tokens.idToken))
        #expect(Self.amr(id) == ["pwd"])
        #expect(id["acr"] == nil)
        #expect(Self.amr(try Self.accessClaims(tokens.accessToken)) == ["pwd"])

        let started = try await TestBrowser().postJSON(
            server.base + "/flow/execute",
            [
                "applicationId": "latchkey-demo", "flowType": "AUTHENTICATION",
                "inputs": ["username": "demo@example.com", "password": Self.password]
            ])
        let assertion = try #require(try started.json()["assertion"] as? String)
        let exchanged = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "client_id": "latchkey-demo", "subject_token": assertion,
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "scope": "openid profile email offline_access"
            ])
        #expect(exchanged.status == 200, "\(exchanged.text)")
        let flowID = try await server.verifiedClaims(try #require(try exchanged.json()["id_token"] as? String))
        #expect(Self.amr(flowID) == ["pwd"])
        #expect(Self.amr(try Self.accessClaims(try #require(try exchanged.json()["access_token"] as? String))) == ["pwd"])
    }

    @Test("amr: the flow with TOTP says pwd otp mfa")
    func amrOnFlowWithTOTP() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        let browser = TestBrowser()
        let started = try await browser.postJSON(
            server.base + "/flow/execute",
            [
                "applicationId": "latchkey-demo", "flowType": "AUTHENTICATION",
                "inputs": ["username": "demo@example.com", "password": Self.password]
            ])
        let body = try started.json()
        #expect(body["assertion"] == nil, "a password alone does not complete the flow: \(started.text)")
        let executionId = try #require(body["executionId"] as? String)
        var step: [String: Any] = ["executionId": executionId, "action": "action_totp", "inputs": ["otp": Self.currentCode(secret, server)]]
        if let challenge = body["challengeToken"] as? String { step["challengeToken"] = challenge }
        let finished = try await browser.postJSON(server.base + "/flow/execute", step)
        let assertion = try #require(try finished.json()["assertion"] as? String, "\(finished.text)")
        let exchanged = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "client_id": "latchkey-demo", "subject_token": assertion,
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "scope": "openid"
            ])
        let id = try await server.verifiedClaims(try #require(try exchanged.json()["id_token"] as? String))
        #expect(Self.amr(id) == ["pwd", "otp", "mfa"])
        #expect(id["acr"]?.stringValue == AuthenticationMethods.multiFactorACR)
    }

    @Test("amr: reachFive password tkn says pwd; password + step-up says pwd otp mfa")
    func amrOnReachFivePaths() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let login = try await server.call(
            "POST", "/identity/v1/password/login", token: nil,
            json: [
                "email": "demo@example.com", "password": Self.password, "client_id": "latchkey-demo"
            ], contentType: "application/json")
        let tkn = try #require(try login.json()["tkn"] as? String)
        var o = AuthorizeOptions()
        o.extra = ["tkn": tkn]
        let redirect = try await TestBrowser().get(server.authorizeURL(o).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
        let tokens = try await server.exchangeCode(try #require(redirect.locationQuery["code"]), o)
        let id = try await server.verifiedClaims(try #require(try tokens.json()["id_token"] as? String))
        #expect(Self.amr(id) == ["pwd"])

        // Step-up with TOTP.
        let secret = try await server.server.enrollTOTP(userId: try await Self.demoUserId(server)).secret
        let pending = try await server.call(
            "POST", "/identity/v1/password/login", token: nil,
            json: [
                "email": "demo@example.com", "password": Self.password, "client_id": "latchkey-demo"
            ], contentType: "application/json")
        let pendingTkn = try #require(try pending.json()["tkn"] as? String)
        let pkce = TestPKCE()
        let stepUp = try await server.call(
            "POST", "/identity/v1/mfa/stepup", token: nil,
            json: [
                "tkn": pendingTkn, "client_id": "latchkey-demo", "redirect_uri": "http://127.0.0.1:7777/callback",
                "code_challenge": pkce.challenge, "code_challenge_method": "S256", "scope": "openid"
            ], contentType: "application/json")
        let stepUpToken = try #require(try stepUp.json()["token"] as? String, "\(stepUp.text)")
        let start = try await server.call(
            "POST", "/identity/v1/passwordless/start", token: nil,
            json: [
                "step_up": stepUpToken, "auth_type": "otp"
            ], contentType: "application/json")
        let challengeId = try #require(try start.json()["challenge_id"] as? String, "\(start.text)")
        let verify = try await server.call(
            "POST", "/identity/v1/passwordless/verify", token: nil,
            json: [
                "challenge_id": challengeId, "verification_code": Self.currentCode(secret, server)
            ], contentType: "application/json")
        let code = try #require(try verify.json()["code"] as? String, "\(verify.text)")
        var stepped = AuthorizeOptions()
        stepped.pkce = pkce
        let exchanged = try await server.exchangeCode(code, stepped)
        let steppedID = try await server.verifiedClaims(try #require(try exchanged.json()["id_token"] as? String, "\(exchanged.text)"))
        #expect(Self.amr(steppedID) == ["pwd", "otp", "mfa"])
    }

    @Test("discovery lists amr and acr")
    func discovery() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let document = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        let claims = try #require(document["claims_supported"] as? [String])
        #expect(claims.contains("amr") && claims.contains("acr"))
        #expect(document["acr_values_supported"] as? [String] == [AuthenticationMethods.multiFactorACR, AuthenticationMethods.singleFactorACR])
    }
}
