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
