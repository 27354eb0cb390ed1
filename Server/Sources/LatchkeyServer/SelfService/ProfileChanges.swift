import Foundation
import Logging

/// A person's own changes to their profile, email address and password, with the rules each needs (a recent
/// sign-in for an identifier, the current password for a new one), mails and the audit trail: the one way the account
/// API (`/users/me`) and the account page (`/account`) make them. Refusals are `APIError`s (localized by whoever
/// shows them) and `RecentAuthenticationRequired`.
struct ProfileChanges: Sendable {
    let store: any UserStore & TokenStore
    let clock: ServerClock
    let accounts: Accounts
    let audit: AuditTrail
    /// Where the person made the change, for the log lines.
    let channel: Channel

    enum Channel: Sendable {
        case api, accountPage
        var profile: String { self == .api ? "/users/me" : "the account page" }
        var password: String { self == .api ? "/users/me/update-credentials" : "the account page" }
    }

    /// Applies `changes` (attribute → value, nil removes) to `user`'s profile: the updated account. Changing the
    /// username or the email needs a recent sign-in; a new email is not applied here (a code goes to it). A stale write
    /// (the account changed since it was read) is `409 USR-1021`.
    func replaceAttributes(
        _ changes: [String: String?], of user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin
    ) async throws -> UserRecord {
        let logger = origin.logger
        if accounts.changesIdentifiers(of: user, changes) { try accounts.requireRecentAuthentication(caller.claims) }
        switch try await accounts.updateProfile(of: user, changes: changes, logger: logger) {
        case .success(let update):
            logger.info("profile updated through \(channel.profile)", metadata: ["user": .string(user.id)])
            try await accounts.afterSelfUpdate(update, before: user, locale: locale, origin: origin)
            return update.user
        case .failure(.invalid(let problems)): throw SelfServiceErrors.schemaValidation(problems)
        case .failure(.conflict(let problem)): throw SelfServiceErrors.conflict(problem)
        case .failure(.stale): throw SelfServiceErrors.staleUpdate
        }
    }

    /// Sends a code to a new address `raw` (also the current one, while it is unverified), applied by
    /// `confirmEmailChange`; the address, trimmed. Needs a recent sign-in, like any change of the address codes go to.
    func requestEmailChange(to raw: String, of user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin)
        async throws -> String
    {
        let email = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if let problem = accounts.userSchema.problem("email", email) { throw SelfServiceErrors.schemaValidation([problem]) }
        guard !email.isEmpty else { throw SelfServiceErrors.invalidRequest("email must not be empty") }
        if email.lowercased() == (user.claims["email"] ?? "").lowercased(), user.claims["email_verified"] == "true" {
            throw SelfServiceErrors.invalidRequest("that address is already the account's verified email")
        }
        try accounts.requireRecentAuthentication(caller.claims)
        var candidate = user
        candidate.claims["email"] = email
        if let conflict = try await accounts.uniquenessConflict(for: candidate) { throw SelfServiceErrors.conflict(conflict) }
        try await accounts.startEmailChange(of: user, to: email, locale: locale, origin: origin)
        return email
    }

    /// Applies the pending address whose `code` the person typed: the account with it, verified. A wrong code is
    /// `400 USR-1030` (five tries), no pending change or an expired one `400 USR-1031`.
    func confirmEmailChange(code: String, of user: UserRecord, origin: AuditOrigin) async throws -> UserRecord {
        switch try await accounts.confirmEmailChange(of: user, code: code, logger: origin.logger) {
        case .success(let updated):
            await audit.record(.emailChangeConfirmed, subject: user.id, origin: origin)
            return updated
        case .failure(.wrongCode):
            throw SelfServiceErrors.code("USR-1030", "flows.executor.errors.invalid_otp", "The code is incorrect.", "the code is not the one sent")
        case .failure(.exhausted):
            throw SelfServiceErrors.code(
                "USR-1032", "flows.executor.errors.otp_attempts", "Too many incorrect codes. Please start again.",
                "too many wrong codes; request the change again")
        case .failure(.addressLocked(let seconds)):
            throw APIError.throttled(wait: seconds, what: "wrong codes for this email address")
        case .failure(.expired):
            throw SelfServiceErrors.code(
                "USR-1031", "flows.executor.errors.otp_expired", "The code has expired. Ask for a new one.",
                "no email change is pending, or its code expired")
        case .failure(.rejected(.conflict(let problem))): throw SelfServiceErrors.conflict(problem)
        case .failure(.rejected(.invalid(let problems))): throw SelfServiceErrors.schemaValidation(problems)
        case .failure(.rejected(.stale)): throw SelfServiceErrors.staleUpdate
        }
    }

    /// Replaces the password, given the current one. An access token can leak (a log, a compromised front end), and
    /// it must not be enough to take the account over; wrong guesses count towards the account lockout like sign-in
    /// failures. Every other session and token of the account ends with the old password; the caller's own stays.
    func changePassword(
        current: String, new password: String, of user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin
    ) async throws {
        let (address, logger) = (origin.address ?? "unknown", origin.logger)
        // The same check as signing in: throttling, lockout (wrong guesses count), bookkeeping.
        let outcome = try await accounts.checkPassword(
            username: user.username, password: current, address: address, revealLock: true, signIn: nil, logger: logger)
        switch outcome {
        case .accepted: break
        case .throttled, .locked:
            // The same words (and wait) as the sign-in page: `login.locked` / `login.throttled`.
            let message = outcome.userMessage(now: clock.now) ?? LocalizedMessage("error.userservice.account_locked")
            throw APIError(
                status: .badRequest, code: "USR-1017", error: "invalid_request", messageKey: message.key,
                userMessage: message.english, technical: "too many wrong passwords; try again later", arguments: message.arguments)
        case .rejected, .disabled:
            logger.notice("password change refused: wrong current password", metadata: ["user": .string(user.id)])
            await audit.record(.passwordChanged, .failure, subject: user.id, details: ["reason": "invalid_current_password"], origin: origin)
            throw SelfServiceErrors.credentials("invalid_current_password", "Invalid credentials", "the current password is not correct")
        }
        let family = try await store.accessToken(jti: caller.claims.jti)?.familyId
        switch try await accounts.setPassword(of: user, to: password, keepingSession: caller.claims.sid, keepingFamily: family) {
        case .success:
            logger.info("password changed through \(channel.password)", metadata: ["user": .string(user.id)])
            await audit.record(.passwordChanged, subject: user.id, details: ["sessions": "others_ended"], origin: origin)
            // Changed: a mail that cannot be sent now is logged, not turned into a failure of what was done.
            await accounts.notifyAccountChange(user, "password_changed", locale: locale, logger: logger)
        case .failure(.invalid(let problems)):
            var error = SelfServiceErrors.credentials("invalid_credentials", "Invalid credentials", problems.map(\.message).joined(separator: "; "))
            error.fieldErrors = problems.map(\.fieldError)  // the password rule, in the user's language
            throw error
        case .failure(.conflict(let problem)):
            throw SelfServiceErrors.credentials("invalid_credentials", "Invalid credentials", problem.message)
        case .failure(.stale):
            throw SelfServiceErrors.staleUpdate
        }
    }
}
