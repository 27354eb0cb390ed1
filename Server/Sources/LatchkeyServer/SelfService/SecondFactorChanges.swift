import Foundation
import HummingbirdOTP
import Logging

/// A person's own second factors: the rules, mails and audit events of adding an authenticator app (TOTP) or emailed
/// codes, generating recovery codes and removing a factor: the one way the account API (`/users/me/factors`,
/// `SecondFactorsController`) and the account page (`/account/security`, `AccountSecurity`) make these changes.
/// Refusals are `APIError`s (localized by whoever shows them) and `RecentAuthenticationRequired`.
///
/// Every change needs a recent interactive sign-in (as changing the email or linking a provider does), mails the
/// account's verified address and is audited (`mfa.enrolled`, `mfa.removed`): a token that leaked must not be enough
/// to add an attacker's authenticator, or quietly take away the owner's.
///
/// An authenticator is added in two steps, so that a secret the person never managed to scan is never required at
/// sign-in: `startTOTP` gives the secret (once) with its `otpauth://` URI and a sealed `enrollment`; `confirmTOTP` with
/// that `enrollment` and the app's first code turns it on. The pending secret lives only in the sealed `enrollment`
/// (AES-GCM under the key-encryption key, bound to the account), so nothing is stored until it is confirmed.
///
/// Recovery codes are generated for an account that has a usable factor, shown once, and replaced whole by the next
/// set; removing the last usable factor deletes them (they stand in for a factor and have nothing to stand in for).
struct SecondFactorChanges: Sendable {
    let store: any SecondFactorStore & RecoveryCodeStore & ClientStore & SingleUseStore & SessionStore
    let clock: ServerClock
    let accounts: Accounts
    let audit: AuditTrail

    /// How long a started TOTP enrollment can be confirmed.
    static let enrollmentSeconds: TimeInterval = 10 * 60

    // MARK: - Reading

    /// The account's factors, oldest first (factors added in the same instant in the order of `FactorKind`, so the
    /// list never shuffles).
    func factors(of user: UserRecord) async throws -> [UserFactorRecord] {
        try await store.factors(userId: user.id).sorted { a, b in
            guard a.createdAt == b.createdAt else { return a.createdAt < b.createdAt }
            let order = FactorKind.allCases.map(\.stored)
            return (order.firstIndex(of: a.kind) ?? 0) < (order.firstIndex(of: b.kind) ?? 0)
        }
    }

    /// Whether `factor` asks for something at sign-in: emailed codes do not while the account has no verified email
    /// address (they cannot be sent).
    static func usable(_ factor: UserFactorRecord, of user: UserRecord) -> Bool {
        FactorKind(factor.kind) == .totp || Accounts.verifiedEmail(of: user) != nil
    }

    /// The applications that keep the account's last usable factor from being removed: the one `caller` signed in to
    /// and every one the account holds a live sign-in with, when it requires a second factor (`require_mfa`).
    /// Removing it would leave those sign-ins asking for a step the account no longer has; the account page signs in
    /// as an application of its own that requires none, so the calling application alone would not do. An unknown
    /// calling application counts as requiring one (named by its id): removing is the change a stolen token's holder
    /// cannot be allowed to take back.
    func applicationsRequiringMFA(_ user: UserRecord, caller: ResourceCaller) async throws -> [ClientConfiguration] {
        var ids = [caller.claims.clientId]
        for grant in try await store.userSessions(userId: user.id, now: clock.now).grants where !ids.contains(grant.family.clientId) {
            ids.append(grant.family.clientId)
        }
        var requiring: [ClientConfiguration] = []
        for id in ids {
            guard let client = try await store.client(id: id) else {
                if id == caller.claims.clientId { requiring.append(ClientConfiguration(clientId: id, name: id, requireMFA: true)) }
                continue
            }
            if client.configuration.requireMFA { requiring.append(client.configuration) }
        }
        return requiring
    }

    // MARK: - Authenticator app

    /// What a started enrollment carries, sealed to the account.
    private struct PendingTOTP: Codable {
        /// Spent when the enrollment is confirmed (`consumeTokenId`): an enrollment turns an authenticator on once.
        var id: String
        var secret: String
        var expiresAt: TimeInterval
    }

    /// A started enrollment as the person sees it.
    struct StartedTOTP: Sendable {
        /// The key in base32, for typing into an authenticator app by hand.
        var secret: String
        /// `otpauth://totp/…`, for a QR code or a link the authenticator app opens.
        var uri: String
        /// The sealed pending secret, handed back with the first code.
        var enrollment: String
        var expiresAt: Date
    }

    /// A new secret, shown this once. Nothing changes on the account yet.
    func startTOTP(for user: UserRecord, caller: ResourceCaller) throws -> StartedTOTP {
        try accounts.requireRecentAuthentication(caller.claims)
        let secret = Secrets.token(bytes: 20)
        let expiresAt = clock.now.addingTimeInterval(Self.enrollmentSeconds)
        let pending = String(
            decoding: try JSONEncoder().encode(PendingTOTP(id: Secrets.identifier(), secret: secret, expiresAt: expiresAt.timeIntervalSince1970)),
            as: UTF8.self)
        let enrollment = try accounts.sealer.seal(pending, context: Self.enrollmentContext(user.id))
        return try started(secret: secret, enrollment: enrollment, expiresAt: expiresAt, user: user)
    }

    /// The enrollment `startTOTP` began, shown again (after a wrong first code); nil when it is expired, altered,
    /// another account's, or already confirmed: the key of an authenticator that is on is never shown again.
    func pendingTOTP(_ enrollment: String, of user: UserRecord) async throws -> StartedTOTP? {
        guard let pending = open(enrollment, of: user),
            try await !store.factors(userId: user.id).contains(where: { $0.kind == .totp && $0.secret == pending.secret })
        else { return nil }
        return try? started(
            secret: pending.secret, enrollment: enrollment, expiresAt: Date(timeIntervalSince1970: pending.expiresAt), user: user)
    }

    private func started(secret: String, enrollment: String, expiresAt: Date, user: UserRecord) throws -> StartedTOTP {
        // The factor guards the whole account, not one application: the server is the issuer authenticator apps show.
        let issuer = accounts.configuration.issuer.host ?? "Latchkey"
        let uri = try Self.authenticatorURI(secret: secret, issuer: issuer, username: user.username)
        return StartedTOTP(secret: uri.secret, uri: uri.text, enrollment: enrollment, expiresAt: expiresAt)
    }

    private func open(_ enrollment: String, of user: UserRecord) -> PendingTOTP? {
        guard let opened = try? accounts.sealer.open(enrollment, context: Self.enrollmentContext(user.id)),
            let pending = try? JSONDecoder().decode(PendingTOTP.self, from: Data(opened.utf8)),
            clock.now.timeIntervalSince1970 < pending.expiresAt
        else { return nil }
        return pending
    }

    /// The first code from the app turns the authenticator on (replacing an earlier one): the new factor. Wrong codes
    /// count against the account's second-factor budget, as at sign-in; the code is spent, and an enrollment is
    /// confirmed once.
    func confirmTOTP(enrollment: String, code: String, of user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin)
        async throws -> UserFactorRecord
    {
        try accounts.requireRecentAuthentication(caller.claims)
        guard let pending = open(enrollment, of: user) else {
            origin.logger.notice("authenticator enrollment refused: expired, altered or another account's", metadata: ["user": .string(user.id)])
            throw Errors.enrollmentExpired
        }
        let budget = CodeBudget.secondFactor(userId: user.id)
        if let wait = try await accounts.reserveCodeAttempt(budget) { throw Errors.tooManyCodes(seconds: wait) }
        guard let step = TOTPVerifier.matchingStep(secret: pending.secret, code: SecondFactor.cleaned(code), now: clock.now) else {
            origin.logger.notice("authenticator enrollment refused: wrong code", metadata: ["user": .string(user.id)])
            await audit.record(.mfaEnrolled, .failure, subject: user.id, details: ["factor": "totp", "reason": "invalid_code"], origin: origin)
            throw Errors.wrongCode
        }
        // Once per enrollment, whatever happened to the factor since (removed, replaced) and however many requests race.
        guard try await store.consumeTokenId("totp-enrollment:\(pending.id)", expiresAt: Date(timeIntervalSince1970: pending.expiresAt))
        else { throw Errors.enrollmentExpired }
        let replaced = try await store.factors(userId: user.id).contains { $0.kind == .totp }
        let factor = UserFactorRecord(userId: user.id, kind: .totp, secret: pending.secret, createdAt: clock.now)
        try await store.upsertFactor(factor)
        // The code that confirmed it is spent: it cannot also complete a sign-in. False only when a sign-in took this
        // very step in between, with the new secret: then the code was used once all the same.
        _ = try await store.acceptTOTPStep(userId: user.id, step: step)
        try await accounts.codeAccepted(budget)
        await changed(user, .totp, added: true, replaced: replaced, locale: locale, origin: origin)
        return factor
    }

    static func enrollmentContext(_ userId: String) -> String { "totp-enrollment:\(userId)" }

    /// The key in base32 and the `otpauth://totp/<issuer>:<username>?secret=…&issuer=…` URI (Google's key-URI format),
    /// with the label and issuer escaped here: HummingbirdOTP leaves `&`, `=` and `+` in them as they are.
    static func authenticatorURI(secret: String, issuer: String, username: String) throws -> (secret: String, text: String) {
        let plain = TOTP(secret: secret).createAuthenticatorURL(label: "x", issuer: nil)
        guard let base32 = URLComponents(string: plain)?.queryItems?.first(where: { $0.name == "secret" })?.value, !base32.isEmpty else {
            throw APIError.internalError()
        }
        var unreserved = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        unreserved.insert(charactersIn: "-._~")
        func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
        return (base32, "otpauth://totp/\(escaped(issuer)):\(escaped(username))?secret=\(base32)&issuer=\(escaped(issuer))")
    }

    // MARK: - Emailed codes

    /// Sign-in codes go to the account's verified address: the factor, and whether it was turned on now (false when
    /// it was on already: nothing is mailed or audited again).
    func enrollEmail(_ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws
        -> (factor: UserFactorRecord, created: Bool)
    {
        try accounts.requireRecentAuthentication(caller.claims)
        if let existing = try await store.factors(userId: user.id).first(where: { $0.kind == .emailOTP }) { return (existing, false) }
        // Codes go only to an address the person proved; the verified address already did, so no extra code here.
        guard Accounts.verifiedEmail(of: user) != nil else { throw Errors.emailUnverified }
        let factor = UserFactorRecord(userId: user.id, kind: .emailOTP, secret: "", createdAt: clock.now)
        try await store.upsertFactor(factor)
        await changed(user, .email, added: true, replaced: false, locale: locale, origin: origin)
        return (factor, true)
    }

    // MARK: - Recovery codes

    /// A new set of recovery codes, replacing the earlier one: the codes (shown this once; the server keeps only their
    /// digests) and their summary. Needs a usable factor for the codes to stand in for.
    func generateRecoveryCodes(_ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws
        -> (codes: [String], summary: RecoveryCodeSummary)
    {
        try accounts.requireRecentAuthentication(caller.claims)
        guard try await store.factors(userId: user.id).contains(where: { Self.usable($0, of: user) }) else { throw Errors.noFactorToRecover }
        let replaced = try await store.recoveryCodes(userId: user.id) != nil
        let generated = try await accounts.generateRecoveryCodes(userId: user.id)
        origin.logger.info("recovery codes generated by their account", metadata: ["user": .string(user.id)])
        await audit.record(
            .mfaEnrolled, subject: user.id, details: replaced ? ["factor": "recovery_codes", "replaced": "true"] : ["factor": "recovery_codes"],
            origin: origin)
        await accounts.notifyAccountChange(user, "mfa_recovery_codes_added", locale: locale, logger: origin.logger)
        return generated
    }

    // MARK: - Remove

    /// Removes the account's factor of `name` (`totp`, `email`). Refused (`409`) when it is the account's last usable
    /// factor and an application requires a second factor (`applicationsRequiringMFA`): the person would lock
    /// themselves out of it.
    func remove(_ name: String, of user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws {
        try accounts.requireRecentAuthentication(caller.claims)
        guard let kind = FactorKind(rawValue: name) else { throw Errors.notEnrolled(Federation.printable(name)) }
        let factors = try await store.factors(userId: user.id)
        guard let removed = factors.first(where: { $0.kind == kind.stored }) else { throw Errors.notEnrolled(kind.rawValue) }
        let remaining = factors.filter { $0.kind != kind.stored && Self.usable($0, of: user) }
        // An unusable factor (emailed codes without a verified address) asks for nothing at sign-in: it can always go.
        if Self.usable(removed, of: user), remaining.isEmpty, !(try await applicationsRequiringMFA(user, caller: caller).isEmpty) {
            await audit.record(.mfaRemoved, .failure, subject: user.id, details: ["factor": kind.rawValue, "reason": "last_factor"], origin: origin)
            throw Errors.lastFactor
        }
        try await store.deleteFactor(userId: user.id, kind: kind.stored)
        // No usable factor left: sign-in asks for none, and recovery codes would only wait for a future one.
        if remaining.isEmpty { try await store.deleteRecoveryCodes(userId: user.id) }
        await changed(user, kind, added: false, replaced: false, locale: locale, origin: origin)
    }

    // MARK: - Shared

    /// The log line, the audit event and the notice of a change.
    private func changed(_ user: UserRecord, _ kind: FactorKind, added: Bool, replaced: Bool, locale: SupportedLocale, origin: AuditOrigin) async {
        var details = ["factor": kind.rawValue]
        if replaced { details["replaced"] = "true" }
        origin.logger.info(
            added ? "second factor enrolled by its account" : "second factor removed by its account",
            metadata: ["user": .string(user.id), "factor": .string(kind.rawValue)])
        await audit.record(added ? .mfaEnrolled : .mfaRemoved, subject: user.id, details: details, origin: origin)
        await accounts.notifyAccountChange(user, "mfa_\(kind.rawValue)_\(added ? "added" : "removed")", locale: locale, logger: origin.logger)
    }

    /// A factor's name in the API and on the page (`email`, where the store says `email_otp`).
    enum FactorKind: String, CaseIterable, Sendable {
        case totp, email

        init(_ stored: UserFactorRecord.Kind) {
            switch stored {
            case .totp: self = .totp
            case .emailOTP: self = .email
            }
        }

        var stored: UserFactorRecord.Kind {
            switch self {
            case .totp: .totp
            case .email: .emailOTP
            }
        }
    }

    enum Errors {
        static let wrongCode = APIError(
            status: .badRequest, code: "MFA-1001", error: "invalid_grant", messageKey: "error.userservice.mfa_code_invalid",
            userMessage: "That code is not right. Check the code in your authenticator app and try again.",
            technical: "the code does not match the authenticator being enrolled (or the device's clock is off)")

        static let enrollmentExpired = APIError(
            status: .badRequest, code: "MFA-1002", error: "invalid_grant", messageKey: "error.userservice.mfa_enrollment_expired",
            userMessage: "This set-up has expired. Start again.",
            technical: "the enrollment is expired, was confirmed already, or belongs to another account: POST /users/me/factors/totp again")

        static let emailUnverified = APIError(
            status: .badRequest, code: "MFA-1003", error: "invalid_request", messageKey: "error.userservice.mfa_email_unverified",
            userMessage: "Verify your email address first.", technical: "the account has no verified email address to send codes to")

        static func notEnrolled(_ kind: String) -> APIError {
            APIError(
                status: .notFound, code: "MFA-1004", error: "not_found", messageKey: "error.userservice.mfa_not_enrolled",
                userMessage: "This sign-in step is not set up.", technical: "the account has no \(kind) factor (kinds: totp, email)")
        }

        static let lastFactor = APIError(
            status: .conflict, code: "MFA-1005", error: "invalid_request", messageKey: "error.userservice.mfa_last_factor",
            userMessage: "You can't remove your only second sign-in step: an app you're signed in to requires one.",
            technical:
                "the account's last usable second factor: the calling application, or one the account is signed in to, requires a second factor (require_mfa)"
        )

        static let noFactorToRecover = APIError(
            status: .conflict, code: "MFA-1007", error: "invalid_request", messageKey: "error.userservice.mfa_recovery_needs_factor",
            userMessage: "Set up a second sign-in step first: recovery codes stand in for it.",
            technical: "the account has no usable second factor (totp, or email with a verified address) for recovery codes to stand in for")

        static func tooManyCodes(seconds: Int) -> APIError {
            let message = LocalizedMessage.codesLocked(seconds: seconds)
            return APIError(
                status: .tooManyRequests, code: "MFA-1006", error: "invalid_request", messageKey: message.key,
                userMessage: message.english, technical: "too many wrong codes for this account; retry in \(seconds) s",
                arguments: message.arguments)
        }
    }
}
