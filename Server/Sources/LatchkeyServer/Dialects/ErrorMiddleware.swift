import Foundation
import Hummingbird
import Logging
import NIOCore

/// Turns every thrown error into the response shape of a dialect, and keeps internal details (and anything secret)
/// out of responses: unexpected errors are logged by type only and answered as 500. Every route is registered on a
/// group whose instance has the group's dialect; the router-wide instance (no dialect) answers only what no route
/// does — an unknown path, a body refused before routing — in the dialect of the path's prefix (`Dialect.of`).
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    let metrics: ServerMetrics
    var dialect: Dialect? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let dialect = self.dialect ?? Dialect.of(path: request.uri.path)
        do {
            return try await next(request, context)
        } catch let error as SCIMError {
            return try error.response()
        } catch let error as RecentAuthenticationRequired {
            return try error.response(request, dialect: dialect)
        } catch let error as OAuthError {
            return try Self.oauth(error, request: request, dialect: dialect)
        } catch let error as APIError {
            return try Self.api(error, dialect: dialect, locale: error.locale ?? request.locale())
        } catch StoreError.unavailable {
            metrics.storeError("unavailable")
            // The database is away (restarting, failing over): a clear, retryable answer instead of a 500. The store
            // logged why; the client learns only that it should try again.
            var response = try Self.api(Self.storeUnavailable, dialect: dialect, locale: request.locale())
            response.headers[.retryAfter] = "5"
            return response
        } catch StoreError.invalidInput {
            metrics.storeError("invalid_input")
            let api = APIError(
                status: .badRequest, code: "SSE-400", error: "invalid_request", messageKey: "error.request",
                userMessage: "The request could not be processed.", technical: "a value holds a character the store refuses (NUL)")
            return try Self.api(api, dialect: dialect, locale: request.locale())
        } catch let error as HTTPError where error.status == .notFound {
            return try Self.api(.notFound(request.uri.path), dialect: dialect, locale: request.locale())
        } catch is NIOTooManyBytesError {
            // A body read past the context's `maxUploadSize` by a decoder that does not go through `boundedBody()`.
            return try Self.api(RequestSizeLimits.bodyTooLarge, dialect: dialect, locale: request.locale())
        } catch let error as HTTPError where error.status.code < 500 {
            let api = APIError(
                status: error.status, code: "SSE-\(error.status.code)", error: "invalid_request",
                messageKey: "error.request", userMessage: "The request could not be processed.",
                technical: error.body ?? error.status.reasonPhrase)
            return try Self.api(api, dialect: dialect, locale: request.locale())
        } catch {
            context.logger.error(
                "request failed",
                metadata: [
                    "path": .string(request.uri.path), "error.type": .string("\(type(of: error))"),
                    "error": .string(String(describing: error).prefix(200).description)
                ])
            return try Self.api(.internalError(), dialect: dialect, locale: request.locale())
        }
    }

    static let storeUnavailable = APIError(
        status: .serviceUnavailable, code: "SRV-503", error: "temporarily_unavailable",
        messageKey: "server.busy", userMessage: "The service is busy. Please try again in a moment.",
        technical: "the database is unavailable; retry later")

    static func oauth(_ error: OAuthError, request: Request, dialect: Dialect) throws -> Response {
        let headers = challengeHeaders(error, request: request)
        switch dialect {
        case .scim:
            // SCIM clients parse RFC 7644 errors only; the Bearer challenge still tells them why (RFC 6750 §3).
            return try SCIMError(status: error.status, detail: error.description, headers: headers).response()
        case .reachFive:
            // `/identity/v1/…` clients parse `ApiError` only; the Bearer challenge header still says why (RFC 6750 §3).
            let locale = request.locale()
            let api = APIError(
                status: error.status, code: "OAUTH-\(error.status.code)", error: error.code.rawValue,
                messageKey: UserMessages.oauthKey(error.code), userMessage: UserMessages.oauth(error.code, locale: locale),
                technical: error.description)
            return try Responses.json(
                ReachFiveErrorBody(api.localized(locale), errorId: Secrets.identifier()), status: error.status,
                noStore: true, headers: headers)
        case .thunder, .html:
            // thunderID endpoints (`/flow/…`, `/users/…`) answer `{code, message, description}` and pages answer a page,
            // whatever the error's origin (a repeated parameter, a token refused); the challenge headers stay.
            let locale = request.locale()
            let code = error.code == .invalidToken ? "AUTH-4010" : "SSE-\(error.status.code)"
            let api = APIError(
                status: error.status, code: code, error: error.code.rawValue, messageKey: UserMessages.oauthKey(error.code),
                userMessage: UserMessages.oauth(error.code, locale: locale), technical: error.description)
            var response = try Self.api(api, dialect: dialect, locale: locale)
            for field in headers { response.headers[field.name] = field.value }
            return response
        case .oauth, .reachFiveOAuth:
            break
        }
        let reachFive = dialect == .reachFiveOAuth
        // error_description stays technical English (RFC 6749 §5.2 says it is for developers); only the
        // reachFive `error_user_msg` is for people, in their language.
        let body = OAuthErrorBody(
            error: error.code.rawValue, errorDescription: error.description,
            errorId: reachFive ? Secrets.identifier() : nil,
            errorMessageKey: reachFive ? UserMessages.oauthKey(error.code) : nil,
            errorUserMsg: reachFive ? UserMessages.oauth(error.code, locale: request.locale()) : nil)
        return try Responses.json(body, status: error.status, noStore: true, headers: headers)
    }

    /// The headers an OAuth error carries in every dialect: the Basic challenge of a failed client authentication
    /// (RFC 6749 §5.2), the Bearer or DPoP challenge of a refused token (RFC 6750 §3, RFC 9449 §7.1), a DPoP nonce.
    static func challengeHeaders(_ error: OAuthError, request: Request) -> HTTPFields {
        var headers: HTTPFields = [:]
        if error.code == .invalidClient, request.headers[.authorization]?.lowercased().hasPrefix("basic ") == true {
            headers[.wwwAuthenticate] = "Basic realm=\"latchkey\""
        }
        let description = error.description.replacingOccurrences(of: "\"", with: "'")
        if error.challenge == .dpop {
            // RFC 9449 §7.1: the DPoP scheme's challenge names the algorithms a proof may use.
            headers[.wwwAuthenticate] =
                "DPoP error=\"\(error.code.rawValue)\", error_description=\"\(description)\", algs=\"\(DPoP.algorithms.joined(separator: " "))\""
        } else if error.code == .invalidToken || error.code == .insufficientScope {
            headers[.wwwAuthenticate] = "Bearer error=\"\(error.code.rawValue)\", error_description=\"\(description)\""
        }
        if let nonce = error.dpopNonce { headers[DPoP.nonceHeader] = nonce }
        return headers
    }

    /// Renders `error` in `dialect`, its user-facing texts in `locale`.
    static func api(_ error: APIError, dialect: Dialect, locale: SupportedLocale = .en) throws -> Response {
        let error = error.localized(locale)
        switch dialect {
        case .reachFive:
            return try Responses.json(ReachFiveErrorBody(error, errorId: Secrets.identifier()), status: error.status)
        case .thunder:
            return try Responses.json(ThunderErrorBody(error), status: error.status)
        case .scim:
            return try SCIMError(status: error.status, detail: error.technical).response()
        case .oauth, .reachFiveOAuth:
            return try Responses.json(OAuthErrorBody(error: error.error, errorDescription: error.technical), status: error.status)
        case .html:
            let title = MessageCatalog.text(error.status == .notFound ? "page.not_found.title" : "page.error.title", locale: locale) ?? ""
            return Responses.html(Pages.message(title: title, body: error.userMessage, locale: locale), status: error.status)
        }
    }
}

/// User-facing wording for OAuth errors shown to people (reachFive `error_user_msg`), from the catalog.
enum UserMessages {
    /// `oauth.<code>`: every OAuth code has a key (most are aliases of a handful of texts).
    static func oauthKey(_ code: OAuthError.Code) -> String { "oauth.\(code.rawValue)" }

    static func oauth(_ code: OAuthError.Code, locale: SupportedLocale = .en) -> String {
        MessageCatalog.text(oauthKey(code), locale: locale) ?? MessageCatalog.text("oauth.invalid_request", locale: locale, default: "")
    }
}
