import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import Latchkey
import Testing

/// The SDK's defences: its loopback callback, what counts as a loopback host, one refresh across processes.
@Suite("SDK hardening: loopback callback, loopback hosts, refresh across processes")
struct SDKHardeningTests {
    @Test("a stray request to /callback (another local process, a probing web page) neither ends nor hijacks the sign-in")
    func strayCallbacksAreIgnored() async throws {
        // The sign-in's wait for the browser is real time (a person's), so the test gives it ten minutes: the idle
        // connection alone holds the listener for `requestReadTimeout` (5 s), and a machine saturated many times over
        // once took more than two minutes for the whole exchange. Nothing here waits for the timeout itself.
        let agent = LoopbackUserAgent(mode: .printOnly, timeout: 600, output: { _ in })
        let redirect = try #require(try await agent.prepareRedirectURI())
        let url = try #require(URL(string: "http://127.0.0.1:9/authorize?redirect_uri=\(FormCoding.escape(redirect))&state=the-real-state"))
        let signIn = Task { try await agent.authorize(url: url) }
        // (No wait for the listener: the port is bound already, and connections queue until it accepts.)
        // An idle connection that never sends a request line must not block the listener for good (it is dropped
        // after `requestReadTimeout`); before the fix, it held the accepting thread forever.
        let port = try #require(URL(string: redirect)?.port)
        let idle = try Self.connectIdle(port: port)
        defer { _ = close(idle) }
        for stray in ["?code=attacker&state=wrong", "?code=attacker", "?error=access_denied"] {
            let (_, response) = try await patientGET(try #require(URL(string: redirect + stray)))
            #expect((response as? HTTPURLResponse)?.statusCode == 404, "\(stray)")
        }
        let (_, real) = try await patientGET(try #require(URL(string: redirect + "?code=for-real&state=the-real-state")))
        #expect((real as? HTTPURLResponse)?.statusCode == 200)
        #expect(try await signIn.value.query == "code=for-real&state=the-real-state")
    }

    /// A TCP connection to 127.0.0.1:`port` that sends nothing.
    static func connectIdle(port: Int) throws -> Int32 {
        #if os(Linux)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else { throw LatchkeyError(.networkError, "cannot connect to the loopback listener") }
        return fd
    }

    @Test("loopback is an address, not a name that starts with 127.")
    func loopbackHostsAreParsed() throws {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"] { #expect(LatchkeyConfig.isLoopback(host: host), "\(host)") }
        for host in ["127.evil.com", "127.0.0.1.evil.com", "localhost.evil.com", "10.0.0.1", "::2", "example.com"] {
            #expect(!LatchkeyConfig.isLoopback(host: host), "\(host)")
        }
        #expect(throws: LatchkeyError.self) { try LatchkeyConfig(baseUrl: "http://127.evil.com", clientId: "app").validate() }
        try LatchkeyConfig(baseUrl: "http://127.0.0.1:8090", clientId: "app").validate()
    }

    /// Counts refresh requests "at the server": only the token that is still current rotates; the old one is a replay.
    actor FakeTokenEndpoint {
        var current = "refresh-0"
        var requests = 0
        var replays = 0
        func refresh(_ tokens: TokenSet) async throws -> TokenSet {
            requests += 1
            try await Task.sleep(for: .milliseconds(200))  // long enough for the other process to want a refresh too
            guard tokens.refreshToken == current else { replays += 1; throw LatchkeyError(.invalidGrant, "replayed refresh token") }
            current = "refresh-\(requests)"
            return TokenSet(
                accessToken: "access-\(requests)", refreshToken: current, idToken: nil, expiresAt: Date().addingTimeInterval(3600),
                scope: nil, nonce: nil)
        }
    }

    @Test("two processes sharing the token files refresh once; the second adopts the first one's result")
    func refreshIsSingleFlightAcrossProcesses() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-shared-\(UUID().uuidString)")
        let endpoint = FakeTokenEndpoint()
        let expired = TokenSet(
            accessToken: "access-0", refreshToken: "refresh-0", idToken: nil, expiresAt: Date().addingTimeInterval(-60),
            scope: nil, nonce: nil)
        // Two adapters and two managers on one directory: what two `latchkey` commands are.
        let first = TokenManager(storage: try FileStorageAdapter(directory: directory)) { try await endpoint.refresh($0) }
        let second = TokenManager(storage: try FileStorageAdapter(directory: directory)) { try await endpoint.refresh($0) }
        try await first.replace(expired, sessionId: nil)
        #expect(try await second.tokens(nil)?.refreshToken == "refresh-0", "both start from the same stored set")

        async let a = first.accessToken(nil)
        async let b = second.accessToken(nil)
        let (tokenA, tokenB) = try await (a, b)
        #expect(tokenA == "access-1" && tokenB == "access-1")
        #expect(await endpoint.requests == 1, "one refresh request, not one per process")
        #expect(await endpoint.replays == 0, "no replay, so the server keeps the family alive")
        let stored = try await FileStorageAdapter(directory: directory).get(TokenManager.key(nil))
        #expect(try StoredSession.decode(try #require(stored)).refreshToken == "refresh-1")
    }
}
