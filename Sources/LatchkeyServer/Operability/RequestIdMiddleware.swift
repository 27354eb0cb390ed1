import Foundation
import HTTPTypes
import Hummingbird

/// Gives every request an id, returned as `X-Request-Id` (errors included) and put on the request's logger: the one a
/// trusted caller sent when it is a plain token (1–64 of `A-Z a-z 0-9 . _ -`), else a new one — a client cannot inject
/// log syntax or overlong values through it.
struct RequestIdMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    static let header = HTTPField.Name("X-Request-Id")!
    private static let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let offered = request.headers[Self.header]
        let id = offered.flatMap { (1...64).contains($0.count) && $0.allSatisfy(Self.allowed.contains) ? $0 : nil } ?? Secrets.identifier()
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
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
