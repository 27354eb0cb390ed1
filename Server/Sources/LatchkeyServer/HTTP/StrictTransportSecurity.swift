import Hummingbird

/// `Strict-Transport-Security` on every answer of an https issuer, so a browser that once reached the server never
/// again tries plain http (where a network attacker could strip TLS). The proxy terminates TLS; the header is the
/// server's to send because only it knows its public scheme. No `includeSubDomains`: sibling hosts are not ours.
struct StrictTransportSecurityMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    static let value = "max-age=31536000"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.strictTransportSecurity] = Self.value
        return response
    }
}
