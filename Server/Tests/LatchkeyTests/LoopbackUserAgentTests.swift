import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Latchkey
import Testing

@Suite("Loopback user agent (RFC 8252 §7.3)")
struct LoopbackUserAgentTests {
    func authorizationURL(redirect: String, marker: String) -> URL {
        URL(string: "http://127.0.0.1:9/authorize?redirect_uri=\(FormCoding.escape(redirect))&state=\(marker)")!
    }

    @Test func concurrentSignInsEachGetTheirOwnCallback() async throws {
        let agent = LoopbackUserAgent(mode: .printOnly, timeout: 600, output: { _ in })  // nothing waits for it
        let a = try #require(try await agent.prepareRedirectURI())
        let b = try #require(try await agent.prepareRedirectURI())
        #expect(a != b && a.hasPrefix("http://127.0.0.1:") && a.hasSuffix("/callback"))
        let first = Task { try await agent.authorize(url: authorizationURL(redirect: a, marker: "A")) }
        let second = Task { try await agent.authorize(url: authorizationURL(redirect: b, marker: "B")) }
        // The browser comes back to B first, then to A. No wait for the two sign-ins to start listening: each port was
        // bound by `prepareRedirectURI`, so a callback that arrives first waits in the socket's backlog.
        let (_, rb) = try await patientGET(URL(string: b + "?code=for-b&state=B")!)
        let (_, ra) = try await patientGET(URL(string: a + "?code=for-a&state=A")!)
        #expect((rb as? HTTPURLResponse)?.statusCode == 200 && (ra as? HTTPURLResponse)?.statusCode == 200)
        #expect(try await second.value.query == "code=for-b&state=B")
        #expect(try await first.value.query == "code=for-a&state=A")
    }

    @Test func unpreparedRedirectIsRefusedAndReleasedPortsClose() async throws {
        let agent = LoopbackUserAgent(mode: .printOnly, timeout: 5, output: { _ in })
        await #expect { try await agent.authorize(url: authorizationURL(redirect: "http://127.0.0.1:1/callback", marker: "x")) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidConfiguration
        }
        let prepared = try #require(try await agent.prepareRedirectURI())
        agent.release(redirectURI: prepared)
        await #expect(throws: (any Error).self) { _ = try await URLSession.shared.data(from: URL(string: prepared)!) }
    }

    @Test func timeoutCancelsWithAClearError() async throws {
        let agent = LoopbackUserAgent(mode: .printOnly, timeout: 0.3, output: { _ in })
        let redirect = try #require(try await agent.prepareRedirectURI())
        await #expect { try await agent.authorize(url: authorizationURL(redirect: redirect, marker: "t")) } throws: {
            ($0 as? LatchkeyError)?.code == .canceled
        }
    }
}
