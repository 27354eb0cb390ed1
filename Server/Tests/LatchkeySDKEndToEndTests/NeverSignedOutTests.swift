import Foundation
@testable import Latchkey
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The SDK against the real server: a session ends only when the person signs out or the server says the grant is
/// dead (`invalid_grant`); an offline launch, timeouts, 5xx, 429 and refused connections keep it.
@Suite("SDK: never signed out by mistake")
struct NeverSignedOutTests {
    static let key = "latchkey.session.default"

    /// A server whose access tokens are always inside the SDK's 30 s refresh margin: every `getAccessToken` refreshes.
    static func start() async throws -> TestServer {
        try await TestServer.start { $0.lifetimes.accessToken = 10 }
    }

    @Test("an offline launch restores the session (stale); refused connections, timeouts, 500, 503 and 429 keep it; back online it refreshes")
    func transientFailuresKeepTheSession() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        _ = try await server.signedInClient(storage: storage)
        let stored = try #require(await storage.get(Self.key))

        // The next launch, with no network: the access token is due, the refresh token is good.
        let http = ProgrammableHTTPClient()
        let offline = http.rewriteRequests { $0.toClosedPort }
        let client = LatchkeyClient(http: http)
        try await client.initialize(config: server.sdkConfig(), storage: storage)
        var changes = client.authStateChanges().makeAsyncIterator()
        let initial = await changes.next()
        #expect(initial?.event == .initialSession && initial?.isSignedIn == true, "restored as signed in")
        #expect(try await client.isSignedIn())
        await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .networkError }
        http.remove(offline)

        let failures: [(String, ProgrammableHTTPClient.Answer)] = [
            ("timeout", { _ in throw LatchkeyError(.requestTimeout, "the request timed out") }),
            ("500", { _ in HTTPResponse(status: 500, headers: [:], body: Data(#"{"error":"server_error"}"#.utf8)) }),
            ("503", { _ in HTTPResponse(status: 503, headers: ["Retry-After": "5"], body: Data("busy".utf8)) }),
            ("429", { _ in HTTPResponse(status: 429, headers: ["Retry-After": "5"], body: Data(#"{"error":"slow_down"}"#.utf8)) })
        ]
        for (name, answer) in failures {
            let rule = http.answer(where: { $0.isRefreshGrant }, with: answer)
            await #expect(throws: LatchkeyError.self, "\(name)") { try await client.getAccessToken() }
            #expect(try await client.isSignedIn(), "\(name) keeps the session")
            http.remove(rule)
        }
        #expect(await storage.get(Self.key) == stored, "the stored session is untouched by every failure")
        #expect(http.refreshCount == 5, "each failure was one attempt, the timeout two (its answer may have been lost)")

        let token = try await client.getAccessToken()
        #expect(try await server.userinfo(token).status == 200)
        #expect(await changes.next()?.event == .tokenRefreshed, "no sign-out or expiry event came before the refresh")
    }

    /// A server with the production reuse interval whose clock stands still after the sign-in: the retry's place in
    /// the interval does not depend on how long the machine takes between two requests.
    static func startWithReuseInterval() async throws -> (
        TestServer, ProgrammableHTTPClient, URLSessionHTTPClient, InMemoryStorageAdapter, LatchkeyClient
    ) {
        let server = try await TestServer.start {
            $0.lifetimes.accessToken = 10
            $0.refreshTokenReuseSeconds =
                DevelopmentDefaults.configuration(port: 0, databasePath: "/tmp/unused.sqlite", host: "127.0.0.1").refreshTokenReuseSeconds
        }
        let upstream = productionHTTPClient()
        let http = ProgrammableHTTPClient(upstream: upstream)
        let storage = InMemoryStorageAdapter()
        let client = try await server.signedInClient(http: http, storage: storage)
        server.freezeClock()
        return (server, http, upstream, storage, client)
    }

    @Test("an answer lost after the server rotated is sent again at once and gets the successor: one call, no sign-out")
    func aLostAnswerIsRetriedAtOnce() async throws {
        let (server, http, upstream, storage, client) = try await Self.startWithReuseInterval()
        defer { Task { await server.stop() } }
        var changes = client.authStateChanges().makeAsyncIterator()
        #expect(await changes.next()?.event == .initialSession)
        let before = try StoredSession.decode(try #require(await storage.get(Self.key)))
        let answered = Answered()
        http.answer(where: { $0.isRefreshGrant }, times: 1) { request in
            await answered.keep(try await upstream.send(request))  // the server rotated...
            throw LatchkeyError(.networkError, "the connection was reset")  // ...and the app never heard
        }

        let token = try await client.getAccessToken()
        #expect(try await server.userinfo(token).status == 200)
        let refreshes = http.requests.filter(\.isRefreshGrant)
        #expect(refreshes.count == 2, "the lost one and its retry, in the same call")
        #expect(Set(refreshes.compactMap(\.body)).count == 1, "the retry presents the same refresh token (and client)")
        let lost = try #require(await answered.response)
        #expect(lost.status == 200)
        let issued = try #require(try JSONSerialization.jsonObject(with: lost.body) as? [String: Any])["refresh_token"] as? String
        let after = try StoredSession.decode(try #require(await storage.get(Self.key)))
        #expect(after.refreshToken == issued, "the successor the lost answer carried: the family did not fork")
        #expect(after.refreshToken != before.refreshToken)
        #expect(await changes.next()?.event == .tokenRefreshed, "no sign-out or expiry came first")
    }

    @Test("an answer lost twice keeps the session (the error is thrown); the next call's retry still gets the successor")
    func anAnswerLostTwiceKeepsTheSession() async throws {
        let (server, http, upstream, storage, client) = try await Self.startWithReuseInterval()
        defer { Task { await server.stop() } }
        let stored = try #require(await storage.get(Self.key))
        http.answer(where: { $0.isRefreshGrant }, times: 2) { request in
            _ = try await upstream.send(request)
            throw LatchkeyError(.requestTimeout, "the request timed out")
        }
        await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .requestTimeout }
        #expect(http.refreshCount == 2, "one retry, not a loop")
        #expect(try await client.isSignedIn())
        #expect(await storage.get(Self.key) == stored, "the stored session is kept as it was")

        let token = try await client.getAccessToken()
        #expect(http.refreshCount == 3)
        #expect(try await server.userinfo(token).status == 200, "the third presentation, inside the interval, is not a replay")
    }

    @Test("only invalid_grant ends the session: the stream says sessionExpired with the server's reason, and storage is cleared")
    func onlyADeadGrantEndsTheSession() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        let http = ProgrammableHTTPClient()
        let client = try await server.signedInClient(http: http, storage: storage)
        var changes = client.authStateChanges().makeAsyncIterator()
        #expect(await changes.next()?.event == .initialSession)
        // Someone else presents the session's refresh token first (the server's reuse interval is off in tests): the
        // family is rotated away from us, and our presentation is a replay.
        let item = try #require(await storage.get(Self.key))
        let spent = try #require(try StoredSession.decode(item).refreshToken)
        #expect(try await server.refresh(spent).status == 200)
        await #expect { try await client.getAccessToken() } throws: {
            let error = $0 as? LatchkeyError
            return error?.code == .sessionExpired && error?.serverCode == "invalid_grant"
        }
        #expect(http.refreshCount == 1, "a refusal is an answer: it is not sent again")
        let ended = await changes.next()
        #expect(ended?.event == .sessionExpired && ended?.isSignedIn == false)
        #expect(ended?.reason?.code == .invalidGrant && ended?.reason?.serverCode == "invalid_grant")
        #expect(ended?.reason?.message.contains(spent) == false, "no token in the reason")
        #expect(await storage.get(Self.key) == nil)
        #expect(try await !client.isSignedIn())
    }

    @Test("a session stored by an earlier release (format 1) is restored, refreshed, and written back as format 2")
    func earlierFormatSurvivesTheUpdate() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let before = InMemoryStorageAdapter()
        _ = try await server.signedInClient(storage: before)
        let tokens = try StoredSession.decode(try #require(await before.get(Self.key)))
        let updated = InMemoryStorageAdapter()
        await updated.set(Self.key, try JSONEncoder().encode(tokens))  // exactly what the earlier release wrote

        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig(), storage: updated)
        #expect(try await !client.getUser().sub.isEmpty, "the restored ID token is read")
        #expect(try await server.userinfo(try await client.getAccessToken()).status == 200)
        let written = try #require(await updated.get(Self.key))
        #expect(String(decoding: written, as: UTF8.self).contains(#""version":2"#))
        #expect(try StoredSession.decode(written).refreshToken != tokens.refreshToken, "rotated and stored")
    }
}

/// The answer the server gave to a request whose answer the test then lost.
private actor Answered {
    private(set) var response: HTTPResponse?
    func keep(_ response: HTTPResponse) { self.response = response }
}
