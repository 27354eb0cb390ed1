import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Oversized bodies (413) and heads (431) get clear answers in each dialect, and slow clients cannot hold the server.
@Suite("Operations: request size limits and slow clients")
struct RequestLimitsTests {
    static func exchange(
        _ server: TestServer, _ method: String, _ path: String, headers: [String: String] = [:],
        body: Data? = nil
    ) async throws -> RawHTTP.Result {
        try await RawHTTP.exchange(
            host: "127.0.0.1", port: server.port, method: method, path: path, headers: ["Host": "127.0.0.1"].merging(headers) { $1 },
            body: body)
    }

    @Test("a body past 64 KiB is 413 in the dialect of its path, declared or chunked; one below is read")
    func oversizedBodies() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let big = Data(repeating: UInt8(ascii: "a"), count: RequestSizeLimits.maxBodyBytes + 1)
        for chunked in [false, true] {
            let framing = chunked ? ["Transfer-Encoding": "chunked"] : ["Content-Length": String(big.count)]
            let oauth = try await Self.exchange(
                server, "POST", "/oauth2/token",
                headers: framing.merging(["Content-Type": "application/x-www-form-urlencoded"]) { $1 }, body: big)
            #expect(oauth.status == 413, "chunked: \(chunked)")
            #expect(try oauth.response.json()["error"] as? String == "invalid_request")
            let flow = try await Self.exchange(
                server, "POST", "/flow/execute", headers: framing.merging(["Content-Type": "application/json"]) { $1 }, body: big)
            #expect(try flow.status == 413 && (flow.response.json()["code"] as? String) == "SSE-413", "thunderID: \(flow.response.text)")
            let reachFive = try await Self.exchange(
                server, "POST", "/identity/v1/password/login",
                headers: framing.merging(["Content-Type": "application/json"]) { $1 }, body: big)
            #expect(try reachFive.status == 413 && (reachFive.response.json()["error_message_key"]) != nil, "reachFive: \(reachFive.response.text)")
            let scim = try await Self.exchange(
                server, "PUT", "/scim2/Me", headers: framing.merging(["Content-Type": "application/scim+json"]) { $1 }, body: big)
            #expect(scim.status == 413 || scim.status == 401, "SCIM: \(scim.status)")
            #expect(scim.response.text.contains("urn:ietf:params:scim:api:messages:2.0:Error"))
        }
        let fits = Data(("client_id=latchkey-demo&grant_type=nope&pad=" + String(repeating: "b", count: 60_000)).utf8)
        let answer = try await Self.exchange(
            server, "POST", "/oauth2/token", headers: ["Content-Type": "application/x-www-form-urlencoded"], body: fits)
        #expect(
            try answer.status == 400 && (answer.response.json()["error"] as? String) == "unsupported_grant_type",
            "read and judged: \(answer.response.text)")
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
        let within = try await Self.exchange(
            server, "GET", "/health",
            headers: [
                "X-Big": String(repeating: "a", count: 12 * 1024),
                "Cookie": String(repeating: "k=v; ", count: 1000)
            ])
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

    /// How many connections the server closed for `reason`, from its own registry.
    static func closed(_ server: TestServer, _ reason: ServerMetrics.ConnectionClose) -> Double {
        MetricsTests.samples(server.server.metrics.exposition())["latchkey_http_connections_closed_total{reason=\"\(reason.rawValue)\"}"] ?? -1
    }

    @Test("an answer given before the body arrived does not switch the deadline off for the requests after it")
    func earlyAnswerKeepsTheDeadline() async throws {
        // 10 s: the three sends below must land within one deadline on a machine busy with other work (at 2 s, a loaded
        // run saw the first request's deadline close the connection before the second was sent).
        let server = try await TestServer.start { $0.httpRequestTimeoutSeconds = 10 }
        defer { Task { await server.stop() } }
        let connection = try await RawConnection.open(port: server.port)
        // Answered 404 before its one-byte body is sent; the byte follows; then a body trickles into the token endpoint.
        try await connection.send("POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n")
        try await eventually("the early 404") { connection.text.contains("404") }
        try await connection.send("x")
        try await connection.send(
            "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\n")
        let trickle = Task {
            for _ in 0..<200 where connection.isActive {  // 60 s of bytes, each well within any idle timeout
                try await Task.sleep(for: .milliseconds(300))
                try? await connection.send("a")
            }
        }
        defer { trickle.cancel() }
        try await eventually("the trickling connection closed by the server") { !connection.isActive }
        #expect(Self.closed(server, .requestTimeout) == 1)
    }

    @Test("a keep-alive connection idle for longer than the request deadline still serves its next request")
    func idleKeepAliveOutlivesTheRequestDeadline() async throws {
        let server = try await TestServer.start { $0.httpRequestTimeoutSeconds = 1 }
        defer { Task { await server.stop() } }
        let connection = try await RawConnection.open(port: server.port)
        try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        try await eventually("the first answer") { connection.text.components(separatedBy: "HTTP/1.1 200").count == 2 }
        try await Task.sleep(for: .milliseconds(2500))  // idle: the idle timeout (60 s) governs, not the request deadline
        #expect(connection.isActive)
        try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        try await eventually("the second answer on the same connection") { connection.text.components(separatedBy: "HTTP/1.1 200").count == 3 }
        #expect(Self.closed(server, .requestTimeout) == 0)
    }

    @Test("a body declared past the limit is answered 413 and the connection closed, not drained")
    func declaredOversizedBodyClosesTheConnection() async throws {
        let server = try await TestServer.start()  // the request deadline at its default, 30 s
        defer { Task { await server.stop() } }
        let connection = try await RawConnection.open(port: server.port)
        try await connection.send(
            "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + "Content-Length: 10000000000\r\n\r\n" + String(repeating: "a", count: 1000))
        try await eventually("the connection closed after the 413") { !connection.isActive }
        #expect(connection.text.hasPrefix("HTTP/1.1 413"), "\(connection.text.prefix(200))")
        #expect(Self.closed(server, .bodyTooLarge) == 1)
        #expect(try await TestBrowser().get(server.base + "/health").status == 200)
    }

    @Test("trailers past the limits close the connection: no 431 as a second answer to a request already open")
    func oversizedTrailers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let connection = try await RawConnection.open(port: server.port)
        try await connection.send(
            "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Big: "
                + String(repeating: "a", count: 40 * 1024) + "\r\n\r\n")
        try await eventually("the connection closed") { !connection.isActive }
        #expect(!connection.text.contains("431"), "\(connection.text.prefix(200))")
        #expect(Self.closed(server, .headerTooLarge) == 1)
        #expect(try await TestBrowser().get(server.base + "/health").status == 200)
    }

    @Test("a client that stops reading its answers is cut off at the deadline")
    func slowReaders() async throws {
        let server = try await TestServer.start { $0.httpRequestTimeoutSeconds = 2 }
        defer { Task { await server.stop() } }
        // A small receive buffer and no reads: the server's socket buffers fill and its channel stops being writable.
        let connection = try await RawConnection.open(port: server.port, reading: false)
        let request = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
        try await connection.send(String(repeating: request, count: 40))  // 40 × 287 KB answers, pipelined
        try await eventually("the server closed the connection of a client that does not read") {
            Self.closed(server, .responseNotRead) == 1
        }
        #expect(try await TestBrowser().get(server.base + "/health").status == 200)
    }
}

/// A raw loopback connection: bytes out as given, bytes in collected (or left unread in the socket).
final class RawConnection: Sendable {
    let channel: any Channel
    private let received: NIOLockedValueBox<[UInt8]>

    private init(channel: any Channel, received: NIOLockedValueBox<[UInt8]>) {
        self.channel = channel
        self.received = received
    }

    static func open(port: Int, reading: Bool = true) async throws -> RawConnection {
        let received = NIOLockedValueBox<[UInt8]>([])
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connectTimeout(.seconds(10))
        if !reading {
            bootstrap = bootstrap.channelOption(ChannelOptions.autoRead, value: false)
                .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 4096)
        }
        let channel = try await bootstrap.channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received: received)) }
        }.connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, received: received)
    }

    var isActive: Bool { channel.isActive }
    var text: String { String(decoding: received.withLockedValue { $0 }, as: UTF8.self) }

    func send(_ text: String) async throws { try await channel.writeAndFlush(ByteBuffer(string: text)).get() }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<[UInt8]>
        init(received: NIOLockedValueBox<[UInt8]>) { self.received = received }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            received.withLockedValue { $0.append(contentsOf: buffer.readableBytesView) }
        }
    }
}
