import Foundation

/// What an authorization request asks the authorization endpoint to return (`response_type`): a code for the token
/// endpoint (`code`, the default and the only one RFC 9700 §2.1.2 recommends), or tokens straight back through the
/// browser — the implicit flow (`id_token`, `id_token token`, OpenID Connect Core §3.2) and the hybrid flow (`code
/// id_token`, `code token`, `code id_token token`, §3.3).
///
/// The front-channel ones are off unless an application lists them (`ClientConfiguration.responseTypes`): a token in
/// a redirect can leak through the browser's history, a referrer or an open redirector, and an implicit access token
/// cannot be sender-constrained or refreshed. They exist for relying parties and certification plans that still use
/// them. Values are space-separated sets (OAuth 2.0 Multiple Response Type Encoding Practices §5), so `token id_token`
/// is `id_token token`.
public enum ResponseType: String, Sendable, Codable, CaseIterable {
    case code
    case idToken = "id_token"
    case idTokenToken = "id_token token"
    case codeIdToken = "code id_token"
    case codeToken = "code token"
    case codeIdTokenToken = "code id_token token"

    /// The response type a space-separated value names, in any order (`token id_token`); nil for anything else
    /// (`token` alone — OAuth's implicit grant without OpenID Connect — and `none` are not offered).
    public init?(parameter: String) {
        let parts = parameter.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard !parts.isEmpty, Set(parts).count == parts.count else { return nil }
        let canonical = ["code", "id_token", "token"].filter(parts.contains)
        guard canonical.count == parts.count, let type = ResponseType(rawValue: canonical.joined(separator: " ")) else { return nil }
        self = type
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let type = ResponseType(parameter: raw) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "unsupported response type \(raw) (one of \(ResponseType.listed()))"))
        }
        self = type
    }

    /// `types` as an error message names them: `code, id_token`.
    static func listed(_ types: [ResponseType] = ResponseType.allCases) -> String { types.map(\.rawValue).joined(separator: ", ") }

    var issuesCode: Bool { rawValue.hasPrefix("code") }
    var issuesIDToken: Bool { rawValue.contains("id_token") }
    /// An access token in the authorization response (not from the token endpoint).
    var issuesAccessToken: Bool { rawValue.hasSuffix(" token") }
    /// A token (ID or access) travels through the browser: the implicit or hybrid flow.
    var isFrontChannel: Bool { self != .code }

    /// The grant types an application needs for it (OpenID Connect Registration §2, RFC 7591 §2.1): `code` goes with
    /// `authorization_code`, a token in the response with `implicit`.
    var grantTypes: [GrantType] {
        (issuesCode ? [.authorizationCode] : []) + (isFrontChannel ? [.implicit] : [])
    }

    /// The response mode when the request names none (OAuth 2.0 Multiple Response Type Encoding Practices §2.1): the
    /// query for a code alone, the fragment as soon as a token is in the response (it never reaches the client's server
    /// logs, nor a `Referer`).
    var defaultResponseMode: String { isFrontChannel ? ResponseMode.fragment : ResponseMode.query }
}

/// How the authorization response travels (`response_mode`).
enum ResponseMode {
    static let query = "query"
    static let fragment = "fragment"
    static let formPost = FormPostResponse.mode

    /// The mode an error for a request goes back in, before the request is validated: the one it asked for when that
    /// one can carry an answer to `redirectUri`, else the default of its response type (the query when the type is
    /// unknown, as RFC 6749 §4.1.2.1 answers an unsupported one).
    static func forError(requested: String?, responseType: String?, redirectUri: String) -> String? {
        switch requested {
        case formPost? where FormPostResponse.accepts(redirectUri: redirectUri): return formPost
        case fragment?: return fragment
        case query?: return nil
        default:
            let type = responseType.flatMap(ResponseType.init(parameter:))
            return type?.isFrontChannel == true ? fragment : nil
        }
    }
}
