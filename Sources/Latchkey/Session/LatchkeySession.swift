import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// One of a client's sessions: the tokens it keeps in one slot of its storage, and everything done with them.
///
/// A client keeps a default session and any number of named ones (two accounts, a personal and a work profile). Ask
/// the client for the one to work with; the value is cheap, holds no tokens itself and always acts on the client's
/// current configuration (after `reInitialize` too):
///
/// ```swift
/// let session = client.session()                 // the default session
/// let token = try await session.accessToken()    // refreshed first when due
/// let work = client.session(named: "work")       // another account, with tokens of its own
/// try await work.signOut()                       // the default session stays signed in
/// ```
///
/// This is the SDK's core for everything done with a signed-in session. The compatibility names of the client
/// (`getAccessToken(sessionId:)`, `getUser(options:sessionId:)`, `signOut(options:sessionId:)` …) call it: their
/// `sessionId` is this value's ``name``.
///
/// Not to be confused with ``SignInSession``: the server's record of a sign-in, listed by ``sessions()``.
public struct LatchkeySession: Sendable {
    /// The client whose storage and configuration the session uses.
    @usableFromInline let client: LatchkeyClient
    /// The session's name: nil for the default session (the `sessionId` of the compatibility API).
    public let name: String?

    @usableFromInline init(client: LatchkeyClient, name: String?) {
        self.client = client
        self.name = name
    }
}

extension LatchkeySession: Equatable {
    /// Two values are the same session when they name the same slot of the same client.
    public static func == (lhs: LatchkeySession, rhs: LatchkeySession) -> Bool {
        lhs.client === rhs.client && lhs.name == rhs.name
    }
}

extension LatchkeyClient {
    /// The default session.
    public func session() -> LatchkeySession { LatchkeySession(client: self, name: nil) }

    /// The session stored under `name`, with tokens of its own (multi-session apps: another account, a work profile).
    /// A sign-in stores into it when given the same name (`signInWithBrowser(options:sessionId:…)`, `FlowRunner`'s
    /// `sessionId` …).
    public func session(named name: String) -> LatchkeySession { LatchkeySession(client: self, name: name) }

    /// The session a compatibility method's `sessionId` names (nil: the default).
    @usableFromInline func session(_ sessionId: String?) -> LatchkeySession { LatchkeySession(client: self, name: sessionId) }
}

// MARK: Tokens and the user

extension LatchkeySession {
    /// A valid access token, refreshed first if it is about to expire. Concurrent callers share one refresh.
    /// - Throws: `.sessionExpired` when not signed in, or when the refresh token was refused (the session is then
    ///   forgotten); `.networkError`, `.requestTimeout` and `.serverError` keep the session for the next call.
    @inlinable
    public func accessToken() async throws -> String {
        // Without the actor: the default session's token (loaded, saved, not yet due for refresh), or its refresh in
        // flight.
        if name == nil {
            switch client.accessTokenCache.lookup() {
            case .token(let token): return token
            case .refreshing(let refresh): return try await refresh.value.accessToken
            case .askTheManager: break
            }
        }
        return try await client.accessTokenFromManager(name)
    }

    /// Refreshes the tokens now, whether or not the access token is due (a concurrent refresh in flight is joined).
    /// A refused refresh token ends the session, as any refused refresh does.
    /// - Throws: `.sessionExpired` when not signed in, without a refresh token, or when the refresh token was
    ///   refused; `.networkError`, `.requestTimeout` and `.serverError` keep the session.
    public func refresh() async throws {
        let context = try client.context()
        guard try await context.tokens.tokens(name) != nil else { throw LatchkeyError(.sessionExpired, "not signed in") }
        _ = try await context.tokens.refreshed(name)
    }

    /// True when the session has tokens that are usable now or can be refreshed.
    public func isSignedIn() async throws -> Bool {
        let context = try client.context()
        guard let tokens = try await context.tokens.tokens(name) else { return false }
        return !tokens.isExpired(now: context.clock.deviceNow) || tokens.refreshToken != nil
    }

    /// Where ``user(source:)`` reads the user.
    public enum UserSource: Sendable, Equatable {
        /// The validated ID token's claims when the session has an ID token, else the userinfo endpoint.
        case idToken
        /// The userinfo endpoint, with the session's access token (refreshed first when due).
        case userinfo
    }

    /// The signed-in user: validated ID-token claims, else the userinfo endpoint.
    /// - Parameter source: `.userinfo` asks the server even when the session has an ID token.
    /// - Throws: `.sessionExpired` when not signed in; the userinfo endpoint's errors.
    public func user(source: UserSource = .idToken) async throws -> User {
        let context = try client.context()
        guard let tokens = try await context.tokens.tokens(name) else { throw LatchkeyError(.sessionExpired, "not signed in") }
        if tokens.idToken != nil, source == .idToken {
            return try await context.user(from: tokens)
        }
        return try await context.userinfo(tokens: try await context.tokens.usableTokens(name))
    }

    /// Asks the server whether the session still works, and returns its user as the server knows it now (userinfo).
    ///
    /// Stored tokens say nothing about a session the person ended elsewhere ("sign out everywhere", an administrator,
    /// a password change): the access token is used without a request until it is about to expire. This asks. An
    /// access token the server no longer accepts (401) is refreshed once and userinfo asked again, so a session whose
    /// refresh token was revoked ends here, as any refused refresh ends it: the stored session is forgotten and the
    /// error is `.sessionExpired` or `.invalidGrant`. An unreachable server throws `.networkError` and keeps the session.
    /// A provider without a userinfo endpoint cannot be asked: the tokens are refreshed if due and the user read from
    /// the ID token, as ``user(source:)`` does.
    public func check() async throws -> User {
        let context = try client.context()
        let tokens = try await context.tokens.usableTokens(name)
        guard try await context.requireMetadata().userinfoEndpoint != nil else { return try await context.user(from: tokens) }
        do {
            return try await context.userinfo(tokens: tokens)
        } catch let error as LatchkeyError where error.statusCode == 401 {
            return try await context.userinfo(tokens: try await context.tokens.refreshed(name))
        }
    }

    /// The session as ReachFive's ``AuthToken`` (refreshed first when it is about to expire), for the calls that take
    /// one (passkey registration and management).
    /// - Throws: `.sessionExpired` when not signed in.
    public func authToken() async throws -> AuthToken {
        let context = try client.context()
        _ = try await context.tokens.accessToken(name)
        guard let tokens = try await context.tokens.tokens(name) else { throw LatchkeyError(.sessionExpired, "not signed in") }
        return AuthToken(tokens, now: context.clock.deviceNow)
    }

    /// Every change of this session from now on, starting with its current state (`.initialSession`, read from
    /// storage), then `.signedIn`, `.tokenRefreshed`, `.userUpdated`, `.signedOut` and `.sessionExpired` as they
    /// happen through this client. Each call returns an independent stream; it ends when the consuming task is
    /// cancelled. An uninitialized client, or storage that cannot be read (a locked device), reports the initial
    /// session as signed out.
    public func authStateChanges() -> AsyncStream<AuthStateChange> {
        let name = self.name
        // Weakly: the stream outlives no client.
        return client.authState.stream(sessionId: name) { [weak client = self.client] in
            guard let client else { return false }
            return (try? await client.session(name).isSignedIn()) ?? false
        }
    }

    /// RFC 8693 token exchange: a token for another audience or scope, with this session's access token as the
    /// subject unless `config` names another. Returns the new token; the session's own tokens are left untouched.
    ///
    /// A DPoP-bound subject is exchanged with a proof by the session's key, and the token that comes back is bound to
    /// that key too.
    public func exchangeToken(_ config: TokenExchangeRequestConfig) async throws -> TokenResponse {
        let context = try client.context()
        let subject: String
        var key: String?
        if let given = config.subjectToken {
            subject = given
            key = await context.tokens.session(holding: given)?.dpopKey
        } else {
            let tokens = try await context.tokens.usableTokens(name)
            subject = tokens.accessToken
            key = tokens.dpopKey
        }
        let exchange = TokenGrant.TokenExchange(
            subjectToken: subject, subjectTokenType: config.subjectTokenType, audience: config.audience, scope: config.scope,
            requestedTokenType: config.requestedTokenType)
        // A DPoP-bound subject is exchanged with a proof by the session's key (the server refuses it otherwise); the
        // token that comes back is bound to that key too. A subject of no session of this client gets no proof: a new
        // key would bind the result to a key the app could never use.
        return try await context.tokenRequest(.tokenExchange(exchange), proof: .stored(key))
    }

    /// Forgets the session locally, without telling the server, and returns once storage has been updated
    /// (`.signedOut` is published).
    public func clear() async throws {
        try await client.context().tokens.clear(name)
    }
}

// MARK: Calling your APIs

extension LatchkeySession {
    /// The headers that authorize a request to your API with the session's access token (refreshed first if due):
    /// `Authorization: Bearer …`, or for a DPoP-bound session (`LatchkeyConfig.useDPoP`) `Authorization: DPoP …` and a
    /// `DPoP` proof made for exactly this method and URL — make a new set for every request.
    /// - Throws: `.sessionExpired` when not signed in or the session ended; `.invalidToken` when the stored key is gone.
    public func authorizationHeaders(method: String, url: URL) async throws -> [String: String] {
        let context = try client.context()
        return try await context.authorizationHeaders(method: method, url: url, tokens: try await context.tokens.usableTokens(name))
    }

    /// Sends `request` to your API with the session's access token (see ``authorizationHeaders(method:url:)``) through
    /// the client's HTTP seam; a server that asks for a DPoP nonce (`use_dpop_nonce`) gets one retry with it.
    public func sendAuthorized(_ request: HTTPRequest) async throws -> HTTPResponse {
        let context = try client.context()
        return try await context.sendAuthorized(request, tokens: try await context.tokens.usableTokens(name))
    }
}
