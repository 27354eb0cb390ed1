import Foundation
import Logging

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

extension Accounts {
    /// Per-address throttle, account lockout, a decoy bcrypt hash for unknown users, failure and success bookkeeping.
    ///
    /// Concurrency-safe: the attempt is counted (against the address, and against the account) *before* the
    /// ~250 ms hash, in one atomic step each, so a burst of parallel guesses gets no more hashes than the limits
    /// allow; the lock is checked again after the hash, and a right password never lifts a lock that concurrent
    /// failures set.
    ///
    /// The lock is per account and client address (`max_failures_per_account`), plus one for the account from all
    /// addresses together (`max_failures_per_account_all_addresses`): a stranger's wrong guesses lock the account
    /// for the stranger's network, not for its owner.
    ///
    /// A locked account answers exactly like a wrong password (`.rejected`, after a decoy hash of the same cost),
    /// whatever the password: saying "locked" would tell who has an account, and saying it only for the right
    /// password would let anyone keep guessing a locked account's password. `revealLock` is for callers that
    /// already know the account is the caller's (the self-service password change).
    ///
    /// `signIn` names the sign-in this check is part of, for the `latchkey_sign_ins_total` metric and the audit trail
    /// (nil: not a sign-in, such as the self-service password change); `client` the application signed in to. A
    /// refused sign-in is audited here (`signin.failed` with its reason); a success when its session opens
    /// (`SignInSessions`), since a second factor may still follow.
    func checkPassword(
        username: String, password: String, address: String, revealLock: Bool = false,
        signIn method: ServerMetrics.SignInMethod?, client: String? = nil, logger: Logger
    ) async throws -> PasswordCheck {
        let origin = AuditOrigin(client: client, address: address, logger: logger)
        let (outcome, locked) = try await judgePassword(
            username: username, password: password, address: address, revealLock: revealLock, origin: origin)
        // A locked account answers like a wrong password, but the trail says it was locked.
        if method != nil, let reason = locked ? "locked" : outcome.auditReason {
            // The subject only when the account exists: an unknown name is not recorded (it may be a password typed
            // into the name field).
            let subject = try await store.user(username: username)?.id
            await audit.record(
                .signInFailed, .failure, subject: subject, details: ["method": "password", "reason": reason], origin: origin)
        }
        if let method {
            switch outcome {
            // A flow's success is its completion (counted there): a password step may be followed by a second factor.
            case .accepted: if method != .flow { metrics.signIn(method, .success) }
            case .throttled: metrics.signIn(method, .throttled)
            case .locked: metrics.signIn(method, .locked)
            case .rejected, .disabled: metrics.signIn(method, .failure)
            }
        }
        return outcome
    }

    /// The outcome, and whether the account was locked (also when the outcome hides it as `.rejected`).
    private func judgePassword(username: String, password: String, address: String, revealLock: Bool, origin: AuditOrigin) async throws
        -> (PasswordCheck, locked: Bool)
    {
        let logger = origin.logger
        let now = clock.now
        let policy = configuration.loginPolicy
        let limits = LoginLimits(
            perAddress: policy.maxFailuresPerAccount, perAccount: policy.maxFailuresPerAccountAllAddresses,
            lockFor: TimeInterval(policy.lockoutSeconds))
        let addressKey = ClientAddress.throttleKey(address)
        let fallbackUntil = now.addingTimeInterval(limits.lockFor)
        if let wait = try await throttle.reserve(address: address, now: now) { return (.throttled(seconds: wait), false) }
        let user = try await store.user(username: username)
        if let user,
            case .refused(let lockedUntil) = try await store.reserveLoginAttempt(userId: user.id, address: addressKey, now: now, limits: limits)
        {
            // Locked, or every allowed attempt is in flight: no real hash runs; the decoy keeps the time the same.
            _ = try await hasher.verify(password, hash: nil)
            return (revealLock ? .locked(until: lockedUntil ?? fallbackUntil) : .rejected, true)
        }
        let matches: Bool
        do {
            matches = try await hasher.verify(password, hash: user?.passwordHash)
        } catch {
            // Not judged (503 `server.busy` when the hash queue is full): the reservation is given back, or anyone could
            // pile never-settled attempts onto an account until it locks for good.
            if let user { try? await store.releaseLoginAttempt(userId: user.id, address: addressKey) }
            throw error
        }
        guard matches, let user else {
            if let user, let lockedUntil = try await store.settleLoginFailure(userId: user.id, address: addressKey, now: clock.now, limits: limits) {
                logger.notice("account locked after repeated failures", metadata: ["user": .string(user.id)])
                metrics.lockout()
                await audit.record(.accountLocked, .failure, subject: user.id, details: ["reason": "repeated_failures"], origin: origin)
                return (revealLock ? .locked(until: lockedUntil) : .rejected, true)
            }
            return (.rejected, false)
        }
        // Re-checked after the hash: failures that settled meanwhile may have locked the account.
        guard try await store.settleLoginSuccess(userId: user.id, address: addressKey, now: clock.now) else {
            return (revealLock ? .locked(until: fallbackUntil) : .rejected, true)
        }
        try await throttle.release(address: address, at: now)
        if user.disabled { return (.disabled, false) }
        return (.accepted(user), false)
    }

}

extension Accounts {
    /// Whole minutes (rounded up, at least one) as English text. For logs and English-only text; messages for people
    /// pass the number as the `minutes` argument of a catalog message instead (`PasswordCheck.userMessage`).
    static func minutes(_ seconds: Int) -> String { MessageCatalog.duration(minutes: MessageCatalog.minutes(seconds: seconds), locale: .en) }

    /// As `minutes(_:)`, until `until`.
    func minutesUntil(_ until: Date) -> String { Self.minutes(Int(until.timeIntervalSince(clock.now).rounded(.up))) }
}

extension PasswordCheck {
    /// Why a sign-in was refused, as the audit trail names it; nil when the password was accepted.
    var auditReason: String? {
        switch self {
        case .accepted: nil
        case .throttled: "throttled"
        case .locked: "locked"
        case .rejected: "invalid_credentials"
        case .disabled: "disabled"
        }
    }

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
