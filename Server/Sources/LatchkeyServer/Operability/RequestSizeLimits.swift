import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// How large a request may be. Nothing the server takes needs more: the largest bodies are attestation objects and
/// SCIM replacements, a few KiB; the largest heads carry a DPoP proof and cookies.
public enum RequestSizeLimits {
    /// Request bodies: 64 KiB; more is refused with 413 before it is read when `Content-Length` says so, and as soon
    /// as a chunked body passes it otherwise.
    public static let maxBodyBytes = 64 * 1024
    /// The request head: 32 KiB in all, 16 KiB for one header line, 100 header fields; more is refused with 431.
    public static let maxHeaderBytes = 32 * 1024
    public static let maxHeaderFieldBytes = 16 * 1024
    public static let maxHeaderFields = 100

    static var decoder: HTTP1Channel.Configuration.DecoderConfiguration {
        .init(maxHeaderFieldSize: maxHeaderFieldBytes, maxHeaderListSize: maxHeaderBytes, maxHeaderFieldCount: maxHeaderFields)
    }

    /// The error every oversized body becomes (thrown by `Request.boundedBody()`, and by `BodyLimitMiddleware` from
    /// the declared length): answered 413 in the path's dialect by `ErrorMiddleware`.
    static let bodyTooLarge = APIError(
        status: .contentTooLarge, code: "SSE-413", error: "invalid_request", messageKey: "error.request",
        userMessage: "The request could not be processed.",
        technical: "the request body is larger than \(maxBodyBytes / 1024) KiB")
}

extension Request {
    /// The whole body, at most `RequestSizeLimits.maxBodyBytes`; a longer one throws the 413 error.
    func boundedBody() async throws -> ByteBuffer {
        do {
            return try await body.collect(upTo: RequestSizeLimits.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw RequestSizeLimits.bodyTooLarge
        }
    }
}

/// Refuses a body whose declared `Content-Length` passes the limit before a byte of it is read (413), so a client
/// cannot make the server buffer it. Chunked bodies are cut off by `Request.boundedBody()` as they arrive.
struct BodyLimitMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let declared = request.headers[.contentLength], let length = Int(declared), length > RequestSizeLimits.maxBodyBytes {
            throw RequestSizeLimits.bodyTooLarge
        }
        return try await next(request, context)
    }
}

/// Answers a request head past the decoder's limits with 431 Request Header Fields Too Large (RFC 6585 §5) and closes
/// the connection, where the HTTP server would otherwise answer a bare 400. Sits right after the HTTP codec; every
/// other error goes on down the pipeline.
///
/// The close lingers: the client is usually still sending the rest of its head, and closing at once would reset the
/// connection and destroy the answer before it is read. So the sending side is shut after the answer, and what still
/// arrives is read and dropped until the client stops sending (`closeLingering()`).
///
/// Trailers past the limits arrive while a request is open (its head passed on, its end not) or its answer is being
/// written: a 431 then would be a second answer to one request, so the connection is only closed.
final class HeaderLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private static let body =
        #"{"error":"invalid_request","error_description":"the request head is larger than "#
        + "\(RequestSizeLimits.maxHeaderBytes / 1024) KiB, has a line over \(RequestSizeLimits.maxHeaderFieldBytes / 1024) KiB, "
        + #"or has more than \#(RequestSizeLimits.maxHeaderFields) fields"}"#
    private let onClose: @Sendable (ServerMetrics.ConnectionClose) -> Void
    private var answered = false
    /// A request's head was passed on and its end not yet.
    private var requestOpen = false
    /// An answer's head was written and its end not yet.
    private var responseOpen = false

    init(onClose: @escaping @Sendable (ServerMetrics.ConnectionClose) -> Void = { _ in }) { self.onClose = onClose }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        switch unwrapInboundIn(data) {
        case .head: requestOpen = true
        case .body: break
        case .end: requestOpen = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head: responseOpen = true
        case .body: break
        case .end: responseOpen = false
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if answered { return }  // the decoder refuses every byte after the overflow: nothing more to say
        guard let parserError = error as? HTTPParserError, parserError == .headerOverflow else {
            context.fireErrorCaught(error)
            return
        }
        answered = true
        onClose(.headerTooLarge)
        if requestOpen || responseOpen {
            context.close(promise: nil)
            return
        }
        let body = ByteBuffer(string: Self.body)
        let head = HTTPResponse(
            status: .init(code: 431, reasonPhrase: "Request Header Fields Too Large"),
            headerFields: [
                .contentType: "application/json", .contentLength: String(body.readableBytes),
                .connection: "close", RequestIdMiddleware.header: Secrets.identifier()
            ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.closeLingering() }
    }
}
