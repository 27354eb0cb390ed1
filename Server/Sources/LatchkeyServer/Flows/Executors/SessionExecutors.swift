import Foundation

/// The end of sign-in (assertion) and the SIGNOUT flow.
struct SessionExecutors: Sendable {
    let accounts: Accounts
    let ownTokens: OwnTokens
    /// Validates the access token a sign-out presents (with the issuer in force, read when used).
    let kit: TokenKit
    let store: any UserStore & SessionStore & TokenStore
    let clock: ServerClock

    func assert(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let userId = run.state.userId, let user = try await store.user(id: userId) else { return .fail(.invalidCredentials) }
        guard !user.disabled else { return .fail(.accountDisabled) }
        // The finish of every sign-in graph, the configured ones included: a graph that reaches it without the
        // account's second factor (a passkey without user verification, a custom graph without `MFAResolver`) ends
        // here, not in an assertion (`SignInCompletion`). `require_mfa` is the token exchange's to refuse, as before.
        if case .secondFactorOwed = try await accounts.completion(
            of: user, amr: run.state.amr, client: run.client, multiFactorEssential: false)
        {
            run.logger.notice("flow reached its end with the account's second factor still owed", metadata: ["user": .string(user.id)])
            return .fail(.badRequest("the sign-in reached its end without the account's second factor"))
        }
        run.assertion = try await ownTokens.mintFlowAssertion(
            user: user, applicationId: run.state.applicationId, flowType: run.state.flowType,
            amr: run.state.amr, authTime: run.state.authTime ?? clock.now, origin: run.auditOrigin)
        return .next
    }

    /// Ends the session the caller's bearer access token belongs to: the sign-in session and every token family
    /// bound to it, and the presented token's own family. Without a (valid) token there is nothing to end, and
    /// the flow still completes — signing out is idempotent.
    func terminate(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let token = run.bearerToken, let claims = try? await kit.validator.accessToken(token) else {
            run.state.additionalData = ["signedOut": "false"]
            return .next
        }
        guard claims.clientId == run.state.applicationId else { return .fail(.badRequest("the access token belongs to another application")) }
        let now = clock.now
        if let sid = claims.sid {
            try await store.endSession(id: sid, now: now)  // revokes the session's families too
        }
        if let familyId = try await store.accessToken(jti: claims.jti)?.familyId {
            try await store.revokeFamily(id: familyId, reason: "signed out", now: now)
        }
        try await store.revokeAccessToken(jti: claims.jti, now: now)
        run.state.additionalData = ["signedOut": "true"]
        return .next
    }
}
