import Foundation

/// The end of sign-in (assertion) and the SIGNOUT flow.
enum SessionExecutors {
    static func assert(_ server: IdentityServer, _ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let userId = run.state.userId, let user = try await server.store.user(id: userId) else { return .fail(.invalidCredentials) }
        guard !user.disabled else { return .fail(.accountDisabled) }
        run.assertion = try await server.mintFlowAssertion(
            user: user, applicationId: run.state.applicationId, flowType: run.state.flowType,
            amr: run.state.amr, authTime: run.state.authTime ?? server.clock.now)
        return .next
    }

    /// Ends the session the caller's bearer access token belongs to: the sign-in session and every token family
    /// bound to it, and the presented token's own family. Without a (valid) token there is nothing to end, and
    /// the flow still completes — signing out is idempotent.
    static func terminate(_ server: IdentityServer, _ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let token = run.bearerToken, let claims = try? await server.validator.accessToken(token) else {
            run.state.additionalData = ["signedOut": "false"]
            return .next
        }
        guard claims.clientId == run.state.applicationId else { return .fail(.badRequest("the access token belongs to another application")) }
        let now = server.clock.now
        if let sid = claims.sid {
            try await server.store.endSession(id: sid, now: now)  // revokes the session's families too
        }
        if let familyId = try await server.store.accessToken(jti: claims.jti)?.familyId {
            try await server.store.revokeFamily(id: familyId, reason: "signed out", now: now)
        }
        try await server.store.revokeAccessToken(jti: claims.jti, now: now)
        run.state.additionalData = ["signedOut": "true"]
        return .next
    }
}
