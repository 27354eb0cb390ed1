import Foundation
import Hummingbird
import Logging

/// The authorization endpoint's native provider sign-in mode: `provider` with the provider's ID token.
struct NativeProviderSignIn: Sendable {
    let clock: ServerClock
    /// The application's native sign-in policy (`browser` refused, `mobile` attested), applied to the native
    /// provider exchanges as to every other native front door.
    let nativeSignIn: NativeSignInPolicy
    /// The server's nonces for native provider sign-in, and the spending of upstream tokens.
    let nativeNonces: NativeSignInNonces
    let apple: NativeAppleSignIn
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    let accounts: Accounts
    /// The login ticket of an account that owes its second factor.
    let ownTokens: OwnTokens
    let sessions: SignInSessions
    let responses: AuthorizationResponses

    /// Native provider token exchange (reachFive `login(withProvider:idToken:nonce:…)`): Sign in with Apple, or the ID
    /// token of an OpenID provider the application offers (Google Sign-In's).
    ///
    /// In order: the application's native sign-in policy (before the token is even read: a `browser` application is
    /// refused outright, a `mobile` one needs its attestation); the token and its server-issued nonce, both spent
    /// (`NativeSignInNonces`); the account; then `SignInCompletion`. An account that owes its second factor gets no
    /// code: the answer is `error=interaction_required` with an `mfa_pending` login ticket (`tkn`, `mfa_required=true`)
    /// that only the step-up endpoints take — the SDK continues there as after a password, and any other client falls
    /// back to the hosted page, which asks for the factor itself.
    func signIn(
        _ provider: String, _ params: Parameters, _ authRequest: AuthorizationRequest,
        client: ClientConfiguration, request: Request, origin: AuditOrigin
    ) async throws -> Response {
        let logger = origin.logger
        try nativeSignIn.requireNativeSignInAllowed(client: client, attestation: request.headers[.attestationToken])
        let user: UserRecord
        let identity: UpstreamIdentity
        if Self.isApple(provider) {
            (user, identity) = try await apple.signIn(
                idToken: try params.required("id_token"), nonce: try params.single("nonce"), client: client,
                givenName: try params.single("given_name"), familyName: try params.single("family_name"),
                authorizationCode: try params.single("authorization_code"), nonces: nativeNonces, origin: origin)
        } else {
            let configured = try federation.provider(provider, for: client)
            // The provider's checks are invisible here unless it asserts them (and is trusted with them).
            identity = try await federation.verifyNativeIDToken(
                try params.required("id_token"), nonce: try params.single("nonce"), provider: configured, clientId: client.clientId,
                nonces: nativeNonces)
            user = try await federatedAccounts.signIn(identity, provider: configured, client: client, origin: origin)
        }
        let amr = identity.amr
        let essential = authRequest.requiresMultiFactor
        switch try await accounts.completion(of: user, amr: amr, client: client, multiFactorEssential: essential) {
        case .complete:
            let session = try await sessions.open(userId: user.id, authTime: clock.now, amr: amr, origin: origin)
            return try await responses.issueResponse(authRequest, user: user, session: session, afterPost: false)
        case .secondFactorOwed:
            logger.info("native provider sign-in owes the account's second factor", metadata: ["client": .string(client.clientId)])
            let ticket = try await ownTokens.mintLoginTicket(user: user, clientId: client.clientId, amr: amr, mfaPending: true)
            return secondFactorOwed(ticket: ticket, authRequest)
        case .refused:
            throw OAuthError(.accessDenied, "the application requires a second factor")
        }
    }

    /// The native exchanges' answer when the account's second factor is owed: an OAuth error redirect
    /// (`interaction_required`, OpenID Connect Core §3.1.2.6) with `state` and `iss`, carrying the `mfa_pending`
    /// ticket for the step-up. The ticket opens nothing but the step-up, which needs the factor itself.
    private func secondFactorOwed(ticket: String, _ authRequest: AuthorizationRequest) -> Response {
        responses.errorRedirect(
            OAuthError(
                .interactionRequired, "the account's second factor is required: continue with the step-up, or sign in on the hosted page"),
            redirectUri: authRequest.redirectUri, state: authRequest.state, responseMode: authRequest.responseMode,
            extra: [("mfa_required", "true"), ("tkn", ticket)])
    }

    /// `apple` (or `apple:` with a bundle id): Sign in with Apple, the Apple preset's native path.
    static func isApple(_ provider: String) -> Bool { provider == "apple" || provider.hasPrefix("apple:") }

    /// What the audit trail records of a refused native sign-in: the method, and the provider when it is not Apple.
    func refusalDetails(_ requested: String??, reason: String) -> [String: String] {
        let provider = requested ?? nil
        if let provider, Self.isApple(provider) { return ["method": "apple", "reason": reason] }
        return ["method": "federated", "provider": String(provider?.prefix(64) ?? ""), "reason": reason]
    }

    /// The configured name of the provider a native sign-in named (for the person's message), else the id as sent,
    /// in printable form.
    func providerName(_ requested: String??) -> String {
        let id = (requested ?? nil).map { String($0.split(separator: ":").first ?? "") } ?? ""
        return federation.providers.first { $0.id == id }?.name ?? Federation.printable(id)
    }
}
