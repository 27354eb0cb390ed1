import LatchkeyTestSupport
import Foundation
import GRDB
@testable import LatchkeyServer
import Testing

/// `/ready` and the request id every answer carries, and every log line the request causes.
@Suite("Operations: readiness and request ids")
struct ReadinessAndRequestIdTests {
    @Test("/ready answers 200 with its checks when the store answers and keys are loaded; /health stays plain")
    func ready() async throws {
        let server = try await TestServer.start(databasePath: TestServer.newSQLitePath())  // edits the SQLite file
        defer { Task { await server.stop() } }
        let ready = try await TestBrowser().get(server.base + "/ready")
        let body = try ready.json()
        #expect(ready.status == 200 && body["status"] as? String == "ready")
        #expect(body["checks"] as? [String: String] == ["store": "ok", "keys": "ok"])
        #expect(try await TestBrowser().get(server.base + "/health").text == "ok")

        // The store stops answering (a table gone): not ready, while still alive; ready again once it is back.
        let store = try #require(server.server.store as? SQLiteStore)
        try await store.pool.write { try $0.execute(sql: "ALTER TABLE clients RENAME TO clients_away") }
        let broken = try await TestBrowser().get(server.base + "/ready")
        #expect(try broken.status == 503 && (try broken.json()["checks"] as? [String: String])?["store"] == "unavailable")
        #expect(!broken.text.contains("clients"), "no internal detail in the answer")
        #expect(try await TestBrowser().get(server.base + "/health").status == 200)
        try await store.pool.write { try $0.execute(sql: "ALTER TABLE clients_away RENAME TO clients") }
        #expect(try await TestBrowser().get(server.base + "/ready").status == 200)
    }

    @Test("every answer has an X-Request-Id: a well-formed one offered is kept, anything else replaced; errors too")
    func requestIds() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let generated = try await browser.get(server.base + "/health").header("X-Request-Id")
        #expect(generated.map { (1...64).contains($0.count) } == true)
        #expect(try await browser.get(server.base + "/health", headers: ["X-Request-Id": "trace-42.a_b"]).header("X-Request-Id") == "trace-42.a_b")
        for hostile in [String(repeating: "a", count: 65), "two words", "id\"quote", "ünïcode"] {
            let answered = try await browser.get(server.base + "/health", headers: ["X-Request-Id": hostile]).header("X-Request-Id")
            #expect(answered != nil && answered != hostile, "\(hostile)")
        }
        #expect(try await browser.get(server.base + "/no-such-page").header("X-Request-Id") != nil, "a 404")
        let oauthError = try await browser.postForm(server.base + "/oauth2/token", ["grant_type": "nope", "client_id": "latchkey-demo"])
        #expect(oauthError.status == 400 && oauthError.header("X-Request-Id") != nil, "an OAuth error")
    }

    @Test("the server's own log lines carry the id of the request that caused them (a refresh replay), offered or given")
    func logLinesCarryTheRequestId() async throws {
        let capture = NoSecretsInLogsTests.Capture()
        let server = try await TestServer.start(logger: capture.logger("server"))
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        /// Spends a refresh token, presents it again, and returns the replay's request id and the lines it logged.
        func replay(headers: [String: String]) async throws -> (id: String?, lines: [String]) {
            let refreshToken = try #require(try await server.tokens().refreshToken)
            #expect(try await server.refresh(refreshToken).status == 200)
            let before = capture.all.count
            let answer = try await browser.postForm(
                server.base + "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": refreshToken, "client_id": "latchkey-demo"],
                headers: headers)
            #expect(answer.status == 400)
            return (answer.header("X-Request-Id"), capture.all.dropFirst(before).filter { $0.contains("refresh token replayed") })
        }
        let offered = try await replay(headers: ["X-Request-Id": "replay-trace-7"])
        #expect(offered.id == "replay-trace-7")
        #expect(offered.lines.count == 1 && offered.lines.allSatisfy { $0.contains("request_id=replay-trace-7") }, "\(offered.lines)")
        let given = try await replay(headers: [:])
        let id = try #require(given.id)
        #expect(given.lines.count == 1 && given.lines.allSatisfy { $0.contains("request_id=\(id)") }, "\(given.lines)")
    }

    @Test("a flow step's log line (an account locked by a wrong password) carries the id of the request that ran it")
    func flowStepLinesCarryTheRequestId() async throws {
        let capture = NoSecretsInLogsTests.Capture()
        let server = try await TestServer.start(logger: capture.logger("server")) { $0.loginPolicy.maxFailuresPerAccount = 1 }
        defer { Task { await server.stop() } }
        try await server.server.createUser(username: "ada", password: "correct horse battery staple")
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        let before = capture.all.count
        let refused = try await flow.submit("action_001", ["username": "ada", "password": "wrong horse"])
        let id = try #require(refused.header("X-Request-Id"))
        let lines = capture.all.dropFirst(before).filter { $0.contains("account locked after repeated failures") }
        #expect(lines.count == 1 && lines.allSatisfy { $0.contains("request_id=\(id)") }, "\(lines)")
    }
}
