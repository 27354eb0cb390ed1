import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// `GET /metrics`: the Prometheus exposition of what the server did, with no identifier or secret in it.
@Suite("Operations: Prometheus metrics")
struct MetricsTests {
    /// The exposition's samples, `name{labels}` → value (comments dropped).
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    static func metrics(_ server: TestServer) async throws -> (text: String, samples: [String: Double]) {
        let answer = try await TestBrowser().get(server.base + "/metrics")
        #expect(answer.status == 200)
        #expect(answer.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        return (answer.text, samples(answer.text))
    }

    @Test("sign-ins by method and outcome, refresh rotations and replays, requests by route template and status, latency")
    func countsWhatHappened() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let refreshToken = try #require(tokens.refreshToken)
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        #expect(try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "not it").status == 401)
        let rotated = try await server.refresh(refreshToken)
        #expect(rotated.status == 200)
        #expect(try await server.refresh(refreshToken).status == 400, "the replay")
        let secretPath = "/scim2/Users/\(UUID().uuidString)"
        #expect(try await TestBrowser().get(server.base + secretPath, headers: ["Authorization": "Bearer \(tokens.accessToken)"]).status >= 400)
        #expect(try await TestBrowser().get(server.base + "/no-such-route-qwertz").status == 404)

        let (text, samples) = try await Self.metrics(server)
        #expect(samples[#"latchkey_sign_ins_total{method="password",outcome="success"}"#] == 1)
        #expect(samples[#"latchkey_sign_ins_total{method="password",outcome="failure"}"#] == 1)
        #expect(samples[#"latchkey_sign_ins_total{method="passkey",outcome="success"}"#] == 0, "every series exists from the start")
        #expect(samples[#"latchkey_refresh_tokens_total{result="rotated"}"#] == 1)
        #expect(samples[#"latchkey_refresh_tokens_total{result="replayed"}"#] == 1)
        #expect(samples[#"latchkey_http_requests_total{route="/oauth2/token",method="POST",status="200"}"#] == 2, "the code and the refresh")
        #expect(samples[#"latchkey_http_requests_total{route="/oauth2/token",method="POST",status="400"}"#] == 1)
        #expect(
            samples.keys.contains { $0.hasPrefix(#"latchkey_http_requests_total{route="/scim2/Users/{id}",method="GET""#) },
            "a route is labelled by its template")
        #expect(samples[#"latchkey_http_requests_total{route="NotFound",method="GET",status="404"}"#] == 1)
        #expect((samples[#"latchkey_http_request_duration_seconds_count{route="/oauth2/token",method="POST"}"#] ?? 0) == 3)
        #expect(samples[#"latchkey_http_request_duration_seconds_bucket{route="/oauth2/token",method="POST",le="+Inf"}"#] == 3)
        #expect(text.contains("# HELP latchkey_sign_ins_total"))

        // Nothing a client sent or received is a label: no path it chose, no account, no token.
        let userId = try #require(try await server.server.store.user(username: "demo@example.com")).id
        for secret in [
            tokens.accessToken, refreshToken, tokens.idToken ?? "-", "demo@example.com", userId, "qwertz",
            String(secretPath.dropFirst("/scim2/Users/".count)), "not it"
        ] {
            #expect(!text.contains(secret), "\(secret.prefix(12))… is in /metrics")
        }
    }

    @Test("lockouts and per-address throttles are counted by limit")
    func lockoutsAndThrottles() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAccount = 2
            $0.loginPolicy.maxStartsPerAddress = 2
        }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var page = try await server.openLoginPage(browser, AuthorizeOptions())
        for attempt in 1...3 { page = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong \(attempt)") }
        #expect(try await TestBrowser().get(server.authorizeURL(AuthorizeOptions())).status != 429)
        #expect(try await TestBrowser().get(server.authorizeURL(AuthorizeOptions())).status == 429, "the third start from this address")

        let (_, samples) = try await Self.metrics(server)
        #expect(samples["latchkey_account_lockouts_total"] == 1)
        #expect(samples[#"latchkey_throttled_requests_total{limit="start"}"#] == 1)
        #expect(samples[#"latchkey_throttled_requests_total{limit="login"}"#] == 0)
        #expect(samples[#"latchkey_sign_ins_total{method="password",outcome="failure"}"#] == 3, "a locked account answers as a failure")
    }

    @Test("an app-native flow's password check and completion count as `flow`")
    func flows() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        #expect(try await flow.submit("action_001", ["username": "demo@example.com", "password": "wrong"]).flowStatus == "INCOMPLETE")
        #expect(
            try await flow.submit("action_001", ["username": "demo@example.com", "password": "correct horse battery staple"]).flowStatus == "COMPLETE"
        )
        let (_, samples) = try await Self.metrics(server)
        #expect(samples[#"latchkey_sign_ins_total{method="flow",outcome="failure"}"#] == 1)
        #expect(samples[#"latchkey_sign_ins_total{method="flow",outcome="success"}"#] == 1, "the completion (not also its password step)")
        #expect(samples[#"latchkey_sign_ins_total{method="password",outcome="success"}"#] == 0)
    }

    @Test("served by default only on a development instance's loopback binding; the configuration decides otherwise")
    func exposure() async throws {
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: "unused", host: "127.0.0.1")
        #expect(configuration.servesMetrics)
        // A real server on loopback may sit behind a proxy that adds no forwarding header.
        configuration.development = false
        #expect(!configuration.servesMetrics, "a real server serves metrics only when told to")
        configuration.development = true
        configuration.host = "0.0.0.0"
        #expect(!configuration.servesMetrics)
        configuration.metricsEnabled = true
        #expect(configuration.servesMetrics)
        configuration.host = "::1"
        configuration.metricsEnabled = false
        #expect(!configuration.servesMetrics)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).json")
        try Data(#"{"metrics": true, "http_request_timeout_seconds": 7}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var base = DevelopmentDefaults.configuration(port: 0, databasePath: "unused", host: "10.0.0.1")
        try ConfigurationFile.load(path: file.path).apply(to: &base)
        #expect(base.servesMetrics && base.httpRequestTimeoutSeconds == 7)

        // A proxy in front: configured ones turn the default off; an unconfigured one is told by the headers it adds.
        configuration.host = "127.0.0.1"
        configuration.metricsEnabled = nil
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        #expect(!configuration.servesMetrics)
        configuration.metricsEnabled = true
        #expect(configuration.servesMetrics)

        let byDefault = try await TestServer.start()
        defer { Task { await byDefault.stop() } }
        let browser = TestBrowser()
        #expect(try await browser.get(byDefault.base + "/metrics").status == 200)
        for header in ["Forwarded", "X-Forwarded-For", "X-Real-IP"] {
            #expect(try await browser.get(byDefault.base + "/metrics", headers: [header: "for=203.0.113.9"]).status == 404, "\(header)")
        }
        let enabled = try await TestServer.start { $0.metricsEnabled = true }
        defer { Task { await enabled.stop() } }
        #expect(
            try await browser.get(enabled.base + "/metrics", headers: ["X-Forwarded-For": "203.0.113.9"]).status == 200,
            "enabled outright: the operator's proxy rules decide")

        let server = try await TestServer.start { $0.metricsEnabled = false }
        defer { Task { await server.stop() } }
        #expect(try await browser.get(server.base + "/metrics").status == 404)

        // A real (non-development) server on loopback, asked through a proxy that adds no header: nothing to see.
        let real = try await TestServer.start { $0.development = false }
        defer { Task { await real.stop() } }
        #expect(try await browser.get(real.base + "/metrics", headers: ["X-Forwarded-Host": "id.example.com"]).status == 404)
    }
}
