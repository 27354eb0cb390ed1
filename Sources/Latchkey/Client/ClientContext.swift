import Foundation

/// Everything bound to one configuration: endpoints, keys, tokens. `reInitialize` replaces it whole.
final class ClientContext: Sendable {
    /// The configuration; only its languages change after creation (`LatchkeyClient.setPreferredLanguages`).
    private let configBox: Locked<LatchkeyConfig>
    var config: LatchkeyConfig { configBox.withLock { $0 } }
    let http: any HTTPClient
    let storage: any StorageAdapter
    private let discovery: DiscoveryCache
    private let cachedMetadata = Locked<ProviderMetadata?>(nil)
    let tokens: TokenManager

    init(config: LatchkeyConfig, http: any HTTPClient, storage: any StorageAdapter, changes: AuthStateBroadcaster? = nil) {
        let configBox = Locked(config)
        self.configBox = configBox
        // Every request of this context goes through one client, so the user's languages — as they are when the
        // request is sent — reach every endpoint.
        let http: any HTTPClient = PreferredLanguageHTTPClient(base: http) {
            LanguagePreferences.acceptLanguage(configBox.withLock { $0.languageTags })
        }
        self.http = http
        self.storage = storage
        self.discovery = DiscoveryCache(issuer: config.issuer, http: http)
        // The token manager calls back into this context to refresh; a weak link avoids a retain cycle.
        let owner = WeakContext()
        self.tokens = TokenManager(storage: storage, changes: changes) { current in
            guard let context = owner.get() else { throw LatchkeyError(.sdkNotInitialized, "the client was re-initialized") }
            return try await context.refresh(current)
        }
        owner.set(self)
    }

    /// Changes the languages sent from now on (`Accept-Language`, `ui_locales`, the flow API's `locale`).
    func setPreferredLanguages(_ languages: [String]?) {
        configBox.withLock { $0.preferredLanguages = languages }
    }

    /// Provider metadata, fetched once (concurrent callers share the request; a failure is retried next time).
    func requireMetadata() async throws -> ProviderMetadata {
        if let cached = cachedMetadata.withLock({ $0 }) { return cached }
        let fetched = try await discovery.get()
        cachedMetadata.withLock { $0 = fetched }
        return fetched
    }

    /// As `requireMetadata()`, nil when the provider cannot be reached or has no discovery document.
    func metadata() async -> ProviderMetadata? { try? await requireMetadata() }

    /// `path` under the configured base URL (endpoints that discovery does not name: flows, profile).
    func endpoint(_ path: String) -> URL {
        URL(string: config.issuer + path) ?? URL(fileURLWithPath: "/")
    }

    /// From discovery once fetched (initialize prefetches it); until then the Latchkey/ThunderID convention.
    var authorizationEndpoint: URL {
        cachedMetadata.withLock { $0?.authorizationEndpoint } ?? endpoint("/oauth2/authorize")
    }

    private let validatorBox = Locked<IDTokenValidator?>(nil)

    func idTokenValidator() async throws -> IDTokenValidator {
        if let v = validatorBox.withLock({ $0 }) { return v }
        let jwksURL = try await requireMetadata().jwksUri
        return validatorBox.withLock { box in
            if let v = box { return v }
            let v = IDTokenValidator(jwks: JWKSCache(url: jwksURL, http: http))
            box = v
            return v
        }
    }

    // MARK: Token endpoint

    /// POSTs a form to the token endpoint and maps errors (OAuth and ReachFive shapes) to `LatchkeyError`.
    func tokenRequest(_ parameters: [(String, String)]) async throws -> TokenResponse {
        let url = try await requireMetadata().tokenEndpoint
        let response = try await http.send(.form(url, parameters))
        guard response.status == 200 else { throw Self.errorFrom(response) }
        do { return try JSONDecoder().decode(TokenResponse.self, from: response.body) } catch {
            throw LatchkeyError(.serverError, "the token endpoint answered 200 with a body that is not a token response", statusCode: 200)
        }
    }

    static func errorFrom(_ response: HTTPResponse) -> LatchkeyError {
        struct OAuthBody: Decodable { var error: String?; var error_description: String? }
        let body = try? JSONDecoder().decode(OAuthBody.self, from: response.body)
        let apiError = try? JSONDecoder().decode(LatchkeyError.ApiError.self, from: response.body)
        if let error = body?.error {
            return .oauth(error, description: body?.error_description, status: response.status,
                          apiError: apiError?.errorUserMsg != nil ? apiError : nil)
        }
        let code: LatchkeyError.Code = response.status >= 500 ? .serverError : response.status == 401 ? .authenticationFailed : .unknownError
        return LatchkeyError(code, "the server answered HTTP \(response.status)", statusCode: response.status)
    }

    /// The verified claims of the response's ID token; nil when there is none or validation is turned off.
    private func validateIDToken(_ response: TokenResponse, nonce: String?, maxAge: Int?) async throws -> [String: JSONValue]? {
        guard let idToken = response.idToken, config.tokenValidation.validate else { return nil }
        return try await idTokenValidator().validate(idToken, .init(
            issuer: try await requireMetadata().issuer, clientId: config.clientId, nonce: nonce, accessToken: response.accessToken,
            maxAge: maxAge, leeway: config.tokenValidation.clockTolerance))
    }

    /// The stored form of a token response; what the response leaves out (a refresh token, an ID token) is kept.
    private func tokenSet(_ response: TokenResponse, previous: TokenSet?, nonce: String?) -> TokenSet {
        TokenSet(accessToken: response.accessToken, refreshToken: response.refreshToken ?? previous?.refreshToken,
                 idToken: response.idToken ?? previous?.idToken, tokenType: response.tokenType ?? "Bearer",
                 expiresAt: Date().addingTimeInterval(TimeInterval(response.expiresIn ?? 3600)),
                 scope: response.scope ?? previous?.scope, nonce: nonce)
    }

    /// A sign-in's token response: the ID token must be present when `openid` was requested, and is verified.
    func signInTokens(_ response: TokenResponse, nonce: String?, maxAge: Int?, expectsIDToken: Bool) async throws -> TokenSet {
        let claims = try await validateIDToken(response, nonce: nonce, maxAge: maxAge)
        if claims == nil, expectsIDToken, config.tokenValidation.validate {
            throw LatchkeyError(.invalidToken, "the provider returned no ID token for an openid sign-in")
        }
        return tokenSet(response, previous: nil, nonce: nonce)
    }

    /// One refresh round trip. A refreshed ID token is verified too, and must name the same subject and, if it
    /// carries a nonce, the original one (OpenID Connect Core §12.2).
    func refresh(_ current: TokenSet) async throws -> TokenSet {
        guard let refreshToken = current.refreshToken else { throw LatchkeyError(.sessionExpired, "no refresh token") }
        let response = try await tokenRequest([("grant_type", "refresh_token"), ("refresh_token", refreshToken),
                                               ("client_id", config.clientId)])
        if let claims = try await validateIDToken(response, nonce: nil, maxAge: nil) {
            if let nonce = claims["nonce"]?.stringValue, nonce != current.nonce {
                throw LatchkeyError(.invalidToken, "ID token rejected: a refreshed ID token carries a different nonce")
            }
            if let old = current.idToken, let oldClaims = try? decodePayload(old), oldClaims["sub"] != claims["sub"] {
                throw LatchkeyError(.invalidToken, "ID token rejected: refresh returned a different subject")
            }
        }
        return tokenSet(response, previous: current, nonce: current.nonce)
    }

    private func decodePayload(_ jwt: String) throws -> [String: JSONValue] {
        try CompactJWS(parsing: jwt).claims(as: [String: JSONValue].self)
    }

    // MARK: Other endpoints

    /// RFC 7009 revocation as a public client. Some providers (glewlwyd) refuse unauthenticated revocation with 401
    /// but accept the session's own access token as a bearer credential, so that is tried once.
    func revoke(_ token: String, hint: String, accessToken: String? = nil) async throws {
        guard let url = try await requireMetadata().revocationEndpoint else { return }
        let parameters = [("token", token), ("token_type_hint", hint), ("client_id", config.clientId)]
        var response = try await http.send(.form(url, parameters))
        if response.status == 401, let accessToken {
            response = try await http.send(.form(url, parameters, headers: ["Authorization": "Bearer \(accessToken)"]))
        }
        guard response.status == 200 else { throw Self.errorFrom(response) }
    }

    /// RP-initiated logout without a browser, with the ID-token hint; the provider ends that session and answers with a
    /// redirect, which is not followed. POST first (RP-Initiated Logout 1.0 §2 requires OPs to support it), so the ID
    /// token stays out of URLs, proxy and access logs; GET only for a provider that refuses the POST method.
    func endSession(idTokenHint: String) async throws {
        guard let endpoint = try await requireMetadata().endSessionEndpoint else { return }
        var parameters = [("id_token_hint", idTokenHint), ("client_id", config.clientId)]
        if let after = config.afterSignOutUrl { parameters.append(("post_logout_redirect_uri", after)) }
        var response = try await http.send(.form(endpoint, parameters))
        if [404, 405, 501].contains(response.status),
           var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false) {
            let existing = components.percentEncodedQuery.map { $0 + "&" } ?? ""
            components.percentEncodedQuery = existing + FormCoding.encode(parameters)
            guard let url = components.url else { return }
            response = try await http.send(HTTPRequest(url: url))
        }
        guard response.status < 400 else { throw Self.errorFrom(response) }
    }

    func userinfo(accessToken: String) async throws -> User {
        guard let url = try await requireMetadata().userinfoEndpoint else {
            throw LatchkeyError(.invalidConfiguration, "the provider has no userinfo endpoint")
        }
        let response = try await http.send(HTTPRequest(url: url, headers: ["Authorization": "Bearer \(accessToken)", "Accept": "application/json"]))
        guard response.status == 200 else { throw Self.errorFrom(response) }
        guard let claims = try? JSONDecoder().decode([String: JSONValue].self, from: response.body) else {
            throw LatchkeyError(.serverError, "userinfo is not a JSON object")
        }
        return User(claims: claims)
    }

    /// Claims of the session's ID token (validated when it was received).
    func user(from tokens: TokenSet) async throws -> User {
        guard let idToken = tokens.idToken else { return try await userinfo(accessToken: tokens.accessToken) }
        return User(claims: try decodePayload(idToken))
    }
}

/// Fetches discovery once; concurrent callers share the request and a failure is retried on the next call.
actor DiscoveryCache {
    private let issuer: String
    private let http: any HTTPClient
    private var task: Task<ProviderMetadata, any Error>?

    init(issuer: String, http: any HTTPClient) {
        self.issuer = issuer
        self.http = http
    }

    func get() async throws -> ProviderMetadata {
        if let task { return try await task.value }
        let task = Task { [issuer, http] in try await ProviderMetadata.discover(issuer: issuer, http: http) }
        self.task = task
        do { return try await task.value } catch {
            self.task = nil
            throw error
        }
    }
}

/// A weak reference that can cross concurrency domains (set once, read under a lock).
private final class WeakContext: @unchecked Sendable {
    private weak var value: ClientContext?
    private let lock = NSLock()
    func set(_ context: ClientContext) { lock.withLock { value = context } }
    func get() -> ClientContext? { lock.withLock { value } }
}
