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
        let oauth = try await browser.get(server.base + "/oauth2/userinfo?access_token=a&access_token=b")
        #expect(oauth.status >= 400 && oauth.header("Content-Type")?.hasPrefix("application/json") == true)
    }
}
