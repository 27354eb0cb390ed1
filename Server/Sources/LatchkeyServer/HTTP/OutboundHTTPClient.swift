import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The server's one HTTP/1.1 client: every request the server makes goes through it (identity providers' discovery
/// documents, keys, tokens and user info; Apple's keys; applications' `jwks_uri`, `request_uris` and sector documents;
/// back-channel logout tokens; audit webhooks). One instance per server, shared; each use says its `Limits`.
///
/// It resolves the host once, checks the addresses (`Reach`), and connects to an address it checked, so a name that
/// resolves to the server's own network (at registration or only later: DNS rebinding) is never reached where that is
/// refused. A URL loader cannot be told which address to use, so this client is small and built on SwiftNIO: a TCP
/// connection to the checked address, TLS with the URL's host as SNI and the usual certificate and host-name
/// verification, one request, `Connection: close`.
///
/// Every exchange, the lookup included, ends within `Limits.timeoutSeconds`; a body is read up to
/// `Limits.maximumBytes` (past it, announced or seen while reading, the connection is closed); a redirect is an
/// answer, never followed; no cookie is kept.
struct OutboundHTTPClient: Sendable {
    /// What an exchange gave.
    enum Answer: Sendable, Equatable {
        case response(status: Int, body: Data)
        /// The body is larger than the limit: the transfer was cut short after the answer's `status` line.
        case tooLarge(status: Int)
        /// Why there was no answer: technical English for the server's log (it names the host, never the path).
        case failed(String)
    }

    /// Which addresses a request may reach.
    enum Reach: Sendable {
        /// Public addresses only: URLs an application registered through the API.
        case publicOnly
        /// Any address: URLs the operator set in the configuration file, which may name a service on loopback or
        /// inside the network on purpose.
        case any
    }

    /// What one use of the client allows: how long the whole exchange may take, how large an answer's body may be,
    /// and where the request may go.
    struct Limits: Sendable, Equatable {
        var timeoutSeconds: Int
        var maximumBytes: Int
        var reach: Reach
    }

    let resolver: any HostResolver
    private let tls: TLSContextCache

    init(resolver: any HostResolver = SystemHostResolver(), additionalTrustRoots: [NIOSSLCertificate] = []) {
        self.resolver = resolver
        self.tls = TLSContextCache(additionalTrustRoots: additionalTrustRoots)
    }

    /// One request to `url`: `method` with `headers` and `body`, within `limits`.
    func send(_ method: HTTPMethod, _ url: URL, headers: [(String, String)] = [], body: Data? = nil, limits: Limits) async -> Answer {
        let timeoutSeconds = limits.timeoutSeconds
        let deadline = NIODeadline.now() + .seconds(Int64(timeoutSeconds))
        return await Self.within(deadline, late: .failed("no answer within \(timeoutSeconds) s")) {
            await exchange(
                method, url, headers: headers, body: body, maximumBytes: limits.maximumBytes, reach: limits.reach, deadline: deadline,
                timeoutSeconds: timeoutSeconds)
        }
    }

    /// What a delivery gave (a POST whose answer's body does not matter: a webhook, a logout token): the status, or
    /// why there was none.
    enum DeliveryOutcome: Sendable, Equatable {
        case status(Int)
        case unreachable(String)
    }

    /// A POST of `body` whose answer counts by its status alone: one with a body larger than `limits.maximumBytes`
    /// too (the receiver answered; the rest of its body is not read).
    func deliver(_ url: URL, headers: [(String, String)], body: Data, limits: Limits) async -> DeliveryOutcome {
        switch await send(.POST, url, headers: headers, body: body, limits: limits) {
        case .response(let status, _), .tooLarge(let status): return .status(status)
        case .failed(let why): return .unreachable(why)
        }
    }

    private func exchange(
        _ method: HTTPMethod, _ url: URL, headers: [(String, String)], body: Data?, maximumBytes: Int, reach: Reach, deadline: NIODeadline,
        timeoutSeconds: Int
    ) async -> Answer {
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = url.host, !host.isEmpty else {
            return .failed("not an http(s) URL with a host")
        }
        if reach == .publicOnly, scheme != "https" { return .failed("only https may be fetched for a registered application") }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let shown = ClientMetadata.printable(host)
        if reach == .publicOnly, InternetAddress.isInternal(host: bareHost) {
            return .failed("\(shown) is an internal address")
        }
        let addresses: [SocketAddress]
        do { addresses = try await resolver.addresses(of: bareHost, port: port) } catch {
            return .failed("\(shown) cannot be resolved (\(Self.describe(error)))")
        }
        guard !addresses.isEmpty else { return .failed("\(shown) has no address") }
        // Every address, not only the one used: the answers of a name under someone else's control may mix a public
        // address with an internal one, and which is tried first is not ours to rely on.
        if reach == .publicOnly, let inside = addresses.first(where: InternetAddress.isInternal) {
            return .failed("\(shown) resolves to an internal address (\(Self.printable(inside)))")
        }
        let sslContext: NIOSSLContext?
        do { sslContext = scheme == "https" ? try tls.context() : nil } catch {
            return .failed("TLS could not be set up (\(Self.describe(error)))")
        }
        // SNI and host-name verification use the URL's name (without the root's trailing dot, which SNI does not
        // carry); for an address literal there is no SNI and the certificate must name the address.
        let serverName = InternetAddress.literal(bareHost) == nil ? (bareHost.hasSuffix(".") ? String(bareHost.dropLast()) : bareHost) : nil
        let hostField = bareHost.contains(":") ? "[\(bareHost)]" : bareHost
        let request = Self.head(method, url, host: hostField, port: port, scheme: scheme, headers: headers, bodyLength: body?.count)
        var lastFailure = "\(shown) cannot be reached"
        for address in addresses {
            let remaining = deadline - .now()
            guard remaining > .nanoseconds(0) else { return .failed("no answer within \(timeoutSeconds) s") }
            let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
            let answer = eventLoop.makePromise(of: Answer.self)
            let channel: any Channel
            do {
                channel = try await ClientBootstrap(group: eventLoop)
                    .connectTimeout(remaining)
                    .channelInitializer { channel in
                        do {
                            let sync = channel.pipeline.syncOperations
                            if let sslContext {
                                try sync.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                            }
                            try sync.addHTTPClientHandlers()
                            try sync.addHandler(ResponseCollector(limit: maximumBytes, answer: answer))
                            return channel.eventLoop.makeSucceededVoidFuture()
                        } catch {
                            return channel.eventLoop.makeFailedFuture(error)
                        }
                    }
                    .connect(to: address).get()
            } catch {
                answer.fail(error)
                lastFailure = "\(shown) cannot be reached (\(Self.describe(error)))"
                continue  // another checked address of the same name may answer
            }
            return await withTaskCancellationHandler {
                channel.write(HTTPClientRequestPart.head(request), promise: nil)
                if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                do { return try await answer.futureResult.get() } catch {
                    return .failed("\(shown) did not answer (\(Self.describe(error)))")
                }
            } onCancel: {
                channel.close(promise: nil)
            }
        }
        return .failed(lastFailure)
    }

    private static func head(
        _ method: HTTPMethod, _ url: URL, host: String, port: Int, scheme: String, headers: [(String, String)], bodyLength: Int?
    ) -> HTTPRequestHead {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        var fields = HTTPHeaders()
        let defaultPort = scheme == "https" ? 443 : 80
        fields.add(name: "Host", value: port == defaultPort ? host : "\(host):\(port)")
        for (name, value) in headers { fields.add(name: name, value: value) }
        if let bodyLength { fields.add(name: "Content-Length", value: String(bodyLength)) }
        fields.add(name: "Connection", value: "close")
        return HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: fields)
    }

    /// `work`'s result, or `late` when it has not ended by `deadline` (it is then cancelled, which closes its
    /// connection; a system lookup that ignores cancellation finishes on its own thread, unheard).
    private static func within<T: Sendable>(_ deadline: NIODeadline, late: T, _ work: @escaping @Sendable () async -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let pending = NIOLockedValueBox<CheckedContinuation<T, Never>?>(continuation)
            // Whoever comes first (the work or the deadline) resumes the caller; the other finds nothing to do.
            let finish: @Sendable (T) -> Bool = { value in
                let waiting = pending.withLockedValue { state -> CheckedContinuation<T, Never>? in
                    defer { state = nil }
                    return state
                }
                waiting?.resume(returning: value)
                return waiting != nil
            }
            let timer = NIOLockedValueBox<Scheduled<Void>?>(nil)
            let task = Task {
                if finish(await work()) { timer.withLockedValue { $0?.cancel() } }
            }
            let scheduled = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(deadline: deadline) {
                if finish(late) { task.cancel() }
            }
            timer.withLockedValue { $0 = scheduled }
        }
    }

    /// An error in a few words for the log: its type and at most 120 characters of its description.
    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return "\(error.description.prefix(120))" }
        return "\(type(of: error)): \(String(describing: error).prefix(120))"
    }

    private static func printable(_ address: SocketAddress) -> String { address.ipAddress ?? "\(address)" }
}

/// The TLS client context: made at the first https request (a server whose applications never need one builds none),
/// then shared. The system's trust roots, TLS 1.2 at least, full certificate and host-name verification.
private final class TLSContextCache: Sendable {
    private let made = NIOLockedValueBox<NIOSSLContext?>(nil)
    private let additionalTrustRoots: [NIOSSLCertificate]

    init(additionalTrustRoots: [NIOSSLCertificate]) { self.additionalTrustRoots = additionalTrustRoots }

    func context() throws -> NIOSSLContext {
        try made.withLockedValue { made in
            if let made { return made }
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            configuration.certificateVerification = .fullVerification
            if !additionalTrustRoots.isEmpty { configuration.additionalTrustRoots = [.certificates(additionalTrustRoots)] }
            let context = try NIOSSLContext(configuration: configuration)
            made = context
            return context
        }
    }
}

/// Collects one HTTP answer up to `limit` bytes of body and completes `answer` once: with the answer at its end,
/// `tooLarge` as soon as the limit is passed (announced by `Content-Length` or seen), or the error that ended the
/// connection first. It closes the connection when done.
private final class ResponseCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let limit: Int
    private let answer: EventLoopPromise<OutboundHTTPClient.Answer>
    private var status: Int?
    private var body = ByteBuffer()
    private var done = false

    init(limit: Int, answer: EventLoopPromise<OutboundHTTPClient.Answer>) {
        self.limit = limit
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            let code = Int(head.status.code)
            status = code
            if let announced = head.headers.first(name: "content-length").flatMap(Int.init), announced > limit {
                finish(.tooLarge(status: code), context: context)
            }
        case .body(let part):
            guard body.readableBytes + part.readableBytes <= limit else {
                // A body part follows the answer's head, which set `status`.
                finish(status.map { .tooLarge(status: $0) } ?? .failed("not an HTTP answer"), context: context)
                return
            }
            var part = part
            body.writeBuffer(&part)
        case .end:
            guard let status else {
                finish(.failed("not an HTTP answer"), context: context)
                return
            }
            finish(.response(status: status, body: Data(body.readableBytesView)), context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            answer.fail(error)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            answer.succeed(.failed("the connection closed before the answer was complete"))
        }
        context.fireChannelInactive()
    }

    private func finish(_ outcome: OutboundHTTPClient.Answer, context: ChannelHandlerContext) {
        done = true
        answer.succeed(outcome)
        context.close(promise: nil)
    }
}
