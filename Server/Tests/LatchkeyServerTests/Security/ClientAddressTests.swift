import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// Behind a trusted reverse proxy each client has its own throttle bucket (read from `X-Forwarded-For` /
/// `Forwarded`, walking from the right); without one, forwarding headers are ignored; IPv6 clients are keyed by
/// /64; the throttle map is bounded.
@Suite("Client addresses: trusted proxies, IPv6 /64 keys, bounded throttles")
struct ClientAddressTests {
    static func wrongGuess(_ server: TestServer, from header: [String: String]) async throws -> Int {
        try await server.passwordLogin("nobody@example.com", "guess", headers: header).status
    }

    @Test("behind a trusted proxy, two clients are throttled separately, and a spoofed X-Forwarded-For prefix changes nothing")
    func trustedProxySeparatesClients() async throws {
        let proxies = try TrustedProxies(["127.0.0.1", "::1"])
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAddress = 2
            $0.trustedProxies = proxies
        }
        defer { Task { await server.stop() } }
        let alice = ["X-Forwarded-For": "203.0.113.7"]
        let bob = ["X-Forwarded-For": "198.51.100.20"]
        #expect(try await Self.wrongGuess(server, from: alice) == 401)
        #expect(try await Self.wrongGuess(server, from: alice) == 401)
        #expect(try await Self.wrongGuess(server, from: alice) == 429, "alice's own bucket is full")
        // Alice prepends a fake hop: the proxy appended her real address on the right, and that is what counts.
        #expect(try await Self.wrongGuess(server, from: ["X-Forwarded-For": "192.0.2.99, 203.0.113.7"]) == 429)
        #expect(try await Self.wrongGuess(server, from: bob) == 401, "bob behind the same proxy is not throttled by alice")
    }

    @Test("the RFC 7239 Forwarded header when configured, IPv6 clients by /64")
    func forwardedHeaderAndIPv6() async throws {
        let proxies = try TrustedProxies(["127.0.0.0/8"], header: .forwarded)
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAddress = 2
            $0.trustedProxies = proxies
        }
        defer { Task { await server.stop() } }
        let first = ["Forwarded": #"for="[2001:db8:1:2::10]:4711";proto=https"#]
        let sameSubnet = ["Forwarded": #"for="[2001:db8:1:2:ffff::99]""#]
        let otherSubnet = ["Forwarded": #"for="[2001:db8:1:3::10]""#]
        #expect(try await Self.wrongGuess(server, from: first) == 401)
        #expect(try await Self.wrongGuess(server, from: sameSubnet) == 401)
        #expect(try await Self.wrongGuess(server, from: sameSubnet) == 429, "one /64 shares one bucket")
        #expect(try await Self.wrongGuess(server, from: otherSubnet) == 401)
        // X-Forwarded-For is not the configured header: it cannot pick another bucket.
        #expect(try await Self.wrongGuess(server, from: sameSubnet.merging(["X-Forwarded-For": "198.51.100.1"]) { a, _ in a }) == 429)
    }

    @Test("an untrusted peer's X-Forwarded-For is ignored")
    func untrustedPeerHeaderIgnored() async throws {
        let proxies = try TrustedProxies(["10.0.0.0/8"])  // the test's peer (127.0.0.1) is not a proxy
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAddress = 2
            $0.trustedProxies = proxies
        }
        defer { Task { await server.stop() } }
        #expect(try await Self.wrongGuess(server, from: ["X-Forwarded-For": "203.0.113.1"]) == 401)
        #expect(try await Self.wrongGuess(server, from: ["X-Forwarded-For": "203.0.113.2"]) == 401)
        #expect(try await Self.wrongGuess(server, from: ["X-Forwarded-For": "203.0.113.3"]) == 429, "a new header value is no new bucket")
    }

    @Test("client address resolution walks from the right and stops at the first untrusted hop")
    func resolution() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "192.0.2.1", "fd00::/8"])
        #expect(proxies.clientAddress(peer: "10.1.2.3", headerValues: ["198.51.100.7, 192.0.2.1"]) == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "10.1.2.3", headerValues: ["6.6.6.6, 198.51.100.7", "10.9.9.9"]) == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "198.51.100.8", headerValues: ["6.6.6.6"]) == "198.51.100.8", "untrusted peer")
        #expect(proxies.clientAddress(peer: "10.1.2.3", headerValues: []) == "10.1.2.3", "no header: the proxy itself")
        #expect(proxies.clientAddress(peer: "10.1.2.3", headerValues: ["unknown"]) == "10.1.2.3", "garbage ends the walk")
        #expect(proxies.clientAddress(peer: "fd00::1", headerValues: ["2001:db8::5"]) == "2001:db8::5")
        #expect(
            TrustedProxies.forwardedFor(#"for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711""#)
                == ["192.0.2.60", "[2001:db8:cafe::17]:4711"])
        #expect(throws: ConfigurationError.self) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: ConfigurationError.self) { try TrustedProxies(["proxy.example"]) }
    }

    @Test("throttle keys: IPv6 by /64, IPv4 and IPv4-mapped IPv6 by address")
    func throttleKeys() {
        let key = ClientAddress.throttleKey
        #expect(key("2001:db8:1:2:aaaa::1") == key("2001:0db8:0001:0002:bbbb:cccc:dddd:eeee"))
        #expect(key("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(key("2001:db8:1:2::1") != key("2001:db8:1:3::1"))
        #expect(key("[2001:db8:1:2::1]:443") == key("2001:db8:1:2::1"))
        #expect(key("::ffff:192.0.2.1") == "192.0.2.1")
        #expect(key("192.0.2.1") != key("192.0.2.2"))
        #expect(key("192.0.2.1:8080") == "192.0.2.1")
    }

    @Test("the throttle map stays within its capacity under a flood of new addresses, and keeps the recent ones")
    func memoryBound() async {
        let throttle = AddressThrottle(limit: 1, window: 300, capacity: 100)
        let now = Date()
        for i in 0..<5000 {
            await throttle.recordFailure(address: "10.\(i / 65536).\((i / 256) % 256).\(i % 256)", now: now.addingTimeInterval(Double(i) / 100))
        }
        #expect(await throttle.trackedCount <= 100)
        let latest = "10.0.\((4999 / 256) % 256).\(4999 % 256)"
        #expect(await throttle.retryAfter(address: latest, now: now.addingTimeInterval(50)) != nil, "the most recent address is still throttled")
        // Expired entries are swept first: a later flood keeps only live ones.
        #expect(await throttle.retryAfter(address: latest, now: now.addingTimeInterval(400)) == nil)
    }
}

@Suite("Configuration keys of the throttles and proxies")
struct ThrottleConfigurationTests {
    static func apply(_ json: String) throws -> ServerConfiguration {
        var configuration = ServerConfiguration(issuer: try #require(URL(string: "https://id.example")), databasePath: "/tmp/unused.sqlite")
        try JSONDecoder().decode(ConfigurationFile.self, from: Data(json.utf8)).apply(to: &configuration)
        try configuration.validate()
        return configuration
    }

    @Test("trusted_proxies, client_address_header and the new login_policy limits are read; bad values are start-up errors")
    func keys() throws {
        let configuration = try Self.apply(
            """
            {"trusted_proxies": ["127.0.0.1", "10.0.0.0/8"], "client_address_header": "forwarded", "prune_interval_seconds": 60,
             "login_policy": {"max_concurrent_hashes": 3, "max_queued_hashes": 7, "max_tracked_addresses": 500,
                              "max_starts_per_address": 40, "max_registrations_per_address": 4, "max_failures_per_account_all_addresses": 30}}
            """)
        #expect(configuration.trustedProxies == (try TrustedProxies(["127.0.0.1", "10.0.0.0/8"], header: .forwarded)))
        #expect(configuration.pruneIntervalSeconds == 60)
        let p = configuration.loginPolicy
        #expect(p.maxConcurrentHashes == 3 && p.maxQueuedHashes == 7 && p.maxTrackedAddresses == 500)
        #expect(p.maxStartsPerAddress == 40 && p.maxRegistrationsPerAddress == 4 && p.maxFailuresPerAccountAllAddresses == 30)
        #expect(throws: ConfigurationError.self) { try Self.apply(#"{"trusted_proxies": ["not-an-ip"]}"#) }
        #expect(throws: ConfigurationError.self) { try Self.apply(#"{"trusted_proxies": ["::1"], "client_address_header": "x-real-ip"}"#) }
        #expect(throws: ConfigurationError.self) { try Self.apply(#"{"login_policy": {"max_concurrent_hashes": 0}}"#) }
        #expect(throws: ConfigurationError.self) { try Self.apply(#"{"bcrypt_cost": 8}"#) }
    }
}
