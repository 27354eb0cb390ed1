import Foundation
@testable import LatchkeyServer
import NIOCore
import NIOPosix
import Testing

/// Oversized bodies (413) and heads (431) get clear answers in each dialect, and slow clients cannot hold the server.
@Suite("Operations: request size limits and slow clients")
struct RequestLimitsTests {
    static func exchange(_ server: TestServer, _ method: String, _ path: String, headers: [String: String] = [:],
                         body: Data? = nil) async throws -> RawHTTP.Result {
        try await RawHTTP.exchange(host: "127.0.0.1", port: server.port, method: method, path: path, headers: ["Host": "127.0.0.1"].merging(headers) { $1 },
                                   body: body)
    }

    @Test("a body past 64 KiB is 413 in the dialect of its path, declared or chunked; one below is read")
    func oversizedBodies() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let big = Data(repeating: UInt8(ascii: "a"), count: RequestSizeLimits.maxBodyBytes + 1)
        for chunked in [false, true] {
            let framing = chunked ? ["Transfer-Encoding": "chunked"] : ["Content-Length": String(big.count)]
            let oauth = try await Self.exchange(server, "POST", "/oauth2/token",
                                                headers: framing.merging(["Content-Type": "application/x-www-form-urlencoded"]) { $1 }, body: big)
            #expect(oauth.status == 413, "chunked: \(chunked)")
            #expect(try oauth.response.json()["error"] as? String == "invalid_request")
            let flow = try await Self.exchange(server, "POST", "/flow/execute", headers: framing.merging(["Content-Type": "application/json"]) { $1 }, body: big)
            #expect(try flow.status == 413 && (flow.response.json()["code"] as? String) == "SSE-413", "thunderID: \(flow.response.text)")
            let reachFive = try await Self.exchange(server, "POST", "/identity/v1/password/login",
                                                    headers: framing.merging(["Content-Type": "application/json"]) { $1 }, body: big)
            #expect(try reachFive.status == 413 && (reachFive.response.json()["error_message_key"]) != nil, "reachFive: \(reachFive.response.text)")
            let scim = try await Self.exchange(server, "PUT", "/scim2/Me", headers: framing.merging(["Content-Type": "application/scim+json"]) { $1 }, body: big)
            #expect(scim.status == 413 || scim.status == 401, "SCIM: \(scim.status)")
            #expect(scim.response.text.contains("urn:ietf:params:scim:api:messages:2.0:Error"))
        }
        let fits = Data(("client_id=latchkey-demo&grant_type=nope&pad=" + String(repeating: "b", count: 60_000)).utf8)
        let answer = try await Self.exchange(server, "POST", "/oauth2/token", headers: ["Content-Type": "application/x-www-form-urlencoded"], body: fits)
        #expect(try answer.status == 400 && (answer.response.json()["error"] as? String) == "unsupported_grant_type", "read and judged: \(answer.response.text)")
        #expect(try await TestBrowser().get(server.base + "/health").status == 200, "the server is fine")
    }

    @Test("a request head past 32 KiB, a line past 16 KiB or more than 100 fields is 431; a large one within the limits is served")
    func oversizedHeads() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let line = try await Self.exchange(server, "GET", "/health", headers: ["X-Big": String(repeating: "a", count: 17 * 1024)])
        #expect(line.status == 431)
        #expect(line.response.text.contains("request head"))
        var many: [String: String] = [:]
        for i in 0..<101 { many["X-Field-\(i)"] = "v" }
        #expect(try await Self.exchange(server, "GET", "/health", headers: many).status == 431)
        var total: [String: String] = [:]
        for i in 0..<3 { total["X-Part-\(i)"] = String(repeating: "c", count: 12 * 1024) }
        #expect(try await Self.exchange(server, "GET", "/health", headers: total).status == 431)
        let within = try await Self.exchange(server, "GET", "/health", headers: ["X-Big": String(repeating: "a", count: 12 * 1024),
                                                                                  "Cookie": String(repeating: "k=v; ", count: 1000)])
        #expect(within.status == 200)
        #expect(try await TestBrowser().get(server.base + "/health").status == 200)
    }

    @Test("clients that trickle a request are cut off at the request deadline, and do not keep others from being served")
    func slowClients() async throws {
        let server = try await TestServer.start { $0.httpRequestTimeoutSeconds = 2 }
        defer { Task { await server.stop() } }
        // 64 connections each send part of a head and then a byte a second: each alone keeps an idle timeout away.
        let slow = try await withThrowingTaskGroup(of: (any Channel).self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: server.port).get()
                }
            }
            return try await group.reduce(into: [any Channel]()) { $0.append($1) }
        }
        // (On a loaded machine a connection may already be past its deadline here: then the server has closed it.)
        for channel in slow { try? await channel.writeAndFlush(ByteBuffer(string: "POST /oauth2/token HTTP/1.1\r\nHost: x\r\n")).get() }
        let trickle = Task {
            for i in 0..<30 {
                try await Task.sleep(for: .milliseconds(500))
                for channel in slow where channel.isActive { try? await channel.writeAndFlush(ByteBuffer(string: "X-\(i): y\r\n")).get() }
            }
        }
        defer { trickle.cancel() }
        // Meanwhile everyone else is served.
        for _ in 0..<20 { #expect(try await TestBrowser().get(server.base + "/health").status == 200) }
        let tokens = try await server.tokens()
        #expect(try await server.userinfo(tokens.accessToken).status == 200)
        // And every slow connection is closed by the server, though it never stopped sending.
        try await eventually("every slow connection closed by the server") { slow.allSatisfy { !$0.isActive } }
        // A connection that sends its request in time is not affected by the deadline of the one before on it.
        let patient = try await Self.exchange(server, "GET", "/health")
        #expect(patient.status == 200)
    }
}
