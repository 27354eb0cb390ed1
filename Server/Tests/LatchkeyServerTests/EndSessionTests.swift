import LatchkeyTestSupport
import Foundation
import Testing

@Suite("RP-initiated logout")
struct EndSessionTests {
    @Test func logoutWithHintEndsTheSessionAndReturnsToTheRegisteredURI() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let url =
            server.base + "/oauth2/logout?"
            + TestBrowser.formEncode([
                "id_token_hint": tokens.idToken!, "post_logout_redirect_uri": "http://127.0.0.1:7777/logout", "state": "bye"
            ])
        let response = try await browser.get(url)
        #expect(response.status == 302)
        #expect(response.location == "http://127.0.0.1:7777/logout?state=bye")
        #expect(response.header("Set-Cookie")?.contains("lk_session=;") == true)

        // The server-side session is over even if the old cookie is replayed.
        var none = AuthorizeOptions()
        none.prompt = "none"
        let silent = try await browser.get(server.authorizeURL(none))
        #expect(silent.locationQuery["error"] == "login_required")
    }

    @Test func serverSideSessionEndsEvenIfTheBrowserKeepsTheCookie() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let cookie = try #require(browser.cookies["lk_session"])
        _ = try await browser.get(server.base + "/oauth/logout?" + TestBrowser.formEncode(["id_token_hint": tokens.idToken!]))
        browser.setCookie("lk_session", cookie)
        var none = AuthorizeOptions()
        none.prompt = "none"
        #expect(try await browser.get(server.authorizeURL(none)).locationQuery["error"] == "login_required")
    }

    @Test func unregisteredPostLogoutRedirectIsNotFollowed() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        for target in ["https://evil.example/", "http://127.0.0.1:7777/elsewhere"] {
            let response = try await browser.get(
                server.base + "/oauth2/logout?"
                    + TestBrowser.formEncode([
                        "id_token_hint": tokens.idToken!, "post_logout_redirect_uri": target
                    ]))
            #expect(response.status == 400)
            #expect(response.location == nil, "no open redirect to \(target)")
        }
        let noClient = try await browser.get(
            server.base + "/oauth2/logout?" + TestBrowser.formEncode(["post_logout_redirect_uri": "http://127.0.0.1:7777/logout"]))
        #expect(noClient.status == 400 && noClient.location == nil)
        let forged = try await browser.get(server.base + "/oauth2/logout?" + TestBrowser.formEncode(["id_token_hint": "a.b.c"]))
        #expect(forged.status == 400)
    }

    @Test func logoutWithoutHintNeedsConfirmationOnACSRFProtectedForm() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.tokens(browser)
        let url =
            server.base + "/oauth2/logout?"
            + TestBrowser.formEncode([
                "client_id": "latchkey-demo", "post_logout_redirect_uri": "http://127.0.0.1:7777/logout", "state": "s1"
            ])
        let confirm = try await browser.get(url)
        #expect(confirm.status == 200)
        #expect(confirm.text.contains("Sign out?"))
        #expect(TestBrowser.hiddenField("csrf", in: confirm.text) != nil)

        let forged = try await browser.postForm(
            server.base + "/oauth2/logout",
            [
                "confirm": "yes", "client_id": "latchkey-demo", "post_logout_redirect_uri": "http://127.0.0.1:7777/logout"
            ])
        #expect(forged.status == 200 && forged.location == nil, "without the CSRF token the user is asked again")
        #expect(forged.text.contains("Sign out?"))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: forged.text), "each rendering issues a fresh token")

        let done = try await browser.postForm(
            server.base + "/oauth2/logout",
            [
                "confirm": "yes", "csrf": csrf, "client_id": "latchkey-demo", "post_logout_redirect_uri": "http://127.0.0.1:7777/logout",
                "state": "s1"
            ])
        #expect(done.status == 303)
        #expect(done.location == "http://127.0.0.1:7777/logout?state=s1")
    }
}
