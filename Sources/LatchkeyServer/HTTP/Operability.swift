import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

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

extension IdentityServer {
    /// `GET /health` answers while the process serves; `GET /ready` only when it can do its work: the store answers
    /// and signing keys are loaded (503 otherwise, without internal detail — the log has it).
    func addHealthRoutes(_ router: Router<LatchkeyRequestContext>) {
        router.get("/health") { _, _ in Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok"))) }
        router.get("/ready") { _, _ in try await self.readiness() }
    }

    private func readiness() async throws -> Response {
        struct Status: Encodable { var status: String; var checks: [String: String] }
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
        return try Responses.json(Status(status: ready ? "ready" : "unavailable", checks: checks), status: ready ? .ok : .serviceUnavailable,
                                  noStore: true)
    }
}
