import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// An error raised by the OAuth parameter reader (a repeated parameter) answers in the dialect of the path it hit: the
/// OpenAPI document's contract, which schemathesis found broken on `/flow` and the pages.
@Suite("Operations: OAuth-origin errors in each dialect")
struct ErrorDialectTests {
    @Test("a repeated parameter: OAuth JSON on /oauth2, a thunderID body on /flow, a page on /login")
    func repeatedParameter() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let flow = try await browser.get(server.base + "/flow/meta?type=APP&type=APP&id=latchkey-demo")
        #expect(try flow.status == 400 && (flow.json()["code"] as? String) == "SSE-400" && flow.json()["error"] == nil)
        let page = try await browser.get(server.base + "/login?request=a&request=b")
        #expect(page.status == 400 && page.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(!page.text.hasPrefix("{"))
        // The token endpoint (a form body, the parameter given twice); userinfo would not do: it takes no token from
        // the query at all, so it answers invalid_token whatever the query repeats.
        let oauth = try await browser.send(
            server.base + "/oauth2/token", method: "POST",
            body: Data("grant_type=refresh_token&grant_type=refresh_token&client_id=latchkey-demo".utf8),
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(oauth.status == 400 && oauth.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(try (oauth.json()["error"] as? String) == "invalid_request" && oauth.json()["code"] == nil, "OAuth JSON, not a thunderID body")
        #expect(try (oauth.json()["error_description"] as? String)?.contains("grant_type") == true, "refused for the repeated parameter")
    }
}
