import Foundation
import Hummingbird

/// How an authorization request is answered once it is decided: a single-use code for the client, or an error, sent
/// back to the redirect URI with `state` and `iss` (RFC 9207); and the error page for requests that cannot go back.
/// Shared by the authorization endpoint, the hosted login, reachFive's step-up and native sign-ins.
struct AuthorizationResponses: Sendable {
    let kit: TokenKit

    private var issuer: String { kit.issuer }
    private var store: any AuthorizationCodeStore { kit.store }
    private var clock: ServerClock { kit.clock }

    /// Issues a single-use code bound to the client, redirect URI, PKCE challenge and nonce, and sends the browser
    /// back with `code`, `state` and `iss`. `interactive` is false when a live SSO session answered for the request
    /// with no credential shown (`AuthenticationMethods.reusedMarker`).
    func issueCode(
        _ authRequest: AuthorizationRequest, user: UserRecord, session: SessionRecord, afterPost: Bool,
        headers: HTTPFields = [:], interactive: Bool = true
    ) async throws -> Response {
        let code = try await mintAuthorizationCode(authRequest, user: user, session: session, interactive: interactive)
        let parameters: [(String, String?)] = [("code", code), ("state", authRequest.state), ("iss", issuer)]
        if authRequest.responseMode == FormPostResponse.mode {
            var page = FormPostResponse.page(parameters, redirectUri: authRequest.redirectUri)
            for field in headers { page.headers[values: field.name].append(field.value) }
            return page
        }
        let location = RedirectURL.appending(parameters, to: authRequest.redirectUri)
        return Responses.redirect(to: location, afterPost: afterPost, headers: headers)
    }

    /// A single-use code bound to the client, redirect URI, PKCE challenge and nonce (stored as a digest).
    ///
    /// Every code of every front door is minted here, so this is where a third-party application's consent is
    /// required (`consent_required` without it): a front door that forgets to ask cannot issue a code for it.
    func mintAuthorizationCode(
        _ authRequest: AuthorizationRequest, user: UserRecord, session: SessionRecord, interactive: Bool = true
    ) async throws -> String {
        try await ConsentGate.requireConsent(clientId: authRequest.clientId, userId: user.id, scope: authRequest.scope, store: kit.store)
        let code = Secrets.token()
        let now = clock.now
        let amr = interactive ? session.amr : session.amr + [AuthenticationMethods.reusedMarker]
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
        if responseMode == FormPostResponse.mode { return FormPostResponse.page(parameters, redirectUri: redirectUri) }
        return Responses.redirect(to: RedirectURL.appending(parameters, to: redirectUri))
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
