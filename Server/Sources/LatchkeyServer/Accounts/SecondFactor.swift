import Foundation

/// RFC 8176 authentication method references, and what makes a sign-in multi-factor.
enum AuthenticationMethods {
    /// The `acr` of a multi-factor sign-in (OpenID PAPE's multi-factor policy URI). Single-factor sign-ins carry no
    /// `acr`, so a relying party that needs MFA checks for this value (or `mfa` in `amr`).
    static let multiFactorACR = "http://schemas.openid.net/pape/policies/2007/06/multi-factor"
    /// The `acr` of a single-factor sign-in, sent when the request asked for `acr` (`acr_values`, `claims`), so the
    /// client learns what was done rather than nothing.
    static let singleFactorACR = "urn:latchkey:acr:single-factor"

    /// A password followed by a one-time code: `pwd otp mfa`.
    static func withSecondFactor(_ amr: [String]) -> [String] { normalized(amr + ["otp"]) }

    /// The methods of a passkey sign-in: `hwk` for a device-bound key, `swk` for a synced (backup-eligible) one, `user`
    /// (the authenticator tested presence), and `mfa` when it also verified the user (PIN or biometric), which makes
    /// the passkey possession plus knowledge or inherence.
    static func passkey(userVerified: Bool, backupEligible: Bool) -> [String] {
        normalized([backupEligible ? "swk" : "hwk", "user"] + (userVerified ? ["mfa"] : []))
    }

    /// Adds `mfa` when two independent factors were used (a password and a one-time code), removes duplicates, and
    /// keeps the order.
    static func normalized(_ amr: [String]) -> [String] {
        var out: [String] = []
        for method in amr where !out.contains(method) { out.append(method) }
        if out.contains("pwd"), out.contains("otp"), !out.contains("mfa") { out.append("mfa") }
        return out
    }

    static func isMultiFactor(_ amr: [String]) -> Bool { normalized(amr).contains("mfa") }

    /// A federated sign-in's provider travels with its methods, as `idp:<id>`, through sessions, codes and refresh
    /// tokens (which store `amr` already), and is published as the tokens' `idp` claim, never inside `amr`.
    static let providerMarker = "idp:"

    /// The provider of a federated sign-in, if this was one.
    static func provider(_ amr: [String]) -> String? {
        amr.first { $0.hasPrefix(providerMarker) }.map { String($0.dropFirst(providerMarker.count)) }
    }

    /// A code (and the tokens and refresh tokens it turns into) that a live SSO session answered for, with no
    /// credential shown to this application: its `auth_time` is the session's, not this token's. Such a token does not
    /// count as a recent sign-in for changing a credential (`Accounts.requireRecentAuthentication`), so a token another
    /// application got silently cannot add a passkey. Never on a session, never published.
    static let reusedMarker = "lk:sso"

    /// Whether the methods are those of a token that an SSO session answered for (`reusedMarker`).
    static func isReused(_ amr: [String]) -> Bool { amr.contains(reusedMarker) }

    /// The `amr` claim: the methods without the provider and reuse markers.
    static func published(_ amr: [String]) -> [String] {
        normalized(amr).filter { !$0.hasPrefix(providerMarker) && $0 != reusedMarker }
    }

    static func acr(for amr: [String]) -> String? { isMultiFactor(amr) ? multiFactorACR : nil }
}

/// The second factors an account can be asked for, shared by the flows, the reachFive step-up and the hosted page.
enum SecondFactor: String, Sendable {
    case totp
    case email

    static let codeLength = 6
    /// Wrong codes allowed per challenge (flow execution, step-up challenge, hosted-page sign-in).
    static let maxAttempts = 5
    /// Emailed codes per challenge.
    static let maxSends = 5

    /// A fresh 6-digit code for email delivery.
    static func newCode() -> String { String(format: "%06d", Int.random(in: 0..<1_000_000)) }

    /// The submitted code without the spaces people type or paste.
    static func cleaned(_ submitted: String?) -> String { (submitted ?? "").filter { !$0.isWhitespace } }
}

extension Accounts {
    /// The factor to ask `user` for: TOTP first (it needs no delivery), else emailed codes when the account has an
    /// email address; nil when it has neither.
    func enrolledSecondFactor(of user: UserRecord) async throws -> SecondFactor? {
        let kinds = Set(try await store.factors(userId: user.id).map(\.kind))
        if kinds.contains(.totp) { return .totp }
        if kinds.contains(.emailOTP), Self.verifiedEmail(of: user) != nil { return .email }
        return nil
    }

    /// The account's email address when it is verified: codes go only to an address someone proved (one typed in at
    /// sign-up or set by an administrator may belong to someone else).
    static func verifiedEmail(of user: UserRecord) -> String? {
        guard let email = user.claims["email"], !email.isEmpty, user.claims["email_verified"] == "true" else { return nil }
        return email
    }

    /// Emails a sign-in code (`email.code.signin.*` in `locale`) to `user`'s verified address and returns its keyed
    /// digest; nil when the account has no verified email address. The code itself is never returned or logged.
    func sendSignInCode(
        to user: UserRecord, appName: String, locale: SupportedLocale,
        code: String = SecondFactor.newCode()
    ) async throws -> Data? {
        guard let email = Self.verifiedEmail(of: user) else { return nil }
        let arguments = ["code": code, "app": appName, "minutes": String(MessageCatalog.minutes(seconds: configuration.lifetimes.oneTimeCode))]
        try await outbox.send(
            OutboxMessage(
                id: Secrets.identifier(), channel: .email, recipient: email,
                subject: MessageCatalog.text("email.code.signin.subject", locale: locale, default: "Your code"),
                body: MessageCatalog.text("email.code.signin.body", locale: locale, arguments: arguments, default: code), code: code,
                createdAt: clock.now))
        return codeDigest(code)
    }
}
