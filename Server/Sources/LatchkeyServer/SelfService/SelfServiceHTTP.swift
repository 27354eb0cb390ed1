import Foundation
import Hummingbird

/// What every route of the account (`/users/me`) and administration (`/admin/v1`) APIs shares at the HTTP edge: how a
/// token is refused, and how a JSON body is read.
enum SelfServiceHTTP {
    /// How `/users/me` refuses a token: a missing, invalid, expired or revoked token, or any token that is not an
    /// access token, is `401 AUTH-4010` with the token's own challenge (RFC 6750 §3); a store failure is a 500.
    static func refusal(_ error: OAuthError, request: Request) throws -> Response {
        guard error.code != .serverError else { throw APIError.internalError() }
        var response = try ErrorMiddleware.api(
            SelfServiceErrors.unauthorized(error.description), dialect: .thunder, locale: request.locale())
        // The token's own challenge (a DPoP-bound token gets the DPoP scheme, a missing nonce its `DPoP-Nonce`),
        // as userinfo and SCIM answer it; a Bearer `invalid_token` when the refusal has none.
        for field in ErrorMiddleware.challengeHeaders(error, request: request) { response.headers[field.name] = field.value }
        if response.headers[.wwwAuthenticate] == nil {
            response.headers[.wwwAuthenticate] =
                "Bearer error=\"invalid_token\", error_description=\"\(error.description.replacingOccurrences(of: "\"", with: "'"))\""
        }
        return response
    }

    /// A JSON body of the self-service routes, or `400 USR-1001` (`415` for another media type).
    static func body<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let buffer = try await request.boundedBody()
        // As every JSON endpoint: a cross-site form can send `text/plain`.
        guard JSONMediaType.accepts(request, body: buffer) else {
            var error = SelfServiceErrors.invalidRequest("the body must be sent as application/json")
            error.status = .unsupportedMediaType
            throw error
        }
        do { return try JSONDecoder().decode(T.self, from: Data(buffer: buffer)) } catch {
            throw SelfServiceErrors.invalidRequest("the body is not the expected JSON object")
        }
    }
}
