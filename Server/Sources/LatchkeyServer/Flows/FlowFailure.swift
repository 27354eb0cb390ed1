import Foundation
import Hummingbird

/// A flow error in the thunderID catalogue (`FES-` service, `FET-` executor, `ICS-` interceptor, `SSE-` server).
/// Codes from `thunderid-wire.md` §2.2/§2.8 keep their meaning; the `FET-109x` codes are ours, for what the vendor
/// cannot say (locked, disabled, expired code …), each mapped to one seed 003 code by the SDK.
struct FlowFailure: Error, Codable, Sendable, Equatable {
    var code: String
    /// Catalog key (`MessageCatalog`); the thunderID `message.key` on the wire.
    var key: String
    /// User-facing English, used when the catalog does not know `key` (failures defined by other code); otherwise
    /// the catalog's text in the execution's language is sent.
    var message: String
    /// Technical English.
    var description: String
    /// HTTP status when the failure is answered outside the flow body (`FES-` initiation errors).
    var httpStatus: Int = 200
    /// Values of the named placeholders in the catalog text.
    var arguments: [String: String] = [:]

    init(code: String, key: String, message: String, description: String, httpStatus: Int = 200, arguments: [String: String] = [:]) {
        self.code = code; self.key = key; self.message = message; self.description = description; self.httpStatus = httpStatus
        self.arguments = arguments
    }

    /// A failure whose user message is a catalog message (a `PasswordCheck` outcome …).
    init(code: String, _ message: LocalizedMessage, description: String, httpStatus: Int = 200) {
        self.init(
            code: code, key: message.key, message: message.english, description: description, httpStatus: httpStatus,
            arguments: message.arguments)
    }

    /// The user-facing text in `locale`.
    func text(_ locale: SupportedLocale) -> String {
        MessageCatalog.text(key, locale: locale, arguments: arguments, default: message)
    }

    /// The thunderID error object, its `message` in `locale` (`description` stays technical English).
    func body(_ locale: SupportedLocale) -> FlowErrorBody {
        FlowErrorBody(
            code: code, message: .init(key: key, defaultValue: text(locale)),
            description: .init(key: key + ".description", defaultValue: description))
    }

    var apiError: APIError {
        APIError(
            status: HTTPResponse.Status(code: httpStatus), code: code, error: "invalid_request", messageKey: key,
            userMessage: message, technical: description, arguments: arguments)
    }

    /// As `apiError`, answered in `locale` (the execution's language) rather than the one negotiated from headers.
    func apiError(_ locale: SupportedLocale?) -> APIError {
        var error = apiError
        error.locale = locale
        return error
    }

    // Service errors (HTTP status, not in-band)
    static func badRequest(_ why: String) -> FlowFailure {
        .init(code: "FES-1001", key: "flows.errors.bad_request", message: "The request could not be processed.", description: why, httpStatus: 400)
    }
    static let invalidApplication = FlowFailure(
        code: "FES-1003", key: "flows.errors.invalid_app", message: "This application is not known.",
        description: "applicationId does not name a registered application", httpStatus: 400)
    static let invalidExecution = FlowFailure(
        code: "FES-1004", key: "flows.errors.invalid_execution",
        message: "This sign-in has expired. Please start again.",
        description: "executionId is unknown, expired or already completed", httpStatus: 400)
    static let invalidFlowType = FlowFailure(
        code: "FES-1005", key: "flows.errors.invalid_flow_type", message: "The request could not be processed.",
        description: "flowType must be AUTHENTICATION, REGISTRATION, RECOVERY or SIGNOUT", httpStatus: 400)
    static let registrationDisabled = FlowFailure(
        code: "FES-1006", key: "flows.errors.registration_disabled",
        message: "Sign-up is not available for this application.",
        description: "self-registration is disabled for this application", httpStatus: 400)
    static let recoveryDisabled = FlowFailure(
        code: "FES-1009", key: "flows.errors.recovery_disabled",
        message: "Password recovery is not available for this application.",
        description: "password recovery is disabled for this application", httpStatus: 400)
    static let directInitiationForbidden = FlowFailure(
        code: "FES-1010", key: "flows.errors.direct_initiation",
        message: "This application must sign users in through the browser.",
        description: "direct flow initiation is not allowed for browser applications", httpStatus: 403)
    static let attestationMissing = FlowFailure(
        code: "FES-1014", key: "flows.errors.attestation_missing", message: "This app could not be verified.",
        description: "the application requires an Attestation-Token header", httpStatus: 401)
    static let attestationInvalid = FlowFailure(
        code: "FES-1015", key: "flows.errors.attestation_invalid", message: "This app could not be verified.",
        description: "the Attestation-Token is not valid for this application", httpStatus: 401)
    static let attestationUnconfigured = FlowFailure(
        code: "FES-1016", key: "flows.errors.attestation_unconfigured",
        message: "This app could not be verified.",
        description: "the application requires attestation but the server has no attestation verifier",
        httpStatus: 400)

    // Interceptor
    static let invalidChallenge = FlowFailure(
        code: "ICS-1002", key: "flows.errors.invalid_challenge",
        message: "This step was already submitted. Please try again.",
        description: "the challengeToken is missing, stale or already used")

    // Executors (in-band)
    static let invalidCredentials = FlowFailure(code: "FET-1005", LocalizedMessage("login.invalid_credentials"), description: "invalid credentials")
    static let userExists = FlowFailure(
        code: "FET-1007", key: "flows.executor.errors.user_exists",
        message: "An account with this username already exists.", description: "user already exists")
    static let invalidCode = FlowFailure(
        code: "FET-1008", key: "flows.executor.errors.invalid_otp",
        message: "The code is incorrect.", description: "invalid one-time code")
    static let tooManyCodeAttempts = FlowFailure(
        code: "FET-1009", key: "flows.executor.errors.otp_attempts",
        message: "Too many incorrect codes. Please start again.", description: "maximum one-time code attempts reached")
    static func attributeTaken(_ name: String, display: String) -> FlowFailure {
        .init(
            code: "FET-1061",
            LocalizedMessage(
                key: "signup.identifier_taken", arguments: UserSchema.fieldArguments(name, display: display),
                english: "\(display) is already used by another account."),
            description: "the value of \(name) is already used")
    }
    static let invalidAction = FlowFailure(
        code: "FET-1064", key: "flows.executor.errors.invalid_action",
        message: "That option is not available here.", description: "the action is not one of this step's actions")
    static let invalidInvitation = FlowFailure(
        code: "FET-1073", key: "flows.executor.errors.invalid_invite",
        message: "The invitation code is not valid.", description: "invalid invitation code")
    static let expiredInvitation = FlowFailure(
        code: "FET-1074", key: "flows.executor.errors.expired_invite",
        message: "The invitation code has expired.", description: "the invitation has expired")
    /// The flow failure for a refused password (`PasswordCheck`), with the same `login.*` message as the hosted page.
    static func password(_ outcome: PasswordCheck, now: Date) -> FlowFailure {
        let message = outcome.userMessage(now: now) ?? LocalizedMessage("login.invalid_credentials")
        return switch outcome {
        case .throttled: FlowFailure(code: "FET-1095", message, description: "too many failures from this address")
        case .locked: FlowFailure(code: "FET-1090", message, description: "the account is locked")
        case .disabled: accountDisabled
        case .rejected, .accepted: invalidCredentials
        }
    }
    static let accountDisabled = FlowFailure(code: "FET-1091", LocalizedMessage("login.disabled"), description: "the account is disabled")
    static let mfaNotEnrolled = FlowFailure(
        code: "FET-1092", key: "flows.executor.errors.mfa_required",
        message: "This application requires a second sign-in step, but your account has none set up.",
        description: "multi-factor authentication is required and the user has no factor enrolled")
    static let codeExpired = FlowFailure(
        code: "FET-1093", key: "flows.executor.errors.otp_expired",
        message: "The code has expired. Ask for a new one.", description: "the one-time code has expired")
    static let recoveryFailed = FlowFailure(
        code: "FET-1094", key: "flows.executor.errors.recovery_failed",
        message: "Password recovery could not be completed. Please start again.",
        description: "password recovery failed")
    static let internalError = FlowFailure(
        code: "SSE-5000", key: "error.internal", message: "Something went wrong on our side. Please try again.",
        description: "Internal server error", httpStatus: 500)
}
