import LatchkeyTestSupport
import Foundation
import LatchkeyJOSE
import Testing

@Suite("Authorization code flow with PKCE through the hosted page")
struct AuthorizationCodeFlowTests {
    @Test func fullFlowIssuesVerifiableTokens() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let options = AuthorizeOptions()
        let page = try await server.openLoginPage(browser, options)
        #expect(page.status == 200)
        #expect(page.text.contains("<label for=\"username\">"))
        #expect(page.text.contains("autocomplete=\"current-password\""))
        #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
        let done = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        #expect(done.status == 303)
        let query = done.locationQuery
        #expect(query["state"] == options.state)
        #expect(query["iss"] == server.issuer, "RFC 9207 iss in the authorization response")
        let cookie = try #require(done.header("Set-Cookie"))
        #expect(cookie.contains("lk_session=") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"))
        #expect(!cookie.contains("Secure"), "plain-http loopback development issuer: no Secure flag")

        let response = try await server.exchangeCode(try #require(query["code"]), options)
        #expect(response.status == 200)
        #expect(response.header("Cache-Control") == "no-store")
        let json = try response.json()
        #expect(json["token_type"] as? String == "Bearer")
        #expect(json["expires_in"] as? Int == 3600)
        #expect(json["scope"] as? String == "openid profile email offline_access")
        #expect(json["refresh_token"] is String)

        let idClaims = try await server.verifiedClaims(try #require(json["id_token"] as? String))
        #expect(idClaims["iss"]?.stringValue == server.issuer)
        #expect(idClaims["aud"]?.stringValue == "latchkey-demo")
        #expect(idClaims["azp"]?.stringValue == "latchkey-demo")
        #expect(idClaims["nonce"]?.stringValue == options.nonce)
        #expect(idClaims["email"]?.stringValue == "demo@example.com")
        #expect(idClaims["email_verified"]?.boolValue == true)
        #expect(idClaims["auth_time"]?.doubleValue != nil)
        let access = try #require(json["access_token"] as? String)
        #expect(idClaims["at_hash"]?.stringValue == Base64URL.encode(Data(sha256(access).prefix(16))))
        let header = try CompactJWS(parsing: try #require(json["id_token"] as? String)).header
        #expect(header.alg == "RS256")

        let accessJWS = try CompactJWS(parsing: access)
        #expect(accessJWS.header.typ == "at+jwt" && accessJWS.header.alg == "ES256")
        let accessClaims = try await server.verifiedClaims(access)
        #expect(accessClaims["client_id"]?.stringValue == "latchkey-demo")
        #expect(accessClaims["sub"] == idClaims["sub"])
    }

    @Test func secondAuthorizeWithALiveSessionRedirectsWithoutTheForm() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.tokens(browser)
        let again = AuthorizeOptions()
        let silent = try await browser.get(server.authorizeURL(again))
        #expect(silent.status == 302)
        #expect(silent.location?.hasPrefix(again.redirectUri + "?code=") == true)
        #expect(silent.locationQuery["state"] == again.state)
        let tokens = try await server.exchangeCode(try #require(silent.locationQuery["code"]), again)
        #expect(tokens.status == 200)
    }

    @Test func promptNoneAndPromptLogin() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var none = AuthorizeOptions()
        none.prompt = "none"
        let noSession = try await browser.get(server.authorizeURL(none))
        #expect(noSession.status == 302)
        #expect(noSession.locationQuery["error"] == "login_required")
        #expect(noSession.locationQuery["state"] == none.state)
        #expect(noSession.locationQuery["iss"] == server.issuer)

        _ = try await server.tokens(browser)
        none.state = "second"
        let withSession = try await browser.get(server.authorizeURL(none))
        #expect(withSession.locationQuery["code"] != nil)
        #expect(withSession.locationQuery["state"] == "second")

        var login = AuthorizeOptions()
        login.prompt = "login"
        let forced = try await browser.get(server.authorizeURL(login))
        #expect(forced.location?.hasPrefix("/login?request=") == true, "prompt=login shows the form despite the session")

        var conflicting = AuthorizeOptions()
        conflicting.prompt = "none login"
        let bad = try await browser.get(server.authorizeURL(conflicting))
        #expect(bad.locationQuery["error"] == "invalid_request")
    }

    @Test func maxAgeForcesReauthenticationOfAnOldSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.tokens(browser)
        server.advanceClock(120)
        var options = AuthorizeOptions()
        options.maxAge = 60
        let response = try await browser.get(server.authorizeURL(options))
        #expect(response.location?.hasPrefix("/login?request=") == true)
    }

    @Test func loginHintIsPrefilledAndEscaped() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.loginHint = "\"><script>alert(1)</script>"
        let page = try await server.openLoginPage(TestBrowser(), options)
        #expect(!page.text.contains("<script>"))
        #expect(page.text.contains("&quot;&gt;&lt;script&gt;"))
    }

    @Test func customSchemeAndAnyLoopbackPortAreAccepted() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for redirect in ["io.latchkey.demo:/callback", "http://localhost:51234/callback", "http://[::1]:4000/callback"] {
            var options = AuthorizeOptions()
            options.redirectUri = redirect
            let query = try await server.signIn(TestBrowser(), options)
            #expect(query["code"] != nil, "\(redirect)")
        }
    }

    // MARK: Negative

    @Test func unregisteredRedirectURIIsNeverRedirectedTo() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for redirect in [
            "https://evil.example/callback", "http://127.0.0.1:7777/other", "http://evil.example:7777/callback",
            "io.latchkey.demo:/callback/../evil", "http://127.0.0.1:7777/callback#frag"
        ] {
            var options = AuthorizeOptions()
            options.redirectUri = redirect
            let response = try await TestBrowser().get(server.authorizeURL(options))
            #expect(response.status == 400, "\(redirect)")
            #expect(response.location == nil, "\(redirect) must not be redirected to")
            #expect(response.text.contains("not registered"))
        }
        var unknownClient = AuthorizeOptions()
        unknownClient.clientId = "nobody"
        let response = try await TestBrowser().get(server.authorizeURL(unknownClient))
        #expect(response.status == 400 && response.location == nil)
    }

    @Test func publicClientsMustUsePKCEWithS256() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var missing = AuthorizeOptions()
        missing.pkce = nil
        let noPKCE = try await TestBrowser().get(server.authorizeURL(missing))
        #expect(noPKCE.locationQuery["error"] == "invalid_request")
        #expect(noPKCE.locationQuery["error_description"]?.contains("PKCE") == true)

        var plain = AuthorizeOptions()
        plain.pkce = nil
        plain.extra = ["code_challenge": String(repeating: "a", count: 43), "code_challenge_method": "plain"]
        let plainResponse = try await TestBrowser().get(server.authorizeURL(plain))
        #expect(plainResponse.locationQuery["error"] == "invalid_request")
    }

    @Test func wrongOrMissingVerifierIsRejected() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let wrong = try await server.exchangeCode(code, options, verifier: TestPKCE().verifier)
        #expect(wrong.status == 400)
        #expect(try wrong.json()["error"] as? String == "invalid_grant")

        let code2 = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let form = ["grant_type": "authorization_code", "code": code2, "redirect_uri": options.redirectUri, "client_id": options.clientId]
        let missing = try await TestBrowser().postForm(server.base + "/oauth2/token", form)
        #expect(try missing.json()["error"] as? String == "invalid_grant")
        #expect((try missing.json()["error_description"] as? String)?.contains("code_verifier") == true)
    }

    @Test func replayedCodeIsRejectedAndRevokesWhatItIssued() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let first = try await server.exchangeCode(code, options)
        #expect(first.status == 200)
        let access = try #require(try first.json()["access_token"] as? String)
        let refresh = try #require(try first.json()["refresh_token"] as? String)
        #expect(try await server.userinfo(access).status == 200)

        let replay = try await server.exchangeCode(code, options)
        #expect(replay.status == 400)
        #expect(try replay.json()["error"] as? String == "invalid_grant")
        #expect(try await server.userinfo(access).status == 401, "tokens from the first redemption are revoked")
        #expect(try await server.refresh(refresh).status == 400)
    }

    @Test func expiredCodeIsRejected() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        server.advanceClock(61)
        let response = try await server.exchangeCode(code, options)
        #expect(response.status == 400)
        #expect(try response.json()["error"] as? String == "invalid_grant")
        #expect((try response.json()["error_description"] as? String)?.contains("expired") == true)
    }

    @Test func redirectURIMustMatchAtTheTokenEndpoint() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        options.redirectUri = "http://127.0.0.1:7778/callback"
        let response = try await server.exchangeCode(code, options)
        #expect(try response.json()["error"] as? String == "invalid_grant")
    }

    @Test func codeIssuedToOneClientCannotBeRedeemedByAnother() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let options = AuthorizeOptions()
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let response = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            ["grant_type": "authorization_code", "code": code, "redirect_uri": options.redirectUri, "code_verifier": options.pkce!.verifier],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(try response.json()["error"] as? String == "invalid_grant")
    }
}

import Crypto
func sha256(_ s: String) -> Data { Data(SHA256.hash(data: Data(s.utf8))) }
