import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// A redirect sign-in: the authorization-code flow with PKCE (RFC 6749 §4.1, RFC 7636, OpenID Connect Core §3.1)
/// into one ``LatchkeySession``.
///
/// ``start(options:)`` builds the authorization URL (PKCE S256, fresh `state` and `nonce`) and remembers the request
/// under its `state`; the app shows it in a browser of its choosing; ``resume(with:)`` takes the URL the browser came
/// back to, checks its `state`, redirect URI, `iss` (RFC 9207) and `error`, redeems the code, verifies the ID token and
/// stores the session. ``signIn(options:presentationContextProvider:)`` does all of it through the client's
/// ``AuthorizationUserAgent`` (pushing the request first where the provider offers PAR, RFC 9126).
///
/// ```swift
/// let flow = AuthorizationCodeFlow(client: client, session: client.session(named: "work"))
/// let url = try flow.start()
/// // … the browser comes back to the redirect URI …
/// let user = try await flow.resume(with: callbackURL)
/// ```
///
/// Requests in flight are kept by the client, keyed by `state`, so two sign-ins cannot answer each other, and a
/// value made later (after the app was suspended) resumes a request an earlier one started. The ThunderID-style
/// `buildSignInURL(options:)`, `handleRedirectCallback(url:)` and `signInWithBrowser(options:sessionId:…)`, and the
/// ReachFive-style `webviewLogin(_:)` (``signIn(_:)``), are this flow.
public struct AuthorizationCodeFlow: Sendable {
    /// The client whose configuration, user agent and pending requests the flow uses.
    let client: LatchkeyClient
    /// Where ``start(options:)``'s request stores the session when it completes.
    public let session: LatchkeySession

    /// A redirect sign-in into `session` (nil: the client's default session).
    public init(client: LatchkeyClient, session: LatchkeySession? = nil) {
        self.client = client
        self.session = session ?? client.session()
    }

    /// The authorization URL to open in a browser, remembered (for ten minutes) until ``resume(with:)`` completes it.
    /// - Parameter options: `prompt`, `login_hint`, `max_age`, the identity provider and other parameters.
    /// - Throws: `.invalidConfiguration` without a redirect URI (`afterSignInUrl`); `.sdkNotInitialized`.
    public func start(options: SignInOptions? = nil) throws -> URL {
        try client.codeFlow.start(client.context(), options: options, sessionId: session.name).url
    }

    /// Completes a request ``start(options:)`` made (by any value of this client): checks the callback's `error`,
    /// `state` (single use) and `iss`, exchanges the code (form-encoded, with the PKCE verifier), validates the ID
    /// token and stores the session the request was started for.
    /// - Parameter callback: the URL the browser came back to.
    /// - Returns: the signed-in user.
    /// - Throws: `.invalidGrant` for a callback without a pending request's `state`, without a code, or with another
    ///   issuer; `.invalidRedirectUri` for a callback elsewhere; the callback's `error` mapped; the token endpoint's.
    public func resume(with callback: URL) async throws -> User {
        try await client.loading {
            let context = try client.context()
            // The app showed the page in a browser of its own choosing.
            let tokens = try await client.codeFlow.resume(callback: callback, context: context, browser: .other)
            return try await context.user(from: tokens)
        }
    }

    /// Signs in through the client's user agent in one call: the authorization URL is shown (on Apple platforms in an
    /// `ASWebAuthenticationSession` presented from `presentationContextProvider`) and the callback it returns is
    /// handled at once.
    /// - Returns: the signed-in user.
    /// - Throws: `.canceled` when the person closes the page; the user agent's errors (a sign-in already showing, no
    ///   presentation context) as they are; the provider's error page behind a closed sheet; the callback's and the
    ///   token endpoint's errors mapped (a provider that refused the person: `.authenticationFailed`).
    public func signIn(options: SignInOptions? = nil, presentationContextProvider: (any PresentationContextProviding)? = nil) async throws
        -> User
    {
        try await client.loading {
            let context = try client.context()
            let tokens = try await throughUserAgent(
                context, options: options, state: nil, nonce: nil, scopes: nil,
                presentation: presentationContextProvider.map(PresentationContextProviderBox.init))
            return try await context.user(from: tokens)
        }
    }

    /// Signs in through the client's user agent with ReachFive's ``WebviewLoginRequest``: as
    /// ``signIn(options:presentationContextProvider:)`` with the request's `state`, `nonce`, `scope`, `provider`,
    /// `origin` and presentation context, into this flow's session, answering ReachFive's ``AuthToken``. The
    /// ReachFive-style `webviewLogin(_:)` is this call on a flow for the session the request's `sessionId` names.
    ///
    /// ```swift
    /// let token = try await AuthorizationCodeFlow(client: client, session: client.session(named: "work"))
    ///     .signIn(WebviewLoginRequest(state: state, scope: ["openid", "email"], presentationContextProvider: self))
    /// ```
    /// - Throws: `.invalidInput` when the request's `sessionId` names another session than ``session`` (give the
    ///   flow the session and leave `sessionId` nil); otherwise as ``signIn(options:presentationContextProvider:)``.
    public func signIn(_ request: WebviewLoginRequest) async throws -> AuthToken {
        guard request.sessionId == nil || request.sessionId == session.name else {
            throw LatchkeyError(
                .invalidInput, "the request's sessionId names another session than the flow's: give the flow the session and leave sessionId nil")
        }
        return try await client.loading {
            let context = try client.context()
            var options: SignInOptions?
            if request.provider?.isEmpty == false || request.origin != nil {
                options = SignInOptions(provider: request.provider, extra: request.origin.map { ["origin": $0] } ?? [:])
            }
            let tokens = try await throughUserAgent(
                context, options: options, state: request.state,
                nonce: request.nonce, scopes: request.scope, presentation: request.presentationContext)
            return AuthToken(tokens, now: context.clock.deviceNow)
        }
    }

    /// Starts a request for this session, shows it through the client's user agent and resumes with the callback.
    private func throughUserAgent(
        _ context: OAuthClient, options: SignInOptions?, state requestedState: String?,
        nonce: String?, scopes: [String]?, presentation: PresentationContextProviderBox?
    ) async throws -> TokenSet {
        let userAgent = client.userAgent, codeFlow = client.codeFlow
        // Fail before showing anything when the provider is unreachable or is not an OpenID Connect issuer.
        _ = try await context.requireMetadata()
        let redirect = try await userAgent.prepareRedirectURI()
        let authorization: AuthorizationRequests.Request
        do {
            authorization = try codeFlow.start(
                context, options: options, sessionId: session.name, state: requestedState,
                nonce: nonce, scopes: scopes, redirectUri: redirect)
        } catch {
            if let redirect { userAgent.release(redirectURI: redirect) }
            throw error
        }
        let callback: URL
        var shown: URL?
        do {
            // RFC 9126: where the provider offers it, the request is pushed and the browser only carries its reference.
            let url = try await context.pushIfOffered(authorization.url)
            shown = url
            callback = try await client.showThroughUserAgent(
                url,
                AuthorizationPresentation(
                    redirectURI: authorization.redirectUri, contextProvider: presentation, state: authorization.state),
                what: "sign-in")
        } catch {
            codeFlow.discard(state: authorization.state)
            // A closed sheet may have shown the provider's error page (unpushed requests only: a pushed one was
            // checked at the push): that is the error, not a cancel.
            if let closed = error as? LatchkeyError, closed.code == .canceled, let shown, shown == authorization.url,
                let page = await ErrorPageProbe.error(behind: shown, http: client.http)
            {
                throw page
            }
            if let e = error as? LatchkeyError { throw e }
            if error is CancellationError { throw LatchkeyError(.unknownError, "the sign-in task was cancelled", underlying: error) }
            throw LatchkeyError(.canceled, "the sign-in page was closed: \(error.localizedDescription)")
        }
        return try await codeFlow.resume(callback: callback, context: context, browser: userAgent.keepsProviderSession ? .userAgent : .other)
    }
}

/// The requests of redirect sign-ins in flight, and the protocol steps of ``AuthorizationCodeFlow``: `start` builds
/// the authorization URL and remembers the request under its `state`; `resume` takes the callback, checks it and
/// redeems the code. Requests in flight are keyed by `state`, never one shared slot, so two sign-ins cannot answer each
/// other. `LatchkeyClient` holds one (`codeFlow`), for every flow value and for native login's captured redirect.
final class AuthorizationRequests: Sendable {
    /// A request `start` made: the URL to open, its `state`, and the redirect URI it names.
    struct Request: Sendable {
        var url: URL
        var state: String
        var redirectUri: String
    }

    /// What `resume` needs of a request: the verifier, the nonce and the redirect URI it was made with.
    struct Pending: Sendable {
        var pkce: PKCEPair
        var nonce: String
        var redirectUri: String
        var maxAge: Int?
        var sessionId: String?
        var expectsIDToken: Bool
        var createdAt: Date
    }

    private let pending = Locked<[String: Pending]>([:])

    /// The authorization URL (PKCE S256, fresh `state` and `nonce` unless given), remembered under its `state` until
    /// `resume` or `discard`. `redirectUri` overrides the configured one (a loopback listener's, a native login's).
    func start(
        _ context: OAuthClient, options: SignInOptions?, sessionId: String?, state requestedState: String? = nil,
        nonce requestedNonce: String? = nil, scopes: [String]? = nil, redirectUri redirectOverride: String? = nil
    ) throws -> Request {
        guard let redirectUri = redirectOverride ?? context.config.afterSignInUrl else {
            throw LatchkeyError(.invalidConfiguration, "afterSignInUrl (the redirect URI) is not set")
        }
        let pkce = PKCEPair()
        let stateValue = requestedState ?? Self.randomValue()
        let nonce = requestedNonce ?? Self.randomValue()
        let scopes = scopes ?? context.config.scopes
        var parameters: [(String, String)] = [
            ("response_type", "code"), ("client_id", context.config.clientId), ("redirect_uri", redirectUri),
            ("scope", scopes.joined(separator: " ")), ("state", stateValue), ("nonce", nonce),
            ("code_challenge", pkce.challenge), ("code_challenge_method", "S256")
        ]
        if let prompt = options?.prompt { parameters.append(("prompt", prompt)) }
        if let hint = options?.loginHint { parameters.append(("login_hint", hint)) }
        if let fidp = options?.fidp { parameters.append(("fidp", fidp)) }
        if let provider = options?.provider, !provider.isEmpty { parameters.append(("provider", provider)) }
        if let maxAge = options?.maxAge { parameters.append(("max_age", String(maxAge))) }
        let reserved = Set(parameters.map(\.0))
        for (name, value) in (options?.extra ?? [:]).sorted(by: { $0.key < $1.key }) where !reserved.contains(name) {
            parameters.append((name, value))
        }
        // OIDC Core §3.1.2.1: the hosted pages in the user's languages (an explicit `extra["ui_locales"]` wins).
        let languages = context.config.languageTags
        if !languages.isEmpty, options?.extra["ui_locales"] == nil { parameters.append(("ui_locales", languages.joined(separator: " "))) }
        guard var components = URLComponents(url: context.authorizationEndpoint, resolvingAgainstBaseURL: false) else {
            throw LatchkeyError(.invalidConfiguration, "authorization endpoint is not a URL")
        }
        components.percentEncodedQuery = FormCoding.encode(parameters)
        guard let url = components.url else { throw LatchkeyError(.invalidConfiguration, "cannot build the authorization URL") }
        let request = Pending(
            pkce: pkce, nonce: nonce, redirectUri: redirectUri, maxAge: options?.maxAge,
            sessionId: sessionId, expectsIDToken: scopes.contains("openid"), createdAt: context.clock.deviceNow)
        let now = request.createdAt
        pending.withLock { pending in
            pending = pending.filter { now.timeIntervalSince($0.value.createdAt) < 600 }
            pending[stateValue] = request
        }
        return Request(url: url, state: stateValue, redirectUri: redirectUri)
    }

    /// Forgets an authorization request that will never complete (its redirect could not be captured, the page was
    /// closed).
    func discard(state stateValue: String) {
        _ = pending.withLock { $0.removeValue(forKey: stateValue) }
    }

    /// Forgets every request in flight (the client was configured again).
    func discardAll() {
        pending.withLock { $0 = [:] }
    }

    /// Scheme, host, port and path of the callback equal those of the redirect URI the request named.
    static func sameEndpoint(_ callback: URL, _ redirectUri: String) -> Bool {
        guard let expected = URLComponents(string: redirectUri), let actual = URLComponents(url: callback, resolvingAgainstBaseURL: false) else {
            return false
        }
        return actual.scheme?.lowercased() == expected.scheme?.lowercased() && actual.host?.lowercased() == expected.host?.lowercased()
            && actual.port == expected.port && actual.path == expected.path
    }

    /// 256 bits from the system CSPRNG, base64url: `state` and `nonce` values.
    static func randomValue() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private typealias ApiErrorBody = LatchkeyError.ApiError

    /// Completes a request `start` made: checks the callback's `state` (single use), endpoint, `iss` (RFC 9207) and
    /// `error`, redeems the code with the PKCE verifier, verifies the ID token (nonce, `max_age`) and stores the
    /// session.
    /// - Parameter browser: which browser showed the page (`.withoutBrowser`: a native login's redirect, captured
    ///   without one).
    func resume(callback url: URL, context: OAuthClient, browser: SignInBrowser) async throws -> TokenSet {
        let query = Dictionary(
            (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
            uniquingKeysWith: { first, _ in first })
        guard let returnedState = query["state"], !returnedState.isEmpty else {
            throw LatchkeyError(.invalidGrant, "the callback has no state; it does not answer a sign-in this app started")
        }
        guard let request = pending.withLock({ $0.removeValue(forKey: returnedState) }) else {
            throw LatchkeyError(.invalidGrant, "the callback's state does not match any sign-in in progress (possible CSRF or a stale callback)")
        }
        guard Self.sameEndpoint(url, request.redirectUri) else {
            throw LatchkeyError(
                .invalidRedirectUri,
                "the callback arrived at \(url.scheme ?? "")://\(url.host ?? "")\(url.path), not at the redirect URI of the sign-in")
        }
        if let iss = query["iss"] {
            guard iss == context.config.issuer else {
                throw LatchkeyError(.invalidGrant, "the callback's iss is \(iss), expected \(context.config.issuer) (RFC 9207 mix-up defence)")
            }
        } else if await context.metadata()?.authorizationResponseIssParameterSupported == true {
            throw LatchkeyError(.invalidGrant, "the provider promises iss in callbacks (RFC 9207) but this one has none")
        }
        if let error = query["error"] {
            let description = query["error_description"]
            // ReachFive servers add `error_message_key` / `error_user_msg` (the person's language) to the callback.
            let api =
                query["error_message_key"] == nil && query["error_user_msg"] == nil
                ? nil
                : ApiErrorBody(
                    error: error, errorUserMsg: query["error_user_msg"], errorMessageKey: query["error_message_key"],
                    errorDescription: description)
            if error == "access_denied" {
                throw LatchkeyError(
                    .authenticationFailed, "access_denied: \(description ?? "the user or server refused the sign-in")", serverCode: error,
                    apiError: api)
            }
            throw LatchkeyError.oauth(error, description: description, status: nil, apiError: api)
        }
        guard let code = query["code"], !code.isEmpty else { throw LatchkeyError(.invalidGrant, "the callback has no authorization code") }
        let response = try await context.tokenRequest(
            .authorizationCode(code: code, redirectURI: request.redirectUri, codeVerifier: request.pkce.verifier))
        var tokens = try await context.signInTokens(
            response, nonce: request.nonce, maxAge: request.maxAge,
            expectsIDToken: request.expectsIDToken)
        tokens.browser = browser
        try await context.tokens.replace(tokens, sessionId: request.sessionId)
        return tokens
    }
}
