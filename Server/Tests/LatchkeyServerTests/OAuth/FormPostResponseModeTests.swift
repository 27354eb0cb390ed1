import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// OAuth 2.0 Form Post Response Mode over loopback HTTP, as the OpenID conformance suite's Form Post plan asks
/// (`oidcc-server` run with `response_mode=form_post`, and `oidcc-prompt-none-not-logged-in` whose error must come back
/// the same way): the response is a page that POSTs `code`, `state` and `iss` to the redirect URI with a same-origin
/// script, under a CSP that allows no inline script and no other form target.
@Suite("Authorization: response_mode=form_post")
struct FormPostResponseModeTests {
    static func formPostOptions() -> AuthorizeOptions {
        var o = AuthorizeOptions()
        o.extra = ["response_mode": "form_post"]
        return o
    }

    /// The hidden fields of a form-post page.
    static func fields(_ page: HTTPResult) -> [String: String] {
        var fields: [String: String] = [:]
        for name in ["code", "state", "iss", "error", "error_description"] {
            if let value = TestBrowser.hiddenField(name, in: page.text) { fields[name] = value }
        }
        return fields
    }

    static func expectFormPostPage(_ page: HTTPResult, to redirect: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(page.status == 200, "\(page.status) \(page.text.prefix(300))", sourceLocation: sourceLocation)
        #expect(page.location == nil, sourceLocation: sourceLocation)
        #expect(page.text.contains("<form id=\"response\" method=\"post\" action=\"\(redirect)\">"), sourceLocation: sourceLocation)
        #expect(page.text.contains("<script src=\"/assets/form-post.js\"></script>"), sourceLocation: sourceLocation)
        let csp = page.header("Content-Security-Policy") ?? ""
        #expect(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "\(csp)", sourceLocation: sourceLocation)
        #expect(csp.contains("form-action http://127.0.0.1:7777;"), "\(csp)", sourceLocation: sourceLocation)
        #expect(page.header("Cache-Control") == "no-store", sourceLocation: sourceLocation)
    }

    @Test func theCodeIsPostedToTheRedirectURI() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["response_modes_supported"] as? [String] == ["query", "form_post"])

        let browser = TestBrowser()
        let o = Self.formPostOptions()
        let page = try await server.openLoginPage(browser, o)
        let answer = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
        Self.expectFormPostPage(answer, to: o.redirectUri)
        #expect(browser.cookies["lk_session"] != nil, "the session cookie still comes with the page")
        let fields = Self.fields(answer)
        #expect(fields["state"] == o.state && fields["iss"] == server.issuer)
        let code = try #require(fields["code"])
        #expect(try await server.exchangeCode(code, o).status == 200)

        // Single sign-on answers the same way.
        let again = try await browser.get(server.authorizeURL(Self.formPostOptions()))
        Self.expectFormPostPage(again, to: o.redirectUri)
        #expect(Self.fields(again)["code"] != nil)

        // The script the page loads submits the form, served as JavaScript.
        let script = try await TestBrowser().get(server.base + "/assets/form-post.js")
        #expect(script.status == 200 && script.header("Content-Type")?.hasPrefix("text/javascript") == true)
        #expect(script.text.contains("getElementById(\"response\")") && script.text.contains(".submit()"))
    }

    @Test func errorsComeBackTheSameWay() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var o = Self.formPostOptions()
        o.prompt = "none"
        let answer = try await TestBrowser().get(server.authorizeURL(o))
        Self.expectFormPostPage(answer, to: o.redirectUri)
        let fields = Self.fields(answer)
        #expect(fields["error"] == "login_required" && fields["state"] == o.state && fields["iss"] == server.issuer)
        #expect(fields["code"] == nil)
        // A value in the request cannot break out of its field.
        var hostile = Self.formPostOptions()
        hostile.prompt = "none"
        hostile.state = "\"><script>alert(1)</script>"
        let escaped = try await TestBrowser().get(server.authorizeURL(hostile))
        #expect(!escaped.text.contains("<script>alert(1)"))
    }

    @Test func onlyWebRedirectsAndKnownModes() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var app = Self.formPostOptions()
        app.redirectUri = "io.latchkey.demo:/callback"
        let refused = try await TestBrowser().get(server.authorizeURL(app))
        #expect(refused.status == 302 && refused.location?.hasPrefix("io.latchkey.demo:/callback?error=invalid_request") == true)
        // JARM's modes are not offered (FAPI 2.0 Message Signing); `fragment` is, for a code too.
        var jwt = AuthorizeOptions()
        jwt.extra = ["response_mode": "query.jwt"]
        let unknown = try await TestBrowser().get(server.authorizeURL(jwt))
        #expect(unknown.status == 302 && unknown.location?.contains("error=invalid_request") == true)
        var fragment = AuthorizeOptions()
        fragment.extra = ["response_mode": "fragment"]
        #expect(try await TestBrowser().get(server.authorizeURL(fragment)).location?.hasPrefix("/login?request=") == true)
    }
}
