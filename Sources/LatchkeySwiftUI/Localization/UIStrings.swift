import Foundation
import Latchkey

/// The texts the components add themselves (everything else comes from the server, already localized).
public enum UIText: String, Sendable, CaseIterable {
    /// English: "Sign in".
    case signIn
    /// English: "Create account".
    case signUp
    /// English: "Sign out".
    case signOut
    /// English: "Continue".
    case continueAction
    /// English: "Save".
    case save
    /// English: "Saving…".
    case saving
    /// English: "Loading…".
    case loading
    /// English: "Try again".
    case retry
    /// English: "Start over".
    case startOver
    /// English: "Use a passkey".
    case usePasskey
    /// English: "Use a recovery code instead".
    case useRecoveryCode
    /// English: "Sign in with the browser".
    case signInWithBrowser
    /// English: "This field is required".
    case fieldRequired
    /// English: "Choose one of the options".
    case chooseOption
    /// English: "The value is not valid".
    case invalidValue
    /// English: "Your session has ended. Please sign in again.".
    case sessionExpired
    /// English: "The server cannot be reached. Check your connection and try again.".
    case networkError
    /// English: "The service is having a problem. Please try again in a moment.".
    case serverError
    /// English: "Unlock your device to continue.".
    case storageUnavailable
    /// English: "Confirm it's you to continue.".
    case confirmItsYou
    /// English: "Something went wrong. Please try again.".
    case genericError
    /// English: "That took too long, so we started again.".
    case flowExpired
    /// English: "Your profile was changed somewhere else. The latest version is shown with your edits: check them and save again.".
    case profileConflict
    /// English: "Your profile was saved.".
    case profileSaved
    /// English: "We sent a code by email.".
    case codeSent
    /// English: "Display name".
    case displayName
    /// English: "First name".
    case givenName
    /// English: "Last name".
    case familyName
    /// English: "Email".
    case email
    /// English: "Phone number".
    case phoneNumber
    /// English: "Language".
    case locale
    /// English: "Delete account".
    case deleteAccount
    /// English: "Delete your account?".
    case deleteAccountTitle
    /// English: "Your profile, passkeys, second factors, linked accounts and the permissions you gave apps will be deleted, and you will be signed out on every device. This cannot be undone.".
    case deleteAccountWarning
    /// English: "Delete".
    case delete
    /// English: "Cancel".
    case cancel
    /// English: "Deleting…".
    case deleting
    /// English: "Your account was deleted.".
    case accountDeleted
    /// English: "Your account will be deleted on {date}. Sign in again before then to keep it.".
    case accountDeletionScheduled
    /// English: "For your security, sign in again, then try once more.".
    case signInAgainToContinue
    /// English: "Two-step verification".
    case secondFactors
    /// English: "Authenticator app".
    case authenticatorApp
    /// English: "Codes by email".
    case emailCodes
    /// English: "Added {date}".
    case addedOn
    /// English: "Verify your email address to use it".
    case verifyEmailToUse
    /// English: "No second step yet. Add one to protect your account.".
    case noSecondFactor
    /// English: "Add an authenticator app".
    case addAuthenticatorApp
    /// English: "Send me codes by email".
    case turnOnEmailCodes
    /// English: "Scan this QR code with your authenticator app, or enter the setup key by hand.".
    case scanQRCode
    /// English: "QR code for your authenticator app".
    case qrCode
    /// English: "Open in an authenticator app".
    case openAuthenticatorApp
    /// English: "Setup key".
    case setupKey
    /// English: "6-digit code from the app".
    case authenticatorCode
    /// English: "Verify".
    case verify
    /// English: "Recovery codes".
    case recoveryCodes
    /// English: "{remaining} of {total} left".
    case recoveryCodesLeft
    /// English: "Only a few codes are left. Create a new set.".
    case recoveryCodesLow
    /// English: "Create recovery codes".
    case createRecoveryCodes
    /// English: "Create new recovery codes".
    case createNewRecoveryCodes
    /// English: "Save these codes somewhere safe, such as a password manager. Each one signs you in once if you cannot use your second step. They will not be shown again, and any earlier codes no longer work.".
    case saveRecoveryCodes
    /// English: "Done".
    case done
    /// English: "Remove".
    case remove
    /// English: "Remove {factor}?".
    case removeFactorTitle
    /// English: "You will no longer be asked for it when you sign in. Removing your last one also deletes your recovery codes.".
    case removeFactorWarning
    /// English: "A second step is required: add another one before removing this one.".
    case factorRequired
    /// English: "{factor} added.".
    case factorAdded
    /// English: "{factor} removed.".
    case factorRemoved
    /// English: "New recovery codes were created.".
    case recoveryCodesCreated
    /// English: "Passkeys".
    case passkeys
    /// English: "No passkeys yet.".
    case noPasskeys
    /// English: "Add a passkey".
    case addPasskey
    /// English: "Rename".
    case rename
    /// English: "Name".
    case passkeyName
    /// English: "Last used {date}".
    case lastUsedOn
    /// English: "Delete “{name}”?".
    case deletePasskeyTitle
    /// English: "You will no longer be able to sign in with this passkey. Remove it from your password manager too.".
    case deletePasskeyWarning
    /// English: "The passkey was added.".
    case passkeyAdded
    /// English: "The passkey was renamed.".
    case passkeyRenamed
    /// English: "The passkey was deleted.".
    case passkeyDeleted
    /// English: "Where you're signed in".
    case sessions
    /// English: "This device".
    case thisDevice
    /// English: "Signed in {date}".
    case signedInOn
    /// English: "Sign out of this session?".
    case endSessionTitle
    /// English: "Apps signed in through it will have to sign in again.".
    case endSessionWarning
    /// English: "Sign out everywhere else".
    case signOutOtherSessions
    /// English: "Sign out of every other session?".
    case signOutOthersTitle
    /// English: "That session was signed out.".
    case sessionEnded
    /// English: "You were signed out everywhere else.".
    case otherSessionsEnded
    /// English: "Linked accounts".
    case linkedAccounts
    /// English: "No accounts linked yet.".
    case noLinkedAccounts
    /// English: "Link {provider}".
    case linkProvider
    /// English: "Linked {date}".
    case linkedOn
    /// English: "Unlink".
    case unlink
    /// English: "Unlink {provider}?".
    case unlinkTitle
    /// English: "You will no longer be able to sign in with {provider}.".
    case unlinkWarning
    /// English: "{provider} was linked.".
    case providerLinked
    /// English: "{provider} was unlinked.".
    case providerUnlinked
    /// English: "Create new recovery codes?".
    case replaceRecoveryCodesTitle
    /// English: "Your current recovery codes will stop working.".
    case replaceRecoveryCodesWarning
    /// English: "Create".
    case create
    /// English: "Signed-in session".
    case signedInSession
    /// English: "Sign out on this device?".
    case endOwnSessionTitle
    /// English: "You will be signed out of this app here.".
    case endOwnSessionWarning

    /// The text that explains a failure of kind `code` when the server sent no message of its own.
    public static func forError(_ code: LatchkeyError.Code) -> UIText {
        switch code {
        case .sessionExpired, .invalidGrant, .invalidToken, .storedSessionUnreadable: .sessionExpired
        case .networkError, .requestTimeout: .networkError
        case .serverError: .serverError
        case .storageUnavailable: .storageUnavailable
        case .biometricAuthenticationFailed: .confirmItsYou
        case .profileConflict: .profileConflict
        default: .genericError
        }
    }
}

/// The component texts in the server's 15 languages (the 20 language codes ReachFive's SDK lists resolve to them).
public enum UIStrings {
    /// The tables, by BCP 47 tag.
    public static let languages: [String] = tables.keys.sorted()

    /// The table for the first of `preferred` that has one (`fr-CA` → `fr`, `zh-TW` → `zh-Hant`), else `en`.
    /// (The core's `LanguagePreferences.sdkLanguage(for:)`: these tables and the SDK's passkey messages are in the same
    /// 15 languages, so a screen never mixes two.)
    public static func resolve(_ preferred: [String]) -> String { LanguagePreferences.sdkLanguage(for: preferred) }

    /// True for languages written right to left.
    public static func isRightToLeft(_ language: String) -> Bool {
        ["ar", "he", "fa", "ur"].contains(language.split(separator: "-").first.map { $0.lowercased() } ?? "")
    }

    /// `key` in `language` (a tag of `languages`), English when the table lacks it.
    public static func text(_ key: UIText, language: String) -> String {
        tables[language]?[key] ?? english[key] ?? key.rawValue
    }

    /// Every table; each holds every key (`UIStringsTests` checks it).
    static let tables: [String: [UIText: String]] = [
        "en": english, "ar": arabic, "de": german, "es": spanish, "fr": french, "hu": hungarian, "it": italian,
        "ja": japanese, "ko": korean, "nl": dutch, "pt": portuguese, "ru": russian, "sk": slovak,
        "zh-Hans": chineseSimplified, "zh-Hant": chineseTraditional
    ]

    static let english: [UIText: String] = [
        .signIn: "Sign in", .signUp: "Create account", .signOut: "Sign out", .continueAction: "Continue", .save: "Save",
        .saving: "Saving…", .loading: "Loading…", .retry: "Try again", .startOver: "Start over", .usePasskey: "Use a passkey",
        .useRecoveryCode: "Use a recovery code instead",
        .signInWithBrowser: "Sign in with the browser",
        .fieldRequired: "This field is required", .chooseOption: "Choose one of the options", .invalidValue: "The value is not valid",
        .sessionExpired: "Your session has ended. Please sign in again.",
        .networkError: "The server cannot be reached. Check your connection and try again.",
        .serverError: "The service is having a problem. Please try again in a moment.",
        .storageUnavailable: "Unlock your device to continue.",
        .confirmItsYou: "Confirm it's you to continue.",
        .genericError: "Something went wrong. Please try again.",
        .flowExpired: "That took too long, so we started again.",
        .profileConflict: "Your profile was changed somewhere else. The latest version is shown with your edits: check them and save again.",
        .profileSaved: "Your profile was saved.", .codeSent: "We sent a code by email.",
        .displayName: "Display name", .givenName: "First name", .familyName: "Last name", .email: "Email",
        .phoneNumber: "Phone number", .locale: "Language",
        .deleteAccount: "Delete account", .deleteAccountTitle: "Delete your account?",
        .deleteAccountWarning:
            "Your profile, passkeys, second factors, linked accounts and the permissions you gave apps will be deleted, and you will be signed out on every device. This cannot be undone.",
        .delete: "Delete", .cancel: "Cancel", .deleting: "Deleting…", .accountDeleted: "Your account was deleted.",
        .accountDeletionScheduled: "Your account will be deleted on {date}. Sign in again before then to keep it.",
        .signInAgainToContinue: "For your security, sign in again, then try once more.",
        .secondFactors: "Two-step verification",
        .authenticatorApp: "Authenticator app",
        .emailCodes: "Codes by email",
        .addedOn: "Added {date}",
        .verifyEmailToUse: "Verify your email address to use it",
        .noSecondFactor: "No second step yet. Add one to protect your account.",
        .addAuthenticatorApp: "Add an authenticator app",
        .turnOnEmailCodes: "Send me codes by email",
        .scanQRCode: "Scan this QR code with your authenticator app, or enter the setup key by hand.",
        .qrCode: "QR code for your authenticator app",
        .openAuthenticatorApp: "Open in an authenticator app",
        .setupKey: "Setup key",
        .authenticatorCode: "6-digit code from the app",
        .verify: "Verify",
        .recoveryCodes: "Recovery codes",
        .recoveryCodesLeft: "{remaining} of {total} left",
        .recoveryCodesLow: "Only a few codes are left. Create a new set.",
        .createRecoveryCodes: "Create recovery codes",
        .createNewRecoveryCodes: "Create new recovery codes",
        .saveRecoveryCodes:
            "Save these codes somewhere safe, such as a password manager. Each one signs you in once if you cannot use your second step. They will not be shown again, and any earlier codes no longer work.",
        .done: "Done",
        .remove: "Remove",
        .removeFactorTitle: "Remove {factor}?",
        .removeFactorWarning: "You will no longer be asked for it when you sign in. Removing your last one also deletes your recovery codes.",
        .factorRequired: "A second step is required: add another one before removing this one.",
        .factorAdded: "{factor} added.",
        .factorRemoved: "{factor} removed.",
        .recoveryCodesCreated: "New recovery codes were created.",
        .passkeys: "Passkeys",
        .noPasskeys: "No passkeys yet.",
        .addPasskey: "Add a passkey",
        .rename: "Rename",
        .passkeyName: "Name",
        .lastUsedOn: "Last used {date}",
        .deletePasskeyTitle: "Delete “{name}”?",
        .deletePasskeyWarning: "You will no longer be able to sign in with this passkey. Remove it from your password manager too.",
        .passkeyAdded: "The passkey was added.",
        .passkeyRenamed: "The passkey was renamed.",
        .passkeyDeleted: "The passkey was deleted.",
        .sessions: "Where you're signed in",
        .thisDevice: "This device",
        .signedInOn: "Signed in {date}",
        .endSessionTitle: "Sign out of this session?",
        .endSessionWarning: "Apps signed in through it will have to sign in again.",
        .signOutOtherSessions: "Sign out everywhere else",
        .signOutOthersTitle: "Sign out of every other session?",
        .sessionEnded: "That session was signed out.",
        .otherSessionsEnded: "You were signed out everywhere else.",
        .linkedAccounts: "Linked accounts",
        .noLinkedAccounts: "No accounts linked yet.",
        .linkProvider: "Link {provider}",
        .linkedOn: "Linked {date}",
        .unlink: "Unlink",
        .unlinkTitle: "Unlink {provider}?",
        .unlinkWarning: "You will no longer be able to sign in with {provider}.",
        .providerLinked: "{provider} was linked.",
        .providerUnlinked: "{provider} was unlinked.",
        .replaceRecoveryCodesTitle: "Create new recovery codes?",
        .replaceRecoveryCodesWarning: "Your current recovery codes will stop working.",
        .create: "Create",
        .signedInSession: "Signed-in session",
        .endOwnSessionTitle: "Sign out on this device?",
        .endOwnSessionWarning: "You will be signed out of this app here."
    ]
}
