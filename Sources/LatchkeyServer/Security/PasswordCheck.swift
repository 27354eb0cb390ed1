import Foundation

/// The outcome of checking a password, shared by every place that takes one (hosted login page, the flow's
/// password step, the self-service password change), so throttling and lockout are the same everywhere.
enum PasswordCheck {
    case accepted(UserRecord)
    /// Too many failures from the caller's address; retry after this many seconds.
    case throttled(seconds: Int)
    /// The account is locked (now, or by this very failure).
    case locked(until: Date)
    /// Wrong password or unknown user: the same answer for both.
    case rejected
    /// The password was right but the account is disabled (said only after a correct password, so the answer does
    /// not reveal which accounts exist).
    case disabled
}

extension IdentityServer {
    /// Per-address throttle, account lockout, a decoy bcrypt hash for unknown users, failure and success bookkeeping.
    func checkPassword(username: String, password: String, address: String) async throws -> PasswordCheck {
        let now = clock.now
        if let wait = await throttle.retryAfter(address: address, now: now) { return .throttled(seconds: wait) }
        let user = try await store.user(username: username)
        if let user, let lockedUntil = user.lockedUntil, lockedUntil > now { return .locked(until: lockedUntil) }
        guard try await hasher.verify(password, hash: user?.passwordHash), let user else {
            await throttle.recordFailure(address: address, now: now)
            if let user, let updated = try await store.recordLoginFailure(
                userId: user.id, now: now, maxFailures: configuration.loginPolicy.maxFailuresPerAccount,
                lockFor: TimeInterval(configuration.loginPolicy.lockoutSeconds)),
               let lockedUntil = updated.lockedUntil, lockedUntil > now {
                logger.notice("account locked after repeated failures", metadata: ["user": .string(user.id)])
                return .locked(until: lockedUntil)
            }
            return .rejected
        }
        if user.disabled { return .disabled }
        try await store.recordLoginSuccess(userId: user.id)
        return .accepted(user)
    }

}

extension IdentityServer {
    /// Whole minutes (rounded up, at least one) as English text. For logs and English-only text; messages for people
    /// pass the number as the `minutes` argument of a catalog message instead (`PasswordCheck.userMessage`).
    static func minutes(_ seconds: Int) -> String { MessageCatalog.duration(minutes: MessageCatalog.minutes(seconds: seconds), locale: .en) }

    /// As `minutes(_:)`, until `until`.
    func minutesUntil(_ until: Date) -> String { Self.minutes(Int(until.timeIntervalSince(clock.now).rounded(.up))) }
}

extension PasswordCheck {
    /// The caller's address is throttled (as opposed to the account being locked).
    var isThrottled: Bool { if case .throttled = self { true } else { false } }

    /// What to tell the person for a refused outcome: catalog key (`login.*`), arguments and English, the same on
    /// the hosted page, in the flows and anywhere else a password is checked; nil when the password was accepted.
    /// `{minutes}` carries whole minutes, rendered as a localized duration by the catalog.
    func userMessage(now: Date) -> LocalizedMessage? {
        switch self {
        case .accepted: nil
        case .throttled(let seconds): LocalizedMessage("login.throttled", ["minutes": String(MessageCatalog.minutes(seconds: seconds))])
        case .locked(let until):
            LocalizedMessage("login.locked", ["minutes": String(MessageCatalog.minutes(seconds: Int(until.timeIntervalSince(now).rounded(.up))))])
        case .rejected: LocalizedMessage("login.invalid_credentials")
        case .disabled: LocalizedMessage("login.disabled")
        }
    }
}
