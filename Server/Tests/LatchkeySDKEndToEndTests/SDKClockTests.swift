import LatchkeyTestSupport
import Foundation
import Latchkey
@testable import LatchkeyServer
import Testing

/// The SDK's time rules read the client's `LatchkeyClock`: a test moves a `ManualClock` and the rule follows, with
/// nothing waited for, against the real server over loopback HTTP.
@Suite("SDK ↔ server: every time rule on the client's clock")
struct SDKClockTests {
    func signedIn(_ server: TestServer, clock: ManualClock) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: productionHTTPClient(), clock: clock.clock)
        try await client.initialize(config: server.sdkConfig())
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        return client
    }

    @Test("an access token is handed out until 30 s before its hour ends on the client's clock, then refreshed once")
    func refreshMarginOnTheClientsClock() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let time = ManualClock()
        let client = try await signedIn(server, clock: time)
        let first = try await client.getAccessToken()
        #expect(try await client.authToken().expiresIn == 3600, "the token's hour counted on the client's clock")

        time.advance(by: 3600 - 31)
        #expect(try await client.getAccessToken() == first, "a second before the margin: still the same token")
        #expect(try await client.authToken().expiresIn == 31)

        time.advance(by: 2)
        let second = try await client.getAccessToken()
        #expect(second != first, "within the margin: refreshed")
        #expect(try await client.getAccessToken() == second, "and the new one is handed out from then on")
        #expect(try await client.authToken().expiresIn == 3600, "its hour counts from the refresh")
        #expect(try await server.userinfo(second).status == 200)

        // Hours after the access token's end the session is still signed in: its refresh token is usable. (The server's
        // own clock has not moved: the client learns the difference from its answers' Date headers, up to a day.)
        time.advance(by: 7200)
        #expect(try await client.isSignedIn())
        let third = try await client.getAccessToken()
        #expect(third != second)
    }

    @Test("a sign-in left unfinished for ten minutes on the client's clock is forgotten: its callback is refused")
    func pendingSignInsExpire() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let time = ManualClock()
        let client = LatchkeyClient(http: productionHTTPClient(), clock: time.clock)
        try await client.initialize(config: server.sdkConfig())
        let stale = try await server.browse(try client.buildSignInURL())
        let fresh = try await server.browse(try client.buildSignInURL())
        time.advance(by: 601)
        let later = try await server.browse(try client.buildSignInURL())  // starting another sign-in sweeps the old ones
        for forgotten in [stale, fresh] {
            let refused = try await #require(throws: LatchkeyError.self) { _ = try await client.handleRedirectCallback(url: forgotten) }
            #expect(refused.code == .invalidGrant && refused.message.contains("does not match any sign-in in progress"), "\(refused)")
        }
        #expect(try await client.isSignedIn() == false)
        _ = try await client.handleRedirectCallback(url: later)
        #expect(try await client.isSignedIn())
    }

    @Test("ManualClock: time moves only when told; a sleep moves it by its length and returns at once; cancellation is seen")
    func manualClock() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let time = ManualClock(start: start)
        let clock = time.clock
        #expect(clock.now() == start)
        time.advance(by: 90)
        #expect(clock.now() == start.addingTimeInterval(90))
        try await clock.sleep(3600)
        #expect(time.now == start.addingTimeInterval(3690))
        time.set(start)
        #expect(clock.now() == start)
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(10)
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(time.now == start, "a cancelled sleep does not move the clock")
        let before = Date()
        let shifted = LatchkeyClock.offset(by: -600).now()
        let after = Date()
        #expect(shifted >= before.addingTimeInterval(-600) && shifted <= after.addingTimeInterval(-600))
    }
}
