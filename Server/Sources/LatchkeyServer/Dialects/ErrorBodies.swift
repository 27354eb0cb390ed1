import Foundation

/// RFC 6749 §5.2 error body. On the reachFive dialect (`/oauth/…` called with JSON) it also carries the ReachFive
/// `ApiError` members, which OAuth clients ignore.
struct OAuthErrorBody: Encodable {
    var error: String
    var errorDescription: String
    var errorId: String?
    var errorMessageKey: String?
    var errorUserMsg: String?

    enum CodingKeys: String, CodingKey {
        case error, errorDescription = "error_description", errorId = "error_id"
        case errorMessageKey = "error_message_key", errorUserMsg = "error_user_msg"
    }
}

/// ReachFive `ApiError` (`shared/reference/reachfive-wire.md` §3.4).
struct ReachFiveErrorBody: Encodable {
    var error: String
    var errorId: String
    var errorUserMsg: String
    var errorMessageKey: String
    var errorDescription: String
    var errorDetails: [APIError.FieldError]?

    init(_ e: APIError, errorId: String) {
        error = e.error; self.errorId = errorId; errorUserMsg = e.userMessage; errorMessageKey = e.messageKey
        errorDescription = e.technical; errorDetails = e.fieldErrors.isEmpty ? nil : e.fieldErrors
    }

    enum CodingKeys: String, CodingKey {
        case error, errorId = "error_id", errorUserMsg = "error_user_msg", errorMessageKey = "error_message_key"
        case errorDescription = "error_description", errorDetails = "error_details"
    }
}

/// ThunderID `{code, message{key, defaultValue}, description{key, defaultValue}}` (`thunderid-wire.md` §2.1).
struct ThunderErrorBody: Encodable {
    struct I18nMessage: Encodable { var key: String; var defaultValue: String }
    var code: String
    var message: I18nMessage
    var description: I18nMessage
    /// Our addition for `/users/me` validation: each attribute's problem, for the user (localized), so a client can
    /// show it next to the field. thunderID clients ignore it.
    var fieldErrors: [APIError.FieldError]?

    init(_ e: APIError) {
        code = e.code
        message = I18nMessage(key: e.messageKey, defaultValue: e.userMessage)
        description = I18nMessage(key: e.messageKey + ".description", defaultValue: e.technical)
        fieldErrors = e.fieldErrors.isEmpty ? nil : e.fieldErrors
    }
}

/// SCIM error (RFC 7644 §3.12): `{schemas:[Error URN], status:"400", scimType?, detail}`. `status` is a string there.
struct SCIMErrorBody: Encodable {
    var schemas = [SCIMError.errorURN]
    var status: String
    var scimType: String?
    var detail: String
}

/// Which error shape a path speaks.
enum Dialect {
    /// `oauth`: RFC 6749 errors; `reachFiveOAuth`: the same under `/oauth`, with reachFive's fields added.
    case oauth, reachFiveOAuth, reachFive, thunder, scim, html

    /// The dialect a path's prefix speaks: for what no route group answers (an unknown path, a body refused before
    /// routing); a route's errors take the dialect of the group it was registered on.
    static func of(path: String) -> Dialect {
        if path.hasPrefix("/oauth/") { return .reachFiveOAuth }
        if path.hasPrefix("/oauth2/") || path.hasPrefix("/.well-known/") { return .oauth }
        if path.hasPrefix("/identity/") { return .reachFive }
        if path.hasPrefix("/scim2/") || path == "/scim2" { return .scim }
        if path.hasPrefix("/flow/") || path.hasPrefix("/users/") || path == "/users" || path.hasPrefix("/admin/") { return .thunder }
        return .html
    }
}
