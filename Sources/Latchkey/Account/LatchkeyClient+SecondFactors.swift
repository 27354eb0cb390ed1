import Foundation

/// A kind of second factor a person can add to their account.
public enum SecondFactorKind: String, Sendable, Equatable, CaseIterable {
    /// Codes from an authenticator app (TOTP, RFC 6238).
    case totp
    /// Codes sent to the account's verified email address.
    case email
}

/// One second factor of the signed-in account: its kind and when it was added, never its secret.
public struct SecondFactor: Sendable, Equatable {
    /// What it is.
    public var kind: SecondFactorKind
    /// When it was added.
    public var createdAt: Date
    /// False for emailed codes while the account has no verified email address: they cannot be sent then.
    public var isUsable: Bool

    /// A factor.
    public init(kind: SecondFactorKind, createdAt: Date, isUsable: Bool) {
        self.kind = kind; self.createdAt = createdAt; self.isUsable = isUsable
    }
}

/// The account's second factors, and whether an application requires one.
public struct SecondFactors: Sendable, Equatable {
    /// The factors, oldest first.
    public var factors: [SecondFactor]
    /// The account's recovery codes, counted; nil when it has none.
    public var recoveryCodes: RecoveryCodesStatus?
    /// Whether an application requires a second factor (this one, or one the account is signed in to): then the last
    /// usable one cannot be removed.
    public var isRequired: Bool

    /// A list.
    public init(factors: [SecondFactor], recoveryCodes: RecoveryCodesStatus? = nil, isRequired: Bool) {
        self.factors = factors; self.recoveryCodes = recoveryCodes; self.isRequired = isRequired
    }
}

/// How many of the account's recovery codes are left; the codes themselves were shown once, when generated.
public struct RecoveryCodesStatus: Sendable, Equatable {
    /// When the current set was generated.
    public var createdAt: Date
    /// Codes not used yet. Suggest a new set when few are left.
    public var remaining: Int
    /// Codes in the set.
    public var total: Int

    /// A status.
    public init(createdAt: Date, remaining: Int, total: Int) { self.createdAt = createdAt; self.remaining = remaining; self.total = total }
}

/// A new set of recovery codes, from ``LatchkeyClient/generateRecoveryCodes(sessionId:)``: show ``codes`` this once
/// (to write down, print or save in a password manager), then let the value go. Each code signs in once in place of
/// the second factor, typed where the six-digit code goes.
public struct RecoveryCodes: Sendable, Equatable {
    /// The codes, in display form (`ABCDE-FGHJK`); case, spaces and the hyphen do not matter when typed back.
    public var codes: [String]
    /// When the set was generated; the earlier set stopped working then.
    public var createdAt: Date

    /// A set.
    public init(codes: [String], createdAt: Date) { self.codes = codes; self.createdAt = createdAt }
}

// Printing, interpolating or dumping a set never shows a code.
extension RecoveryCodes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "RecoveryCodes(codes: \(codes.count) redacted, createdAt: \(createdAt))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// An authenticator app being added: show ``uri`` as a QR code (or a link the authenticator app opens) and
/// ``secret`` for typing in by hand, then pass the app's first code to ``LatchkeyClient/confirmTOTPEnrollment(_:code:sessionId:)``.
///
/// The secret is shown this once: keep the value only while the screen shows it, and never log or store it.
public struct TOTPEnrollment: Sendable, Equatable {
    /// The key in base32, for typing in by hand (authenticator apps ignore spaces, so it may be shown in groups).
    public var secret: String
    /// `otpauth://totp/<issuer>:<username>?secret=…&issuer=…`.
    public var uri: URL
    /// The server's sealed record of this enrollment, sent back with the first code.
    public var enrollment: String
    /// After this the first code is no longer accepted: start again.
    public var expiresAt: Date

    /// An enrollment.
    public init(secret: String, uri: URL, enrollment: String, expiresAt: Date) {
        self.secret = secret; self.uri = uri; self.enrollment = enrollment; self.expiresAt = expiresAt
    }
}

// Printing, interpolating or dumping an enrollment never shows its secret (nor the URI and sealed record that hold it).
extension TOTPEnrollment: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "TOTPEnrollment(secret: redacted, uri: redacted, enrollment: redacted, expiresAt: \(expiresAt))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// The signed-in person's own second factors (`/users/me/factors`): list them, add an authenticator app or emailed
/// codes, generate recovery codes, remove one.
///
/// Every change needs a recent sign-in (the server's `recent_auth_seconds`): otherwise `.reauthenticationRequired`
/// is thrown and nothing changes; sign in again (`prompt=login`) and retry. The server mails the person about every
/// change and records it in the audit trail.
///
/// ```swift
/// let enrollment = try await client.startTOTPEnrollment()
/// // show enrollment.uri as a QR code and enrollment.secret as text, then:
/// try await client.confirmTOTPEnrollment(enrollment, code: typedCode)
/// ```
extension LatchkeyClient {
    /// The account's second factors (`GET /users/me/factors`). Needs no recent sign-in.
    /// - Parameter sessionId: the session whose access token is used (multi-session apps).
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.authenticationFailed` when the token
    ///   may not manage the account; `.serverError` for an answer without `factors`; `.networkError`.
    public func secondFactors(sessionId: String? = nil) async throws -> SecondFactors {
        try await session(sessionId).secondFactors()
    }

    /// Starts adding an authenticator app (`POST /users/me/factors/totp`): a new secret, shown once. Nothing changes on
    /// the account until ``confirmTOTPEnrollment(_:code:sessionId:)`` sends the app's first code.
    /// - Parameter sessionId: the session whose access token is used.
    /// - Returns: the secret, its `otpauth://` URI and the enrollment to confirm.
    /// - Throws: `.reauthenticationRequired` when the sign-in is not recent enough; `.sessionExpired`;
    ///   `.authenticationFailed`; `.serverError` for an incomplete answer; `.networkError`.
    public func startTOTPEnrollment(sessionId: String? = nil) async throws -> TOTPEnrollment {
        try await session(sessionId).startTOTPEnrollment()
    }

    /// Turns the authenticator app on with its first code (`POST /users/me/factors/totp/verify`); an earlier
    /// authenticator is replaced. From the next sign-in on, its codes are asked for.
    /// - Parameters:
    ///   - enrollment: what ``startTOTPEnrollment(sessionId:)`` answered.
    ///   - code: the 6 digits the app shows (spaces are ignored).
    ///   - sessionId: the session whose access token is used.
    /// - Returns: the factor as added.
    /// - Throws: `.mfaFailed` for a wrong code (try the next one) or, with HTTP status 429, after too many wrong codes;
    ///   `.confirmationCodeExpired` when the enrollment expired or was confirmed already (start again);
    ///   `.reauthenticationRequired`; `.sessionExpired`; `.networkError`.
    @discardableResult
    public func confirmTOTPEnrollment(_ enrollment: TOTPEnrollment, code: String, sessionId: String? = nil) async throws -> SecondFactor {
        try await session(sessionId).confirmTOTPEnrollment(enrollment, code: code)
    }

    /// Turns emailed sign-in codes on (`POST /users/me/factors/email`); nothing changes when they are on already.
    /// - Parameter sessionId: the session whose access token is used.
    /// - Returns: the factor.
    /// - Throws: `.invalidInput` when the account has no verified email address (verify it first);
    ///   `.reauthenticationRequired`; `.sessionExpired`; `.networkError`.
    @discardableResult
    public func enableEmailCodes(sessionId: String? = nil) async throws -> SecondFactor {
        try await session(sessionId).enableEmailCodes()
    }

    /// Generates a new set of recovery codes (`POST /users/me/factors/recovery-codes`), replacing the earlier set.
    /// Each code signs in once in place of the second factor; the server keeps only digests, so show them now.
    /// - Parameter sessionId: the session whose access token is used.
    /// - Returns: the codes, shown this once.
    /// - Throws: `.invalidInput` (HTTP status 409) when the account has no usable second factor for the codes to stand in
    ///   for (add one first); `.reauthenticationRequired`; `.sessionExpired`; `.serverError` for an incomplete answer;
    ///   `.networkError`.
    public func generateRecoveryCodes(sessionId: String? = nil) async throws -> RecoveryCodes {
        try await session(sessionId).generateRecoveryCodes()
    }

    /// Removes a second factor (`DELETE /users/me/factors/{kind}`). Removing the last usable one also deletes the
    /// recovery codes.
    /// - Parameters:
    ///   - kind: which one.
    ///   - sessionId: the session whose access token is used.
    /// - Throws: `.invalidInput` with HTTP status 409 when it is the last usable one and an application requires a
    ///   second factor (this one, or one the account is signed in to; add another first), or with 404 when the account has none of this kind;
    ///   `.reauthenticationRequired`; `.sessionExpired`; `.networkError`.
    public func removeSecondFactor(_ kind: SecondFactorKind, sessionId: String? = nil) async throws {
        try await session(sessionId).removeSecondFactor(kind)
    }

    // MARK: Internals

    /// One call of the factors API with the session's access token; the JSON object answered (empty for `204`).
    static func factorsCall(
        _ context: OAuthClient, _ method: String, _ path: String, body: JSONValue? = nil, sessionId: String?
    ) async throws -> [String: JSONValue] {
        let tokens = try await context.tokens.usableTokens(sessionId)
        var headers = ["Accept": "application/json"]
        let data = try IdentityAPI.jsonBody(body, headers: &headers)
        let response = try await context.sendAuthorized(
            HTTPRequest(method: method, url: context.endpoint(path), headers: headers, body: data), tokens: tokens)
        guard (200..<300).contains(response.status) else { throw LatchkeyError.secondFactor(response) }
        return response.status == 204 ? [:] : try IdentityAPI.object(response, "second factors")
    }

    static func secondFactor(_ json: JSONValue) -> SecondFactor? {
        guard let object = json.objectMembers, let kind = object["kind"]?.stringValue.flatMap(SecondFactorKind.init(rawValue:)),
            let createdAt = object["createdAt"]?.stringValue.flatMap({ ISO8601DateFormatter().date(from: $0) })
        else { return nil }
        return SecondFactor(kind: kind, createdAt: createdAt, isUsable: object["usable"]?.boolValue ?? true)
    }

    static func recoveryCodesStatus(_ json: JSONValue) -> RecoveryCodesStatus? {
        guard let object = json.objectMembers, let remaining = object["remaining"]?.doubleValue.flatMap({ Int(exactly: $0) }),
            let total = object["total"]?.doubleValue.flatMap({ Int(exactly: $0) }),
            let createdAt = object["createdAt"]?.stringValue.flatMap({ ISO8601DateFormatter().date(from: $0) })
        else { return nil }
        return RecoveryCodesStatus(createdAt: createdAt, remaining: remaining, total: total)
    }

    static func addedFactor(_ object: [String: JSONValue]) throws -> SecondFactor {
        guard let factor = secondFactor(.object(object)) else { throw LatchkeyError(.serverError, "the factor answer lacks kind or createdAt") }
        return factor
    }
}

extension LatchkeyError {
    /// Maps a failed call of the factors API: read as the profile's (`profile(_:selfTarget:)`), then the server's
    /// `MFA-*` codes: a wrong or too many codes → `.mfaFailed`, an expired enrollment → `.confirmationCodeExpired`,
    /// a missing factor, an unverified address or the last required factor → `.invalidInput`.
    static func secondFactor(_ response: HTTPResponse) -> LatchkeyError {
        var error = LatchkeyError.profile(response, selfTarget: false)
        switch error.serverCode {
        case "MFA-1001", "MFA-1006": error.code = .mfaFailed
        case "MFA-1002": error.code = .confirmationCodeExpired
        case "MFA-1003", "MFA-1004", "MFA-1005", "MFA-1007": error.code = .invalidInput
        case "USR-1003": error.code = .sessionExpired  // the account no longer exists
        default:
            if error.code == .reauthenticationRequired {
                error.message = "changing second factors needs a recent sign-in: sign in again (prompt=login) and retry (server: \(error.message))"
            }
        }
        return error
    }
}

/// The session's person's second factors (the core of `secondFactors(sessionId:)` and the rest).
extension LatchkeySession {
    /// The account's second factors (`GET /users/me/factors`). Needs no recent sign-in.
    /// - Throws: `.sessionExpired` when not signed in or the token is refused; `.authenticationFailed` when the token
    ///   may not manage the account; `.serverError` for an answer without `factors`; `.networkError`.
    public func secondFactors() async throws -> SecondFactors {
        try await client.loading {
            let object = try await LatchkeyClient.factorsCall(try client.context(), "GET", "/users/me/factors", sessionId: name)
            guard case .array(let items)? = object["factors"] else {
                throw LatchkeyError(.serverError, "the factors answer has no factors")
            }
            return SecondFactors(
                factors: items.compactMap(LatchkeyClient.secondFactor),
                recoveryCodes: object["recoveryCodes"].flatMap(LatchkeyClient.recoveryCodesStatus),
                isRequired: object["mfaRequired"]?.boolValue ?? false)
        }
    }

    /// Starts adding an authenticator app (`POST /users/me/factors/totp`): a new secret, shown once. Nothing changes on
    /// the account until ``confirmTOTPEnrollment(_:code:)`` sends the app's first code.
    /// - Returns: the secret, its `otpauth://` URI and the enrollment to confirm.
    /// - Throws: `.reauthenticationRequired` when the sign-in is not recent enough; `.sessionExpired`;
    ///   `.authenticationFailed`; `.serverError` for an incomplete answer; `.networkError`.
    public func startTOTPEnrollment() async throws -> TOTPEnrollment {
        try await client.loading {
            let object = try await LatchkeyClient.factorsCall(try client.context(), "POST", "/users/me/factors/totp", sessionId: name)
            guard let secret = object["secret"]?.stringValue, let uri = object["uri"]?.stringValue.flatMap(URL.init(string:)),
                let enrollment = object["enrollment"]?.stringValue,
                let expiresAt = object["expiresAt"]?.stringValue.flatMap({ ISO8601DateFormatter().date(from: $0) })
            else {
                throw LatchkeyError(.serverError, "the enrollment answer lacks secret, uri, enrollment or expiresAt")
            }
            return TOTPEnrollment(secret: secret, uri: uri, enrollment: enrollment, expiresAt: expiresAt)
        }
    }

    /// Turns the authenticator app on with its first code (`POST /users/me/factors/totp/verify`); an earlier
    /// authenticator is replaced. From the next sign-in on, its codes are asked for.
    /// - Parameters:
    ///   - enrollment: what ``startTOTPEnrollment()`` answered.
    ///   - code: the 6 digits the app shows (spaces are ignored).
    /// - Returns: the factor as added.
    /// - Throws: `.mfaFailed` for a wrong code (try the next one) or, with HTTP status 429, after too many wrong codes;
    ///   `.confirmationCodeExpired` when the enrollment expired or was confirmed already (start again);
    ///   `.reauthenticationRequired`; `.sessionExpired`; `.networkError`.
    @discardableResult
    public func confirmTOTPEnrollment(_ enrollment: TOTPEnrollment, code: String) async throws -> SecondFactor {
        try await client.loading {
            let body: JSONValue = .object(["enrollment": .string(enrollment.enrollment), "code": .string(code)])
            return try LatchkeyClient.addedFactor(
                try await LatchkeyClient.factorsCall(try client.context(), "POST", "/users/me/factors/totp/verify", body: body, sessionId: name))
        }
    }

    /// Turns emailed sign-in codes on (`POST /users/me/factors/email`); nothing changes when they are on already.
    /// - Returns: the factor.
    /// - Throws: `.invalidInput` when the account has no verified email address (verify it first);
    ///   `.reauthenticationRequired`; `.sessionExpired`; `.networkError`.
    @discardableResult
    public func enableEmailCodes() async throws -> SecondFactor {
        try await client.loading {
            try LatchkeyClient.addedFactor(
                try await LatchkeyClient.factorsCall(try client.context(), "POST", "/users/me/factors/email", sessionId: name))
        }
    }

    /// Generates a new set of recovery codes (`POST /users/me/factors/recovery-codes`), replacing the earlier set.
    /// Each code signs in once in place of the second factor; the server keeps only digests, so show them now.
    /// - Returns: the codes, shown this once.
    /// - Throws: `.invalidInput` (HTTP status 409) when the account has no usable second factor for the codes to stand in
    ///   for (add one first); `.reauthenticationRequired`; `.sessionExpired`; `.serverError` for an incomplete answer;
    ///   `.networkError`.
    public func generateRecoveryCodes() async throws -> RecoveryCodes {
        try await client.loading {
            let object = try await LatchkeyClient.factorsCall(try client.context(), "POST", "/users/me/factors/recovery-codes", sessionId: name)
            guard case .array(let items)? = object["codes"],
                let createdAt = object["createdAt"]?.stringValue.flatMap({ ISO8601DateFormatter().date(from: $0) })
            else {
                throw LatchkeyError(.serverError, "the recovery codes answer lacks codes or createdAt")
            }
            let codes = items.compactMap(\.stringValue)
            guard !codes.isEmpty, codes.count == items.count else { throw LatchkeyError(.serverError, "the recovery codes answer has no codes") }
            return RecoveryCodes(codes: codes, createdAt: createdAt)
        }
    }

    /// Removes a second factor (`DELETE /users/me/factors/{kind}`). Removing the last usable one also deletes the
    /// recovery codes.
    /// - Parameter kind: which one.
    /// - Throws: `.invalidInput` with HTTP status 409 when it is the last usable one and an application requires a
    ///   second factor (this one, or one the account is signed in to; add another first), or with 404 when the account has none of this kind;
    ///   `.reauthenticationRequired`; `.sessionExpired`; `.networkError`.
    public func removeSecondFactor(_ kind: SecondFactorKind) async throws {
        try await client.loading {
            _ = try await LatchkeyClient.factorsCall(try client.context(), "DELETE", "/users/me/factors/\(kind.rawValue)", sessionId: name)
        }
    }
}
