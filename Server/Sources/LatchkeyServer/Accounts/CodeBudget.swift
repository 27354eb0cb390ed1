import Foundation
import Logging

/// Per-account budgets of one-time codes, persisted in the store so that they hold across flow executions, resends,
/// step-up challenges and server instances (a per-execution or per-challenge count alone is reset by starting over).
///
/// Second-factor codes (TOTP and emailed, in flows and step-up) and recovery codes have separate budgets: a stranger
/// who floods an account's recovery, which needs no credentials, must not also lock its owner out of signing in.
enum CodeBudget {
    /// The second-factor budget of an account.
    static func secondFactor(userId: String) -> String { "code:mfa:user:\(userId)" }

    /// The recovery budget of what a recovery was started for: the account when the identifier names one, else the
    /// identifier itself, so that unknown identifiers are limited exactly like accounts (no enumeration by budget).
    static func recovery(userId: String?, identifier: String) -> String {
        if let userId { return "code:recovery:user:\(userId)" }
        return "code:recovery:identifier:\(identifier.lowercased())"
    }

    /// The budget of verification codes sent for an account's email changes (each goes to an address of the caller's
    /// choosing, so it is limited like recovery emails).
    static func emailChange(userId: String) -> String { "code:email-change:user:\(userId)" }

    /// The email budget for the same subject as `recovery` or `emailChange`.
    static func recoveryEmails(codeKey: String) -> String { "mail:" + codeKey }

    /// The budget of wrong verification codes for one *target* address, whichever account asked to move there: many
    /// accounts must not add up their tries on someone else's address.
    static func emailVerification(address: String) -> String { "code:email-verify:address:\(address.lowercased())" }
}

/// The outcome of counting a recovery code against the budget all accounts share.
enum GlobalCodeAttempt: Sendable {
    /// Counted at `at` (given back if the code turns out right).
    case admitted(at: Date)
    /// The budget is spent: no recovery code is checked for `seconds`.
    case refused(seconds: Int)
}

extension Accounts {
    /// Spends one attempt of a code budget *before* the code is checked, so that concurrent guesses cannot all pass a
    /// count taken before any of them was recorded. Nil when admitted; otherwise the seconds until the budget frees
    /// up (the code must then be refused, right or wrong). A right code clears the budget (`codeAccepted`).
    func reserveCodeAttempt(_ key: String) async throws -> Int? {
        let policy = configuration.loginPolicy
        let now = clock.now
        let window = TimeInterval(policy.codeWindowSeconds)
        let (admitted, events) = try await store.admitAccountEvent(key: key, now: now, window: window, limit: policy.maxCodeFailuresPerAccount)
        return admitted ? nil : Self.secondsUntilFree(events, window: window, now: now)
    }

    /// Seconds until the budget frees up, without spending anything; nil when codes may be tried now. Checked before
    /// sending a code, so a locked account is not sent codes it could not use.
    func codeLockout(_ key: String) async throws -> Int? {
        let policy = configuration.loginPolicy
        let now = clock.now
        let window = TimeInterval(policy.codeWindowSeconds)
        let events = try await store.accountEvents(key: key, now: now, window: window)
        return events.count >= policy.maxCodeFailuresPerAccount ? Self.secondsUntilFree(events, window: window, now: now) : nil
    }

    /// A right code: the attempts reserved so far were the owner's, so the budget starts afresh.
    func codeAccepted(_ key: String) async throws {
        try await store.clearAccountEvents(key: key)
    }

    /// Counts one recovery-code check against `max_recovery_code_failures` per `code_window_seconds`, shared by every
    /// account and, in the store, by every instance: a guesser spreading over many accounts and
    /// addresses meets it, and then no recovery code is checked until the window frees up. Each time it refuses, the
    /// `latchkey_throttled_requests_total{limit="recovery_codes"}` counter grows, and the first refusal of a window is
    /// logged as a warning for the operator. A right code gives its place back (`recoveryCodeAccepted`).
    func reserveRecoveryCodeAttempt(address: String, logger: Logger) async throws -> GlobalCodeAttempt {
        let policy = configuration.loginPolicy
        let now = clock.now
        guard
            let wait = try await store.reserveAddressEvent(
                bucket: Self.recoveryCodeBucket, address: "*", now: now,
                window: TimeInterval(policy.codeWindowSeconds),
                limit: policy.maxRecoveryCodeFailures)
        else {
            return .admitted(at: now)
        }
        metrics.throttled(.recoveryCodes)
        if await recoveryAlarm.claim(now: now, interval: TimeInterval(policy.codeWindowSeconds)) {
            logger.warning(
                "wrong recovery codes reached max_recovery_code_failures: no recovery code is checked until the window frees up",
                metadata: [
                    "limit": .stringConvertible(policy.maxRecoveryCodeFailures), "retry_after_seconds": .stringConvertible(wait),
                    "last_address": .string(ClientAddress.throttleKey(address))
                ])
        }
        return .refused(seconds: wait)
    }

    /// A right recovery code: its check was not a guess, so it leaves the shared budget.
    func recoveryCodeAccepted(at: Date) async throws {
        try await store.releaseAddressEvent(bucket: Self.recoveryCodeBucket, address: "*", at: at)
    }

    static let recoveryCodeBucket = "recovery-code-checks"

    /// Spends one code email (recovery, email change) of the subject's hourly budget
    /// (`max_recovery_emails_per_account`); nil when it may be sent, else the seconds to wait.
    func admitCodeEmail(_ codeKey: String) async throws -> Int? {
        let policy = configuration.loginPolicy
        let now = clock.now
        let window = TimeInterval(policy.codeWindowSeconds)
        let (admitted, events) = try await store.admitAccountEvent(
            key: CodeBudget.recoveryEmails(codeKey: codeKey), now: now,
            window: window, limit: policy.maxRecoveryEmailsPerAccount)
        return admitted ? nil : Self.secondsUntilFree(events, window: window, now: now)
    }

    /// The at-rest digest of a short one-time code: keyed (HMAC under the key-encryption key), because six digits
    /// are a million guesses and a bare hash would be reversed at once from a copy of the database.
    func codeDigest(_ code: String) -> Data { sealer.codeDigest(code) }

    private static func secondsUntilFree(_ events: AccountEventCount, window: TimeInterval, now: Date) -> Int {
        guard let oldest = events.oldest else { return 1 }
        return max(1, Int(oldest.addingTimeInterval(window).timeIntervalSince(now).rounded(.up)))
    }
}

extension LocalizedMessage {
    /// Too many wrong codes for this account (or recovery subject) within the window.
    static func codesLocked(seconds: Int) -> LocalizedMessage {
        LocalizedMessage("codes.locked", ["minutes": String(MessageCatalog.minutes(seconds: seconds))])
    }

    /// Too many recovery emails for this account (or identifier) within the window.
    static func recoveryThrottled(seconds: Int) -> LocalizedMessage {
        LocalizedMessage("codes.recovery_throttled", ["minutes": String(MessageCatalog.minutes(seconds: seconds))])
    }
}

extension FlowFailure {
    /// A code refused because the account's code budget is spent. FET-1009 (too many code attempts), which the SDK
    /// maps to `mfaFailed` when signing in and `recoveryFailed` in recovery.
    static func codesLocked(seconds: Int) -> FlowFailure {
        FlowFailure(code: "FET-1009", .codesLocked(seconds: seconds), description: "too many wrong one-time codes for this account; retry later")
    }

    static func recoveryThrottled(seconds: Int) -> FlowFailure {
        FlowFailure(code: "FET-1009", .recoveryThrottled(seconds: seconds), description: "too many recovery emails for this account; retry later")
    }

    static func addressThrottled(seconds: Int) -> FlowFailure {
        FlowFailure(
            code: "FET-1095", LocalizedMessage("login.throttled", ["minutes": String(MessageCatalog.minutes(seconds: seconds))]),
            description: "too many code requests from this address")
    }
}
