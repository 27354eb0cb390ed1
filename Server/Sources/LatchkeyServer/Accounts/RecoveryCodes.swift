import Foundation

/// Recovery codes: ten single-use codes, shown once when generated, that stand in for the account's second factor when
/// the phone with the authenticator app (or the mailbox) is out of reach. Each is a `LongCode` (50 bits, forgiving of
/// case, spaces and look-alikes) stored only as a keyed digest; a new set replaces the old one whole.
///
/// They are accepted wherever the second factor is asked for, in the same field as the six-digit code (the flows, the
/// reachFive step-up and the hosted page, through `Accounts.proveSecondFactor`), and spend the same per-account budget
/// of wrong codes. Using one is audited (`mfa.recovery_code_used`) and mailed to the account, with how many are left.
enum RecoveryCodes {
    /// Codes in a set.
    static let count = 10

    /// Whether an answer to a second-factor challenge is meant as a recovery code: one with `LongCode.length`
    /// characters once normalized (a six-digit code has six; a recovery code may be all digits).
    static func isRecoveryCode(_ answer: String) -> Bool {
        LongCode.normalized(answer).count == LongCode.length
    }
}

/// How an answer to a second-factor challenge was proven.
enum SecondFactorProof: Equatable, Sendable {
    /// The six-digit code of the factor that was asked for (TOTP, or the emailed code).
    case code
    /// One of the account's recovery codes, now spent.
    case recoveryCode
}

extension Accounts {
    /// A flow's second-factor step data, with `recoveryCodeAccepted: true` when the account has unused recovery codes,
    /// so that the app can offer a field that takes letters ("Use a recovery code") instead of a number pad only.
    func secondFactorStepData(_ data: [String: String], userId: String) async throws -> [String: String] {
        guard let codes = try await store.recoveryCodes(userId: userId), codes.remaining > 0 else { return data }
        return data.merging(["recoveryCodeAccepted": "true"]) { _, new in new }
    }

    /// Generates a new set of recovery codes for `userId`, replacing the earlier set, and returns the codes (in
    /// display form, never stored or logged) with the new set's summary.
    func generateRecoveryCodes(userId: String) async throws -> (codes: [String], summary: RecoveryCodeSummary) {
        var codes: [String] = []
        while codes.count < RecoveryCodes.count {
            let code = LongCode.newCode()
            if !codes.contains(code) { codes.append(code) }
        }
        let now = clock.now
        try await store.replaceRecoveryCodes(userId: userId, digests: codes.map(recoveryCodeDigest), createdAt: now)
        return (codes, RecoveryCodeSummary(createdAt: now, remaining: codes.count, total: codes.count))
    }

    func recoveryCodeDigest(_ code: String) -> Data { codeDigest("recovery-code:" + LongCode.normalized(code)) }

    /// Checks the answer to a second-factor challenge for `kind`: the six-digit code (TOTP through `verifyTOTP`, which
    /// spends its time step; an emailed code against `emailCodeDigest`), or else, when the answer has the form of one,
    /// one of the account's recovery codes, which is spent here. Nil when it matched nothing.
    ///
    /// The caller has already reserved an attempt of the account's second-factor budget (`reserveCodeAttempt`), and
    /// records the failure: a wrong recovery code is a wrong code like any other. Once its own single-use step has
    /// passed too, it announces a recovery code's use (`announce`).
    func proveSecondFactor(_ user: UserRecord, kind: SecondFactor, answer: String, emailCodeDigest: Data?) async throws -> SecondFactorProof? {
        if RecoveryCodes.isRecoveryCode(answer) {
            guard try await store.useRecoveryCode(userId: user.id, digest: recoveryCodeDigest(answer), at: clock.now) else { return nil }
            return .recoveryCode
        }
        let code = SecondFactor.cleaned(answer)
        switch kind {
        case .totp:
            return try await verifyTOTP(userId: user.id, code: code) ? .code : nil
        case .email:
            guard let emailCodeDigest, !emailCodeDigest.isEmpty, Secrets.constantTimeEquals(codeDigest(code), emailCodeDigest) else { return nil }
            return .code
        }
    }

    /// After a sign-in that a recovery code completed (`proof` `.recoveryCode`; nothing for a six-digit code), once
    /// the caller's own single-use step has passed: the log line, the audit event (`mfa.recovery_code_used` with the
    /// count left) and the mail to the account. Never fails the sign-in: what cannot be read or sent is logged.
    func announce(_ proof: SecondFactorProof, of user: UserRecord, locale: SupportedLocale, origin: AuditOrigin, via: String) async {
        guard proof == .recoveryCode else { return }
        let remaining: String
        do { remaining = String(try await store.recoveryCodes(userId: user.id)?.remaining ?? 0) } catch {
            origin.logger.error("the recovery codes left could not be counted", metadata: ["user": .string(user.id)])
            remaining = "unknown"
        }
        origin.logger.notice("a recovery code stood in for the second factor", metadata: ["user": .string(user.id), "remaining": .string(remaining)])
        await audit.record(.recoveryCodeUsed, subject: user.id, details: ["remaining": remaining, "via": via], origin: origin)
        await notifyAccountChange(user, "mfa_recovery_code_used", arguments: ["remaining": remaining], locale: locale, logger: origin.logger)
    }
}
