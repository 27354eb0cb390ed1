import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client takes longer than `timeout` to deliver a whole request — head and body — counted
/// from the moment the server starts waiting for it (the connection opened, or the previous response was written).
///
/// The idle timeout alone does not stop a slowloris client: one byte every few seconds keeps a connection "active"
/// for ever, and a few thousand such connections would hold the server's file descriptors and request tasks. With
/// this deadline a connection costs the server at most `timeout` of waiting, however the client paces its bytes.
/// While the server works on a request (its end read, its response not yet written) no deadline runs.
/// (The pipelined case: the deadline starts again only once every request read has been answered.)
final class RequestReadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// Requests read whole and not yet answered (more than one when a client pipelines).
    private var inProgress = 0

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            inProgress += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            inProgress = max(0, inProgress - 1)
            if inProgress == 0 { arm(context) }
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) { bound.value.close(promise: nil) }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
