import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// A browser on the account page: signing in through the hosted page as a person would (past the passkey offer with
/// "Not now"), and posting the page's forms with the CSRF token they carry.
enum AccountPageRig {
    static let adaPassword = TestServer.adaPassword

    /// A browser signed in to the account page as `username`, opened at `path`; the page the sign-in ends on.
    static func signIn(
        _ server: TestServer, username: String = "ada@example.com", password: String = adaPassword, path: String = "/account/profile",
        browser: TestBrowser = TestBrowser(), language: String? = nil
    ) async throws -> (TestBrowser, HTTPResult) {
        let headers = language.map { ["Accept-Language": $0] } ?? [:]
        let callback = try await untilCallback(server, browser, from: path, username: username, password: password, headers: headers)
        let done = try await browser.get(callback, headers: headers)
        #expect(done.status == 302 && done.location == path, "\(done.status) \(done.location ?? "")")
        return (browser, try await browser.get(server.base + path, headers: headers))
    }

    /// From `path` (a page of the account, or `/account/login?…`) through the hosted sign-in (or single sign-on) and
    /// "Not now" on the passkey offer, to the callback URL the browser is sent to, not yet opened.
    static func untilCallback(
        _ server: TestServer, _ browser: TestBrowser, from path: String, username: String = "ada@example.com", password: String = adaPassword,
        headers: [String: String] = [:]
    ) async throws -> String {
        let start = try await browser.get(server.base + path, headers: headers)
        #expect(start.status == 302)
        let authorize = try #require(start.location)
        #expect(authorize.hasPrefix("/oauth2/authorize?") && authorize.contains("client_id=latchkey-account"))
        #expect(authorize.contains("code_challenge_method=S256") && authorize.contains("nonce=") && authorize.contains("state="))
        let toLogin = try await browser.get(server.base + authorize, headers: headers)
        var answer: HTTPResult
        if let login = toLogin.location, login.hasPrefix("/login") {
            let page = try await browser.get(server.base + login, headers: headers)
            answer = try await server.submitLogin(browser, page: page, username: username, password: password)
        } else {
            answer = toLogin  // single sign-on answered at once
        }
        if let offer = answer.location, offer.hasPrefix(PasskeyOfferGate.path + "?") {
            let page = try await browser.get(server.base + offer, headers: headers)
            answer = try await browser.postForm(
                server.base + PasskeyOfferGate.path,
                [
                    "request": try #require(TestBrowser.hiddenField("request", in: page.text)),
                    "csrf": try #require(TestBrowser.hiddenField("csrf", in: page.text)), "decision": "later"
                ])
        }
        let callback = try #require(answer.location, "the sign-in did not finish: \(answer.status) \(answer.text.prefix(300))")
        #expect(callback.hasPrefix(server.base + "/account/callback?"), "\(callback)")
        return callback
    }

    /// The account page's cookie (its access token).
    static func token(_ browser: TestBrowser) throws -> String { try #require(browser.cookies["lk_account"]) }

    /// Posts a form of the page at `path` with its CSRF token.
    static func post(
        _ server: TestServer, _ browser: TestBrowser, _ path: String, _ fields: [String: String] = [:], language: String? = nil
    ) async throws -> HTTPResult {
        let csrf = CookiePolicy.csrfToken(secret: try token(browser), requestId: AccountClient.application.csrfScope)
        return try await browser.postForm(
            server.base + path, fields.merging(["csrf": csrf]) { $1 }, headers: language.map { ["Accept-Language": $0] } ?? [:])
    }

    static func ada(_ server: TestServer) async throws -> UserRecord { try #require(try await server.server.user(username: "ada@example.com")) }
}
