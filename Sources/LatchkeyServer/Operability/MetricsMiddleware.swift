import Hummingbird
import HTTPTypes

/// Counts every answer by route template, method and status, and times it. Placed outside `ErrorMiddleware`, so
/// errors are counted with the status they were answered with; a 404 for a path no route matches is counted under
/// the route `NotFound`, never under the path the client sent.
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            record(request, context, status: response.status.code, started)
            return response
        } catch let error as any HTTPResponseError {
            record(request, context, status: error.status.code, started)
            throw error
        } catch {
            record(request, context, status: 500, started)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, _ started: ContinuousClock.Instant) {
        metrics.request(
            route: context.endpointPath ?? "NotFound", method: Self.method(request.method), status: status,
            duration: ContinuousClock.now - started)
    }

    /// Methods outside the standard set are one label value, so a client cannot add series by inventing methods.
    static func method(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .patch, .delete, .options: method.rawValue
        default: "OTHER"
        }
    }
}

extension IdentityServer {
    /// Headers a reverse proxy adds (the two `trusted_proxies` can read, and nginx's `X-Real-IP`): a request carrying
    /// one came through a proxy, so from wherever the proxy serves.
    static let forwardingHeaders: [HTTPField.Name] = (TrustedProxies.Header.allCases.map(\.rawValue) + ["X-Real-IP"])
        .compactMap { HTTPField.Name($0) }

    /// `GET /metrics`, when `metrics` is enabled (the default only for a loopback binding: the figures say how many
    /// sign-ins fail and which routes are hit, which is for the operator, not the internet). Left to the default, a
    /// forwarded request is answered 404 as if there were no such route: the loopback binding may sit behind a proxy
    /// nobody told the server about.
    func addMetricsRoute(_ router: Router<LatchkeyRequestContext>) {
        guard configuration.servesMetrics else { return }
        let onlyDirect = configuration.metricsEnabled == nil
        router.get("/metrics") { request, _ in
            if onlyDirect, Self.forwardingHeaders.contains(where: { request.headers[$0] != nil }) {
                throw HTTPError(.notFound)
            }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: self.metrics.exposition())))
        }
    }
}
