import Foundation
import Logging
import HTTPTypes
import Hummingbird

/// A request changed an identifier (username, email) or a passkey with an access token whose sign-in is older than
/// `recent_auth_seconds`. Answered 401 with `error="insufficient_user_authentication"` and `max_age` (RFC 9470), in
/// the dialect of the route group, so the client can send the user through a fresh sign-in (`max_age`, `prompt=login`).
struct RecentAuthenticationRequired: Error, Sendable {
    let maxAge: Int

    static let errorCode = "insufficient_user_authentication"

    /// Refuses `claims` unless their sign-in (`auth_time`) is at most `window` seconds old at `now` (a minute of clock
    /// skew the other way tolerated).
    /// A token that an SSO session answered for (`reused`) is never recent: its `auth_time` is a sign-in made for
    /// another application, perhaps minutes before this one asked silently.
    static func check(_ claims: AccessTokenClaims, window: Int, now: Date) throws(RecentAuthenticationRequired) {
        guard let authTime = claims.authTime, claims.reused != true else { throw RecentAuthenticationRequired(maxAge: window) }
        let age = now.timeIntervalSince1970 - TimeInterval(authTime)
        guard age <= TimeInterval(window), age > -60 else { throw RecentAuthenticationRequired(maxAge: window) }
    }

    var apiError: APIError {
        APIError(
            status: .unauthorized, code: "AUTH-4011", error: Self.errorCode, messageKey: "error.reauthentication_required",
            userMessage: "Please sign in again to make this change.",
            technical:
                "\(Self.errorCode): this change needs a sign-in made for this application less than \(maxAge) seconds ago; sign in again (prompt=login)"
        )
    }

    func response(_ request: Request, dialect: Dialect) throws -> Response {
        var response = try ErrorMiddleware.api(apiError, dialect: dialect, locale: request.locale())
        response.headers[.wwwAuthenticate] =
            "Bearer error=\"\(Self.errorCode)\", error_description=\"a more recent authentication is required\", max_age=\(maxAge)"
        return response
    }
}

extension Accounts {
    static let emailChangeMaxAttempts = 5

    /// Refuses the change unless the token's sign-in (`auth_time`) is at most `recent_auth_seconds` old: a token can
    /// leak (a log, a front end, a stolen device), and it must not be enough to take the account over by adding a
    /// passkey or moving the email that recovery codes go to.
    func requireRecentAuthentication(_ claims: AccessTokenClaims) throws(RecentAuthenticationRequired) {
        try RecentAuthenticationRequired.check(claims, window: configuration.recentAuthenticationSeconds, now: clock.now)
    }

    /// Whether `changes` (as `updateProfile` takes them) would change the username or the email address.
    func changesIdentifiers(of user: UserRecord, _ changes: [String: String?]) -> Bool {
        for name in ["username", "email"] {
            guard let value = changes[name] else { continue }
            let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if trimmed != (name == "username" ? user.username : user.claims[name] ?? "") { return true }
        }
        return false
    }

    /// Sends a code to `email` and keeps the change pending until `confirmEmailChange`; the current address is
    /// told (it stays the account's address meanwhile). A new request replaces an earlier one.
    func startEmailChange(of user: UserRecord, to email: String, locale: SupportedLocale, origin: AuditOrigin) async throws {
        // Every request mails an address of the caller's choosing and brings five fresh tries: both are bounded by the
        // account's hourly email budget, whichever endpoint (`/users/me`, SCIM `/Me`, `/users/me/email`) asked.
        if let wait = try await admitCodeEmail(CodeBudget.emailChange(userId: user.id)) {
            let message = LocalizedMessage("request.throttled", ["minutes": String(MessageCatalog.minutes(seconds: wait))])
            throw APIError(
                status: .tooManyRequests, code: "SRV-429", error: "too_many_requests", messageKey: message.key,
                userMessage: message.english, technical: "too many email-change codes for this account; retry after \(wait) s",
                arguments: message.arguments)
        }
        // A `LongCode`: a verified address is what recovery and Sign in with Apple's linking trust.
        let code = LongCode.newCode()
        let now = clock.now
        let lifetime = configuration.lifetimes.oneTimeCode
        try await store.replaceEmailChange(
            EmailChangeRecord(
                userId: user.id, email: email, codeDigest: codeDigest(LongCode.normalized(code)), attempts: 0,
                createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(lifetime))))
        let arguments = ["code": code, "minutes": String(MessageCatalog.minutes(seconds: lifetime))]
        try await outbox.send(
            OutboxMessage(
                id: Secrets.identifier(), channel: .email, recipient: email,
                subject: MessageCatalog.text("email.verify.subject", locale: locale, default: "Confirm your email address"),
                body: MessageCatalog.text("email.verify.body", locale: locale, arguments: arguments, default: code), code: code, createdAt: now))
        try await notifyAccountChange(user, "email_change", locale: locale)
        origin.logger.info("email change requested; code sent to the new address", metadata: ["user": .string(user.id)])
        // The address is personal data, not a secret; the trail names only the account (the row says who asked).
        await audit.record(.emailChangeRequested, subject: user.id, origin: origin)
    }

    /// Applies the pending email change when `code` is the one sent to the new address: the address becomes the
    /// account's, verified. Written over the version read, like every profile change.
    ///
    /// Each try also spends one of the *target address's* budget (`max_code_failures_per_account` per
    /// `code_window_seconds`), whichever account asked to move there: accounts cannot add up their tries on one
    /// address.
    func confirmEmailChange(of user: UserRecord, code: String, logger: Logger) async throws -> Result<UserRecord, EmailChangeFailure> {
        let submitted = LongCode.normalized(code)
        guard let pending = try await store.emailChange(userId: user.id), pending.expiresAt > clock.now else { return .failure(.expired) }
        let target = CodeBudget.emailVerification(address: pending.email)
        if let wait = try await reserveCodeAttempt(target) { return .failure(.addressLocked(seconds: wait)) }
        switch try await store.redeemEmailChange(
            userId: user.id, codeDigest: codeDigest(submitted),
            maxAttempts: Self.emailChangeMaxAttempts, now: clock.now)
        {
        case .missing: return .failure(.expired)
        case .wrongCode: return .failure(.wrongCode)
        case .exhausted: return .failure(.exhausted)
        case .redeemed(let change):
            try await codeAccepted(target)
            var updated = user
            updated.claims["email"] = change.email
            updated.claims["email_verified"] = "true"
            // The address may have been taken meanwhile.
            if let conflict = try await uniquenessConflict(for: updated) { return .failure(.rejected(.conflict(conflict))) }
            let now = clock.now
            updated.updatedAt = now
            do {
                guard
                    try await store.updateProfile(
                        userId: user.id, username: user.username, claims: updated.claims, disabled: nil,
                        expectedVersion: user.version, updatedAt: now)
                else {
                    return .failure(.rejected(.stale))
                }
            } catch StoreError.conflict {
                return .failure(.rejected(.stale))
            }
            updated.version = user.version + 1
            logger.info("email change verified and applied", metadata: ["user": .string(user.id)])
            return .success(updated)
        }
    }

    /// Tells the account's verified email address that something security-relevant changed (`kind`: `email_change`,
    /// `username_change`, `passkey_added`), so its owner notices a takeover in progress. No code in these messages.
    func notifyAccountChange(_ user: UserRecord, _ kind: String, arguments: [String: String] = [:], locale: SupportedLocale) async throws {
        // Only a verified address: a notice must not go to whoever typed an address in.
        guard let email = Self.verifiedEmail(of: user) else { return }
        try await outbox.send(
            OutboxMessage(
                id: Secrets.identifier(), channel: .email, recipient: email,
                subject: MessageCatalog.text("email.notice.\(kind).subject", locale: locale, default: "Your account was changed"),
                body: MessageCatalog.text("email.notice.\(kind).body", locale: locale, arguments: arguments, default: "Your account was changed."),
                code: nil, createdAt: clock.now))
    }

    /// `notifyAccountChange` after a change that is done: a mail that cannot be sent now is logged (the account and the
    /// kind, never the message), not turned into a failure of what was done.
    func notifyAccountChange(
        _ user: UserRecord, _ kind: String, arguments: [String: String] = [:], locale: SupportedLocale, logger: Logger
    ) async {
        do { try await notifyAccountChange(user, kind, arguments: arguments, locale: locale) } catch {
            logger.error("the account notice could not be sent", metadata: ["user": .string(user.id), "notice": .string(kind)])
        }
    }
}

/// Why an email change was not confirmed.
enum EmailChangeFailure: Error {
    case expired, wrongCode, exhausted
    /// Too many wrong codes for the target address lately, from any account; retry after `seconds`.
    case addressLocked(seconds: Int)
    case rejected(ProfileRejection)
}

extension Accounts {
    /// What follows a user's own profile change, whatever the dialect: the new email gets its code, and the account's
    /// address hears of a new username.
    func afterSelfUpdate(_ update: ProfileUpdate, before user: UserRecord, locale: SupportedLocale, origin: AuditOrigin) async throws {
        if update.user.username != user.username {
            try await notifyAccountChange(user, "username_change", arguments: ["username": update.user.username], locale: locale)
        }
        if let email = update.pendingEmail { try await startEmailChange(of: update.user, to: email, locale: locale, origin: origin) }
    }

    /// Whether an SSO session is strong enough to sign `user` in to `clientId` silently: it must be multi-factor when
    /// the application requires MFA or the account has a second factor enrolled, so a session opened with a password
    /// alone (or before the factor was enrolled) never stands in for the second factor.
    func sessionSatisfies(_ session: SessionRecord, user: UserRecord, clientId: String) async throws -> Bool {
        if AuthenticationMethods.isMultiFactor(session.amr) { return true }
        let requireMFA = try await store.client(id: clientId)?.configuration.requireMFA ?? true
        if requireMFA { return false }
        return try await enrolledSecondFactor(of: user) == nil
    }
}
