import Foundation

/// The consents the signed-in person gave third-party applications: list them, withdraw one (the server's
/// self-service API, `/users/me/consents`, with the session's access token).
extension LatchkeySession {
    /// The third-party applications the signed-in person consented to, by client id (`GET /users/me/consents`).
    /// First-party applications (the server operator's own) never ask for consent and are not listed.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.authenticationFailed` (HTTP 403) when
    ///   this application's token may not manage the account; `.serverError` for an answer without `consents`;
    ///   `.networkError`.
    public func consents() async throws -> [ApplicationConsent] {
        let context = try client.context()
        let tokens = try await context.tokens.usableTokens(name)
        let response = try await LatchkeyClient.sessionsCall(context, "GET", "/users/me/consents", tokens: tokens)
        let body = try IdentityAPI.object(response, "consent list")
        guard case .array(let consents)? = body["consents"] else {
            throw LatchkeyError(.serverError, "the consent list has no consents", statusCode: response.status)
        }
        return consents.compactMap(ApplicationConsent.init(json:))
    }

    /// Withdraws the consent given to an application (`DELETE /users/me/consents/{client_id}`): its next sign-in asks
    /// again, and the server revokes its refresh and access tokens for this person at once.
    /// - Parameter clientId: the application's ``ApplicationConsent/clientId``.
    /// - Throws: `.invalidInput` for an empty id, or an application the person has not consented to (HTTP 404);
    ///   `.sessionExpired`; `.networkError`.
    public func withdrawConsent(clientId: String) async throws {
        let context = try client.context()
        guard !clientId.isEmpty, let segment = clientId.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."]))
        else {
            throw LatchkeyError(.invalidInput, "the client id is empty")
        }
        let tokens = try await context.tokens.usableTokens(name)
        _ = try await LatchkeyClient.sessionsCall(context, "DELETE", "/users/me/consents/" + segment, tokens: tokens)
    }
}

extension LatchkeyClient {
    /// The third-party applications the signed-in person consented to, by client id (`GET /users/me/consents`).
    /// First-party applications (the server operator's own) never ask for consent and are not listed.
    /// - Parameter sessionId: the session whose access token is used (multi-session apps).
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.authenticationFailed` (HTTP 403) when
    ///   this application's token may not manage the account; `.serverError` for an answer without `consents`;
    ///   `.networkError`.
    public func consents(sessionId: String? = nil) async throws -> [ApplicationConsent] {
        try await session(sessionId).consents()
    }

    /// Withdraws the consent given to an application (`DELETE /users/me/consents/{client_id}`): its next sign-in asks
    /// again, and the server revokes its refresh and access tokens for this person at once.
    /// - Parameters:
    ///   - clientId: the application's ``ApplicationConsent/clientId``.
    ///   - sessionId: the session whose access token is used.
    /// - Throws: `.invalidInput` for an empty id, or an application the person has not consented to (HTTP 404);
    ///   `.sessionExpired`; `.networkError`.
    public func withdrawConsent(clientId: String, sessionId: String? = nil) async throws {
        try await session(sessionId).withdrawConsent(clientId: clientId)
    }
}
