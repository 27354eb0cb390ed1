import Foundation
import Hummingbird

/// How an authorization request is answered once it is decided: a single-use code for the client (with tokens, for the
/// implicit and hybrid response types), or an error, sent back to the redirect URI with `state` and `iss` (RFC 9207);
/// and the error page for requests that cannot go back.
/// Shared by the authorization endpoint, the hosted login, reachFive's step-up and native sign-ins.
struct AuthorizationResponses: Sendable {
    let kit: TokenKit

    private var issuer: String { kit.issuer }
    private var store: any AuthorizationCodeStore { kit.store }
    private var clock: ServerClock { kit.clock }

    /// Answers a decided authorization request: a single-use code (`mintAuthorizationCode`) and, for the implicit and
    /// hybrid response types, the tokens themselves (`frontChannelTokens`), sent back with `state` and `iss` in the
    /// request's response mode (the query, the fragment or a self-submitting form). `interactive` is false when a live
    /// SSO session answered for the request with no credential shown (`AuthenticationMethods.reusedMarker`).
    func issueResponse(
        _ authRequest: AuthorizationRequest, user: UserRecord, session: SessionRecord, afterPost: Bool,
        headers: HTTPFields = [:], interactive: Bool = true
    ) async throws -> Response {
        let type = authRequest.type
        var code: String?
        if type.issuesCode {
            code = try await mintAuthorizationCode(authRequest, user: user, session: session, interactive: interactive)
        } else {
            // What `mintAuthorizationCode` asks of every code, asked of the tokens that stand in for one.
            try await ConsentGate.requireConsent(clientId: authRequest.clientId, userId: user.id, scope: authRequest.scope, store: kit.store)
        }
        let tokens =
            type.isFrontChannel
            ? try await frontChannelTokens(authRequest, user: user, session: session, interactive: interactive, code: code) : []
        let parameters: [(String, String?)] = [("code", code)] + tokens + [("state", authRequest.state), ("iss", issuer)]
        return Self.deliver(parameters, to: authRequest.redirectUri, mode: authRequest.responseMode, afterPost: afterPost, headers: headers)
    }

    /// `parameters` sent to `redirectUri` in response mode `mode`: a self-submitting form, the fragment, or the query.
    private static func deliver(
        _ parameters: [(String, String?)], to redirectUri: String, mode: String?, afterPost: Bool = false, headers: HTTPFields = [:]
    ) -> Response {
        switch mode {
        case ResponseMode.formPost?:
            var page = FormPostResponse.page(parameters, redirectUri: redirectUri)
            for field in headers { page.headers[values: field.name].append(field.value) }
            return page
        case ResponseMode.fragment?:
            return Responses.redirect(to: RedirectURL.appendingFragment(parameters, to: redirectUri), afterPost: afterPost, headers: headers)
        default:
            return Responses.redirect(to: RedirectURL.appending(parameters, to: redirectUri), afterPost: afterPost, headers: headers)
        }
    }

    /// The implicit and hybrid flows' tokens (OpenID Connect Core §3.2.2.5, §3.3.2.5): a Bearer access token for the
    /// `token` types (never DPoP-bound, never with a refresh token: `ClientConfiguration` refuses `require_dpop`
    /// beside them), and an ID token for the `id_token` types with the request's `nonce`, `at_hash` and `c_hash`.
    /// Without an access token the ID token carries the scopes' claims itself (Core §5.4), as it always does here.
    private func frontChannelTokens(
        _ authRequest: AuthorizationRequest, user: UserRecord, session: SessionRecord, interactive: Bool, code: String?
    ) async throws -> [(String, String?)] {
        let type = authRequest.type
        guard let client = try await kit.store.client(id: authRequest.clientId)?.configuration else {
            throw OAuthError(.unauthorizedClient, "the application no longer exists")
        }
        let issuing = kit.issuing
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: authRequest.clientId, scope: authRequest.scope, nonce: authRequest.nonce,
            authTime: session.authTime, sessionId: session.id, amr: Self.amr(of: session, interactive: interactive),
            claims: ClaimsRequest.from(stored: authRequest.claims))
        var parameters: [(String, String?)] = []
        var accessToken: String?
        if type.issuesAccessToken {
            let access = try await issuing.accessToken(for: grant, client: client)
            accessToken = access.token
            parameters += [
                ("access_token", access.token), ("token_type", "Bearer"), ("expires_in", String(access.expiresIn)),
                ("scope", authRequest.scope.joined(separator: " "))
            ]
        }
        if type.issuesIDToken {
            let idToken = try await issuing.idToken(for: grant, client: client, accessToken: accessToken, code: code)
            parameters.append(("id_token", idToken))
        }
        return parameters
    }

    /// The session's `amr`, marked as reused when an SSO session answered without a credential shown.
    private static func amr(of session: SessionRecord, interactive: Bool) -> [String] {
        interactive ? session.amr : session.amr + [AuthenticationMethods.reusedMarker]
    }

    /// A single-use code bound to the client, redirect URI, PKCE challenge and nonce (stored as a digest).
    ///
    /// Every code of every front door is minted here, so this is where a third-party application's consent is
    /// required (`consent_required` without it): a front door that forgets to ask cannot issue a code for it.
    func mintAuthorizationCode(
        _ authRequest: AuthorizationRequest, user: UserRecord, session: SessionRecord, interactive: Bool = true
    ) async throws -> String {
        // A request for tokens alone gets none of its own by another front door (reachFive's step-up answers codes).
        guard authRequest.type.issuesCode else {
            throw OAuthError(
                .unsupportedResponseType,
                "this way of signing in answers with a code: response_type \(authRequest.type.rawValue) is not available here")
        }
        try await ConsentGate.requireConsent(clientId: authRequest.clientId, userId: user.id, scope: authRequest.scope, store: kit.store)
        let code = Secrets.token()
        let now = clock.now
        let amr = Self.amr(of: session, interactive: interactive)
        try await store.insertAuthorizationCode(
            AuthorizationCodeRecord(
                codeHash: Secrets.digest(code), clientId: authRequest.clientId, userId: user.id, redirectUri: authRequest.redirectUri,
                scope: authRequest.scope, nonce: authRequest.nonce, codeChallenge: authRequest.codeChallenge, sessionId: session.id,
                authTime: session.authTime, expiresAt: now.addingTimeInterval(TimeInterval(kit.lifetimes.authorizationCode)),
                usedAt: nil, familyId: nil, amr: amr, dpopJkt: authRequest.dpopJkt, claims: authRequest.claims))
        return code
    }

    /// `messageKey` adds the reachFive `error_message_key`, so native SDKs can tell why (e.g. `apple.expired`).
    /// With a catalog `messageKey` the reachFive `error_user_msg` (in `locale`) goes along too. `extra` parameters go
    /// before `state` and `iss` (the native exchanges' `mfa_required` and step-up ticket).
    func errorRedirect(
        _ error: OAuthError, redirectUri: String, state: String?, messageKey: String? = nil,
        locale: SupportedLocale = .en, arguments: [String: String] = [:], responseMode: String? = nil, extra: [(String, String?)] = []
    ) -> Response {
        let userMessage = messageKey.flatMap { MessageCatalog.text($0, locale: locale, arguments: arguments) }
        let parameters: [(String, String?)] =
            [
                ("error", error.code.rawValue), ("error_description", error.description), ("error_message_key", messageKey),
                ("error_user_msg", userMessage)
            ] + extra + [("state", state), ("iss", issuer)]
        return Self.deliver(parameters, to: redirectUri, mode: responseMode)
    }

    /// The error page for requests that cannot go back to the client, in the request's `ui_locales` or browser language.
    static func authorizeErrorPage(_ bodyKey: String, _ request: Request, _ params: Parameters) -> Response {
        let uiLocales = (try? params.single("ui_locales")) ?? nil
        return Responses.html(
            Pages.message(
                titleKey: "page.authorize_invalid.title", bodyKey: bodyKey,
                locale: request.locale(uiLocales: uiLocales)), status: .badRequest)
    }
}
