import Foundation
import Hummingbird
import Logging

/// Turns every thrown error into the response shape of the dialect the path belongs to, and keeps internal
/// details (and anything secret) out of responses: unexpected errors are logged by type only and answered as 500.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as SCIMError {
            return try error.response()
        } catch let error as OAuthError {
            return try Self.oauth(error, request: request)
        } catch let error as APIError {
            return try Self.api(error, path: request.uri.path)
        } catch let error as HTTPError where error.status == .notFound {
            return try Self.api(.notFound(request.uri.path), path: request.uri.path)
        } catch let error as HTTPError where error.status.code < 500 {
            let api = APIError(status: error.status, code: "SSE-\(error.status.code)", error: "invalid_request",
                               messageKey: "error.request", userMessage: "The request could not be processed.",
                               technical: error.body ?? error.status.reasonPhrase)
            return try Self.api(api, path: request.uri.path)
        } catch {
            context.logger.error("request failed", metadata: ["path": .string(request.uri.path), "error.type": .string("\(type(of: error))"),
                                                             "error": .string(String(describing: error).prefix(200).description)])
            return try Self.api(.internalError(), path: request.uri.path)
        }
    }

    static func oauth(_ error: OAuthError, request: Request) throws -> Response {
        var headers: HTTPFields = [:]
        if error.code == .invalidClient, request.headers[.authorization]?.lowercased().hasPrefix("basic ") == true {
            headers[.wwwAuthenticate] = "Basic realm=\"latchkey\""  // RFC 6749 §5.2
        }
        if error.code == .invalidToken || error.code == .insufficientScope {
            headers[.wwwAuthenticate] = "Bearer error=\"\(error.code.rawValue)\", error_description=\"\(error.description.replacingOccurrences(of: "\"", with: "'"))\""
        }
        if Dialect.of(path: request.uri.path) == .scim {
            // SCIM clients parse RFC 7644 errors only; the Bearer challenge still tells them why (RFC 6750 §3).
            return try SCIMError(status: error.status, detail: error.description, headers: headers).response()
        }
        if Dialect.of(path: request.uri.path) == .reachFive {
            // `/identity/v1/…` clients parse `ApiError` only; the Bearer challenge header still says why (RFC 6750 §3).
            let api = APIError(status: error.status, code: "OAUTH-\(error.status.code)", error: error.code.rawValue,
                               messageKey: "oauth.\(error.code.rawValue)", userMessage: UserMessages.oauth(error.code),
                               technical: error.description)
            return try Responses.json(ReachFiveErrorBody(api, errorId: Secrets.identifier()), status: error.status, noStore: true, headers: headers)
        }
        let reachFive = request.uri.path.hasPrefix("/oauth/")
        let body = OAuthErrorBody(error: error.code.rawValue, errorDescription: error.description,
                                  errorId: reachFive ? Secrets.identifier() : nil,
                                  errorMessageKey: reachFive ? "oauth.\(error.code.rawValue)" : nil,
                                  errorUserMsg: reachFive ? UserMessages.oauth(error.code) : nil)
        return try Responses.json(body, status: error.status, noStore: true, headers: headers)
    }

    static func api(_ error: APIError, path: String) throws -> Response {
        switch Dialect.of(path: path) {
        case .reachFive:
            return try Responses.json(ReachFiveErrorBody(error, errorId: Secrets.identifier()), status: error.status)
        case .thunder:
            return try Responses.json(ThunderErrorBody(error), status: error.status)
        case .scim:
            return try SCIMError(status: error.status, detail: error.technical).response()
        case .oauth:
            return try Responses.json(OAuthErrorBody(error: error.error, errorDescription: error.technical), status: error.status)
        case .html:
            return Responses.html(Pages.message(title: error.status == .notFound ? "Page not found" : "Something went wrong",
                                                body: error.userMessage), status: error.status)
        }
    }
}

/// User-facing wording for OAuth errors shown to people (the localization issue translates these).
enum UserMessages {
    static func oauth(_ code: OAuthError.Code) -> String {
        switch code {
        case .invalidGrant: "Your sign-in has expired. Please sign in again."
        case .invalidClient, .unauthorizedClient: "This application is not allowed to sign you in."
        case .accessDenied: "Access was denied."
        case .loginRequired: "Please sign in."
        case .serverError: "Something went wrong on our side. Please try again."
        default: "The sign-in request was not valid. Please try again."
        }
    }
}
