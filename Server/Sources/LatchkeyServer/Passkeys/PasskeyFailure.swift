import Foundation
import Hummingbird

/// Why a passkey ceremony failed, with one answer per dialect: a reachFive `ApiError` (`passkey.*` keys, localized by
/// the catalogue) and a thunderID flow error (`FET-1015`–`FET-1019`). The technical text names the WebAuthn rule;
/// the user text never does.
enum PasskeyFailure: Error, Equatable, CustomStringConvertible {
    /// The `origin` the options were asked for is not one of the application's passkey origins.
    case originNotAllowed(String)
    /// No ceremony with this challenge: never issued, already used, or answered after it expired.
    case challengeUnknownOrExpired
    /// The response belongs to another kind of ceremony (an assertion sent to the registration endpoint …).
    case wrongCeremony
    case unknownCredential
    /// The user handle in the assertion is not the credential owner's.
    case userHandleMismatch
    case verification(WebAuthnError)
    case alreadyRegistered
    case noPasskeys
    case notFound
    /// Removing it would leave the account no way to sign in (no password, no other passkey, no linked provider).
    case lastCredential
    case accountDisabled
    case identifierRequired
    case identifierTaken(field: String)
    case invalidProfile([UserSchema.Problem])
    case malformed(String)

    var description: String {
        switch self {
        case .originNotAllowed(let origin): "origin \(origin) is not allowed for this application's passkeys"
        case .challengeUnknownOrExpired: "the challenge is unknown, already used or expired"
        case .wrongCeremony: "the response does not answer this kind of ceremony"
        case .unknownCredential: "no passkey with this credential id is registered"
        case .userHandleMismatch: "the user handle does not belong to the credential's owner"
        case .verification(let error): "verification failed: \(error)"
        case .alreadyRegistered: "this credential id is already registered"
        case .noPasskeys: "the account has no passkey"
        case .notFound: "no such passkey on this account"
        case .lastCredential: "the passkey is the account's only way to sign in (no password, no other passkey, no linked provider)"
        case .accountDisabled: "the account is disabled"
        case .identifierRequired: "the profile needs an email address"
        case .identifierTaken(let field): "\(field) is already used by another account"
        case .invalidProfile(let problems): problems.map { "\($0.attribute): \($0.message)" }.joined(separator: "; ")
        case .malformed(let why): why
        }
    }

    /// reachFive dialect (`/identity/v1/webauthn/…`).
    var apiError: APIError {
        func error(
            _ status: HTTPResponse.Status, _ error: String, _ key: String, _ english: String,
            fields: [APIError.FieldError] = [], arguments: [String: String] = [:]
        ) -> APIError {
            APIError(
                status: status, code: "PKY-\(status.code)", error: error, messageKey: key, userMessage: english,
                technical: description, fieldErrors: fields, arguments: arguments)
        }
        switch self {
        case .originNotAllowed, .malformed, .wrongCeremony:
            return error(.badRequest, "invalid_request", "passkey.failed", "We couldn't verify your passkey. Please try again.")
        case .challengeUnknownOrExpired:
            return error(.badRequest, "invalid_grant", "passkey.expired", "This passkey request has expired. Please try again.")
        case .unknownCredential, .userHandleMismatch:
            return error(
                .unauthorized, "invalid_grant", "passkey.unknown",
                "This passkey isn't recognised. Sign in another way or create an account.")
        case .verification:
            return error(.unauthorized, "invalid_grant", "passkey.failed", "We couldn't verify your passkey. Please try again.")
        case .alreadyRegistered:
            return error(.conflict, "conflict", "passkey.already_registered", "This passkey is already registered.")
        case .noPasskeys:
            return error(.badRequest, "invalid_request", "passkey.none", "There is no passkey for this account yet.")
        case .notFound:
            return error(.notFound, "not_found", "passkey.not_found", "This passkey no longer exists.")
        case .lastCredential:
            return error(
                .conflict, "conflict", "passkey.last_credential",
                "This passkey is the only way to sign in to your account. Add a password or another passkey before you remove it.")
        case .accountDisabled:
            return error(.forbidden, "access_denied", "login.disabled", "This account is disabled. Contact your administrator.")
        case .identifierRequired:
            return error(
                .badRequest, "invalid_request", "signup.identifier_required", "Enter an email address or a phone number.",
                fields: [.init(field: "email", message: "Enter an email address or a phone number.", code: "signup.identifier_required")])
        case .identifierTaken(let field):
            let display = field == "phone_number" ? "Phone number" : field == "username" ? "Username" : "Email address"
            let arguments = UserSchema.fieldArguments(field, display: display)
            let english = "\(display) is already used by another account."
            var fieldError = APIError.FieldError(field: field, message: english, code: "signup.identifier_taken")
            fieldError.arguments = arguments
            return error(.badRequest, "invalid_request", "signup.identifier_taken", english, fields: [fieldError], arguments: arguments)
        case .invalidProfile(let problems):
            return error(
                .badRequest, "invalid_request", "error.userservice.schema_validation_failed", "Schema validation failed",
                fields: problems.map { .init(field: $0.attribute, message: $0.message, code: $0.key) })
        }
    }

    /// thunderID dialect (in-band flow error).
    var flowFailure: FlowFailure {
        switch self {
        case .noPasskeys:
            FlowFailure(code: "FET-1016", key: "passkey.none", message: "There is no passkey for this account yet.", description: description)
        case .alreadyRegistered, .identifierRequired, .identifierTaken, .invalidProfile:
            FlowFailure(
                code: "FET-1018", key: "passkey.registration_failed", message: "We couldn't save your passkey. Please try again.",
                description: description)
        case .unknownCredential, .userHandleMismatch:
            FlowFailure(
                code: "FET-1015", key: "passkey.unknown", message: "This passkey isn't recognised. Sign in another way or create an account.",
                description: description)
        case .challengeUnknownOrExpired:
            FlowFailure(
                code: "FET-1019", key: "passkey.expired", message: "This passkey request has expired. Please try again.", description: description)
        default:
            FlowFailure(
                code: "FET-1019", key: "passkey.failed", message: "We couldn't verify your passkey. Please try again.", description: description)
        }
    }
}

extension PasskeyFailure {
    /// The case's name, for the audit trail (no value a client sent).
    var auditReason: String {
        switch self {
        case .originNotAllowed: "origin_not_allowed"
        case .challengeUnknownOrExpired: "challenge_unknown_or_expired"
        case .wrongCeremony: "wrong_ceremony"
        case .unknownCredential: "unknown_credential"
        case .userHandleMismatch: "user_handle_mismatch"
        case .verification: "verification_failed"
        case .alreadyRegistered: "already_registered"
        case .noPasskeys: "no_passkeys"
        case .notFound: "not_found"
        case .lastCredential: "last_credential"
        case .accountDisabled: "account_disabled"
        case .identifierRequired: "identifier_required"
        case .identifierTaken: "identifier_taken"
        case .invalidProfile: "invalid_profile"
        case .malformed: "malformed"
        }
    }
}
