import Hummingbird
import NIOCore

/// Request context carrying the peer address, used by login throttling.
public struct LatchkeyRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The peer IP as text (port dropped), the key of the per-address throttle.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
