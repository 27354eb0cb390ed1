import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// reachFive password sign-in (`/identity/v1/password/login` → `tkn`), the `tkn` exchange on `/oauth/authorize`,
/// and Sign in with Apple against a stand-in issuer, over loopback HTTP.
@Suite("reachFive password login, tkn and Sign in with Apple")
struct ReachFiveLoginTests {
    static let bundleId = "io.latchkey.demo"

    static func start(apple: AppleStandIn? = nil) async throws -> TestServer {
        try await TestServer.startForNativeLogin(bundleId: bundleId, apple: apple)
    }

    func passwordLogin(_ server: TestServer, _ body: [String: Any]) async throws -> HTTPResult {
        try await server.call("POST", "/identity/v1/password/login", token: nil, json: body, contentType: "application/json")
    }

    /// `GET /oauth/authorize?…&tkn=` (or `provider=apple…`) → the 302 back to the app.
    func authorize(_ server: TestServer, _ o: AuthorizeOptions, _ extra: [String: String]) async throws -> HTTPResult {
        var o = o
        o.extra = extra
        return try await TestBrowser().get(server.authorizeURL(o).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
    }

    func tokens(_ server: TestServer, _ o: AuthorizeOptions, _ extra: [String: String]) async throws -> [String: Any] {
        let redirect = try await authorize(server, o, extra)
        #expect(redirect.status == 302)
        let query = redirect.locationQuery
        #expect(query["state"] == o.state)
        #expect(query["iss"] == server.issuer)
        let code = try #require(query["code"], "no code: \(redirect.location ?? "")")
        let exchanged = try await server.exchangeCode(code, o)
        #expect(exchanged.status == 200, "\(exchanged.text)")
        return try exchanged.json()
    }

    @Test("password login → tkn → code → tokens; the ID token names the user and carries the nonce")
    func passwordToTokens() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let login = try await passwordLogin(
            server,
            [
                "email": "demo@example.com", "password": "correct horse battery staple",
                "grant_type": "password", "client_id": "latchkey-demo", "scope": "openid email"
            ])
        #expect(login.status == 200, "\(login.text)")
        let tkn = try #require(try login.json()["tkn"] as? String)
        #expect(try login.json()["mfa_required"] == nil)
        let o = AuthorizeOptions()
        let tokens = try await tokens(server, o, ["tkn": tkn])
        let claims = try await server.verifiedClaims(try #require(tokens["id_token"] as? String))
        #expect(claims["email"]?.stringValue == "demo@example.com")
        #expect(claims["nonce"]?.stringValue == o.nonce)
        #expect(claims["sid"]?.stringValue?.isEmpty == false, "the code carries the session the ticket opened")
        #expect(claims["auth_time"] != nil)
    }

    @Test("a tkn works once, only for its application, and not as an access token")
    func ticketRules() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let login = try await passwordLogin(
            server, ["username": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        let tkn = try #require(try login.json()["tkn"] as? String)
        // Not an API credential.
        #expect(try await server.userinfo(tkn).status == 401)
        // Another application cannot redeem it (and that attempt does not burn it).
        var other = AuthorizeOptions()
        other.clientId = "backend"
        other.redirectUri = "https://backend.example/callback"
        other.pkce = nil
        other.scope = "openid"
        let foreign = try await authorize(server, other, ["tkn": tkn])
        #expect(foreign.locationQuery["error"] == "access_denied")
        #expect(foreign.locationQuery["code"] == nil)
        // First use works, the second is refused.
        _ = try await tokens(server, AuthorizeOptions(), ["tkn": tkn])
        let replay = try await authorize(server, AuthorizeOptions(), ["tkn": tkn])
        #expect(replay.locationQuery["error"] == "access_denied")
        #expect(replay.locationQuery["error_description"]?.contains("already used") == true)
        // A forged or altered ticket is refused.
        let altered = String(tkn.dropLast(3)) + "abc"
        #expect(try await authorize(server, AuthorizeOptions(), ["tkn": altered]).locationQuery["error"] == "access_denied")
    }

    @Test("the hosted page takes a tkn in place of the password: once, for its own application only")
    func hostedPageTicket() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        func submit(_ tkn: String) async throws -> HTTPResult {
            let browser = TestBrowser()
            let page = try await server.openLoginPage(browser, AuthorizeOptions())
            #expect(page.text.contains("id=\"passkey\""), "the demo app accepts the server's own origin, so the page offers passkeys")
            #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
            let request = try #require(TestBrowser.hiddenField("request", in: page.text))
            let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
            return try await browser.postForm(server.base + "/login", ["request": request, "csrf": csrf, "tkn": tkn])
        }
        let garbage = try await submit("not-a-ticket")
        #expect(garbage.status == 401)
        #expect(garbage.location == nil)
        let login = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        let tkn = try #require(try login.json()["tkn"] as? String)
        let accepted = try await submit(tkn)
        #expect(accepted.status == 303)
        #expect(accepted.locationQuery["code"] != nil)
        let replayed = try await submit(tkn)
        #expect(replayed.status == 401)
        #expect(replayed.location == nil)
        // A ticket for another application does not sign anyone in here.
        let foreign = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "backend"])
        let other = try await submit(try #require(try foreign.json()["tkn"] as? String))
        #expect(other.status == 401)
    }

    @Test("a tkn expires after two minutes")
    func ticketExpiry() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let login = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        let tkn = try #require(try login.json()["tkn"] as? String)
        server.advanceClock(121)
        let late = try await authorize(server, AuthorizeOptions(), ["tkn": tkn])
        #expect(late.locationQuery["error"] == "access_denied")
        #expect(late.locationQuery["error_description"]?.contains("expired") == true)
    }

    @Test("wrong password and unknown account get the same ApiError; missing fields are a 400 with a message key")
    func passwordFailures() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let wrong = try await passwordLogin(server, ["email": "demo@example.com", "password": "wrong", "client_id": "latchkey-demo"])
        let unknown = try await passwordLogin(server, ["email": "nobody@example.com", "password": "wrong", "client_id": "latchkey-demo"])
        for response in [wrong, unknown] {
            #expect(response.status == 401)
            let json = try response.json()
            #expect(json["error_message_key"] as? String == "login.invalid_credentials")
            #expect((json["error_user_msg"] as? String)?.isEmpty == false)
            #expect(json["error_id"] != nil)
            #expect(json["tkn"] == nil)
        }
        let missing = try await passwordLogin(server, ["email": "demo@example.com", "client_id": "latchkey-demo"])
        #expect(missing.status == 400)
        #expect(try missing.json()["error_message_key"] as? String == "login.missing_fields")
        let disabled = try await passwordLogin(
            server, ["username": "disabled@example.com", "password": "disabled password", "client_id": "latchkey-demo"])
        #expect(try disabled.json()["error_message_key"] as? String == "login.disabled")
        let badClient = try await passwordLogin(server, ["email": "demo@example.com", "password": "x", "client_id": "nope"])
        #expect(badClient.status == 400)
    }

    @Test(
        "reachFive dialect in the user's language: a wrong password in fr, ja, zh-HK and ar; error_description stays English",
        arguments: ["fr", "ja", "zh-HK", "ar"])
    func localizedWrongPassword(_ language: String) async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let response = try await server.call(
            "POST", "/identity/v1/password/login", token: nil,
            json: ["email": "demo@example.com", "password": "wrong", "client_id": "latchkey-demo"],
            contentType: "application/json", headers: ["Accept-Language": "\(language), en;q=0.5"])
        let json = try response.json()
        let locale = try #require(SupportedLocale(resolving: language))
        let expected = try #require(MessageCatalog.text("login.invalid_credentials", locale: locale))
        #expect(json["error_user_msg"] as? String == expected)
        #expect(expected != MessageCatalog.text("login.invalid_credentials", locale: .en))
        #expect(json["error_message_key"] as? String == "login.invalid_credentials")
        #expect(json["error_description"] as? String == "password sign-in refused: login.invalid_credentials")
        // A locked account answers with the same localized text (the lock is not announced).
        for _ in 0..<5 { _ = try await passwordLogin(server, ["email": "demo@example.com", "password": "x", "client_id": "latchkey-demo"]) }
        let locked = try await server.call(
            "POST", "/identity/v1/password/login", token: nil,
            json: ["email": "demo@example.com", "password": "x", "client_id": "latchkey-demo"],
            contentType: "application/json", headers: ["Accept-Language": language])
        #expect(try locked.json()["error_user_msg"] as? String == MessageCatalog.text("login.invalid_credentials", locale: locale))
        #expect(try locked.json()["error_message_key"] as? String == "login.invalid_credentials")
    }

    @Test("five wrong passwords lock the account, even for the right password, with the wrong-password answer (no enumeration)")
    func lockout() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        for _ in 0..<5 { _ = try await passwordLogin(server, ["email": "demo@example.com", "password": "nope", "client_id": "latchkey-demo"]) }
        let locked = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        #expect(locked.status == 401)
        #expect(try locked.json()["error_message_key"] as? String == "login.invalid_credentials")
        #expect(try locked.json()["tkn"] == nil)
        server.advanceClock(15 * 60 + 1)
        let unlocked = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        #expect(try unlocked.status == 200 && unlocked.json()["tkn"] is String)
    }

    @Test("an account with a second factor gets an MFA-pending tkn that /oauth/authorize refuses; step-up lists the factors")
    func mfaStepUp() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let (secret, _) = try await server.server.enrollTOTP(userId: user.id)
        let login = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        #expect(try login.json()["mfa_required"] as? Bool == true)
        let tkn = try #require(try login.json()["tkn"] as? String)
        let refused = try await authorize(server, AuthorizeOptions(), ["tkn": tkn])
        #expect(refused.locationQuery["error"] == "access_denied")
        #expect(refused.locationQuery["code"] == nil)
        let login2 = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        let stepUp = try await server.call(
            "POST", "/identity/v1/mfa/stepup", token: nil,
            json: [
                "tkn": try #require(try login2.json()["tkn"] as? String), "client_id": "latchkey-demo",
                "redirect_uri": "http://127.0.0.1:7777/callback", "code_challenge": TestPKCE().challenge,
                "code_challenge_method": "S256", "scope": "openid"
            ],
            contentType: "application/json")
        #expect(stepUp.status == 200, "\(stepUp.text)")
        #expect(try stepUp.json()["amr"] as? [String] == ["otp"])
        #expect(try stepUp.json()["token"] is String)
        // Without PKCE, or for an unregistered redirect URI, no step-up.
        let login3 = try await passwordLogin(
            server, ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"])
        let noPKCE = try await server.call(
            "POST", "/identity/v1/mfa/stepup", token: nil,
            json: [
                "tkn": try #require(try login3.json()["tkn"] as? String), "client_id": "latchkey-demo",
                "redirect_uri": "https://evil.example/cb"
            ], contentType: "application/json")
        #expect(noPKCE.status == 400)
        // A step-up token is not a login ticket, nor an access token.
        let token = try #require(try stepUp.json()["token"] as? String)
        // An account with only an authenticator app cannot be stepped up with an emailed code instead.
        let emailInstead = try await server.call(
            "POST", "/identity/v1/passwordless/start", token: nil,
            json: ["step_up": token, "auth_type": "email"], contentType: "application/json")
        #expect(emailInstead.status == 400)
        let otp = try await server.call(
            "POST", "/identity/v1/passwordless/start", token: nil,
            json: ["step_up": token, "auth_type": "otp"], contentType: "application/json")
        #expect(otp.status == 200)
        #expect(try await authorize(server, AuthorizeOptions(), ["tkn": token]).locationQuery["error"] == "access_denied")
        #expect(try await server.userinfo(token).status == 401)

        // Five wrong codes end the challenge: even the right code is refused afterwards.
        let challengeId = try #require(try otp.json()["challenge_id"] as? String)
        func verify(_ code: String) async throws -> HTTPResult {
            try await server.call(
                "POST", "/identity/v1/passwordless/verify", token: nil,
                json: ["challenge_id": challengeId, "verification_code": code], contentType: "application/json")
        }
        for attempt in 1...5 {
            let wrong = try await verify("000000")
            #expect(wrong.status == 400)
            #expect(
                try wrong.json()["error_message_key"] as? String
                    == (attempt < 5 ? "flows.executor.errors.invalid_otp" : "flows.executor.errors.otp_attempts"))
        }
        let right = server.totpCode(secret)
        let exhausted = try await verify(right)
        #expect(exhausted.status == 400)
        #expect(try exhausted.json()["code"] == nil)

        // The step-up token expires with the one-time-code lifetime (10 minutes).
        server.advanceClock(601)
        let late = try await server.call(
            "POST", "/identity/v1/passwordless/start", token: nil,
            json: ["step_up": token, "auth_type": "otp"], contentType: "application/json")
        #expect(late.status == 401)
        #expect(try late.json()["error_message_key"] as? String == "login.expired")
    }

    @Test("/identity/v1/config and /identity/v1/userinfo")
    func configAndUserinfo() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let config = try await TestBrowser().get(server.base + "/identity/v1/config?client_id=latchkey-demo")
        #expect((try config.json()["scope"] as? String)?.contains("openid") == true)
        let tokens = try await server.userTokens()
        let info = try await TestBrowser().get(server.base + "/identity/v1/userinfo", headers: ["Authorization": "Bearer \(tokens.accessToken)"])
        #expect(try info.json()["email"] as? String == "demo@example.com")
        let noToken = try await TestBrowser().get(server.base + "/identity/v1/userinfo")
        #expect(noToken.status == 401)
        #expect(try noToken.json()["error_message_key"] as? String == "oauth.invalid_token")
    }

    // MARK: Sign in with Apple

    func apple(_ server: TestServer, token: String, verifier: String?, given: String? = nil, family: String? = nil) async throws -> HTTPResult {
        var extra = ["provider": "apple:ios", "id_token": token]
        if let verifier { extra["nonce"] = verifier }
        if let given { extra["given_name"] = given }
        if let family { extra["family_name"] = family }
        var o = AuthorizeOptions()
        o.nonce = nil
        return try await authorize(server, o, extra)
    }

    @Test("Sign in with Apple: a new user is created with the first-time name, then signs in again as the same account")
    func appleNewAndReturning() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await Self.start(apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let verifier = try await server.nativeNonce()
        let token = try issuer.identityToken(sub: "001234.apple", bundleId: Self.bundleId, verifier: verifier, email: "ada@privaterelay.appleid.com")
        var o = AuthorizeOptions()
        o.nonce = verifier
        let first = try await tokens(server, o, ["provider": "apple", "id_token": token, "given_name": "Ada", "family_name": "Lovelace"])
        let claims = try await server.verifiedClaims(try #require(first["id_token"] as? String))
        #expect(claims["email"]?.stringValue == "ada@privaterelay.appleid.com")
        #expect(claims["name"]?.stringValue == "Ada Lovelace")
        #expect(claims["nonce"]?.stringValue == verifier)
        let sub = try #require(claims["sub"]?.stringValue)

        // Apple sends the name only the first time; the account keeps it and stays the same.
        let verifier2 = try await server.nativeNonce()
        let again = try issuer.identityToken(sub: "001234.apple", bundleId: Self.bundleId, verifier: verifier2, email: "ada@privaterelay.appleid.com")
        var o2 = AuthorizeOptions()
        o2.nonce = verifier2
        let second = try await tokens(server, o2, ["provider": "apple", "id_token": again])
        let claims2 = try await server.verifiedClaims(try #require(second["id_token"] as? String))
        #expect(claims2["sub"]?.stringValue == sub)
        #expect(claims2["name"]?.stringValue == "Ada Lovelace")
    }

    @Test("Sign in with Apple with a verified email signs in the existing account with that email")
    func appleLinksByVerifiedEmail() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await Self.start(apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        let verifier = try await server.nativeNonce()
        let token = try issuer.identityToken(sub: "apple-demo", bundleId: Self.bundleId, verifier: verifier, email: "demo@example.com")
        var o = AuthorizeOptions()
        o.nonce = verifier
        let result = try await tokens(server, o, ["provider": "apple", "id_token": token])
        #expect(try await server.verifiedClaims(try #require(result["id_token"] as? String))["sub"]?.stringValue == demo.id)
        // The same email unverified must not take over the account, nor make a second account with its address: the
        // federation's rule, which is now Apple's too (it used to make an account of its own holding the address).
        let verifier2 = try await server.nativeNonce()
        let unverified = try issuer.identityToken(
            sub: "apple-other", bundleId: Self.bundleId, verifier: verifier2, email: "demo@example.com",
            emailVerified: false)
        let other = try await apple(server, token: unverified, verifier: verifier2)
        #expect(other.locationQuery["code"] == nil, "\(other.location ?? "")")
        #expect(other.locationQuery["error"] == "access_denied")
        #expect(other.locationQuery["error_message_key"] == "federation.email_in_use")
        #expect(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-other") == nil)
        #expect(try await server.server.store.users(claim: "email", equals: "demo@example.com").count == 1)
        let refusal = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.signInFailed], limit: 1)).first)
        #expect(refusal.details == ["method": "apple", "reason": "email_in_use"])

        // An account whose email was never verified (signed up by someone claiming it) is not linked either.
        let squatter = try await server.server.createUser(
            username: "victim@example.com", password: "squatter's password",
            claims: ["email": "victim@example.com"])
        let verifier3 = try await server.nativeNonce()
        let victim = try issuer.identityToken(sub: "apple-victim", bundleId: Self.bundleId, verifier: verifier3, email: "victim@example.com")
        let third = try await apple(server, token: victim, verifier: verifier3)
        #expect(third.locationQuery["code"] == nil, "\(third.location ?? "")")
        #expect(third.locationQuery["error_message_key"] == "federation.email_in_use")
        #expect(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-victim") == nil)
        #expect(try await server.server.store.user(id: squatter)?.username == "victim@example.com")
    }

    @Test("Sign in with Apple: an address Apple did not verify is not kept on a new account (R3-8, as every provider)")
    func appleUnverifiedAddressIsNotKept() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await Self.start(apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let verifier = try await server.nativeNonce()
        let token = try issuer.identityToken(
            sub: "apple-unverified", bundleId: Self.bundleId, verifier: verifier, email: "nobody-checked@example.com", emailVerified: false)
        var o = AuthorizeOptions()
        o.nonce = verifier
        let result = try await tokens(server, o, ["provider": "apple", "id_token": token])
        let claims = try await server.verifiedClaims(try #require(result["id_token"] as? String))
        #expect(claims["email"] == nil, "\(claims)")
        #expect(claims["idp"]?.stringValue == "apple", "the provider is named, as for every federated sign-in: \(claims)")
        let link = try #require(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-unverified"))
        let user = try #require(try await server.server.store.user(id: link.userId))
        #expect(user.username == "apple.apple-unverified")
        #expect(try await server.server.store.users(claim: "email", equals: "nobody-checked@example.com").isEmpty)
        // The account's creation and link are in the audit trail, as for every provider's first sign-in.
        let created = try await server.server.store.auditEvents(AuditQuery(types: [.userCreated, .federatedIdentityLinked], limit: 10))
        #expect(Set(created.map(\.details)) == [["via": "federation", "provider": "apple"], ["provider": "apple", "how": "jit"]])
    }

    @Test(
        "Sign in with Apple refuses: wrong audience, wrong nonce, no nonce, expired, another key, another issuer, garbage",
        arguments: ["audience", "nonce", "missing-nonce", "expired", "key", "issuer", "garbage"])
    func appleNegative(_ case_: String) async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await Self.start(apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let verifier = try await server.nativeNonce()
        var sentVerifier: String? = verifier
        var token: String
        var expectedKey = "apple.failed"
        switch case_ {
        case "audience": token = try issuer.identityToken(sub: "s", bundleId: "com.evil.app", verifier: verifier, email: nil)
        case "nonce": token = try issuer.identityToken(sub: "s", bundleId: Self.bundleId, verifier: "another-verifier", email: nil)
        case "missing-nonce":
            token = try issuer.identityToken(sub: "s", bundleId: Self.bundleId, verifier: verifier, email: nil)
            sentVerifier = nil
        case "expired":
            token = try issuer.identityToken(
                sub: "s", bundleId: Self.bundleId, verifier: verifier, email: nil,
                issuedAt: Date().addingTimeInterval(-3600), lifetime: 600)
            expectedKey = "apple.expired"
        case "key":
            token = try issuer.identityToken(
                sub: "s", bundleId: Self.bundleId, verifier: verifier, email: nil,
                signer: try SigningKey.generate(.rs256))
        case "issuer":
            token = try issuer.identityToken(
                sub: "s", bundleId: Self.bundleId, verifier: verifier, email: nil,
                issuer: "https://evil.example")
        default: token = "not.a.jwt"
        }
        let response = try await apple(server, token: token, verifier: sentVerifier)
        #expect(response.status == 302)
        #expect(response.locationQuery["error"] == "access_denied", "\(case_): \(response.location ?? "")")
        #expect(response.locationQuery["code"] == nil)
        #expect(response.locationQuery["error_message_key"] == expectedKey)
    }

    @Test("an application without apple_bundle_ids accepts no Apple token; unknown providers are refused")
    func appleNotConfigured() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await TestServer.start { $0.apple.jwksURL = issuer.jwksURL }
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let verifier = try await server.nativeNonce()
        let token = try issuer.identityToken(sub: "s", bundleId: Self.bundleId, verifier: verifier, email: nil)
        #expect(try await apple(server, token: token, verifier: verifier).locationQuery["error"] == "access_denied")
        let google = try await authorize(server, AuthorizeOptions(), ["provider": "google", "id_token": token])
        #expect(google.locationQuery["error"] == "invalid_request")
    }
}
