import Foundation

/// What ``LatchkeyClient/deleteAccount(sessionId:)`` did: the account is gone, or the server keeps it for a grace
/// period (its `account_deletion_grace_days`) during which signing in again restores it.
public struct AccountDeletion: Sendable, Equatable {
    /// When the server deletes the account, if it keeps it until then; nil when the account is deleted already.
    public var deletionDueAt: Date?

    /// An outcome.
    public init(deletionDueAt: Date?) { self.deletionDueAt = deletionDueAt }

    /// True when the account no longer exists.
    public var isDeleted: Bool { deletionDueAt == nil }
}

/// Deleting the signed-in person's account from inside the app, as App Store Review Guideline 5.1.1(v) requires of
/// every app that lets people create one.
extension LatchkeyClient {
    /// Deletes the signed-in person's account (`DELETE /users/me`), then forgets the session here
    /// (``AuthStateChange/Event/signedOut`` is published).
    ///
    /// The server ends every session of the account on every device (back-channel logout included), revokes every
    /// token, and deletes the passkeys, second factors, linked identities and consents, and mails the person. A server
    /// configured with a grace period keeps the account, without sessions, until ``AccountDeletion/deletionDueAt``:
    /// signing in again before then restores it.
    ///
    /// The sign-in must be recent (the server's `recent_auth_seconds`): otherwise `.reauthenticationRequired` is
    /// thrown and nothing changes — sign in again (for example `signInWithBrowser(options: SignInOptions(prompt:
    /// "login"))`) and call it once more. Ask the person to confirm before calling it: it cannot be undone.
    ///
    /// ```swift
    /// let outcome = try await client.deleteAccount()
    /// if let day = outcome.deletionDueAt { print("deleted on", day, "unless you sign in again") }
    /// ```
    /// - Parameter sessionId: the session whose access token is used (multi-session apps).
    /// - Returns: whether the account is gone or scheduled for deletion.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused (also when the account no longer exists);
    ///   `.reauthenticationRequired` (HTTP 401 `insufficient_user_authentication`); `.authenticationFailed` when the
    ///   token may not manage the account (an application without the account-management scope); `.networkError`.
    ///   Nothing is forgotten locally when the server did not confirm.
    @discardableResult
    public func deleteAccount(sessionId: String? = nil) async throws -> AccountDeletion {
        try await session(sessionId).deleteAccount()
    }

    /// The `deletionDueAt` of a `202` answer; nil for a `204` (deleted at once).
    static func deletionDueAt(_ response: HTTPResponse) throws -> Date? {
        guard response.status == 202 else { return nil }
        let body = try IdentityAPI.object(response, "account deletion")
        guard let text = body["deletionDueAt"]?.stringValue, let date = ISO8601DateFormatter().date(from: text) else {
            throw LatchkeyError(.serverError, "the scheduled deletion's answer has no deletionDueAt", statusCode: response.status)
        }
        return date
    }
}

/// Deleting the session's account (the core of `deleteAccount(sessionId:)`).
extension LatchkeySession {
    /// Deletes the signed-in person's account (`DELETE /users/me`), then forgets the session here
    /// (``AuthStateChange/Event/signedOut`` is published).
    ///
    /// The server ends every session of the account on every device (back-channel logout included), revokes every
    /// token, and deletes the passkeys, second factors, linked identities and consents, and mails the person. A server
    /// configured with a grace period keeps the account, without sessions, until ``AccountDeletion/deletionDueAt``:
    /// signing in again before then restores it.
    ///
    /// The sign-in must be recent (the server's `recent_auth_seconds`): otherwise `.reauthenticationRequired` is
    /// thrown and nothing changes — sign in again (for example `signInWithBrowser(options: SignInOptions(prompt:
    /// "login"))`) and call it once more. Ask the person to confirm before calling it: it cannot be undone.
    ///
    /// ```swift
    /// let outcome = try await client.session().deleteAccount()
    /// if let day = outcome.deletionDueAt { print("deleted on", day, "unless you sign in again") }
    /// ```
    /// - Returns: whether the account is gone or scheduled for deletion.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused (also when the account no longer exists);
    ///   `.reauthenticationRequired` (HTTP 401 `insufficient_user_authentication`); `.authenticationFailed` when the
    ///   token may not manage the account (an application without the account-management scope); `.networkError`.
    ///   Nothing is forgotten locally when the server did not confirm.
    @discardableResult
    public func deleteAccount() async throws -> AccountDeletion {
        try await client.loading {
            let context = try client.context()
            let tokens = try await context.tokens.usableTokens(name)
            let response = try await context.sendAuthorized(
                HTTPRequest(method: "DELETE", url: context.endpoint("/users/me"), headers: ["Accept": "application/json"], body: nil),
                tokens: tokens)
            guard (200..<300).contains(response.status) else {
                var error = LatchkeyError.profile(response, selfTarget: true)
                if error.code == .reauthenticationRequired {
                    error.message = "deleting the account needs a recent sign-in: sign in again (prompt=login) and retry (server: \(error.message))"
                }
                throw error
            }
            let outcome = AccountDeletion(deletionDueAt: try LatchkeyClient.deletionDueAt(response))
            // The account is gone (or scheduled): a storage failure here must not report the deletion as failed. The
            // server revoked the tokens, so any left behind are refused and forgotten at their next refresh.
            try? await context.tokens.clear(name)
            return outcome
        }
    }
}
