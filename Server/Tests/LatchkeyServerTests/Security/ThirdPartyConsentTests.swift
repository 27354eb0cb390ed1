import Foundation
import Latchkey
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// R3-2 (third security review): a registered application is third-party. It gets nothing silently (`prompt=none`
/// answers `consent_required` until the person consents on a page), its tokens manage no account without
/// `latchkey.account` (a scope registration never grants), and a token an SSO session answered for is not a recent
/// sign-in. The administrator chain of the review (registered app → silent token → planted passkey → console) stops
/// at its second step. Configured (first-party) applications behave as before.
@Suite("Security: consent for third-party applications (R3-2)")
struct ThirdPartyConsentTests {
    static let redirect = "http://127.0.0.1:7777/callback"

    /// The review's set-up: `backend` is the operator's registration automation; the demo user is an administrator;
    /// `partner` is a configured application the operator marks third-party (with `latchkey.account`).
    static func start() async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "backend" { client.scopes += ["registration"] }
                if client.clientId == "latchkey-demo" { client.scopes += [ResourceCaller.adminScope] }
                return client
            }
            var partner = ClientConfiguration(
                clientId: "partner", name: "Partner App", redirectUris: [redirect],
                grantTypes: [.authorizationCode, .refreshToken, .deviceCode],
                scopes: ["openid", "email", "phone", "offline_access", ApplicationTrust.accountScope])
            partner.thirdParty = true
            partner.passkeyOrigins = ["self"]
            configuration.clients.append(partner)
            configuration.users = configuration.users.map { user in
                var user = user
                if user.username == "demo@example.com" {
                    user.roles = ["admin"]
                    user.claims["phone_number"] = "+15551230002"
                    user.claims["name"] = "Demo User"
                }
                return user
            }
        }
    }

    /// Step 1 of the review's chain: an application registered with the automation's token, named like a first-party one.
    static func registerLookAlike(_ server: TestServer, scope: String = "openid profile") async throws -> String {
        let token = try await server.clientToken(scope: "registration")
        let registered = try await server.call(
            "POST", "/oauth2/register", token: token,
            json: [
                "client_name": "Web App", "application_type": "native", "redirect_uris": [redirect], "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "scope": scope + " " + ApplicationTrust.accountScope, "latchkey_passkey_allowed_origins": ["self"]
            ], contentType: "application/json")
        #expect(registered.status == 201, "\(registered.text)")
        let trimmed = try registered.value("latchkey_trimmed.scope") as? [String] ?? []
        #expect(trimmed.contains(ApplicationTrust.accountScope), "registration never grants latchkey.account: \(registered.text)")
        #expect(try registered.string("scope")?.contains(ApplicationTrust.accountScope) == false)
        return try #require(try registered.string("client_id"))
    }

    static func options(_ clientId: String, scope: String = "openid", prompt: String? = nil) -> AuthorizeOptions {
        var options = AuthorizeOptions()
        options.clientId = clientId
        options.redirectUri = redirect
        options.scope = scope
        options.prompt = prompt
        return options
    }

    /// Follows a redirect to the consent page and answers it; returns the final redirect to the application.
    static func answerConsent(_ server: TestServer, _ browser: TestBrowser, at location: String, allow: Bool) async throws -> HTTPResult {
        #expect(location.hasPrefix("/consent?request="), "expected the consent page, got \(location)")
        let page = try await browser.get(server.base + location)
        #expect(page.status == 200, "\(page.text.prefix(300))")
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        return try await browser.postForm(
            server.base + "/consent", ["request": request, "csrf": csrf, "decision": allow ? "allow" : "deny"])
    }

    static func redeem(_ server: TestServer, _ query: [String: String], _ options: AuthorizeOptions) async throws -> [String: Any] {
        let code = try #require(query["code"], "no code: \(query)")
        let response = try await server.exchangeCode(code, options)
        #expect(response.status == 200, "\(response.text)")
        return try response.json()
    }

    @Test("the review's chain: a registered app gets no silent code, and its openid token manages nothing (403 insufficient_scope)")
    func aRegisteredApplicationGetsNothingSilently() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let clientId = try await Self.registerLookAlike(server)
        // The victim (an administrator) signs in to a first-party application; the browser holds the SSO session.
        let browser = TestBrowser()
        _ = try await server.tokens(browser)

        // Step 2: the victim follows the attacker's link with prompt=none: no code, `consent_required`.
        let silent = try await browser.get(server.authorizeURL(Self.options(clientId, prompt: "none")))
        #expect(silent.status == 302)
        #expect(silent.locationQuery["error"] == "consent_required", "\(silent.location ?? "")")
        #expect(silent.locationQuery["code"] == nil)

        // Without prompt=none the consent page is shown: the application's name, that it is not the service's, where it
        // sends the browser, the scopes in words.
        let consented = Self.options(clientId)
        let asked = try await browser.get(server.authorizeURL(consented))
        let location = try #require(asked.location)
        #expect(location.hasPrefix("/consent?request="), "\(location)")
        let page = try await browser.get(server.base + location)
        #expect(page.text.contains("Web App") && page.text.contains("is not run by this service"), "\(page.text)")
        #expect(page.text.contains("http://127.0.0.1:7777"))
        #expect(page.text.contains(MessageCatalog.text("scope.openid", locale: .en) ?? "-"))
        #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)

        // Consenting to openid only: a code, and a token that reads `sub` at userinfo and manages nothing.
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        let allowed = try await browser.postForm(server.base + "/consent", ["request": request, "csrf": csrf, "decision": "allow"])
        #expect(allowed.status == 303, "\(allowed.text)")
        let tokens = try await Self.redeem(server, allowed.locationQuery, consented)
        let access = try #require(tokens["access_token"] as? String)
        #expect(tokens["scope"] as? String == "openid")
        let userinfo = try await server.userinfo(access)
        #expect(userinfo.status == 200)
        #expect(try userinfo.json().keys.sorted() == ["sub"], "\(userinfo.text)")

        for (method, path) in [
            ("GET", "/users/me"), ("PUT", "/users/me"), ("GET", "/scim2/Me"), ("GET", "/users/me/sessions"), ("GET", "/users/me/consents"),
            ("POST", "/identity/v1/webauthn/registration-options"), ("GET", "/identity/v1/webauthn/registration"),
            ("POST", "/users/me/identities/corp"), ("GET", "/users/me/identities")
        ] {
            let refused = try await server.call(method, path, token: access, json: [String: String](), contentType: "application/json")
            #expect(refused.status == 403, "\(method) \(path): \(refused.status) \(refused.text)")
            #expect(refused.header("WWW-Authenticate")?.contains("insufficient_scope") == true, "\(method) \(path)")
        }
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(try await server.server.store.passkeys(userId: demo.id).isEmpty, "no passkey planted")

        // Once consented, prompt=none answers with a code; the same scopes ask nothing more.
        let again = try await browser.get(server.authorizeURL(Self.options(clientId, prompt: "none")))
        #expect(again.locationQuery["code"] != nil, "\(again.location ?? "")")
        // More scopes than were consented to: asked again (prompt=none: consent_required).
        let wider = try await browser.get(server.authorizeURL(Self.options(clientId, scope: "openid profile", prompt: "none")))
        #expect(wider.locationQuery["error"] == "consent_required", "\(wider.location ?? "")")

        let granted = try await server.server.store.auditEvents(AuditQuery(types: [.consentGranted], limit: 10))
        #expect(granted.count == 1 && granted.first?.subject == demo.id && granted.first?.clientId == clientId)
        #expect(granted.first?.details["scope"] == "openid")
    }

    @Test("a refusal on the consent page sends access_denied and is audited; prompt=consent always asks")
    func refusalAndPromptConsent() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let clientId = try await Self.registerLookAlike(server, scope: "openid email")
        let browser = TestBrowser()
        // Signed in to the third-party application itself: the sign-in page first, then the consent page.
        let page = try await server.openLoginPage(browser, Self.options(clientId, scope: "openid email"))
        let signedIn = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(signedIn.status == 303)
        let denied = try await Self.answerConsent(server, browser, at: try #require(signedIn.location), allow: false)
        #expect(denied.status == 302)
        #expect(denied.locationQuery["error"] == "access_denied", "\(denied.location ?? "")")
        #expect(denied.locationQuery["code"] == nil)
        #expect(try await server.server.store.auditEvents(AuditQuery(types: [.consentDenied], limit: 10)).count == 1)

        // Allowed, then asked again at prompt=consent although the consent covers the scopes.
        let second = try await browser.get(server.authorizeURL(Self.options(clientId, scope: "openid email")))
        let allowed = try await Self.answerConsent(server, browser, at: try #require(second.location), allow: true)
        #expect(allowed.locationQuery["code"] != nil)
        let forced = try await browser.get(server.authorizeURL(Self.options(clientId, scope: "openid email", prompt: "consent")))
        #expect(forced.location?.hasPrefix("/consent?request=") == true, "\(forced.location ?? "")")
        // A consent page answered twice (another tab) issues one code.
        let once = try await browser.get(server.base + (forced.location ?? ""))
        let request = try #require(TestBrowser.hiddenField("request", in: once.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: once.text))
        let first = try await browser.postForm(server.base + "/consent", ["request": request, "csrf": csrf, "decision": "allow"])
        #expect(first.locationQuery["code"] != nil)
        let replay = try await browser.postForm(server.base + "/consent", ["request": request, "csrf": csrf, "decision": "allow"])
        #expect(replay.status == 400 && replay.location == nil)
        // Without the form's CSRF token nothing is decided.
        let third = try await browser.get(server.authorizeURL(Self.options(clientId, scope: "openid email", prompt: "consent")))
        let forged = try await TestBrowser().postForm(
            server.base + "/consent",
            ["request": String((third.location ?? "").dropFirst("/consent?request=".count)), "csrf": "x", "decision": "allow"])
        #expect(forged.status == 403)
    }

    @Test("the consent page answers only what the gate handed it: never the sign-in page's own request (no way around its checks)")
    func theConsentPageIsNoSideDoor() async throws {
        let server = try await TestServer.start { configuration in
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.requireMFA = true }
                return client
            }
        }
        defer { Task { await server.stop() } }
        // A session of an account without a second factor (another application), then a require_mfa application's
        // request, which the session does not answer: the sign-in page waits with its own login request.
        let browser = TestBrowser()
        var other = AuthorizeOptions()
        other.clientId = "backend"
        other.redirectUri = "https://backend.example/callback"
        other.scope = "openid"
        _ = try await server.signIn(browser, other)
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        // Posting that request to the consent page, with the sign-in page's own CSRF token, issues nothing.
        let shown = try await browser.get(server.base + ConsentGate.page(requestId: request))
        #expect(shown.status == 400 && !shown.text.contains("id=\"allow\""), "\(shown.status)")
        let posted = try await browser.postForm(server.base + "/consent", ["request": request, "csrf": csrf, "decision": "allow"])
        #expect(posted.status == 400, "\(posted.status) \(posted.location ?? "")")
        #expect(posted.locationQuery["code"] == nil)
    }

    @Test("a native exchange (login ticket) for a third-party application without consent answers consent_required")
    func nativeExchangeNeedsConsent() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let login = try await TestBrowser().postJSON(
            server.base + "/identity/v1/password/login",
            ["client_id": "partner", "email": "demo@example.com", "password": "correct horse battery staple"])
        #expect(login.status == 200, "\(login.text)")
        let ticket = try #require(try login.json()["tkn"] as? String)
        var options = Self.options("partner")
        options.extra["tkn"] = ticket
        let exchange = try await TestBrowser().get(server.authorizeURL(options))
        #expect(exchange.locationQuery["error"] == "consent_required", "\(exchange.location ?? "")")
        #expect(exchange.locationQuery["code"] == nil)
    }

    @Test("a consented third-party token with latchkey.account reads only its scopes' claims; first-party tokens are unchanged")
    func accountScopeReleasesOnlyTheScopesClaims() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let scope = "openid email " + ApplicationTrust.accountScope
        let partner = Self.options("partner", scope: scope)
        let page = try await server.openLoginPage(browser, partner)
        let signedIn = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        let consentPage = try await browser.get(server.base + (signedIn.location ?? ""))
        #expect(consentPage.text.contains(MessageCatalog.text("scope.latchkey.account", locale: .en) ?? "-"), "the account scope in words")
        let allowed = try await Self.answerConsent(server, browser, at: try #require(signedIn.location), allow: true)
        let tokens = try await Self.redeem(server, allowed.locationQuery, partner)
        let access = try #require(tokens["access_token"] as? String)
        let me = try await server.call("GET", "/users/me", token: access)
        #expect(me.status == 200, "\(me.text)")
        let attributes = try #require(try me.value("attributes") as? [String: Any])
        #expect(attributes["email"] as? String == "demo@example.com")
        #expect(attributes["phone_number"] == nil && attributes["name"] == nil && attributes["username"] == nil, "\(attributes)")
        #expect(try await server.userinfo(access).json()["phone_number"] == nil)
        // The interactive sign-in behind this token is recent: a passkey may be added with it (within the window).
        let options = try await server.call(
            "POST", "/identity/v1/webauthn/registration-options", token: access, json: ["origin": server.base], contentType: "application/json")
        #expect(options.status == 200, "\(options.text)")

        // First-party: every claim, as before; prompt=none with the session answers at once (no consent page).
        let first = try await server.tokens(TestBrowser())
        let all = try #require(try await server.call("GET", "/users/me", token: first.accessToken).value("attributes") as? [String: Any])
        #expect(all["phone_number"] as? String == "+15551230002" && all["username"] as? String == "demo@example.com")
        let silent = try await browser.get(server.authorizeURL(AuthorizeOptions().with(prompt: "none")))
        #expect(silent.locationQuery["code"] != nil, "\(silent.location ?? "")")
    }

    @Test("a token an SSO session answered for (another application's sign-in) is not a recent sign-in: no passkey, no email change")
    func ssoReuseIsNotARecentSignIn() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let interactive = try await server.tokens(browser)
        // A second first-party token, answered by the session without any credential shown.
        var options = AuthorizeOptions()
        options.prompt = "none"
        let silent = try await browser.get(server.authorizeURL(options))
        let reused = try await Self.redeem(server, silent.locationQuery, options)
        let reusedToken = try #require(reused["access_token"] as? String)
        let claims = try await server.verifiedClaims(reusedToken)
        #expect(claims["lk_sso"] == .bool(true))
        #expect(claims["amr"] == .array([.string("pwd")]), "the marker is never published")

        let refused = try await server.call(
            "POST", "/identity/v1/webauthn/registration-options", token: reusedToken, json: ["origin": server.base],
            contentType: "application/json")
        #expect(refused.status == 401, "\(refused.text)")
        #expect(refused.header("WWW-Authenticate")?.contains("insufficient_user_authentication") == true)
        let email = try await server.call(
            "POST", "/users/me/email", token: reusedToken, json: ["email": "elsewhere@example.com"], contentType: "application/json")
        #expect(email.status == 401, "\(email.text)")
        // Refreshing keeps what the token was.
        let refreshed = try await server.refresh(try #require(reused["refresh_token"] as? String))
        let refreshedToken = try #require(try refreshed.json()["access_token"] as? String)
        #expect(try await server.verifiedClaims(refreshedToken)["lk_sso"] == .bool(true))
        // The interactive token of the same session may.
        let allowed = try await server.call(
            "POST", "/identity/v1/webauthn/registration-options", token: interactive.accessToken, json: ["origin": server.base],
            contentType: "application/json")
        #expect(allowed.status == 200, "\(allowed.text)")
        #expect(try await server.verifiedClaims(interactive.accessToken)["lk_sso"] == nil)
    }

    @Test("a person lists and withdraws consents (API), which revokes the application's tokens; an administrator too")
    func consentsAreListedAndWithdrawn() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let clientId = try await Self.registerLookAlike(server, scope: "openid email offline_access")
        let browser = TestBrowser()
        let own = try await server.tokens(browser)
        let consented = Self.options(clientId, scope: "openid email offline_access")
        let asked = try await browser.get(server.authorizeURL(consented))
        let allowed = try await Self.answerConsent(server, browser, at: try #require(asked.location), allow: true)
        let third = try await Self.redeem(server, allowed.locationQuery, consented)
        let thirdAccess = try #require(third["access_token"] as? String)
        #expect(try await server.userinfo(thirdAccess).status == 200)

        let listed = try await server.call("GET", "/users/me/consents", token: own.accessToken)
        #expect(listed.status == 200, "\(listed.text)")
        #expect(try listed.value("consents.0.client_id") as? String == clientId)
        #expect(try listed.value("consents.0.client_name") as? String == "Web App")
        #expect(try listed.value("consents.0.scopes") as? [String] == ["email", "offline_access", "openid"])
        #expect(try listed.value("consents.0.granted_at") as? String != nil)

        let withdrawn = try await server.call("DELETE", "/users/me/consents/\(clientId)", token: own.accessToken)
        #expect(withdrawn.status == 204, "\(withdrawn.text)")
        #expect(try await server.call("DELETE", "/users/me/consents/\(clientId)", token: own.accessToken).status == 404)
        #expect(try await server.userinfo(thirdAccess).status == 401, "its tokens stopped working")
        let refresh = try await server.refresh(try #require(third["refresh_token"] as? String), clientId: clientId)
        #expect(refresh.status == 400)
        let silent = try await browser.get(server.authorizeURL(Self.options(clientId, scope: "openid email", prompt: "none")))
        #expect(silent.locationQuery["error"] == "consent_required")
        #expect(try await server.server.store.auditEvents(AuditQuery(types: [.consentWithdrawn], limit: 10)).first?.clientId == clientId)

        // An administrator lists and withdraws a person's consents; the person's own token is no administrator's.
        let again = try await browser.get(server.authorizeURL(Self.options(clientId, scope: "openid email")))
        _ = try await Self.answerConsent(server, browser, at: try #require(again.location), allow: true)
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(try await server.call("GET", "/admin/v1/users/\(demo.id)/consents", token: own.accessToken).status == 403)
        let admin = try await server.userTokens(scope: "openid " + ResourceCaller.adminScope).accessToken
        let adminList = try await server.call("GET", "/admin/v1/users/\(demo.id)/consents", token: admin)
        #expect(adminList.status == 200, "\(adminList.text)")
        #expect(try adminList.value("consents.0.client_id") as? String == clientId)
        #expect(try await server.call("DELETE", "/admin/v1/users/\(demo.id)/consents/\(clientId)", token: admin).status == 204)
        #expect(try await server.server.store.consents(userId: demo.id).isEmpty)
    }

    @Test("a device approved for a third-party application: the page says so and lists the scopes; approving is the consent")
    func deviceApprovalIsConsent() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let started = try await DeviceAuthorizationTests.start(server, clientId: "partner")
        let userCode = try #require(started["user_code"] as? String)
        let browser = TestBrowser()
        _ = try await server.tokens(browser)  // signed in already: the confirmation comes at once
        let entry = try await browser.get(server.base + "/device?user_code=" + userCode)
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: entry.text))
        let page = try await browser.postForm(server.base + "/device", ["csrf": csrf, "user_code": userCode])
        #expect(
            page.text.contains("id=\"third-party\"") && page.text.contains(MessageCatalog.text("scope.email", locale: .en) ?? "-"), "\(page.text)")
        let approved = try await DeviceAuthorizationTests.decide(server, userCode: userCode, approve: true, browser: browser)
        #expect(approved.status == 200)
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(try await server.server.store.consent(userId: demo.id, clientId: "partner")?.scopes == ["email", "offline_access", "openid"])
        let audited = try await server.server.store.auditEvents(AuditQuery(types: [.consentGranted], limit: 10))
        #expect(audited.first?.details["via"] == "device")
    }

    @Test("configured applications stay first-party: no consent page, self-service as before")
    func firstPartyUnchanged() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        #expect(try await server.call("GET", "/users/me", token: tokens.accessToken).status == 200)
        #expect(try await server.call("GET", "/users/me/sessions", token: tokens.accessToken).status == 200)
        #expect(try await server.call("GET", "/scim2/Me", token: tokens.accessToken).status == 200)
        let record = try #require(try await server.server.store.client(id: "latchkey-demo"))
        #expect(ApplicationTrust(record) == .firstParty)
        #expect(ApplicationTrust(try #require(try await server.server.store.client(id: "partner"))) == .thirdParty)
    }
}

extension AuthorizeOptions {
    fileprivate func with(prompt: String) -> AuthorizeOptions {
        var copy = self
        copy.prompt = prompt
        return copy
    }
}
