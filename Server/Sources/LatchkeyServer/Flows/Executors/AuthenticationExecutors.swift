import Crypto
import Foundation

/// Password and second-factor steps of sign-in. The password step is `checkPassword`, as on the hosted login page.
struct AuthenticationExecutors: Sendable {
    let accounts: Accounts
    let store: any UserStore
    let clock: ServerClock
    let audit: AuditTrail

    func password(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let username = (run.value("username") ?? "").trimmingCharacters(in: .whitespaces)
        let outcome = try await accounts.checkPassword(
            username: username, password: run.submitted["password"] ?? "", address: run.clientAddress,
            signIn: .flow, client: run.client.clientId, logger: run.logger)
        switch outcome {
        case .throttled, .locked, .rejected: return .retry(.password(outcome, now: clock.now))
        case .disabled: return .fail(.password(outcome, now: clock.now))
        case .accepted(let user):
            run.state.userId = user.id
            run.state.amr = ["pwd"]
            run.state.authTime = clock.now
            return .next
        }
    }

    /// Branches `totp`, `email_otp` or `none` by what the user has enrolled (TOTP first: it needs no delivery), as every
    /// other front door decides it (`SignInCompletion`): `none` when the first factor was already multi-factor (a
    /// provider trusted with its MFA), a failure when the application (`require_mfa`) or the node (`required`) needs
    /// a second factor the account does not have.
    func resolveSecondFactor(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let userId = run.state.userId, let user = try await store.user(id: userId) else { return .fail(.invalidCredentials) }
        let completion = try await accounts.completion(
            of: user, amr: run.state.amr, client: run.client, multiFactorEssential: node.properties?["required"] == "true")
        switch completion {
        case .secondFactorOwed(.totp):
            run.state.additionalData = try await totpStepData(userId: userId)
            return .branch("totp")
        case .secondFactorOwed(.email):
            return .branch("email_otp")
        case .refused:
            return .fail(.mfaNotEnrolled)
        case .complete:
            return .branch("none")
        }
    }

    /// What the TOTP step tells the app about its field (`recoveryCodeAccepted`: `Accounts.secondFactorStepData`).
    func totpStepData(userId: String) async throws -> [String: String] {
        try await accounts.secondFactorStepData(["mfaMethod": "totp", "otpLength": "6", "otpNumericOnly": "true"], userId: userId)
    }

    /// RFC 6238 through `TOTPVerifier` (±1 step, each step accepted once), or one of the account's recovery codes
    /// (`Accounts.proveSecondFactor`). Five wrong codes end the execution, and
    /// every code spends one attempt of the account's second-factor budget first, so new executions (which a known
    /// password starts at will) do not bring fresh guesses.
    func verifyTOTP(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let userId = run.state.userId, let user = try await store.user(id: userId) else { return .fail(.invalidCredentials) }
        let budget = CodeBudget.secondFactor(userId: userId)
        if let wait = try await accounts.reserveCodeAttempt(budget) { return .fail(.codesLocked(seconds: wait)) }
        guard let proof = try await accounts.proveSecondFactor(user, kind: .totp, answer: run.submitted["otp"] ?? "", emailCodeDigest: nil)
        else {
            await audit.record(
                .signInFailed, .failure, subject: userId, details: ["method": "totp", "reason": "invalid_code", "via": "flow"],
                origin: run.auditOrigin)
            run.state.factorAttempts += 1
            if run.state.factorAttempts >= SecondFactor.maxAttempts { return .fail(.tooManyCodeAttempts) }
            run.state.additionalData = try await totpStepData(userId: userId)
            return .retry(.invalidCode)
        }
        try await accounts.codeAccepted(budget)
        await accounts.announce(proof, of: user, locale: run.locale, origin: run.auditOrigin, via: "flow")
        run.state.amr.append("otp")
        return .next
    }
}

/// Emailed one-time codes: the second factor (`purpose` = `mfa`, where a recovery code is accepted too) and the
/// password-recovery confirmation code
/// (`purpose` = `recovery`). Second-factor codes are 6 digits (the password was the first factor); recovery codes,
/// which are all that a recovery asks for, are `LongCode`s. Codes are stored as a keyed digest, and expire. An
/// execution allows five attempts in all (a resend does not give fresh ones) and five sends; beyond that, every
/// attempt spends one of the account's code budget (per purpose), wrong recovery codes also spend one of the
/// budget all accounts share (`max_recovery_code_failures`), and recovery emails are limited per account and per
/// address.
struct CodeExecutors: Sendable {
    let accounts: Accounts
    let admission: Admission
    let store: any UserStore
    let clock: ServerClock
    /// How long a one-time code stays good.
    let lifetimes: TokenLifetimes
    let outbox: any Outbox
    let audit: AuditTrail

    static let maxSends = SecondFactor.maxSends
    static let maxAttempts = SecondFactor.maxAttempts

    func send(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let recovery = node.properties?["purpose"] == "recovery"
        guard run.state.codeSends < Self.maxSends else { return .fail(recovery ? .recoveryFailed : .tooManyCodeAttempts) }
        var user: UserRecord?
        let budget: String
        if recovery {
            // Find the account by username or email (ambiguous ones name none); an unknown one gets the same answer and no
            // message.
            let identifier = (run.value("username") ?? "").trimmingCharacters(in: .whitespaces)
            user = identifier.isEmpty ? nil : try await accounts.account(identifier: identifier)
            run.state.userId = user?.id
            budget = CodeBudget.recovery(userId: user?.id, identifier: identifier)
            // Recovery needs no credentials: its emails are limited per address and per account (or unknown
            // identifier, answered alike), against brute force and mail bombing.
            if let wait = try await admission.admitChallengeRequest(address: run.clientAddress) {
                return .fail(.addressThrottled(seconds: wait))
            }
            if let wait = try await accounts.codeLockout(budget) { return .fail(.codesLocked(seconds: wait)) }
            if let wait = try await accounts.admitCodeEmail(budget) { return .fail(.recoveryThrottled(seconds: wait)) }
        } else if let userId = run.state.userId {
            user = try await store.user(id: userId)
            budget = CodeBudget.secondFactor(userId: userId)
            // A locked account is not sent codes it could not use.
            if let wait = try await accounts.codeLockout(budget) { return .fail(.codesLocked(seconds: wait)) }
        } else {
            return .fail(.mfaNotEnrolled)
        }
        run.state.codeBudget = budget
        let code = recovery ? LongCode.newCode() : SecondFactor.newCode()
        let now = clock.now
        run.state.codeSends += 1
        // A resend replaces the code but keeps the attempts already spent on this execution.
        run.state.code = .init(
            digest: accounts.codeDigest(recovery ? LongCode.normalized(code) : code),
            expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.oneTimeCode)),
            attempts: run.state.code?.attempts ?? 0)
        // Codes go only to a verified address: one nobody proved (typed in at sign-up, set by an administrator)
        // may belong to someone else.
        if let user, let email = Accounts.verifiedEmail(of: user), !user.disabled {
            // In the execution's language: the person who asked for the code is the one reading it.
            let kind = recovery ? "recovery" : "signin"
            let arguments = [
                "code": code, "app": run.client.name,
                "minutes": String(MessageCatalog.minutes(seconds: lifetimes.oneTimeCode))
            ]
            let subject = MessageCatalog.text("email.code.\(kind).subject", locale: run.locale, default: "Your code")
            let body = MessageCatalog.text("email.code.\(kind).body", locale: run.locale, arguments: arguments, default: code)
            try await outbox.send(
                OutboxMessage(
                    id: Secrets.identifier(), channel: .email, recipient: email, subject: subject,
                    body: body, code: code, createdAt: now))
        } else if recovery {
            run.state.code?.digest = Data()  // nothing can match
        } else {
            return .fail(.mfaNotEnrolled)
        }
        run.state.additionalData = [
            "emailSent": "true", "otpLength": recovery ? String(LongCode.length) : "6",
            "otpNumericOnly": recovery ? "false" : "true", "mfaMethod": recovery ? "recovery" : "email_otp"
        ]
        if !recovery, let user {
            run.state.additionalData = try await accounts.secondFactorStepData(run.state.additionalData, userId: user.id)
        }
        return .next
    }

    /// What the emailed-code step tells the app about its field when it is shown again (`recoveryCodeAccepted`).
    func emailStepData(_ run: FlowRun) async throws -> [String: String] {
        let data = ["mfaMethod": "email_otp", "otpLength": "6", "otpNumericOnly": "true"]
        guard let userId = run.state.userId else { return data }
        return try await accounts.secondFactorStepData(data, userId: userId)
    }

    func verify(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let recovery = node.properties?["purpose"] == "recovery"
        let input = node.properties?["input"] ?? "otp"
        guard var pending = run.state.code else { return .fail(recovery ? .recoveryFailed : .invalidCode) }
        let typed = run.submitted[input] ?? ""
        // A recovery code stands in for the emailed second-factor code, whether that code expired or never arrived.
        let recoveryCodeAnswer = !recovery && RecoveryCodes.isRecoveryCode(typed)
        if pending.expiresAt <= clock.now, !recoveryCodeAnswer {
            if !recovery { run.state.additionalData = try await emailStepData(run) }
            return .retry(.codeExpired)
        }
        let submitted = recovery ? LongCode.normalized(typed) : typed.filter { !$0.isWhitespace }
        let budget =
            run.state.codeBudget
            ?? run.state.userId.map { recovery ? CodeBudget.recovery(userId: $0, identifier: "") : CodeBudget.secondFactor(userId: $0) }
        if let budget, let wait = try await accounts.reserveCodeAttempt(budget) {
            run.state.code = nil
            return .fail(.codesLocked(seconds: wait))
        }
        // Counted before the check too, so a burst cannot pass a count taken before any of it was recorded.
        let globalAttempt = recovery ? try await accounts.reserveRecoveryCodeAttempt(address: run.clientAddress, logger: run.logger) : nil
        if case .refused(let wait)? = globalAttempt {
            run.state.code = nil
            return .fail(.codesLocked(seconds: wait))
        }
        // A password recovery's code is compared here; a second factor's answer (the emailed code or a recovery code)
        // by `proveSecondFactor`, which also says which it was.
        let matched: Bool
        var proven: (user: UserRecord, proof: SecondFactorProof)?
        if recovery {
            matched = !pending.digest.isEmpty && Secrets.constantTimeEquals(accounts.codeDigest(submitted), pending.digest)
        } else {
            guard let userId = run.state.userId, let user = try await store.user(id: userId) else { return .fail(.invalidCredentials) }
            // An expired code got here only as a recovery code (checked above), which the code's digest does not concern.
            proven = try await accounts.proveSecondFactor(user, kind: .email, answer: typed, emailCodeDigest: pending.digest).map {
                (user, $0)
            }
            matched = proven != nil
        }
        guard matched else {
            // A wrong recovery code is a failed password reset (of an account, or of an unknown identifier: no subject);
            // a wrong emailed second-factor code, a failed sign-in.
            if recovery {
                await audit.record(
                    .passwordReset, .failure, subject: run.state.userId,
                    details: ["method": "recovery_code", "reason": "invalid_code", "via": "flow"], origin: run.auditOrigin)
            } else {
                await audit.record(
                    .signInFailed, .failure, subject: run.state.userId,
                    details: ["method": "email", "reason": "invalid_code", "via": "flow"], origin: run.auditOrigin)
            }
            pending.attempts += 1
            run.state.code = pending
            if pending.attempts >= Self.maxAttempts {
                run.state.code = nil
                return .fail(recovery ? .recoveryFailed : .tooManyCodeAttempts)
            }
            // The step again, still offering a recovery code (the engine clears a step's data on every submit).
            if !recovery { run.state.additionalData = try await emailStepData(run) }
            return .retry(.invalidCode)
        }
        run.state.code = nil  // single use
        if let budget { try await accounts.codeAccepted(budget) }
        if case .admitted(let at)? = globalAttempt { try await accounts.recoveryCodeAccepted(at: at) }
        if recovery {
            run.state.recoveryVerified = true
        } else {
            if let proven {
                await accounts.announce(proven.proof, of: proven.user, locale: run.locale, origin: run.auditOrigin, via: "flow")
            }
            run.state.amr.append("otp")
        }
        return .next
    }
}
