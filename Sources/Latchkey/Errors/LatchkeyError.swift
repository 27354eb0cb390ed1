import Foundation

/// The one error type of the SDK. It carries both error models, on every error: ThunderID's code (`code`) and
/// ReachFive's category (`category`), plus the HTTP status when there was one and the underlying error.
/// Messages never contain tokens, codes or verifiers.
public struct LatchkeyError: Error, Sendable, LocalizedError, CustomStringConvertible {
    /// ThunderID's codes (raw values as documented).
    public enum Code: String, Sendable, CaseIterable {
        case sdkNotInitialized = "SDK_NOT_INITIALIZED"
        case alreadyInitialized = "ALREADY_INITIALIZED"
        case invalidConfiguration = "INVALID_CONFIGURATION"
        case invalidRedirectUri = "INVALID_REDIRECT_URI"
        case authenticationFailed = "AUTHENTICATION_FAILED"
        case userAccountLocked = "USER_ACCOUNT_LOCKED"
        case userAccountDisabled = "USER_ACCOUNT_DISABLED"
        case sessionExpired = "SESSION_EXPIRED"
        case mfaRequired = "MFA_REQUIRED"
        case mfaFailed = "MFA_FAILED"
        case invalidGrant = "INVALID_GRANT"
        case consentRequired = "CONSENT_REQUIRED"
        case userAlreadyExists = "USER_ALREADY_EXISTS"
        case invalidInput = "INVALID_INPUT"
        case invitationCodeInvalid = "INVITATION_CODE_INVALID"
        case invitationCodeExpired = "INVITATION_CODE_EXPIRED"
        case registrationDisabled = "REGISTRATION_DISABLED"
        case recoveryFailed = "RECOVERY_FAILED"
        case confirmationCodeInvalid = "CONFIRMATION_CODE_INVALID"
        case confirmationCodeExpired = "CONFIRMATION_CODE_EXPIRED"
        case networkError = "NETWORK_ERROR"
        case requestTimeout = "REQUEST_TIMEOUT"
        case serverError = "SERVER_ERROR"
        case unknownError = "UNKNOWN_ERROR"
        /// The change needs a more recent sign-in (RFC 9470 `insufficient_user_authentication`): changing the username,
        /// email or passkeys with a session whose sign-in is older than the server allows. The session is still valid:
        /// sign the user in again (`max_age`/`prompt=login`) and retry.
        case reauthenticationRequired = "REAUTHENTICATION_REQUIRED"
        /// The profile changed on the server since the version the update was based on (SCIM `If-Match` answered
        /// 412): read it again, re-apply the edit and save (`updateUserProfile(payload:userId:sessionId:version:)`).
        case profileConflict = "PROFILE_CONFLICT"
        /// The user canceled (ReachFive `AuthCanceled`).
        case canceled = "CANCELED"
        /// The token store cannot be used right now — the Keychain of a locked device (`errSecInteractionNotAllowed`,
        /// e.g. an app prewarmed before the first unlock). Nothing was deleted or replaced: retry when the device is
        /// unlocked (`UIApplication.protectedDataDidBecomeAvailableNotification`).
        case storageUnavailable = "STORAGE_UNAVAILABLE"
        /// The stored session is protected by Face ID, Touch ID or the passcode (the Apple layer's `BiometricPolicy`)
        /// and the person did not confirm: they cancelled or failed the prompt, or the device cannot ask. Nothing was
        /// deleted or replaced: ask again when the person chooses to.
        case biometricAuthenticationFailed = "BIOMETRIC_AUTHENTICATION_FAILED"
        /// The stored session cannot be read: damaged, or written by a newer version of the SDK (an app downgraded).
        /// It was left in place, not taken for "signed out": a new sign-in replaces it, a sign-out deletes it.
        case storedSessionUnreadable = "STORED_SESSION_UNREADABLE"
        /// A token failed validation (signature, issuer, audience, nonce …).
        case invalidToken = "INVALID_TOKEN"
        /// No passkey authenticator or credential provider is available on this platform or configuration.
        case passkeyNotSupported = "PASSKEY_NOT_SUPPORTED"
        /// The user canceled a passkey ceremony (creation or assertion).
        case passkeyCanceled = "PASSKEY_CANCELED"
        /// No passkey matches the request (none stored for the relying party, none in the allow list, or the server
        /// knows none for the account).
        case passkeyNoCredential = "PASSKEY_NO_CREDENTIAL"
        /// A passkey ceremony or its server verification failed (bad options, expired challenge, refused assertion).
        case passkeyFailed = "PASSKEY_FAILED"
        /// The app is not associated with the passkeys' relying party, so the system refuses every passkey of that RP
        /// ID: the app's `webcredentials:<RP ID>` associated domain is missing, or the system could not fetch or verify
        /// `https://<RP ID>/.well-known/apple-app-site-association` (not served, wrong team or bundle ID, the CDN not
        /// yet updated). A fix for the app's developer (entitlement, association file, the server's RP ID); the
        /// person can only sign in another way. The developer message names the RP ID.
        case passkeyDomainNotAssociated = "PASSKEY_DOMAIN_NOT_ASSOCIATED"
        /// The system is already showing another credential request (a passkey sheet or AutoFill started outside
        /// this SDK) and refused this one. The SDK never runs two requests of its own at once: a new one ends the
        /// earlier (see `LatchkeyError.isSuperseded`). Try again once the other request is finished.
        case passkeyRequestInProgress = "PASSKEY_REQUEST_IN_PROGRESS"
        /// This device already holds a passkey for the account (a registration matched one of the account's existing
        /// passkeys, `ASAuthorizationError.matchedExcludedCredential`): nothing to add, the person can sign in with it.
        case passkeyAlreadyRegistered = "PASSKEY_ALREADY_REGISTERED"
    }

    /// ReachFive's error categories.
    public enum Category: Sendable, Equatable {
        case requestError
        case authFailure
        case authCanceled
        case technicalError
    }

    /// The ReachFive `ApiError` body, when the server sent one.
    public struct ApiError: Sendable, Codable, Equatable {
        public var error: String?
        public var errorId: String?
        public var errorUserMsg: String?
        public var errorMessageKey: String?
        public var errorDescription: String?
        public var errorDetails: [FieldError]?

        /// One field the server refused (`error_details[]`): its name, the reason and a code.
        public struct FieldError: Sendable, Codable, Equatable {
            public var field: String?
            public var message: String?
            public var code: String?
        }

        enum CodingKeys: String, CodingKey {
            case error, errorId = "error_id", errorUserMsg = "error_user_msg", errorMessageKey = "error_message_key"
            case errorDescription = "error_description", errorDetails = "error_details"
        }
    }

    public var code: Code
    /// Technical English message for developers and logs.
    public var message: String
    public var statusCode: Int?
    /// The OAuth `error` value or server code (`invalid_grant`, `FET-1005` …) that caused it.
    public var serverCode: String?
    public var apiError: ApiError?
    public var underlying: (any Error & Sendable)?
    /// With `.mfaRequired` from a ReachFive password login: the step-up to continue with (token and offered methods).
    public var mfaStepUp: MfaStepUp? = nil
    /// ReachFive `/identity/…` answers are categorised by their HTTP status alone (400 request error, 401 auth
    /// failure, anything else technical), as ReachFive's SDK does; set by the identity API error mapping.
    var statusCategory: Category? = nil
    /// The message for the user, already in their language (the SDK sends `LatchkeyConfig.preferredLanguages`): the
    /// server's when it gave one (ReachFive `error_user_msg`, or thunderID `message.defaultValue`), else, for the
    /// passkey outcomes the SDK raises itself (`PasskeyErrorMessages.codes`), the SDK's own words in the first of the
    /// client's languages it speaks. Nil for other errors the SDK raises and for standard OAuth errors, whose
    /// descriptions are for developers.
    public var userMessage: String?

    public init(
        _ code: Code, _ message: String, statusCode: Int? = nil, serverCode: String? = nil, apiError: ApiError? = nil,
        underlying: (any Error & Sendable)? = nil, userMessage: String? = nil
    ) {
        self.code = code; self.message = message; self.statusCode = statusCode; self.serverCode = serverCode
        self.apiError = apiError; self.underlying = underlying
        self.userMessage = userMessage ?? apiError?.errorUserMsg
    }

    public var category: Category {
        if let statusCategory { return statusCategory }
        return switch code {
        case .canceled, .passkeyCanceled: .authCanceled
        // Like an identifier already taken: the request cannot be done as asked, and retrying will not change that.
        case .profileConflict, .passkeyAlreadyRegistered: .requestError
        // The app's configuration, or the system busy with another request: nothing the person typed was wrong.
        case .passkeyDomainNotAssociated, .passkeyRequestInProgress, .passkeyNotSupported: .technicalError
        case .passkeyNoCredential, .passkeyFailed:
            statusCode == 400 ? .requestError : statusCode == nil || statusCode == 401 ? .authFailure : .technicalError
        case .authenticationFailed, .userAccountLocked, .userAccountDisabled, .sessionExpired, .invalidGrant, .consentRequired,
            .mfaFailed, .invalidToken, .reauthenticationRequired:
            .authFailure
        case .invalidInput, .userAlreadyExists, .invitationCodeInvalid, .invitationCodeExpired, .registrationDisabled,
            .confirmationCodeInvalid, .confirmationCodeExpired, .recoveryFailed, .mfaRequired, .invalidRedirectUri:
            statusCode == 400 || statusCode == nil ? .requestError : .technicalError
        default: .technicalError
        }
    }

    /// The user-facing, localized message (ReachFive `errorUserMsg`): the server's when it gave one, else the SDK's
    /// own for the passkey outcomes it raises itself (`userMessage`).
    public var errorUserMsg: String? { apiError?.errorUserMsg ?? userMessage }

    /// `LocalizedError`: the localized user message when there is one, else the technical message.
    public var errorDescription: String? { userMessage ?? message }
    public var description: String {
        "[\(code.rawValue)] \(message)" + (statusCode.map { " (HTTP \($0))" } ?? "") + (serverCode.map { " [\($0)]" } ?? "")
    }
}

/// ThunderID's name for the error type (`catch let error as IAMError`).
public typealias IAMError = LatchkeyError

extension LatchkeyError {
    /// Maps an OAuth error response (RFC 6749 §5.2 / OIDC) to an SDK error.
    static func oauth(_ error: String, description: String?, status: Int?, apiError: ApiError? = nil) -> LatchkeyError {
        let code: Code =
            switch error {
            case "invalid_grant": .invalidGrant
            case "access_denied": .authenticationFailed
            case "login_required", "interaction_required", "account_selection_required": .sessionExpired
            case "consent_required": .consentRequired
            case "invalid_client", "unauthorized_client", "invalid_request", "invalid_scope", "unsupported_grant_type",
                "unsupported_response_type", "invalid_target":
                .invalidConfiguration
            case "temporarily_unavailable", "server_error": .serverError
            default: .unknownError
            }
        return LatchkeyError(code, "\(error): \(description ?? "no description")", statusCode: status, serverCode: error, apiError: apiError)
    }
}
