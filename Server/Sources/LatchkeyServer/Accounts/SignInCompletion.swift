import Foundation

/// What is left of a sign-in once its first factor is proven (a password, a passkey, another identity provider's ID
/// token, Sign in with Apple). Every front door — the hosted page (and the device grant's verification, which signs in
/// there), the flows, reachFive password and passkey sign-in, login-ticket redemption, the native provider exchanges
/// and the step-up — asks `Accounts.completion(of:amr:client:multiFactorEssential:)` and maps the answer to its own
/// wire form, so that a new front door cannot forget the account's second factor, `require_mfa` or an essential
/// multi-factor `acr` (security review 3, R3-1).
enum SignInCompletion: Equatable, Sendable {
    /// Every factor the account, the application and the request need is proven: a session and a code may follow.
    case complete
    /// The account has this second factor and the first factor was not multi-factor: no session, no code, until it
    /// is proven.
    case secondFactorOwed(SecondFactor)
    /// The application requires a second factor (`require_mfa`), or the request made a multi-factor `acr` essential
    /// (OpenID Connect Core §5.5.1.1), and the account has none it could be asked for: the sign-in fails.
    case refused
}

extension Accounts {
    /// Decides what `user` still owes after a first factor whose methods are `amr`.
    ///
    /// A multi-factor `amr` (a passkey with user verification, a provider that asserted MFA and is trusted with it, a
    /// password followed by a code), or one that already holds the account's second factor (`otp`), is complete. Otherwise the account's own second factor is owed when it has one that
    /// can be asked for (`enrolledSecondFactor`). Otherwise the sign-in is complete unless the application requires a
    /// second factor or the request made a multi-factor `acr` essential. An unknown application (`client` nil) is
    /// treated as one that requires a second factor: nothing is issued for it without one.
    func completion(
        of user: UserRecord, amr: [String], client: ClientConfiguration?, multiFactorEssential: Bool
    ) async throws -> SignInCompletion {
        // `otp` is recorded only once the account's own second factor (TOTP or an emailed code) was proven: after it,
        // nothing is owed, whatever the first factor was (`fed otp` is not `mfa` in `AuthenticationMethods`).
        if AuthenticationMethods.isMultiFactor(amr) || amr.contains("otp") { return .complete }
        if let kind = try await enrolledSecondFactor(of: user) { return .secondFactorOwed(kind) }
        guard let client, !client.requireMFA, !multiFactorEssential else { return .refused }
        return .complete
    }
}
