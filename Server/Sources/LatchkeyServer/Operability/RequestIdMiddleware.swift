import Foundation
import HTTPTypes
import Hummingbird

/// Gives every request an id, returned as `X-Request-Id` (errors included) and carried by every line the request logs:
/// the one the client (or the proxy in front) sent when it is a plain token (1–64 of `A-Z a-z 0-9 . _ -`), else a new
/// one — a client cannot inject log syntax or overlong values through it. It is an id for finding log lines, not a
/// credential: a client may choose its own, as proxies and tracing systems do.
struct RequestIdMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    static let header = HTTPField.Name("X-Request-Id")!
    private static let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let offered = request.headers[Self.header]
        let id = offered.flatMap { (1...64).contains($0.count) && $0.allSatisfy(Self.allowed.contains) ? $0 : nil } ?? Secrets.identifier()
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        // Every line the request causes is logged through `context.logger`, which now carries the id.
        do {
            var response = try await next(request, context)
            response.headers[Self.header] = id
            return response
        } catch let error as any HTTPResponseError {
            var response = try error.response(from: request, context: context)
            response.headers[Self.header] = id
            return response
        }
    }
}
