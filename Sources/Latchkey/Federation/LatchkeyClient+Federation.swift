import Foundation

/// Identity federation: the identity providers an application offers, signing in with one (``WebviewLoginRequest/provider``),
/// and linking providers to the signed-in account (the server's self-service API, `/users/me/identities`, with the
/// session's access token).
extension LatchkeyClient {
    // MARK: Providers (ReachFive `getProviders()`)

    /// The identity providers the application offers (`GET /identity/v1/providers?client_id=…`), in the server's
    /// order: what a sign-in screen shows as "Continue with …" buttons. Pass an entry's
    /// ``ProviderConfig/providerWithVariant`` as ``WebviewLoginRequest/provider`` to sign in with it.
    ///
    /// ReachFive's `getProviders()` reads a list fetched by its `initialize()`; this one asks the server each time,
    /// so it is `async`.
    /// - Returns: the providers; an empty list when the application offers none. Entries without a `provider` are
    ///   left out.
    /// - Throws: `.sdkNotInitialized` before `initialize`; the server's `ApiError` mapped (`.invalidConfiguration`
    ///   for an unknown client); `.serverError` when the answer has no `items`; `.networkError`.
    public func getProviders() async throws -> [ProviderConfig] {
        let context = try context()
        let response = try await IdentityAPI.send(
            context, "GET", "/identity/v1/providers", query: [("client_id", context.config.clientId)])
        guard case .array(let items)? = try IdentityAPI.object(response, "provider list")["items"] else {
            throw LatchkeyError(.serverError, "the provider list has no items", statusCode: response.status)
        }
        return items.compactMap(ProviderConfig.init(json:))
    }

    // MARK: Linked identities (self-service)

    /// The identity providers linked to the signed-in account, and those the application offers for linking
    /// (`GET /users/me/identities`).
    /// - Parameter sessionId: the session whose access token is used (multi-session apps).
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.reauthenticationRequired` when the
    ///   server wants a more recent sign-in (HTTP 401 `insufficient_user_authentication`); `.serverError` for an answer without `identities`;
    ///   `.networkError`.
    public func linkedIdentities(sessionId: String? = nil) async throws -> LinkedIdentities {
        try await session(sessionId).linkedIdentities()
    }

    /// Links the identity provider `provider` to the signed-in account: the person signs in at the provider, in the
    /// client's ``AuthorizationUserAgent`` (as ``webviewLogin(_:)`` shows pages), and from then on can sign in with it.
    ///
    /// 1. `POST /users/me/identities/{provider}` with the app's redirect URI (the user agent's own, such as the
    ///    loopback listener's, else `afterSignInUrl`) answers the provider's authorization URL and a `state`.
    /// 2. The user agent shows that URL; the server's callback sends the browser back to the redirect URI with a
    ///    one-time `code` and the `state`.
    /// 3. The callback must arrive at the redirect URI and carry that `state`; an `error` there is thrown.
    /// 4. `POST /users/me/identities/{provider}/complete` with the `code` and `state` links the identity.
    ///
    /// The sign-in must be recent: the server refuses otherwise (`.reauthenticationRequired`); sign in again (for
    /// example `signInWithBrowser(options: SignInOptions(prompt: "login"))`) and retry.
    ///
    /// ```swift
    /// let corp = try await client.linkIdentity(provider: "corp", presentationContextProvider: self)
    /// print("linked", corp.name ?? corp.provider)
    /// ```
    /// - Parameters:
    ///   - provider: the provider's id (``ProviderConfig/provider``, ``LinkedIdentities/available``).
    ///   - presentationContextProvider: what the page is presented from (required by the Apple user agent).
    ///   - sessionId: the session whose access token is used.
    /// - Returns: the linked identity as the server reports it.
    /// - Throws: `.canceled` when the person closes the page; `.authenticationFailed` when the provider (or the
    ///   person there) refused (`error=access_denied`), other callback errors mapped by their OAuth code;
    ///   `.invalidGrant` for a callback without this linking's `state` or without a code; `.invalidRedirectUri` for a
    ///   callback elsewhere; `.reauthenticationRequired` (HTTP 401 `insufficient_user_authentication`); `.userAlreadyExists` when that provider account
    ///   is linked to another account (HTTP 409); `.invalidInput` for an empty or unknown provider;
    ///   `.sessionExpired`; `.invalidConfiguration` without a redirect URI.
    @discardableResult
    public func linkIdentity(
        provider: String, presentationContextProvider: (any PresentationContextProviding)? = nil, sessionId: String? = nil
    ) async throws -> LinkedIdentity {
        try await session(sessionId).linkIdentity(provider: provider, presentationContextProvider: presentationContextProvider)
    }

    /// Unlinks the identity provider `provider` from the signed-in account (`DELETE /users/me/identities/{provider}`):
    /// the person can no longer sign in with it.
    /// - Parameters:
    ///   - provider: the provider's id (``LinkedIdentity/provider``).
    ///   - sessionId: the session whose access token is used.
    /// - Throws: `.invalidInput` with HTTP status 409 when it is the account's only way to sign in (add a password,
    ///   a passkey or another provider first), `.invalidInput` for an empty, unknown or unlinked provider;
    ///   `.reauthenticationRequired` (HTTP 401 `insufficient_user_authentication`) when the sign-in is not recent enough; `.sessionExpired`.
    public func unlinkIdentity(provider: String, sessionId: String? = nil) async throws {
        try await session(sessionId).unlinkIdentity(provider: provider)
    }

    // MARK: Internals

    /// The `code` of a linking callback, after its checks: the redirect URI, this linking's `state`, no `error`.
    static func linkingCode(_ callback: URL, redirectURI: String, state: String, provider: String) throws -> String {
        guard AuthorizationRequests.sameEndpoint(callback, redirectURI) else {
            throw LatchkeyError(
                .invalidRedirectUri,
                "the callback arrived at \(callback.scheme ?? "")://\(callback.host ?? "")\(callback.path), not at the redirect URI of the linking")
        }
        let query = callbackParameters(callback)
        guard let returned = query["state"], constantTimeEquals(returned, state) else {
            throw LatchkeyError(.invalidGrant, "the callback does not carry this linking's state (possible CSRF or a stale callback)")
        }
        if let error = query["error"] {
            let description = query["error_description"].flatMap { $0.isEmpty ? nil : $0 }
            var mapped = LatchkeyError.oauth(error, description: description, status: nil)
            mapped.message = "linking \(provider) was refused: \(error): \(description ?? "no description")"
            mapped.userMessage = query["error_user_msg"]
            throw mapped
        }
        guard let code = query["code"], !code.isEmpty else {
            throw LatchkeyError(.invalidGrant, "the linking callback has no code")
        }
        return code
    }

    /// The query parameters of a callback, form-decoded (`+` is a space, as in `error_description=The+person+said+no`);
    /// the first of a repeated name wins.
    static func callbackParameters(_ callback: URL) -> [String: String] {
        let query = URLComponents(url: callback, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? ""
        return Dictionary(FormCoding.decode(query), uniquingKeysWith: { first, _ in first })
    }

    /// A provider id as one path segment.
    static func providerSegment(_ provider: String) throws -> String {
        guard !provider.isEmpty, let escaped = provider.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."]))
        else {
            throw LatchkeyError(.invalidInput, "the provider is empty")
        }
        return escaped
    }

    /// One call of the self-service identities API with the session's token (Bearer, or DPoP for a bound session);
    /// a 2xx answer is returned, anything else thrown mapped.
    static func selfService(
        _ context: OAuthClient, _ method: String, _ path: String, tokens: TokenSet, body: JSONValue? = nil, provider: String?,
        unlinking: Bool = false
    ) async throws -> HTTPResponse {
        var headers = ["Accept": "application/json"]
        let data = try IdentityAPI.jsonBody(body, headers: &headers)
        let response = try await context.sendAuthorized(
            HTTPRequest(method: method, url: context.endpoint(path), headers: headers, body: data), tokens: tokens)
        guard (200..<300).contains(response.status) else {
            throw LatchkeyError.linkedIdentity(response, provider: provider, unlinking: unlinking)
        }
        return response
    }
}

extension LatchkeyError {
    /// Maps a failed call of the self-service identities API. The body is read as for the profile
    /// (`profile(_:selfTarget:)`: thunderID, SCIM or OAuth shapes); then:
    /// - 401 `insufficient_user_authentication` (AUTH-4011): the sign-in is not recent enough →
    ///   `.reauthenticationRequired` (the session itself is still valid);
    /// - 409 on unlinking: the provider is the account's only way to sign in → `.invalidInput`;
    /// - 409 on linking: that provider account belongs to another account → `.userAlreadyExists`;
    /// - 404: no such provider for the application, or not linked → `.invalidInput`.
    static func linkedIdentity(_ response: HTTPResponse, provider: String?, unlinking: Bool) -> LatchkeyError {
        var error = LatchkeyError.profile(response, selfTarget: false)
        let detail = error.message
        let name = provider.map { "\"\($0)\"" } ?? "the provider"
        switch response.status {
        case _ where error.code == .reauthenticationRequired:
            error.message =
                "changing linked identities needs a recent sign-in: sign in again (prompt=login) and retry (server: \(detail))"
        case 409 where unlinking:
            error.code = .invalidInput
            error.message =
                "\(name) is the account's only way to sign in: add a password, a passkey or another provider before unlinking it (server: \(detail))"
        case 409:
            error.code = .userAlreadyExists
            error.message = "this \(name) account is already linked to another account (server: \(detail))"
        case 404 where provider != nil:
            error.code = .invalidInput
            error.message = "\(name) is not a provider of this application, or is not linked (server: \(detail))"
        default:
            break
        }
        return error
    }
}

/// The identity providers linked to the session's account (the core of `linkedIdentities(sessionId:)` and the rest).
extension LatchkeySession {
    /// The identity providers linked to the signed-in account, and those the application offers for linking
    /// (`GET /users/me/identities`).
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.reauthenticationRequired` when the
    ///   server wants a more recent sign-in (HTTP 401 `insufficient_user_authentication`); `.serverError` for an answer without `identities`;
    ///   `.networkError`.
    public func linkedIdentities() async throws -> LinkedIdentities {
        let context = try client.context()
        let tokens = try await context.tokens.usableTokens(name)
        let response = try await LatchkeyClient.selfService(context, "GET", "/users/me/identities", tokens: tokens, provider: nil)
        let body = try IdentityAPI.object(response, "linked identities")
        guard case .array(let linked)? = body["identities"] else {
            throw LatchkeyError(.serverError, "the linked identities answer has no identities", statusCode: response.status)
        }
        var available: [JSONValue] = []
        if case .array(let offered)? = body["available"] { available = offered }
        return LinkedIdentities(
            identities: linked.compactMap { LinkedIdentity(json: $0) }, available: available.compactMap(ProviderConfig.init(json:)))
    }

    /// Links the identity provider `provider` to the signed-in account: the person signs in at the provider, in the
    /// client's ``AuthorizationUserAgent`` (as ``LatchkeyClient/webviewLogin(_:)`` shows pages), and from then on can sign in with it.
    ///
    /// 1. `POST /users/me/identities/{provider}` with the app's redirect URI (the user agent's own, such as the
    ///    loopback listener's, else `afterSignInUrl`) answers the provider's authorization URL and a `state`.
    /// 2. The user agent shows that URL; the server's callback sends the browser back to the redirect URI with a
    ///    one-time `code` and the `state`.
    /// 3. The callback must arrive at the redirect URI and carry that `state`; an `error` there is thrown.
    /// 4. `POST /users/me/identities/{provider}/complete` with the `code` and `state` links the identity.
    ///
    /// The sign-in must be recent: the server refuses otherwise (`.reauthenticationRequired`); sign in again (for
    /// example `signInWithBrowser(options: SignInOptions(prompt: "login"))`) and retry.
    ///
    /// ```swift
    /// let corp = try await client.session().linkIdentity(provider: "corp", presentationContextProvider: self)
    /// print("linked", corp.name ?? corp.provider)
    /// ```
    /// - Parameters:
    ///   - provider: the provider's id (``ProviderConfig/provider``, ``LinkedIdentities/available``).
    ///   - presentationContextProvider: what the page is presented from (required by the Apple user agent).
    /// - Returns: the linked identity as the server reports it.
    /// - Throws: `.canceled` when the person closes the page; `.authenticationFailed` when the provider (or the
    ///   person there) refused (`error=access_denied`), other callback errors mapped by their OAuth code;
    ///   `.invalidGrant` for a callback without this linking's `state` or without a code; `.invalidRedirectUri` for a
    ///   callback elsewhere; `.reauthenticationRequired` (HTTP 401 `insufficient_user_authentication`); `.userAlreadyExists` when that provider account
    ///   is linked to another account (HTTP 409); `.invalidInput` for an empty or unknown provider;
    ///   `.sessionExpired`; `.invalidConfiguration` without a redirect URI.
    @discardableResult
    public func linkIdentity(
        provider: String, presentationContextProvider: (any PresentationContextProviding)? = nil
    ) async throws -> LinkedIdentity {
        let presentation = presentationContextProvider.map(PresentationContextProviderBox.init)
        let context = try client.context()
        let segment = try LatchkeyClient.providerSegment(provider)
        let path = "/users/me/identities/" + segment
        let redirect = try await client.appRedirectURI()
        let callback: URL
        let state: String
        do {
            let tokens = try await context.tokens.usableTokens(name)
            let started = try IdentityAPI.object(
                try await LatchkeyClient.selfService(
                    context, "POST", path, tokens: tokens, body: .object(["redirect_uri": .string(redirect.uri)]), provider: provider),
                "identity linking")
            guard let link = started["authorization_url"]?.stringValue.flatMap(URL.init(string:)),
                let scheme = link.scheme?.lowercased(), scheme == "https" || scheme == "http"
            else {
                throw LatchkeyError(.serverError, "the identity linking answer has no authorization_url")
            }
            guard let issued = started["state"]?.stringValue, !issued.isEmpty else {
                throw LatchkeyError(.serverError, "the identity linking answer has no state")
            }
            state = issued
            callback = try await client.showThroughUserAgent(
                link, AuthorizationPresentation(redirectURI: redirect.uri, contextProvider: presentation, state: state),
                what: "identity linking")
        } catch {
            if redirect.prepared { client.userAgent.release(redirectURI: redirect.uri) }
            throw error
        }
        let code = try LatchkeyClient.linkingCode(callback, redirectURI: redirect.uri, state: state, provider: provider)
        // The page may have been open for minutes: a token refreshed meanwhile is the one to send.
        let tokens = try await context.tokens.usableTokens(name)
        let completed = try await LatchkeyClient.selfService(
            context, "POST", path + "/complete", tokens: tokens,
            body: .object(["code": .string(code), "state": .string(state)]), provider: provider)
        let body = (try? JSONDecoder().decode(JSONValue.self, from: completed.body)) ?? .object([:])
        return LinkedIdentity(json: body, fallbackProvider: provider) ?? LinkedIdentity(provider: provider)
    }

    /// Unlinks the identity provider `provider` from the signed-in account (`DELETE /users/me/identities/{provider}`):
    /// the person can no longer sign in with it.
    /// - Parameter provider: the provider's id (``LinkedIdentity/provider``).
    /// - Throws: `.invalidInput` with HTTP status 409 when it is the account's only way to sign in (add a password,
    ///   a passkey or another provider first), `.invalidInput` for an empty, unknown or unlinked provider;
    ///   `.reauthenticationRequired` (HTTP 401 `insufficient_user_authentication`) when the sign-in is not recent enough; `.sessionExpired`.
    public func unlinkIdentity(provider: String) async throws {
        let context = try client.context()
        let segment = try LatchkeyClient.providerSegment(provider)
        let tokens = try await context.tokens.usableTokens(name)
        _ = try await LatchkeyClient.selfService(
            context, "DELETE", "/users/me/identities/" + segment, tokens: tokens, provider: provider, unlinking: true)
    }
}
