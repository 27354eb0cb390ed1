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
    /// Where the completed sign-in stores its tokens: the session the step-up's sign-in was for.
    let session: LatchkeySession

    /// Sends the code; on success the password sign-in completes like any other (tokens stored, `AuthToken`).
    /// - Throws: `.confirmationCodeInvalid` for a wrong code (try again), `.confirmationCodeExpired` when the code or the
    ///   step-up is no longer valid (sign in again), the mapped server error otherwise.
    public func verify(code: String, trustDevice: Bool? = nil) async throws -> AuthToken {
        try await NativeSignIn.verify(self, code: code, trustDevice: trustDevice)
    }

    public var description: String { "ContinueStepUp(\(authType))" }
}

extension LatchkeyClient {
    /// Continues a password sign-in that answered `MFA_REQUIRED` (`error.mfaStepUp`): asks the server for a challenge of
    /// `authType` (one of `stepUp.amr`: `email` sends a code, `otp` is the authenticator app's).
    public func mfaStart(stepUp: MfaStepUp, authType: String) async throws -> ContinueStepUp {
        try await NativeSignIn(client: self).startStepUp(stepUp, authType: authType)
    }
}
