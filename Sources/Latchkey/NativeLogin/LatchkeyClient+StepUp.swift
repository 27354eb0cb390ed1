import Foundation
import LatchkeyJOSE

/// A second-factor challenge in progress (ReachFive `ContinueStepUp`): answer it with the code the person received
/// by email or reads from their authenticator app.
public struct ContinueStepUp: Sendable, CustomStringConvertible {
    /// The server's challenge id (not a secret: the code is).
    public let challengeId: String
    /// `email` or `otp`.
    public let authType: String
    let stepUp: MfaStepUp
    let client: LatchkeyClient

    /// Sends the code; on success the password sign-in completes like any other (tokens stored, `AuthToken`).
    /// - Throws: `.confirmationCodeInvalid` for a wrong code (try again), `.confirmationCodeExpired` when the code or the
    ///   step-up is no longer valid (sign in again), the mapped server error otherwise.
    public func verify(code: String, trustDevice: Bool? = nil) async throws -> AuthToken {
        try await client.verifyStepUp(self, code: code, trustDevice: trustDevice)
    }

    public var description: String { "ContinueStepUp(\(authType))" }
}

extension LatchkeyClient {
    /// Continues a password sign-in that answered `MFA_REQUIRED` (`error.mfaStepUp`): asks the server for a challenge of
    /// `authType` (one of `stepUp.amr`: `email` sends a code, `otp` is the authenticator app's).
    public func mfaStart(stepUp: MfaStepUp, authType: String) async throws -> ContinueStepUp {
        let context = try context()
        guard stepUp.codeVerifier != nil else {
            throw LatchkeyError(.invalidInput, "this step-up was not started by this client (it has no PKCE verifier)")
        }
        let response = try await IdentityAPI.send(
            context, "POST", "/identity/v1/passwordless/start",
            body: .object([
                "step_up": .string(stepUp.token), "auth_type": .string(authType), "client_id": .string(context.config.clientId),
                "response_type": .string("code")
            ]))
        let answer = try IdentityAPI.object(response, "step-up start")
        guard let id = answer["challenge_id"]?.stringValue, !id.isEmpty else {
            throw LatchkeyError(.serverError, "the step-up start answer has no challenge_id")
        }
        return ContinueStepUp(challengeId: id, authType: authType, stepUp: stepUp, client: self)
    }

    func verifyStepUp(_ step: ContinueStepUp, code: String, trustDevice: Bool?) async throws -> AuthToken {
        try await loading {
            let context = try context()
            guard let verifier = step.stepUp.codeVerifier, let redirectUri = context.config.afterSignInUrl else {
                throw LatchkeyError(.invalidConfiguration, "the step-up needs this client's PKCE verifier and afterSignInUrl")
            }
            var body: [String: JSONValue] = ["challenge_id": .string(step.challengeId), "verification_code": .string(code)]
            if let trustDevice { body["trust_device"] = .bool(trustDevice) }
            let response = try await IdentityAPI.send(context, "POST", "/identity/v1/passwordless/verify", body: .object(body))
            let answer = try IdentityAPI.object(response, "step-up verification")
            guard let authorizationCode = answer["code"]?.stringValue, !authorizationCode.isEmpty else {
                throw LatchkeyError(.serverError, "the step-up verification answer has no code")
            }
            let tokenResponse = try await context.tokenRequest(
                .authorizationCode(code: authorizationCode, redirectURI: redirectUri, codeVerifier: verifier))
            let tokens = try await context.signInTokens(
                tokenResponse, nonce: nil, maxAge: nil,
                expectsIDToken: context.config.scopes.contains("openid"))
            try await context.tokens.replace(tokens, sessionId: nil)
            return AuthToken(tokens, now: context.clock.deviceNow)
        }
    }
}
