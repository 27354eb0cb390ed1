import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import Logging

/// The provider's OAuth client as this app is configured for it: its endpoints (from discovery), its DPoP keys, its
/// token requests (`tokenRequest`, one `TokenGrant` each), its stored sessions and their refresh. Everything here is
/// bound to one configuration; `reInitialize` replaces it whole.
final class OAuthClient: Sendable {
    /// The configuration; only its languages change after creation (`LatchkeyClient.setPreferredLanguages`).
    private let configBox: Locked<LatchkeyConfig>
    var config: LatchkeyConfig { configBox.withLock { $0 } }
    let http: any HTTPClient
    let storage: any StorageAdapter
    private let discovery: DiscoveryCache
    private let cachedMetadata = Locked<ProviderMetadata?>(nil)
    /// The last DPoP nonce each server sent (RFC 9449 §8), by origin.
    private let dpopNonces = Locked<[String: String]>([:])
    let tokens: TokenManager

    /// The provider's time, learned from its answers (ID-token and DPoP timestamps go by it).
    let clock: ProviderClock

    init(
        config: LatchkeyConfig, http: any HTTPClient, storage: any StorageAdapter, changes: AuthStateBroadcaster? = nil,
        cache: AccessTokenCache? = nil, logger: Logger = Logger(label: "latchkey"), clock: ProviderClock = ProviderClock()
    ) {
        let configBox = Locked(config)
        self.configBox = configBox
        self.clock = clock
        // Every request of this context goes through one client, so the user's languages — as they are when the
        // request is sent — reach every endpoint, and every answer's `Date` keeps the provider's time current.
        let languages: any HTTPClient = PreferredLanguageHTTPClient(base: LoggingHTTPClient(base: http, logger: logger)) {
            LanguagePreferences.acceptLanguage(configBox.withLock { $0.languageTags })
        }
        let http: any HTTPClient = ClockLearningHTTPClient(base: languages, clock: clock, issuer: config.issuer)
        self.http = http
        self.storage = storage
        self.discovery = DiscoveryCache(issuer: config.issuer, http: http)
        // The token manager calls back into this context to refresh; a weak link avoids a retain cycle.
        let owner = WeakContext()
        self.tokens = TokenManager(storage: storage, changes: changes, cache: cache, now: { [clock] in clock.deviceNow }) { current in
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
            let v = IDTokenValidator(jwks: JWKSCache(url: jwksURL, http: http, now: { [clock] in clock.now }))
            box = v
            return v
        }
    }

    // MARK: Token endpoint

    /// Which DPoP key a token request proves.
    enum ProofKey {
        /// A sign-in: a new key when `useDPoP` is on, none otherwise.
        case fresh
        /// This key (a session's), or no proof at all.
        case stored(String?)
        /// A key made already: a retry proves possession of the key its first attempt named.
        case made(any DPoPSigningKey)
    }

    /// POSTs a form to the token endpoint and maps errors (OAuth and ReachFive shapes) to `LatchkeyError`. With DPoP,
    /// the request carries a proof by the key `proof` names, and the answer remembers which key its tokens are bound to.
    func tokenRequest(_ grant: TokenGrant, proof: ProofKey = .fresh) async throws -> TokenResponse {
        let parameters = grant.parameters(clientId: config.clientId)
        let url = try await requireMetadata().tokenEndpoint
        let key: (any DPoPSigningKey)?
        switch proof {
        case .fresh: key = config.useDPoP ? try await dpopKeys.makeKey() : nil
        case .stored(let reference): key = try await storedKey(reference)
        case .made(let made): key = made
        }
        let response = try await send(.form(url, parameters), dpop: key, accessToken: nil)
        guard response.status == 200 else { throw Self.errorFrom(response) }
        var decoded: TokenResponse
        do { decoded = try JSONDecoder().decode(TokenResponse.self, from: response.body) } catch {
            throw LatchkeyError(.serverError, "the token endpoint answered 200 with a body that is not a token response", statusCode: 200)
        }
        // A provider that ignored the proof issued Bearer tokens: no key to keep.
        if decoded.tokenType?.caseInsensitiveCompare("DPoP") == .orderedSame { decoded.dpopKey = key?.persistentReference }
        return decoded
    }

    // MARK: Pushed authorization requests

    /// `url` (a complete authorization URL) pushed to the provider's PAR endpoint (RFC 9126) when discovery names one:
    /// the result carries only `client_id` and the `request_uri`. Without the endpoint, `url` itself.
    func pushIfOffered(_ url: URL) async throws -> URL {
        guard let endpoint = try await requireMetadata().pushedAuthorizationRequestEndpoint,
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false), let query = components.percentEncodedQuery
        else {
            return url
        }
        let parameters = FormCoding.decode(query)
        let response = try await http.send(.form(endpoint, parameters))
        guard response.status == 201 || response.status == 200 else { throw Self.errorFrom(response) }
        struct Pushed: Decodable { var request_uri: String; var expires_in: Int? }
        guard let pushed = try? JSONDecoder().decode(Pushed.self, from: response.body), !pushed.request_uri.isEmpty else {
            throw LatchkeyError(.serverError, "the pushed authorization request answer has no request_uri", statusCode: response.status)
        }
        var reference = components
        reference.percentEncodedQuery = FormCoding.encode([("client_id", config.clientId), ("request_uri", pushed.request_uri)])
        guard let pushedURL = reference.url else { throw LatchkeyError(.invalidConfiguration, "cannot build the authorization URL") }
        return pushedURL
    }

    // MARK: DPoP

    private var dpopKeys: any DPoPKeyProvider { config.dpopKeyProvider ?? SoftwareDPoPKeyProvider() }

    /// Sends `request`, with a DPoP proof by `key` when there is one (naming `accessToken` at a resource), using the
    /// last nonce the request's server gave; a `use_dpop_nonce` answer is retried once with its nonce.
    func send(_ request: HTTPRequest, dpop key: (any DPoPSigningKey)?, accessToken: String?) async throws -> HTTPResponse {
        guard let key else { return try await http.send(request) }
        let response = try await sendWithProof(request, key: key, accessToken: accessToken)
        guard DPoPProof.asksForNonce(response) else { return response }
        return try await sendWithProof(request, key: key, accessToken: accessToken)
    }

    private func sendWithProof(_ request: HTTPRequest, key: any DPoPSigningKey, accessToken: String?) async throws -> HTTPResponse {
        var request = request
        request.headers["DPoP"] = try await proof(key, method: request.method, url: request.url, accessToken: accessToken)
        let response = try await http.send(request)
        if let fresh = response.header("DPoP-Nonce") { dpopNonces.withLock { $0[Self.origin(of: request.url)] = fresh } }
        return response
    }

    /// A proof with the last nonce `url`'s server sent.
    private func proof(_ key: any DPoPSigningKey, method: String, url: URL, accessToken: String?) async throws -> String {
        let nonce = dpopNonces.withLock { $0[Self.origin(of: url)] }
        return try await DPoPProof.make(key: key, method: method, url: url, accessToken: accessToken, nonce: nonce, now: clock.now)
    }

    /// The key a session's tokens are bound to; nil for Bearer tokens.
    private func boundKey(_ tokens: TokenSet) async throws -> (any DPoPSigningKey)? {
        tokens.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame ? try await storedKey(tokens.dpopKey) : nil
    }

    /// The key a stored reference names; nil for none.
    private func storedKey(_ reference: String?) async throws -> (any DPoPSigningKey)? {
        guard let reference else { return nil }
        return try await dpopKeys.key(persistentReference: reference)
    }

    /// `request` authorized with the session's access token: `Bearer`, or for DPoP-bound tokens `DPoP` with a proof.
    func sendAuthorized(_ request: HTTPRequest, tokens: TokenSet) async throws -> HTTPResponse {
        let key = try await boundKey(tokens)
        var request = request
        request.headers["Authorization"] = (key == nil ? "Bearer " : "DPoP ") + tokens.accessToken
        return try await send(request, dpop: key, accessToken: tokens.accessToken)
    }

    /// The headers `sendAuthorized` would add (for requests the app sends itself).
    func authorizationHeaders(method: String, url: URL, tokens: TokenSet) async throws -> [String: String] {
        guard let key = try await boundKey(tokens) else { return ["Authorization": "Bearer \(tokens.accessToken)"] }
        return [
            "Authorization": "DPoP \(tokens.accessToken)",
            "DPoP": try await proof(key, method: method, url: url, accessToken: tokens.accessToken)
        ]
    }

    /// A new key's reference for a sign-in that polls (the device grant): one key for all its token requests.
    func newDPoPKeyReference() async throws -> String? {
        config.useDPoP ? try await dpopKeys.makeKey().persistentReference : nil
    }

    /// `scheme://host[:port]`, lowercased: the key of per-server state (DPoP nonces, the provider's clock).
    static func origin(of url: URL) -> String {
        "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? "")\(url.port.map { ":\($0)" } ?? "")"
    }

    static func errorFrom(_ response: HTTPResponse) -> LatchkeyError {
        struct OAuthBody: Decodable { var error: String?; var error_description: String? }
        let body = try? JSONDecoder().decode(OAuthBody.self, from: response.body)
        let apiError = try? JSONDecoder().decode(LatchkeyError.ApiError.self, from: response.body)
        if let error = body?.error {
            return .oauth(
                error, description: body?.error_description, status: response.status,
                apiError: apiError?.errorUserMsg != nil ? apiError : nil)
        }
        let code: LatchkeyError.Code = response.status >= 500 ? .serverError : response.status == 401 ? .authenticationFailed : .unknownError
        return LatchkeyError(code, "the server answered HTTP \(response.status)", statusCode: response.status)
    }

    /// The verified claims of the response's ID token; nil when there is none or validation is turned off.
    private func validateIDToken(_ response: TokenResponse, nonce: String?, maxAge: Int?) async throws -> [String: JSONValue]? {
        guard let idToken = response.idToken, config.tokenValidation.validate else { return nil }
        return try await idTokenValidator().validate(
            idToken,
            .init(
                issuer: try await requireMetadata().issuer, clientId: config.clientId, nonce: nonce, accessToken: response.accessToken,
                maxAge: maxAge, leeway: config.tokenValidation.clockTolerance, now: clock.now))
    }

    /// The stored form of a token response; what the response leaves out (a refresh token, an ID token) is kept.
    private func tokenSet(_ response: TokenResponse, previous: TokenSet?, nonce: String?) -> TokenSet {
        var tokens = TokenSet(
            accessToken: response.accessToken, refreshToken: response.refreshToken ?? previous?.refreshToken,
            idToken: response.idToken ?? previous?.idToken, tokenType: response.tokenType ?? "Bearer",
            expiresAt: clock.deviceNow.addingTimeInterval(TimeInterval(response.expiresIn ?? 3600)),
            scope: response.scope ?? previous?.scope, nonce: nonce, dpopKey: response.dpopKey)
        tokens.browser = previous?.browser
        return tokens
    }

    /// A sign-in's token response: the ID token must be present when `openid` was requested, and is verified.
    func signInTokens(_ response: TokenResponse, nonce: String?, maxAge: Int?, expectsIDToken: Bool) async throws -> TokenSet {
        let claims = try await validateIDToken(response, nonce: nonce, maxAge: maxAge)
        if claims == nil, expectsIDToken, config.tokenValidation.validate {
            throw LatchkeyError(.invalidToken, "the provider returned no ID token for an openid sign-in")
        }
        var tokens = tokenSet(response, previous: nil, nonce: nonce)
        tokens.browser = .withoutBrowser  // a redirect sign-in says which browser instead (`completeAuthorization`)
        return tokens
    }

    /// One refresh round trip. A refreshed ID token is verified too, and must name the same subject and, if it
    /// carries a nonce, the original one (OpenID Connect Core §12.2).
    func refresh(_ current: TokenSet) async throws -> TokenSet {
        guard let refreshToken = current.refreshToken else { throw LatchkeyError(.sessionExpired, "no refresh token") }
        // The session's key proves possession of a bound refresh token; a session without one (Bearer) gets a new key
        // when DPoP is on, made once so that a retry names the key the first attempt did.
        let proof: ProofKey =
            if let stored = current.dpopKey { .stored(stored) } else if config.useDPoP { .made(try await dpopKeys.makeKey()) } else { .stored(nil) }
        let response: TokenResponse
        do {
            response = try await tokenRequest(.refreshToken(refreshToken), proof: proof)
        } catch let error as LatchkeyError where error.statusCode == nil && [.networkError, .requestTimeout].contains(error.code) {
            // The answer was lost (reset, cut, or silent until the timeout) after the server may have rotated. Sent
            // again at once, the same refresh token falls inside the server's reuse interval and gets the successor
            // already issued; left for the app's next call, it could come after the interval and be taken for a
            // replay that revokes the session. Once: a server that cannot be reached keeps the session for later.
            response = try await tokenRequest(.refreshToken(refreshToken), proof: proof)
        }
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
    func revoke(_ token: String, hint: String, accessToken: String? = nil, dpopKey: String? = nil) async throws {
        guard let url = try await requireMetadata().revocationEndpoint else { return }
        let parameters = [("token", token), ("token_type_hint", hint), ("client_id", config.clientId)]
        // A DPoP-bound refresh token is revoked with a proof by its key (the server ignores the request otherwise).
        let key = try await storedKey(dpopKey)
        var response = try await send(.form(url, parameters), dpop: key, accessToken: nil)
        if response.status == 401, let accessToken {
            response = try await http.send(.form(url, parameters, headers: ["Authorization": "Bearer \(accessToken)"]))
        }
        guard response.status == 200 else { throw Self.errorFrom(response) }
    }

    /// RP-initiated logout without a browser, with the ID-token hint: the provider ends that session and answers with a
    /// redirect to `post_logout_redirect_uri`, which is not followed. POST first (RP-Initiated Logout 1.0 §2 requires
    /// OPs to support it), so the ID token stays out of URLs, proxy and access logs; GET when the provider refuses the
    /// POST (405, or a 4xx from an endpoint that is a browser page with CSRF protection).
    ///
    /// Only a redirect says the session ended. A 200 is a page for a browser (most providers ask the person to confirm
    /// there): the provider's session lives in the browser's cookie, which a request from the app does not carry.
    /// - Parameter postLogoutRedirectURI: a registered redirect URI to name (the configured `afterSignOutUrl`, or one
    ///   the user agent prepared): a provider that ends the session then says so by redirecting there.
    /// - Parameter signedInWithBrowser: the session was signed in through a browser, whose cookie this request does not
    ///   carry: the provider's acceptance then does not show that the browser's session ended.
    /// - Parameter namesPreparedURI: `postLogoutRedirectURI` is one the user agent made up (not the app's configured
    ///   `afterSignOutUrl`), which the provider may not have registered.
    func endSessionStep(
        idTokenHint: String, metadata: ProviderMetadata?, postLogoutRedirectURI: String?,
        signedInWithBrowser: Bool, namesPreparedURI: Bool = false
    ) async -> SignOutReport.Step {
        guard let metadata else { return .failed("the provider could not be reached (discovery failed)") }
        guard let endpoint = metadata.endSessionEndpoint else {
            return .unsupported("the provider publishes no end_session_endpoint: its session (in the browser) stays open until it expires")
        }
        var parameters = [("id_token_hint", idTokenHint), ("client_id", config.clientId)]
        if let postLogoutRedirectURI { parameters.append(("post_logout_redirect_uri", postLogoutRedirectURI)) }
        do {
            // The loopback URI the SDK made up is not registered at every provider: a 400 asks again without it, by
            // POST and by GET alike.
            func withoutPreparedURI(after status: Int) -> Bool {
                guard status == 400, namesPreparedURI, parameters.contains(where: { $0.0 == "post_logout_redirect_uri" }) else { return false }
                parameters.removeAll { $0.0 == "post_logout_redirect_uri" }
                return true
            }
            var response = try await http.send(.form(endpoint, parameters))
            if withoutPreparedURI(after: response.status) { response = try await http.send(.form(endpoint, parameters)) }
            // GET only when the provider refuses the POST as such (403: a page behind CSRF protection; 404, 405, 501:
            // no POST route): other refusals would only put the ID token into URLs and logs for nothing.
            if [403, 404, 405, 501].contains(response.status), let url = FormCoding.url(endpoint, adding: parameters) {
                response = try await http.send(HTTPRequest(url: url))
                if withoutPreparedURI(after: response.status), let bare = FormCoding.url(endpoint, adding: parameters) {
                    response = try await http.send(HTTPRequest(url: bare))
                }
            }
            switch response.status {
            case 300..<400:
                // Done only when the provider sends the browser where the sign-out ends (the URI named): a redirect
                // to a page of its own is a page that asks the person, or ends the session itself, in the browser.
                let location = response.header("Location") ?? ""
                if let postLogoutRedirectURI, parameters.contains(where: { $0.0 == "post_logout_redirect_uri" }),
                    location.hasPrefix(postLogoutRedirectURI),
                    ["", "?", "#", "&"].contains(String(location.dropFirst(postLogoutRedirectURI.count).prefix(1)))
                {
                    guard signedInWithBrowser else { return .done }
                    return .unconfirmed(
                        "the provider accepted the sign-out, but its session lives in the browser that signed in, whose cookie a request from the app does not carry: it may still be open there"
                    )
                }
                return .unconfirmed(
                    "the provider sent the request to a page of its own (it ends its session in the browser, usually after asking the person)")
            case 200..<300:
                return .unconfirmed(
                    "the provider answered with a page meant for a browser: many ask the person to confirm there, and its session lives in the browser's cookie"
                )
            default:
                return .failed("the provider refused to end its session (HTTP \(response.status))")
            }
        } catch {
            return .failed("the provider could not be reached (\(Self.describe(error)))")
        }
    }

    /// Revokes `token` (RFC 7009) and says how that went.
    func revocationStep(_ token: String, hint: String, metadata: ProviderMetadata?, accessToken: String?, dpopKey: String?) async
        -> SignOutReport.Step
    {
        guard let metadata else { return .failed("the provider could not be reached (discovery failed)") }
        guard metadata.revocationEndpoint != nil else {
            let stays = hint == "refresh_token" ? "the refresh token stays valid until it expires" : "the access token stays valid until it expires"
            return .unsupported("the provider publishes no revocation endpoint: \(stays)")
        }
        do {
            try await revoke(token, hint: hint, accessToken: accessToken, dpopKey: dpopKey)
            return .done
        } catch let error as LatchkeyError where error.statusCode != nil {
            return .failed("the provider refused the revocation (HTTP \(error.statusCode ?? 0)\(error.serverCode.map { ", \($0)" } ?? ""))")
        } catch {
            return .failed("the provider could not be reached (\(Self.describe(error)))")
        }
    }

    /// An error in words fit for a report or a log line: the SDK's own message (which names no token, code or
    /// URL query), else only the error's type.
    static func describe(_ error: any Error) -> String {
        (error as? LatchkeyError)?.message ?? String(describing: type(of: error))
    }

    func userinfo(tokens: TokenSet) async throws -> User {
        guard let url = try await requireMetadata().userinfoEndpoint else {
            throw LatchkeyError(.invalidConfiguration, "the provider has no userinfo endpoint")
        }
        let response = try await sendAuthorized(HTTPRequest(url: url, headers: ["Accept": "application/json"]), tokens: tokens)
        guard response.status == 200 else { throw Self.errorFrom(response) }
        guard let claims = try? JSONDecoder().decode([String: JSONValue].self, from: response.body) else {
            throw LatchkeyError(.serverError, "userinfo is not a JSON object")
        }
        return User(claims: claims)
    }

    /// Claims of the session's ID token (validated when it was received).
    func user(from tokens: TokenSet) async throws -> User {
        guard let idToken = tokens.idToken else { return try await userinfo(tokens: tokens) }
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
    private weak var value: OAuthClient?
    private let lock = NSLock()
    func set(_ context: OAuthClient) { lock.withLock { value = context } }
    func get() -> OAuthClient? { lock.withLock { value } }
}
