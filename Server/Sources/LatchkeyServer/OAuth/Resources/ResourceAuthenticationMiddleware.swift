import Hummingbird

/// Authenticates every request of a protected route group by its access token (Bearer, or DPoP with its proof:
/// `ResourceAuthenticator.resourceCaller`) before any handler runs, and records the caller for the group's
/// `ResourceRequestContext`. A refused token is thrown to the group's error middleware, which answers it in the
/// group's dialect with its challenge, unless `refusal` words it (thunderID's self-service `AUTH-4010` body).
struct ResourceAuthenticationMiddleware: RouterMiddleware {
    typealias Context = LatchkeyRequestContext
    let authenticator: ResourceAuthenticator
    /// The answer to a refused token, when the dialect's generic rendering is not the one its clients expect.
    var refusal: (@Sendable (OAuthError, Request) throws -> Response)? = nil
    /// The group manages the caller's own account (`/users/me`, passkeys): the token must be allowed to
    /// (`ResourceCaller.mayManageAccount`), else 403 `insufficient_scope` in the group's dialect.
    var accountManagement = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let caller: ResourceCaller
        do {
            caller = try await authenticator.resourceCaller(request, resolvingTrust: accountManagement)
        } catch {
            guard let refusal else { throw error }
            return try refusal(error, request)
        }
        if accountManagement { try caller.requireAccountManagement() }
        context.resourceCaller = caller
        return try await next(request, context)
    }
}

/// The request context of a protected route group's handlers: what `LatchkeyRequestContext` carries, plus the
/// authenticated caller, which is never missing here (the context cannot be made without it).
struct ResourceRequestContext: ChildRequestContext {
    typealias ParentContext = LatchkeyRequestContext
    var coreContext: CoreRequestContextStorage
    /// Who called, by a verified access token: its claims and, for a user's token, the user.
    let caller: ResourceCaller
    /// The client's IP as text (`LatchkeyRequestContext.clientAddress`).
    let clientAddress: String

    init(context: LatchkeyRequestContext) throws {
        // Only reachable when a group forgot its `ResourceAuthenticationMiddleware`: refuse rather than serve.
        guard let caller = context.resourceCaller else { throw OAuthError(.invalidToken, "an access token is required") }
        self.coreContext = context.coreContext
        self.caller = caller
        self.clientAddress = context.clientAddress
    }

    var maxUploadSize: Int { RequestSizeLimits.maxBodyBytes }

    /// The token's application, the caller's address and the request's logger, for the audit trail.
    var auditOrigin: AuditOrigin { AuditOrigin(client: caller.claims.clientId, address: clientAddress, logger: logger) }
}
