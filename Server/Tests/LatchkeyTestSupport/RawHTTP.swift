import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP/1.1 request/response over a fresh loopback connection, with SwiftNIO's client codec.
package enum RawHTTP {
    package struct Result {
        package let response: HTTPResult
        package let setCookies: [String]
        package var status: Int { response.status }
    }

    /// Whether `error` says the peer closed or reset the connection before a whole response arrived.
    package static func isDroppedConnection(_ error: any Error) -> Bool {
        if let channelError = error as? ChannelError {
            return channelError == .ioOnClosedChannel || channelError == .eof || channelError == .alreadyClosed
        }
        if let ioError = error as? IOError { return [ECONNRESET, EPIPE, ECONNREFUSED].contains(ioError.errnoCode) }
        if error is NIOConnectionError { return true }
        return error is ClosedBeforeResponse
    }

    /// The peer closed the connection after the request and before the response's end.
    struct ClosedBeforeResponse: Error, CustomStringConvertible {
        var description: String { "connection closed before the response ended" }
    }

    package static func exchange(host: String, port: Int, method: String, path: String, headers: [String: String], body: Data?) async throws -> Result
    {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path)
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            // A server may answer before the request's end (413, 431) and stop reading: a write that fails then is
            // no reason to ignore the answer that already arrived, as an HTTP client that gives up on the first
            // failed write would. The answer is read either way; the write's error counts only without one.
            var writeError: (any Error)?
            do {
                try await outbound.write(.head(head))
                if let body, !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
                try await outbound.write(.end(nil))
            } catch {
                writeError = error
            }
            var status = 0
            var fields: [String: String] = [:]
            var cookies: [String] = []
            var data = Data()
            for try await part in inbound {
                switch part {
                case .head(let response):
                    status = Int(response.status.code)
                    for (name, value) in response.headers {
                        if name.lowercased() == "set-cookie" { cookies.append(value) } else { fields[name] = value }
                    }
                    if !cookies.isEmpty { fields["Set-Cookie"] = cookies.joined(separator: "\n") }
                case .body(let buffer):
                    data.append(contentsOf: buffer.readableBytesView)
                case .end:
                    return Result(response: HTTPResult(status: status, headers: fields, body: data), setCookies: cookies)
                }
            }
            throw writeError ?? ClosedBeforeResponse()
        }
    }
}
