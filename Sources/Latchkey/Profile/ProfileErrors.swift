import Foundation

extension LatchkeyError {
    /// Maps a failed profile call to an SDK error. Understands the three error bodies a profile endpoint may send:
    /// SCIM (RFC 7644 §3.12 `{status, scimType, detail}`), thunderID (`{code, message, description}`) and OAuth
    /// (`{error, error_description}`, RFC 6750). The server's explanation becomes `message`; its code
    /// (`invalidValue`, `USR-1019`, `invalid_token` from the Bearer challenge) `serverCode`.
    ///
    /// - Parameter selfTarget: the call addressed the signed-in user (`/scim2/Me`, `/users/me`): a 404 there means
    ///   the account is gone, so the session is over.
    static func profile(_ response: HTTPResponse, selfTarget: Bool) -> LatchkeyError {
        let body = (try? JSONDecoder().decode([String: JSONValue].self, from: response.body)) ?? [:]
        func text(_ value: JSONValue?) -> String? { value?.stringValue }
        func i18n(_ name: String) -> String? { text(body[name]?.objectMembers?["defaultValue"]) }
        let serverCode = text(body["scimType"]) ?? text(body["code"]) ?? text(body["error"]) ?? bearerChallengeError(response)
        let detail = text(body["detail"]) ?? i18n("description") ?? i18n("message") ?? text(body["error_description"])
        let code: Code =
            switch response.status {
            case 401 where Self.needsReauthentication(serverCode) || bearerChallengeError(response) == Self.reauthenticationError:
                .reauthenticationRequired
            case 401: .sessionExpired
            case 403: .authenticationFailed
            case 404 where selfTarget: .sessionExpired
            case 408: .requestTimeout
            case 409: .userAlreadyExists
            case 412: .profileConflict
            case 400, 404, 413, 415, 422: .invalidInput
            case 500...: .serverError
            default: .unknownError
            }
        // `description` adds the status and server code; the message is the server's own explanation.
        // thunderID bodies carry a user message (localized by the server); SCIM and OAuth bodies only technical text.
        return LatchkeyError(
            code, detail ?? "the profile endpoint answered HTTP \(response.status)", statusCode: response.status,
            serverCode: serverCode, userMessage: i18n("message"))
    }

    /// RFC 9470's error for a sign-in that is too old for the call; thunderID-shaped bodies carry `AUTH-4011`.
    static let reauthenticationError = "insufficient_user_authentication"

    static func needsReauthentication(_ serverCode: String?) -> Bool {
        serverCode == reauthenticationError || serverCode == "AUTH-4011"
    }

    /// The `error` of a `WWW-Authenticate: Bearer error="invalid_token"` challenge (RFC 6750 §3).
    private static func bearerChallengeError(_ response: HTTPResponse) -> String? {
        guard let challenge = response.headers.first(where: { $0.key.lowercased() == "www-authenticate" })?.value,
            let start = challenge.range(of: "error=\"")
        else { return nil }
        let rest = challenge[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}
