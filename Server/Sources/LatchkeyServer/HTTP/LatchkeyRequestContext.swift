import HTTPTypes
import Hummingbird
import NIOCore

/// Request context carrying the peer address, used by login throttling.
public struct LatchkeyRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// The client's IP as text (port dropped), the key of the per-address throttles: the socket peer, or, when the
    /// peer is a trusted proxy, the client it forwards for (`ClientAddressMiddleware`).
    var clientAddress: String

    /// The caller a protected group's `ResourceAuthenticationMiddleware` authenticated; handlers read it from the
    /// group's `ResourceRequestContext`, where it is not optional.
    var resourceCaller: ResourceCaller?

    /// What Hummingbird's own decoders read at most (`RequestSizeLimits.maxBodyBytes`, not its 2 MiB default).
    public var maxUploadSize: Int { RequestSizeLimits.maxBodyBytes }
}

/// Replaces the context's client address by the one a trusted proxy forwards for (`trusted_proxies`). Without
/// trusted proxies the forwarding headers are never read, since any client can send them.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    let proxies: TrustedProxies
    // Constant, valid field names (HTTP Types has no predefined ones for these).
    private static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    private static let forwarded = HTTPField.Name("Forwarded")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !proxies.isEmpty else { return try await next(request, context) }
        var context = context
        let name = proxies.header == .forwarded ? Self.forwarded : Self.xForwardedFor
        context.clientAddress = proxies.clientAddress(peer: context.clientAddress, headerValues: request.headers[values: name])
        return try await next(request, context)
    }
}
