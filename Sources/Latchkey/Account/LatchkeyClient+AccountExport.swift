import Foundation

/// Downloading what the server holds about the signed-in person (GDPR Art. 15 and 20).
extension LatchkeyClient {
    /// What the server holds about the signed-in person, as one JSON document (`GET /users/me/export`): the profile,
    /// linked identities, passkeys (names and dates), second factors (kinds), open sessions and applications,
    /// consents, and the account's audit events. Never a password, key, code or token.
    ///
    /// The bytes are the document as the server sent it, ready to save or share as a file:
    ///
    /// ```swift
    /// let data = try await client.exportAccountData()
    /// let file = FileManager.default.temporaryDirectory.appendingPathComponent("account-data.json")
    /// try data.write(to: file)  // then ShareLink(item: file)
    /// ```
    ///
    /// The sign-in must be recent (the server's `recent_auth_seconds`): otherwise `.reauthenticationRequired` is
    /// thrown; sign in again (`prompt=login`) and call it once more.
    /// - Parameter sessionId: the session whose access token is used (multi-session apps).
    /// - Returns: the JSON document.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.reauthenticationRequired` (HTTP 401
    ///   `insufficient_user_authentication`); `.authenticationFailed` when the token may not manage the account;
    ///   `.serverError` when the answer is not a JSON object; `.networkError`.
    public func exportAccountData(sessionId: String? = nil) async throws -> Data {
        try await session(sessionId).exportAccountData()
    }
}

/// Downloading what the server holds about the session's person (the core of `exportAccountData(sessionId:)`).
extension LatchkeySession {
    /// What the server holds about the signed-in person, as one JSON document (`GET /users/me/export`): the profile,
    /// linked identities, passkeys (names and dates), second factors (kinds), open sessions and applications,
    /// consents, and the account's audit events. Never a password, key, code or token.
    ///
    /// The bytes are the document as the server sent it, ready to save or share as a file:
    ///
    /// ```swift
    /// let data = try await client.session().exportAccountData()
    /// let file = FileManager.default.temporaryDirectory.appendingPathComponent("account-data.json")
    /// try data.write(to: file)  // then ShareLink(item: file)
    /// ```
    ///
    /// The sign-in must be recent (the server's `recent_auth_seconds`): otherwise `.reauthenticationRequired` is
    /// thrown; sign in again (`prompt=login`) and call it once more.
    /// - Returns: the JSON document.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.reauthenticationRequired` (HTTP 401
    ///   `insufficient_user_authentication`); `.authenticationFailed` when the token may not manage the account;
    ///   `.serverError` when the answer is not a JSON object; `.networkError`.
    public func exportAccountData() async throws -> Data {
        try await client.loading {
            let context = try client.context()
            let tokens = try await context.tokens.usableTokens(name)
            let response = try await context.sendAuthorized(
                HTTPRequest(method: "GET", url: context.endpoint("/users/me/export"), headers: ["Accept": "application/json"], body: nil),
                tokens: tokens)
            guard (200..<300).contains(response.status) else {
                var error = LatchkeyError.profile(response, selfTarget: true)
                if error.code == .reauthenticationRequired {
                    error.message =
                        "downloading the account's data needs a recent sign-in: sign in again (prompt=login) and retry (server: \(error.message))"
                }
                throw error
            }
            _ = try IdentityAPI.object(response, "account export")  // a JSON object, or `.serverError`
            return response.body
        }
    }
}
