import Foundation
import Hummingbird
import Logging

/// The authorization endpoint (OIDC Core §3.1.2) in each OAuth mount, with reachFive's native sign-in exchanges (a
/// login ticket or a provider's ID token for a code).
struct AuthorizeController: Sendable {
    let admission: Admission
    /// Everything until the client and redirect URI are known good.
    let resolver: AuthorizationRequestResolver
    /// The three ways a request is answered: a login ticket, a native provider's ID token, or the browser (its session
    /// or the hosted page).
    let ticketSignIn: LoginTicketSignIn
    let providerSignIn: NativeProviderSignIn
    let browserSignIn: BrowserSignIn
    let responses: AuthorizationResponses
    /// The refused native sign-ins.
    let audit: AuditTrail

    func addRoutes(to mount: OAuthMount) {
        // Every authorization request may store a pending login: counted per address (`max_starts_per_address`).
        mount.routes.get("authorize") { request, context in
            try await admission.admitStart(address: context.clientAddress)
            return try await self.authorize(
                try Parameters.query(of: request), request: request, address: context.clientAddress, logger: context.logger)
        }
        mount.routes.post("authorize") { request, context in
            try await admission.admitStart(address: context.clientAddress)
            return try await self.authorize(
                try await Parameters.body(of: request), request: request, address: context.clientAddress, logger: context.logger)
        }
    }

    /// OIDC Core §3.1.2. Until client and redirect URI are known good, errors are shown on an error page and never
    /// redirected (an unregistered redirect URI must not receive anything); after that they go back to the client
    /// with `state` and `iss` (RFC 9207).
    func authorize(_ pushedOrGiven: Parameters, request: Request, address: String, logger: Logger) async throws -> Response {
        let resolved: AuthorizationRequestResolver.Resolved
        switch try await resolver.resolve(pushedOrGiven, logger: logger) {
        case .resolved(let known): resolved = known
        case .errorPage(let key, let shown): return AuthorizationResponses.authorizeErrorPage(key, request, shown)
        case .errorRedirect(let error, let redirectUri, let state): return responses.errorRedirect(error, redirectUri: redirectUri, state: state)
        }
        let params = resolved.parameters, client = resolved.client, redirectUri = resolved.redirectUri
        let clientId = client.clientId
        let state = try? params.single("state")
        // Errors go back the way the request asked for, when it asked for a mode that can carry them.
        let mode = ResponseMode.forError(
            requested: (try? params.single("response_mode")) ?? nil, responseType: (try? params.single("response_type")) ?? nil,
            redirectUri: redirectUri)
        let origin = AuditOrigin(client: clientId, address: address, logger: logger)
        do {
            let authRequest = try AuthorizationRequest(validating: params, client: client, redirectUri: redirectUri, state: state)
            if let ticket = try params.single("tkn") {
                return try await ticketSignIn.signIn(ticket, authRequest, client: client, origin: origin)
            }
            // reachFive's `provider` with an ID token is a native sign-in; without one (`webviewLogin(provider:)`), and
            // `idp`, it names the identity provider to go to straight away.
            let provider = try params.single("provider")
            if let provider, try params.single("id_token") != nil {
                return try await providerSignIn.signIn(provider, params, authRequest, client: client, request: request, origin: origin)
            }
            // `fidp` is thunderID's name for the same hint.
            let hint = try params.single("idp") ?? params.single("fidp") ?? provider
            return try await browserSignIn.signIn(authRequest, request: request, client: client, identityProvider: hint, origin: origin)
        } catch let error as OAuthError {
            return responses.errorRedirect(error, redirectUri: redirectUri, state: state, responseMode: mode)
        } catch let refusal as any SignInRefusal {
            // Refused by the provider's token or by the account rules; a native sign-in names its provider.
            let provider = try? params.single("provider")
            logger.notice(
                "native provider sign-in refused", metadata: ["reason": .string(refusal.description), "client": .string(clientId)])
            await audit.record(
                .signInFailed, .failure, subject: nil, details: providerSignIn.refusalDetails(provider, reason: refusal.auditReason),
                origin: origin)
            return responses.errorRedirect(
                refusal.oauthError, redirectUri: redirectUri, state: state, messageKey: refusal.messageKey, locale: request.locale(),
                arguments: ["provider": providerSignIn.providerName(provider)], responseMode: mode)
        }
    }
}
