import Foundation
import Hummingbird
import HummingbirdOTP
import Logging

/// The signed-in person's own second factors (`/users/me/factors`): list them, add an authenticator app (TOTP) or
/// emailed codes, remove one. Until now only an operator could enroll a factor.
///
/// Every change needs a recent interactive sign-in (as changing the email or linking a provider does), mails the
/// account's verified address and is audited (`mfa.enrolled`, `mfa.removed`): a token that leaked must not be enough
/// to add an attacker's authenticator, or quietly take away the owner's.
///
/// An authenticator is added in two steps, so that a secret the person never managed to scan is never required at
/// sign-in: `POST /users/me/factors/totp` answers the secret (once) with its `otpauth://` URI and a sealed
/// `enrollment`; `POST /users/me/factors/totp/verify` with that `enrollment` and the app's first code turns it on.
/// The pending secret lives only in the sealed `enrollment` (AES-GCM under the key-encryption key, bound to the
/// account), so nothing is stored until it is confirmed.
///
/// Recovery codes (`POST /users/me/factors/recovery-codes`) are generated for an account that has a usable factor,
/// shown once, and replaced whole by the next set; removing the last usable factor deletes them (they stand in for a
/// factor and have nothing to stand in for).
struct SecondFactorsController: Sendable {
    let store: any SecondFactorStore & RecoveryCodeStore & ClientStore & SingleUseStore
    let clock: ServerClock
    let accounts: Accounts
    let audit: AuditTrail

    /// How long a started TOTP enrollment can be confirmed.
    static let enrollmentSeconds: TimeInterval = 10 * 60

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("factors") { _, context in
            try await self.list(try SelfServiceController.user(context.caller), caller: context.caller)
        }
        group.post("factors/totp") { _, context in
            try await self.startTOTP(try SelfServiceController.user(context.caller), caller: context.caller)
        }
        group.post("factors/totp/verify") { request, context in
            try await self.confirmTOTP(
                request, try SelfServiceController.user(context.caller), caller: context.caller, origin: context.auditOrigin)
        }
        group.post("factors/email") { request, context in
            try await self.enrollEmail(
                try SelfServiceController.user(context.caller), caller: context.caller, locale: request.locale(), origin: context.auditOrigin)
        }
        group.post("factors/recovery-codes") { request, context in
            try await self.generateRecoveryCodes(
                try SelfServiceController.user(context.caller), caller: context.caller, locale: request.locale(), origin: context.auditOrigin)
        }
        // Each kind by name: the router matches `factors/email` (a POST route) before a `factors/:kind` parameter.
        for name in FactorKind.allCases.map(\.rawValue) + [":kind"] {
            group.delete(RouterPath("factors/\(name)")) { request, context in
                try await self.remove(
                    context.parameters.get("kind") ?? name, try SelfServiceController.user(context.caller), caller: context.caller,
                    locale: request.locale(), origin: context.auditOrigin)
            }
        }
    }

    // MARK: - List

    private struct FactorsBody: Encodable {
        var factors: [FactorBody]
        /// The account's recovery codes, counted (absent when it has none).
        var recoveryCodes: RecoveryCodesBody?
        /// Whether the calling application requires a second factor (`require_mfa`): the last one cannot be removed.
        var mfaRequired: Bool
    }

    private struct FactorBody: Encodable {
        var kind: String
        var createdAt: String
        /// False for emailed codes while the account has no verified email address (they cannot be sent).
        var usable: Bool
    }

    private struct RecoveryCodesBody: Encodable {
        var createdAt: String
        var remaining: Int
        var total: Int

        init(_ summary: RecoveryCodeSummary) {
            createdAt = ISO8601DateFormatter().string(from: summary.createdAt)
            remaining = summary.remaining
            total = summary.total
        }
    }

    /// `GET /users/me/factors`: the kinds and dates, never a secret. Reading needs no recent sign-in.
    private func list(_ user: UserRecord, caller: ResourceCaller) async throws -> Response {
        let factors = try await store.factors(userId: user.id)
        return try Responses.json(
            FactorsBody(
                factors: factors.sorted(by: Self.oldestFirst).map { factorBody($0, of: user) },
                recoveryCodes: try await store.recoveryCodes(userId: user.id).map(RecoveryCodesBody.init),
                mfaRequired: try await requiresMFA(caller)),
            noStore: true)
    }

    /// Oldest first; factors added in the same instant in the order of `FactorKind`, so the list never shuffles.
    private static func oldestFirst(_ a: UserFactorRecord, _ b: UserFactorRecord) -> Bool {
        guard a.createdAt == b.createdAt else { return a.createdAt < b.createdAt }
        let order = FactorKind.allCases.map(\.stored)
        return (order.firstIndex(of: a.kind) ?? 0) < (order.firstIndex(of: b.kind) ?? 0)
    }

    private func factorBody(_ factor: UserFactorRecord, of user: UserRecord) -> FactorBody {
        let kind = FactorKind(factor.kind)
        return FactorBody(
            kind: kind.rawValue, createdAt: ISO8601DateFormatter().string(from: factor.createdAt),
            usable: kind == .totp || Accounts.verifiedEmail(of: user) != nil)
    }

    // MARK: - Authenticator app

    /// What a started enrollment carries, sealed to the account.
    private struct PendingTOTP: Codable {
        /// Spent when the enrollment is confirmed (`consumeTokenId`): an enrollment turns an authenticator on once.
        var id: String
        var secret: String
        var expiresAt: TimeInterval
    }

    private struct StartedBody: Encodable {
        /// The key in base32, for typing into an authenticator app by hand.
        var secret: String
        /// `otpauth://totp/…`, for a QR code or a link the authenticator app opens.
        var uri: String
        var enrollment: String
        var expiresAt: String
    }

    /// `POST /users/me/factors/totp`: a new secret, shown this once. Nothing changes on the account yet.
    private func startTOTP(_ user: UserRecord, caller: ResourceCaller) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        let secret = Secrets.token(bytes: 20)
        let expiresAt = clock.now.addingTimeInterval(Self.enrollmentSeconds)
        let pending = String(
            decoding: try JSONEncoder().encode(PendingTOTP(id: Secrets.identifier(), secret: secret, expiresAt: expiresAt.timeIntervalSince1970)),
            as: UTF8.self)
        let enrollment = try accounts.sealer.seal(pending, context: Self.enrollmentContext(user.id))
        // The factor guards the whole account, not one application: the server is the issuer authenticator apps show.
        let issuer = accounts.configuration.issuer.host ?? "Latchkey"
        let uri = try Self.authenticatorURI(secret: secret, issuer: issuer, username: user.username)
        return try Responses.json(
            StartedBody(secret: uri.secret, uri: uri.text, enrollment: enrollment, expiresAt: ISO8601DateFormatter().string(from: expiresAt)),
            status: .created, noStore: true)
    }

    private struct ConfirmBody: Decodable {
        var enrollment: String
        var code: String
    }

    /// `POST /users/me/factors/totp/verify` `{"enrollment", "code"}`: the first code from the app turns the
    /// authenticator on (replacing an earlier one). Wrong codes count against the account's second-factor budget, as
    /// at sign-in; the code is spent, and an enrollment is confirmed once.
    private func confirmTOTP(_ request: Request, _ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        let body = try await SelfServiceController.decode(ConfirmBody.self, request)
        guard let opened = try? accounts.sealer.open(body.enrollment, context: Self.enrollmentContext(user.id)),
            let pending = try? JSONDecoder().decode(PendingTOTP.self, from: Data(opened.utf8)),
            clock.now.timeIntervalSince1970 < pending.expiresAt
        else {
            origin.logger.notice("authenticator enrollment refused: expired, altered or another account's", metadata: ["user": .string(user.id)])
            throw Errors.enrollmentExpired
        }
        let budget = CodeBudget.secondFactor(userId: user.id)
        if let wait = try await accounts.reserveCodeAttempt(budget) { throw Errors.tooManyCodes(seconds: wait) }
        guard let step = TOTPVerifier.matchingStep(secret: pending.secret, code: SecondFactor.cleaned(body.code), now: clock.now) else {
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
        await changed(user, .totp, added: true, replaced: replaced, locale: request.locale(), origin: origin)
        return try Responses.json(factorBody(factor, of: user), status: .created, noStore: true)
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

    /// `POST /users/me/factors/email`: sign-in codes go to the account's verified address. `201` when turned on,
    /// `200` when they were on already (nothing mailed or audited again).
    private func enrollEmail(_ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        if let existing = try await store.factors(userId: user.id).first(where: { $0.kind == .emailOTP }) {
            return try Responses.json(factorBody(existing, of: user), noStore: true)
        }
        // Codes go only to an address the person proved; the verified address already did, so no extra code here.
        guard Accounts.verifiedEmail(of: user) != nil else { throw Errors.emailUnverified }
        let factor = UserFactorRecord(userId: user.id, kind: .emailOTP, secret: "", createdAt: clock.now)
        try await store.upsertFactor(factor)
        await changed(user, .email, added: true, replaced: false, locale: locale, origin: origin)
        return try Responses.json(factorBody(factor, of: user), status: .created, noStore: true)
    }

    // MARK: - Recovery codes

    private struct GeneratedCodesBody: Encodable {
        /// Shown this once: the server keeps only their digests.
        var codes: [String]
        var createdAt: String
        var remaining: Int
        var total: Int
    }

    /// `POST /users/me/factors/recovery-codes` → `201 {codes, createdAt, remaining, total}`: a new set, replacing the
    /// earlier one. Needs a usable factor for the codes to stand in for.
    private func generateRecoveryCodes(_ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws
        -> Response
    {
        try accounts.requireRecentAuthentication(caller.claims)
        guard try await store.factors(userId: user.id).contains(where: { factorBody($0, of: user).usable }) else { throw Errors.noFactorToRecover }
        let replaced = try await store.recoveryCodes(userId: user.id) != nil
        let (codes, summary) = try await accounts.generateRecoveryCodes(userId: user.id)
        origin.logger.info("recovery codes generated by their account", metadata: ["user": .string(user.id)])
        await audit.record(
            .mfaEnrolled, subject: user.id, details: replaced ? ["factor": "recovery_codes", "replaced": "true"] : ["factor": "recovery_codes"],
            origin: origin)
        do { try await accounts.notifyAccountChange(user, "mfa_recovery_codes_added", locale: locale) } catch {
            origin.logger.error("the account notice could not be sent", metadata: ["user": .string(user.id), "notice": "mfa_recovery_codes_added"])
        }
        return try Responses.json(
            GeneratedCodesBody(
                codes: codes, createdAt: ISO8601DateFormatter().string(from: summary.createdAt), remaining: summary.remaining, total: summary.total),
            status: .created, noStore: true)
    }

    // MARK: - Remove

    /// `DELETE /users/me/factors/{totp|email}` → `204`. Refused (`409`) when it is the account's last usable factor and
    /// the calling application requires a second factor: the person would lock themselves out of it.
    private func remove(_ name: String, _ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws
        -> Response
    {
        try accounts.requireRecentAuthentication(caller.claims)
        guard let kind = FactorKind(rawValue: name) else { throw Errors.notEnrolled(Federation.printable(name)) }
        let factors = try await store.factors(userId: user.id)
        guard let removed = factors.first(where: { $0.kind == kind.stored }) else { throw Errors.notEnrolled(kind.rawValue) }
        let remaining = factors.filter { $0.kind != kind.stored }.map { factorBody($0, of: user) }.filter(\.usable)
        // An unusable factor (emailed codes without a verified address) asks for nothing at sign-in: it can always go.
        if factorBody(removed, of: user).usable, remaining.isEmpty, try await requiresMFA(caller) {
            await audit.record(.mfaRemoved, .failure, subject: user.id, details: ["factor": kind.rawValue, "reason": "last_factor"], origin: origin)
            throw Errors.lastFactor
        }
        try await store.deleteFactor(userId: user.id, kind: kind.stored)
        // No usable factor left: sign-in asks for none, and recovery codes would only wait for a future one.
        if remaining.isEmpty { try await store.deleteRecoveryCodes(userId: user.id) }
        await changed(user, kind, added: false, replaced: false, locale: locale, origin: origin)
        return Responses.empty(status: .noContent)
    }

    // MARK: - Shared

    /// Whether the application the caller signed in to requires a second factor (an unknown one is treated as if it
    /// did: removing is the change that cannot be taken back from a stolen token's side).
    private func requiresMFA(_ caller: ResourceCaller) async throws -> Bool {
        try await store.client(id: caller.claims.clientId)?.configuration.requireMFA ?? true
    }

    /// The log line, the audit event and the notice of a change.
    private func changed(_ user: UserRecord, _ kind: FactorKind, added: Bool, replaced: Bool, locale: SupportedLocale, origin: AuditOrigin) async {
        var details = ["factor": kind.rawValue]
        if replaced { details["replaced"] = "true" }
        origin.logger.info(
            added ? "second factor enrolled by its account" : "second factor removed by its account",
            metadata: ["user": .string(user.id), "factor": .string(kind.rawValue)])
        await audit.record(added ? .mfaEnrolled : .mfaRemoved, subject: user.id, details: details, origin: origin)
        let notice = "mfa_\(kind.rawValue)_\(added ? "added" : "removed")"
        do { try await accounts.notifyAccountChange(user, notice, locale: locale) } catch {
            origin.logger.error("the account notice could not be sent", metadata: ["user": .string(user.id), "notice": .string(notice)])
        }
    }

    /// A factor's name in the API (`email`, where the store says `email_otp`).
    enum FactorKind: String, CaseIterable {
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
            userMessage: "You can't remove your only second sign-in step: this app requires one.",
            technical: "the application requires a second factor (require_mfa) and this is the account's last usable one")

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
