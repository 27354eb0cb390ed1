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
        .signInAgainToContinue: "For your security, sign in again, then try once more."
    ]
}
