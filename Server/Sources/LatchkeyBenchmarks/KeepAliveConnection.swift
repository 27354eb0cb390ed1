import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One persistent HTTP/1.1 connection on loopback, a request at a time: the load client of the throughput figures.
/// (URLSession on Linux goes through libcurl and saturates a core itself at about 1,500 requests a second, so it
/// measured the client, not the servers.)
final class KeepAliveConnection: @unchecked Sendable {
    private let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
    private var inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    private let host: String

    init(host: String, port: Int) async throws {
        self.host = "\(host):\(port)"
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        inbound = channel.inbound.makeAsyncIterator()
        outbound = channel.outbound
    }

    /// Sends one request and reads its whole answer: (status, body).
    func send(_ method: HTTPMethod, _ path: String, form: String? = nil) async throws -> (Int, Data) {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
        head.headers.add(name: "Host", value: host)
        if let form {
            head.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            head.headers.add(name: "Content-Length", value: String(form.utf8.count))
        }
        try await outbound.write(.head(head))
        if let form { try await outbound.write(.body(.byteBuffer(ByteBuffer(string: form)))) }
        try await outbound.write(.end(nil))
        var status = 0
        var body = Data()
        while let part = try await inbound.next() {
            switch part {
            case .head(let response): status = Int(response.status.code)
            case .body(let buffer): body.append(contentsOf: buffer.readableBytesView)
            case .end: return (status, body)
            }
        }
        throw BenchError("the connection closed mid-answer")
    }

    /// Finishes the writer (NIO requires it before the writer goes away) and closes the connection.
    func close() async {
        outbound.finish()
        try? await channel.channel.close()
    }
}
