import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// A flood of wrong client secrets against a freshly started instance made every request of
/// the real confidential client answer 503, because each wrong secret ran a 210,000-round PBKDF2 until one success
/// filled the cache. Now configured clients' secrets are remembered at start (no request derives a key for them), and
/// the derivations that remain (a stored secret not verified since the start) are budgeted per address and per client
/// before they run.
@Suite("Security: wrong client secrets cannot block a confidential client")
struct ClientSecretFloodTests {
    static let wrong = "wrong-secret-0123456789"

    static func clientCredentials(
        _ server: TestServer, secret: String, clientId: String = "poster",
        headers: [String: String] = [:]
    ) async throws -> Int {
        try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "client_credentials", "client_id": clientId, "client_secret": secret, "scope": "api.read"
            ], headers: headers
        ).status
    }

    /// Stores the client `stored` without passing through the configuration (an instance that never seeded it, or one
    /// an operator added): its secret is not remembered, so each check of it derives a key. Returns the secret.
    static func storeUnrememberedClient(_ server: TestServer) async throws -> String {
        let secret = "stored-secret-0123456789"
        var configuration = TestServer.postClient
        configuration.clientId = "stored"
        try await server.server.store.upsertClient(
            ClientRecord(configuration: configuration, secretHash: try ClientSecrets.hash(secret, rounds: 1_000)))
        return secret
    }

    @Test("a cold instance at the production cost, flooded with wrong secrets from the start: the real client is served every time")
    func coldFloodDoesNotBlockTheRealClient() async throws {
        let server = try await TestServer.start { $0.clientSecretRounds = ClientSecrets.rounds }
        defer { Task { await server.stop() } }
        // 24 attackers, each sending wrong secrets back to back (the review's flood), from before the real client's
        // first request; bounded, and stopped when the test ends.
        let answers = Collected()
        let flood = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<24 {
                    group.addTask {
                        for _ in 0..<40 where !Task.isCancelled {
                            let status = (try? await Self.clientCredentials(server, secret: Self.wrong)) ?? 0
                            await answers.add(HTTPResult(status: status, headers: [:], body: Data()))
                        }
                    }
                }
            }
        }
        defer { flood.cancel() }
        try await eventually("the flood under way") { await answers.count >= 48 }
        var real: [Int] = []
        for _ in 0..<10 { real.append(try await Self.clientCredentials(server, secret: "poster-secret-0123456789")) }
        #expect(real == Array(repeating: 200, count: 10), "the real client during the flood: \(real)")
        let attackers = await answers.results.map(\.status)
        #expect(!attackers.contains(503), "no wrong secret queued a key derivation: \(Set(attackers))")
        #expect(attackers.allSatisfy { $0 == 401 }, "\(Set(attackers))")
    }

    @Test("a secret not verified since the start costs a derivation: budgeted per address, then per client over all addresses")
    func derivationsAreBudgeted() async throws {
        let proxies = try TrustedProxies(["127.0.0.1", "::1"])
        let server = try await TestServer.start {
            $0.trustedProxies = proxies
            $0.loginPolicy.maxClientAuthFailuresPerAddress = 3
            $0.loginPolicy.maxClientAuthFailuresPerClient = 5
        }
        defer { Task { await server.stop() } }
        let secret = try await Self.storeUnrememberedClient(server)
        let alice = ["X-Forwarded-For": "203.0.113.7"], bob = ["X-Forwarded-For": "198.51.100.20"], carol = ["X-Forwarded-For": "192.0.2.44"]

        for _ in 0..<3 { #expect(try await Self.clientCredentials(server, secret: Self.wrong, clientId: "stored", headers: alice) == 401) }
        #expect(
            try await Self.clientCredentials(server, secret: Self.wrong, clientId: "stored", headers: alice) == 429,
            "alice's budget is spent: refused before deriving")
        #expect(
            try await Self.clientCredentials(server, secret: secret, clientId: "stored", headers: alice) == 429,
            "even with the right secret: nothing is derived for that address until the window passes")
        #expect(try await Self.clientCredentials(server, secret: Self.wrong, clientId: "stored", headers: bob) == 401)
        // The client's own budget (5) is spent over two addresses: a third address is refused too.
        #expect(try await Self.clientCredentials(server, secret: Self.wrong, clientId: "stored", headers: bob) == 401)
        #expect(
            try await Self.clientCredentials(server, secret: Self.wrong, clientId: "stored", headers: carol) == 429,
            "the client's budget is spent over all addresses")
        // Configured clients are remembered: no budget applies to them, whatever the flood did.
        #expect(try await Self.clientCredentials(server, secret: "poster-secret-0123456789", headers: alice) == 200)
    }

    @Test("a right secret gives its place back: it does not count against the budgets")
    func successIsNotAFailure() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxClientAuthFailuresPerAddress = 2
            $0.loginPolicy.maxClientAuthFailuresPerClient = 2
        }
        defer { Task { await server.stop() } }
        // A new salt each round: each stored value is unknown to the cache, so every check derives.
        for _ in 0..<4 {
            let secret = try await Self.storeUnrememberedClient(server)
            #expect(try await Self.clientCredentials(server, secret: secret, clientId: "stored") == 200)
        }
    }

    @Test("a restart keeps the stored form of a configured secret, so other instances' remembered checks stay valid")
    func restartKeepsTheStoredForm() async throws {
        let path = TestServer.newSQLitePath()
        let first = try await TestServer.start(databasePath: path)
        let before = try #require(try await first.server.store.client(id: "poster")?.secretHash)
        await first.stop(keepingDatabase: true)
        let second = try await TestServer.start(databasePath: path)
        defer { Task { await second.stop() } }
        #expect(try await second.server.store.client(id: "poster")?.secretHash == before)
        #expect(ClientSecrets.isCheap(before))
    }
}
