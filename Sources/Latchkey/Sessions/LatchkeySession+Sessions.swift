import Foundation

/// The signed-in user's sign-in sessions: list them, end one, sign out everywhere (the server's self-service API,
/// `/users/me/sessions`, with the session's access token).
extension LatchkeySession {
    /// The signed-in user's open sign-in sessions, newest first, each with the applications signed in through it
    /// (`GET /users/me/sessions`). The one this session is signed in with is ``SignInSession/isCurrent``.
    ///
    /// Applications signed in without a browser session (the server lists them apart) are not in the list.
    /// - Returns: the sessions; never empty while this session's own is open.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.serverError` for an answer without
    ///   `sessions`; `.networkError`.
    public func sessions() async throws -> [SignInSession] {
        let context = try client.context()
        let tokens = try await context.tokens.usableTokens(name)
        let response = try await LatchkeyClient.sessionsCall(context, "GET", "/users/me/sessions", tokens: tokens)
        let body = try IdentityAPI.object(response, "session list")
        guard case .array(let sessions)? = body["sessions"] else {
            throw LatchkeyError(.serverError, "the session list has no sessions", statusCode: response.status)
        }
        return sessions.compactMap(SignInSession.init(json:))
    }

    /// Ends one of the signed-in user's sign-in sessions (`DELETE /users/me/sessions/{id}`), for example a lost
    /// phone's: the server revokes the refresh and access tokens of every application signed in through it, at once.
    /// No recent sign-in is needed.
    ///
    /// Ending this session's own (``SignInSession/isCurrent``) also forgets its tokens here, as ``signOut(options:)``
    /// does, and publishes `.signedOut`.
    /// - Parameter id: the sign-in session's ``SignInSession/id``.
    /// - Throws: `.invalidInput` for an empty id, or one the server does not know for this user (HTTP 404: never
    ///   another user's); `.sessionExpired`; `.networkError`.
    public func endSession(id: String) async throws {
        let context = try client.context()
        guard !id.isEmpty, let segment = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."])) else {
            throw LatchkeyError(.invalidInput, "the session id is empty")
        }
        let tokens = try await context.tokens.usableTokens(name)
        _ = try await LatchkeyClient.sessionsCall(context, "DELETE", "/users/me/sessions/" + segment, tokens: tokens)
        if serverSessionId(of: tokens) == id { try await context.tokens.clear(name) }
    }

    /// Signs the user out everywhere (`DELETE /users/me/sessions`): the server ends every session of the account and
    /// revokes the tokens of every application, on every device. Use it when a device is lost or the account may be
    /// in someone else's hands.
    ///
    /// - Parameter keepingThisDevice: `true` keeps this session and its tokens (`?keep_current=true`); `false` ends
    ///   it too, and the tokens are then forgotten here as ``signOut(options:)`` does (`.signedOut` is published).
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.networkError`. Nothing is forgotten
    ///   locally when the server did not confirm.
    public func signOutEverywhere(keepingThisDevice: Bool = false) async throws {
        let client = self.client
        try await client.loading {
            let context = try client.context()
            let tokens = try await context.tokens.usableTokens(name)
            let path = "/users/me/sessions" + (keepingThisDevice ? "?keep_current=true" : "")
            _ = try await LatchkeyClient.sessionsCall(context, "DELETE", path, tokens: tokens)
            if !keepingThisDevice { try await context.tokens.clear(name) }
        }
    }

    /// The server's session id (`sid`) of the stored ID token, read without verification: only compared with an id
    /// the server listed.
    private func serverSessionId(of tokens: TokenSet) -> String? {
        guard let idToken = tokens.idToken, let claims = try? client.decodeJwtToken(idToken) as [String: JSONValue] else { return nil }
        return claims["sid"]?.stringValue
    }
}

extension LatchkeyClient {
    /// The signed-in user's open sign-in sessions, newest first, each with the applications signed in through it
    /// (`GET /users/me/sessions`). The session this client is signed in with is ``SignInSession/isCurrent``.
    ///
    /// Applications signed in without a browser session (the server lists them apart) are not in the list.
    /// - Parameter sessionId: the session whose access token is used (multi-session apps).
    /// - Returns: the sessions; never empty while the session's own is open.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.serverError` for an answer without
    ///   `sessions`; `.networkError`.
    public func sessions(sessionId: String? = nil) async throws -> [SignInSession] {
        try await session(sessionId).sessions()
    }

    /// Ends one of the signed-in user's sessions (`DELETE /users/me/sessions/{id}`), for example a lost phone's: the
    /// server revokes the refresh and access tokens of every application signed in through it, at once. No recent
    /// sign-in is needed.
    ///
    /// Ending this client's own session (``SignInSession/isCurrent``) also forgets its tokens here, as
    /// ``signOut(options:sessionId:)`` does, and publishes `.signedOut`.
    /// - Parameters:
    ///   - id: the session's ``SignInSession/id``.
    ///   - sessionId: the session whose access token is used.
    /// - Throws: `.invalidInput` for an empty id, or one the server does not know for this user (HTTP 404: never
    ///   another user's); `.sessionExpired`; `.networkError`.
    public func endSession(id: String, sessionId: String? = nil) async throws {
        try await session(sessionId).endSession(id: id)
    }

    /// Signs the user out everywhere (`DELETE /users/me/sessions`): the server ends every session of the account and
    /// revokes the tokens of every application, on every device. Use it when a device is lost or the account may be
    /// in someone else's hands.
    ///
    /// - Parameters:
    ///   - keepingThisDevice: `true` keeps this client's own session and tokens (`?keep_current=true`); `false` ends
    ///     them too, and the tokens are then forgotten here as ``signOut(options:sessionId:)`` does (`.signedOut` is
    ///     published).
    ///   - sessionId: the session whose access token is used.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.networkError`. Nothing is forgotten
    ///   locally when the server did not confirm.
    public func signOutEverywhere(keepingThisDevice: Bool = false, sessionId: String? = nil) async throws {
        try await session(sessionId).signOutEverywhere(keepingThisDevice: keepingThisDevice)
    }

    /// One call of the sessions or consents API with the session's token; a 2xx answer is returned, anything else
    /// thrown mapped as the profile's errors are (a 404 is `.invalidInput`: an unknown session or consent, not a lost
    /// account).
    static func sessionsCall(_ context: OAuthClient, _ method: String, _ path: String, tokens: TokenSet) async throws -> HTTPResponse {
        let response = try await context.sendAuthorized(
            HTTPRequest(method: method, url: context.endpoint(path), headers: ["Accept": "application/json"], body: nil), tokens: tokens)
        guard (200..<300).contains(response.status) else { throw LatchkeyError.profile(response, selfTarget: false) }
        return response
    }
}
