import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The deadlines of one connection, against clients that hold the server's connections and request tasks by being slow
/// on purpose (slowloris) or by accident.
///
/// - **Reading a request**: from the first byte of a request to the end of its body, a client has `timeout`, however
///   it paces its bytes. Hummingbird's idle timeout alone cannot stop a trickle: each body part, and each complete
///   head, counts as activity. The deadline runs while the client owes bytes of a request the server is waiting for;
///   it does not run while the connection is idle between requests (the idle timeout governs that), nor while the
///   server works on a request whose end it has read. An answer given before the whole body arrived (a 404, a 413)
///   leaves it running until the body's end is read.
/// - **Reading an answer**: a client that stops reading leaves the answer in the socket's buffers; once the channel
///   stops being writable, the client has `timeout` to make room, or the connection is closed.
/// - **A body past the limit** is answered 413 before its end (`BodyLimitMiddleware` from the declared length,
///   `Request.boundedBody()` for a chunked one) and the rest is not read: the connection is shut for writing after
///   the answer and closed shortly after, instead of draining gigabytes the client announced.
final class ConnectionDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private let onClose: @Sendable (ServerMetrics.ConnectionClose) -> Void
    private var readDeadline: Scheduled<Void>?
    private var writeDeadline: Scheduled<Void>?
    /// A request's head has been read and its end not yet.
    private var reading = false
    /// Bytes of a request arrived since the last request's end (its head may still be incomplete).
    private var begun = false
    /// Heads read whose answers have not been written to the end.
    private var unanswered = 0
    /// The answer being written is a 413.
    private var answeringTooLarge = false
    private var closing = false

    init(timeout: TimeAmount, onClose: @escaping @Sendable (ServerMetrics.ConnectionClose) -> Void = { _ in }) {
        self.timeout = timeout
        self.onClose = onClose
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The HTTP decoder hands on a head only once it is complete: the first byte of a request is seen before it.
        try? context.pipeline.syncOperations.addHandler(FirstBytesObserver(owner: self), position: .first)
    }

    /// Raw bytes arrived (`FirstBytesObserver`): while no request is being read, they begin the next one.
    fileprivate func bytesArrived(_ context: ChannelHandlerContext) {
        guard !reading, !begun else { return }
        begun = true
        update(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closing { return }  // what still arrives after a 413 is dropped
        switch unwrapInboundIn(data) {
        case .head:
            reading = true
            begun = true
            unanswered += 1
        case .body:
            break
        case .end:
            reading = false
            begun = false
        }
        update(context)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            answeringTooLarge = head.status == .contentTooLarge
        case .body:
            break
        case .end:
            unanswered = max(0, unanswered - 1)
            if answeringTooLarge, reading {
                closeAfter(context, data: data, promise: promise)
                return
            }
            update(context)
        }
        context.write(data, promise: promise)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeDeadline?.cancel()
            writeDeadline = nil
        } else if writeDeadline == nil {
            writeDeadline = schedule(context, .responseNotRead)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelAll()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { cancelAll() }

    /// The read deadline runs while a request is being read, or has begun (bytes of its head) with every earlier
    /// request answered; it starts when it starts to run and is not moved by further bytes.
    private func update(_ context: ChannelHandlerContext) {
        let runs = !closing && (reading || (begun && unanswered == 0))
        if runs, readDeadline == nil {
            readDeadline = schedule(context, .requestTimeout)
        } else if !runs {
            readDeadline?.cancel()
            readDeadline = nil
        }
    }

    private func schedule(_ context: ChannelHandlerContext, _ reason: ServerMetrics.ConnectionClose) -> Scheduled<Void> {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let onClose = self.onClose
        return context.eventLoop.scheduleTask(in: timeout) {
            let context = bound.value
            guard context.channel.isActive else { return }
            onClose(reason)
            context.close(promise: nil)
        }
    }

    /// Writes the answer's end and closes lingeringly (`closeLingering()`: closing at once, with unread bytes, would
    /// reset the connection and destroy the answer).
    private func closeAfter(_ context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        closing = true
        cancelAll()
        onClose(.bodyTooLarge)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let written = context.writeAndFlush(data)
        written.cascade(to: promise)
        written.whenComplete { _ in bound.value.closeLingering() }
    }

    private func cancelAll() {
        readDeadline?.cancel()
        readDeadline = nil
        writeDeadline?.cancel()
        writeDeadline = nil
    }
}

/// First in the pipeline, before the HTTP decoder: tells its owner that bytes arrived, and passes them on untouched.
private final class FirstBytesObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Both handlers live on the channel's event loop, in one pipeline.
    private weak var owner: ConnectionDeadlineHandler?

    init(owner: ConnectionDeadlineHandler) { self.owner = owner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner?.bytesArrived(context)
        context.fireChannelRead(data)
    }
}

extension ChannelHandlerContext {
    /// Closes after an answer the client may still be sending into, as nginx's lingering close does: the sending side
    /// is shut at once (the answer is complete and the client sees its end), and what still arrives is read and
    /// dropped until the client closes, or sends nothing for `LingeringDrain.quiet`, or `LingeringDrain.cap` has
    /// passed. Closing at once, with unread bytes in the socket, makes the kernel reset the connection, and the reset
    /// can destroy the answer before a client that is slow to stop sending reads it.
    func closeLingering() {
        close(mode: .output, promise: nil)
        // First in the pipeline: the rest of the request never reaches the HTTP decoder.
        do { try pipeline.syncOperations.addHandler(LingeringDrain(), position: .first) } catch {
            close(promise: nil)  // nothing would ever close it otherwise
        }
    }
}

/// Drops every byte of a connection whose answer is complete, and closes it once the client has gone quiet.
final class LingeringDrain: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// Closed once nothing has arrived for this long (nginx's `lingering_timeout` is 5 s).
    static let quiet = TimeAmount.seconds(5)
    /// And closed this long after the answer whatever the client does (nginx's `lingering_time` is 30 s).
    static let cap = TimeAmount.seconds(30)

    private var quietTimer: Scheduled<Void>?
    private var capTimer: Scheduled<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        capTimer = Self.closeLater(context, in: Self.cap)
        quietTimer = Self.closeLater(context, in: Self.quiet)
        // Read on our own: the handlers behind this one (the request's body stream) may have stopped asking for more
        // when their buffer filled, and a drain that reads nothing would close on unread bytes after all.
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        quietTimer?.cancel()
        quietTimer = Self.closeLater(context, in: Self.quiet)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client has finished sending (a half-close, where the channel allows them): nothing left to drain.
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { cancelTimers() }

    private func cancelTimers() {
        quietTimer?.cancel()
        capTimer?.cancel()
    }

    private static func closeLater(_ context: ChannelHandlerContext, in delay: TimeAmount) -> Scheduled<Void> {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        return context.eventLoop.scheduleTask(in: delay) { bound.value.close(promise: nil) }
    }
}
