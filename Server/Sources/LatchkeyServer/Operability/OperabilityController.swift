import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The operator's endpoints: `GET /health` (the process serves), `GET /ready` (it can do its work: the store answers
/// and signing keys are loaded), `GET /metrics` (when enabled) and `GET /openapi.json`. Holds only what they read.
struct OperabilityController {
    let store: any ClientStore
    let keys: KeyRing
    let metrics: ServerMetrics
    /// Whether `/metrics` is routed at all, and whether only direct (unproxied) requests may read it.
    let servesMetrics: Bool
    let metricsOnlyDirect: Bool

    func addRoutes(to routes: RouterGroup<LatchkeyRequestContext>) {
        routes.get("/health") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok")))
        }
        routes.get("/ready") { _, context in try await readiness(logger: context.logger) }
        let openAPI = ByteBuffer(string: OpenAPIDocument.json)
        routes.get("/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: openAPI))
        }
        // The figures say how many sign-ins fail and which routes are hit: for the operator, not the internet. Left to
        // the default, a forwarded request is answered 404 as if there were no such route: the loopback binding may
        // sit behind a proxy nobody told the server about.
        guard servesMetrics else { return }
        routes.get("/metrics") { request, _ in
            if metricsOnlyDirect, Self.forwardingHeaders.contains(where: { request.headers[$0] != nil }) {
                throw HTTPError(.notFound)
            }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
    }

    /// Headers a reverse proxy adds (the two `trusted_proxies` can read, and nginx's `X-Real-IP`): a request carrying
    /// one came through a proxy, so from wherever the proxy serves.
    static let forwardingHeaders: [HTTPField.Name] = (TrustedProxies.Header.allCases.map(\.rawValue) + ["X-Real-IP"])
        .compactMap { HTTPField.Name($0) }

    /// 200 when the store answers and signing keys are loaded, 503 otherwise, without internal detail (the log has it).
    private func readiness(logger: Logger) async throws -> Response {
        struct Status: Encodable {
            var status: String
            var checks: [String: String]
        }
        var checks: [String: String] = [:]
        do {
            _ = try await store.client(id: "latchkey-readiness-probe")
            checks["store"] = "ok"
        } catch {
            logger.error("readiness: the store does not answer", metadata: ["error": .string(String(describing: error).prefix(200).description)])
            checks["store"] = "unavailable"
        }
        do {
            checks["keys"] = try await keys.jwks().keys.isEmpty ? "missing" : "ok"
        } catch {
            logger.error("readiness: signing keys cannot be loaded", metadata: ["error": .string(String(describing: error).prefix(200).description)])
            checks["keys"] = "unavailable"
        }
        let ready = checks.values.allSatisfy { $0 == "ok" }
        return try Responses.json(
            Status(status: ready ? "ready" : "unavailable", checks: checks), status: ready ? .ok : .serviceUnavailable,
            noStore: true)
    }
}
