import Hummingbird

/// An OAuth 2.0 error (RFC 6749 §5.2, RFC 6750 §3.1, OIDC Core §3.1.2.6). Descriptions are technical English and
/// never contain a credential.
public struct OAuthError: Error, Sendable, Equatable {
    public enum Code: String, Sendable {
        case invalidRequest = "invalid_request"
        case invalidClient = "invalid_client"
        case invalidGrant = "invalid_grant"
        case unauthorizedClient = "unauthorized_client"
        case unsupportedGrantType = "unsupported_grant_type"
        case unsupportedResponseType = "unsupported_response_type"
        case unsupportedTokenType = "unsupported_token_type"
        case invalidScope = "invalid_scope"
        case invalidTarget = "invalid_target"
        case invalidToken = "invalid_token"
        case insufficientScope = "insufficient_scope"
        case accessDenied = "access_denied"
        case loginRequired = "login_required"
        /// OpenID Connect Core §3.1.2.6: a third-party application needs the person's consent, and the request asked
        /// for no page (`prompt=none`), or came through a native exchange that has none.
        case consentRequired = "consent_required"
        /// OpenID Connect Core §3.1.2.6: the request cannot be answered without the person (the native exchanges, when
        /// the account's second factor is owed).
        case interactionRequired = "interaction_required"
        case requestNotSupported = "request_not_supported"
        case requestURINotSupported = "request_uri_not_supported"
        case serverError = "server_error"
        /// RFC 6749 §4.1.2.1: the server cannot answer now (an upstream identity provider is down).
        case temporarilyUnavailable = "temporarily_unavailable"
        /// RFC 8628 §3.5: the person has not decided yet; poll again after the interval.
        case authorizationPending = "authorization_pending"
        /// RFC 8628 §3.5: polled too fast; the interval grew by 5 seconds.
        case slowDown = "slow_down"
        /// RFC 8628 §3.5: the device code expired; start again.
        case expiredToken = "expired_token"
        /// RFC 9449 §7.1: the DPoP proof is missing, malformed, or does not match the request or the token.
        case invalidDPoPProof = "invalid_dpop_proof"
        /// RFC 9449 §8: the proof must carry the nonce sent in `DPoP-Nonce`.
        case useDPoPNonce = "use_dpop_nonce"
        /// RFC 7591 §3.2.2: a redirect URI of a registration is not acceptable.
        case invalidRedirectURI = "invalid_redirect_uri"
        /// RFC 7591 §3.2.2: a metadata value of a registration is not acceptable.
        case invalidClientMetadata = "invalid_client_metadata"
        /// OpenID Connect Core §3.1.2.6, RFC 9101 §6.3: the request object is invalid.
        case invalidRequestObject = "invalid_request_object"
        /// RFC 9101 §7: the `request_uri` is not one the client registered, or the request object there could not be
        /// fetched.
        case invalidRequestURI = "invalid_request_uri"
    }

    /// The authentication scheme a resource request's challenge names (RFC 6750 `Bearer`, RFC 9449 `DPoP`).
    public enum Challenge: Sendable, Equatable {
        case bearer, dpop
    }

    public var code: Code
    public var description: String
    /// The scheme of the `WWW-Authenticate` challenge, when a resource request is refused; nil at the token endpoint.
    public var challenge: Challenge?
    /// A fresh DPoP nonce to send back (`DPoP-Nonce`).
    public var dpopNonce: String?

    public init(_ code: Code, _ description: String, challenge: Challenge? = nil, dpopNonce: String? = nil) {
        self.code = code
        self.description = description
        self.challenge = challenge
        self.dpopNonce = dpopNonce
    }

    var status: HTTPResponse.Status {
        switch code {
        case .invalidClient, .invalidToken: .unauthorized
        case .invalidDPoPProof, .useDPoPNonce: challenge == .dpop ? .unauthorized : .badRequest
        case .insufficientScope: .forbidden
        case .serverError: .internalServerError
        case .temporarilyUnavailable: .serviceUnavailable
        default: .badRequest
        }
    }
}

/// A failure that is the server's fault; reported as a 500 without internal detail.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public let description: String
    static func `internal`(_ why: String) -> ServerError { ServerError(description: why) }
}

/// An error of the app-facing identity APIs: rendered as a ReachFive `ApiError` under `/identity/`, as a ThunderID
/// `{code, message, description}` under `/flow/` and `/users/`.
public struct APIError: Error, Sendable {
    public var status: HTTPResponse.Status
    /// Machine code in the ThunderID catalogue style (`FES-1001`, `USR-1003`, `AUTH-4010` …).
    public var code: String
    /// Stable message key (ReachFive `error_message_key`, ThunderID `message.key`).
    public var messageKey: String
    /// User-facing text in English. The error middleware replaces it with the catalog's text for `messageKey` in the
    /// negotiated language when the catalog has the key (`MessageCatalog`), so code that only sets the key and
    /// English text is localized as soon as the key is in the catalog.
    public var userMessage: String
    /// Values of the named placeholders (`{field}`, `{minutes}` …) in the catalog text for `messageKey`.
    public var arguments: [String: String]
    /// The language to answer in when the route already knows it (an explicit flow `locale`); otherwise the
    /// middleware negotiates from the request.
    public var locale: SupportedLocale?
    /// Technical description (English).
    public var technical: String
    /// OAuth-style short error for the ReachFive `error` member.
    public var error: String
    public var fieldErrors: [FieldError]

    public struct FieldError: Sendable, Codable, Equatable {
        public var field: String
        /// English text; localized by `messageKey` (else by `code`) when the catalog has the key.
        public var message: String
        public var code: String
        /// Catalog key of `message` when it is not `code` (not sent: `code` is the wire's machine-readable key).
        public var messageKey: String?
        /// Placeholder values for the catalog text (not sent).
        public var arguments: [String: String]

        public init(field: String, message: String, code: String, messageKey: String? = nil, arguments: [String: String] = [:]) {
            self.field = field; self.message = message; self.code = code; self.messageKey = messageKey; self.arguments = arguments
        }

        enum CodingKeys: String, CodingKey { case field, message, code }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                field: try c.decode(String.self, forKey: .field), message: try c.decode(String.self, forKey: .message),
                code: try c.decode(String.self, forKey: .code))
        }

        /// The message in `locale`.
        public func localized(_ locale: SupportedLocale) -> FieldError {
            var copy = self
            copy.message = MessageCatalog.text(messageKey ?? code, locale: locale, arguments: arguments, default: message)
            return copy
        }
    }

    public init(
        status: HTTPResponse.Status, code: String, error: String, messageKey: String, userMessage: String,
        technical: String, fieldErrors: [FieldError] = [], arguments: [String: String] = [:]
    ) {
        self.status = status; self.code = code; self.error = error; self.messageKey = messageKey
        self.userMessage = userMessage; self.technical = technical; self.fieldErrors = fieldErrors; self.arguments = arguments
    }

    /// The user-facing texts in `locale` (English stays where the catalog does not know a key).
    public func localized(_ locale: SupportedLocale) -> APIError {
        var copy = self
        copy.userMessage = MessageCatalog.text(messageKey, locale: locale, arguments: arguments, default: userMessage)
        copy.fieldErrors = fieldErrors.map { $0.localized(locale) }
        return copy
    }

    static func notFound(_ path: String) -> APIError {
        APIError(
            status: .notFound, code: "SSE-4040", error: "not_found", messageKey: "error.not_found",
            userMessage: "The requested resource was not found.", technical: "No route for \(path)")
    }

    static func internalError() -> APIError {
        APIError(
            status: .internalServerError, code: "SSE-5000", error: "server_error", messageKey: "error.internal",
            userMessage: "Something went wrong on our side. Please try again.", technical: "Internal server error")
    }
}
