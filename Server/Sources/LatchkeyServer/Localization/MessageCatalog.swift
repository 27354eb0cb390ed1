import Foundation

/// One language's messages: every catalog key, and the plural forms of "{count} minutes" used for durations.
public struct LanguageTable: Sendable {
    /// The language this table is for.
    public let locale: SupportedLocale
    /// `{count}` minutes, by CLDR plural category (exactly the categories `locale.pluralCategories` lists).
    public let minutes: [PluralCategory: String]
    /// Text by catalog key, with `{name}` placeholders.
    public let messages: [String: String]
}

/// A user-facing message before it is rendered: a catalog key, its named placeholder values, and the English text
/// to fall back on when the catalog does not know the key (messages defined by code outside the catalog).
public struct LocalizedMessage: Sendable, Equatable {
    /// Catalog key (or an alias of one).
    public var key: String
    /// Values of the text's named placeholders.
    public var arguments: [String: String]
    /// The English text, for callers without a language and for keys the catalog does not know.
    public var english: String

    /// A message defined by its caller; `english` is used wherever the catalog lacks `key`.
    public init(key: String, arguments: [String: String] = [:], english: String) {
        self.key = key; self.arguments = arguments; self.english = english
    }

    /// A message whose English text comes from the catalog itself.
    public init(_ key: String, _ arguments: [String: String] = [:]) {
        self.init(key: key, arguments: arguments, english: MessageCatalog.text(key, locale: .en, arguments: arguments) ?? key)
    }

    /// The text in `locale` (English when the catalog does not know the key).
    public func text(_ locale: SupportedLocale) -> String {
        MessageCatalog.text(key, locale: locale, arguments: arguments) ?? english
    }
}

/// Every user-facing message of the server, by stable key, in each supported language (`Catalog/<tag>.swift`).
///
/// Placeholders are named, `{field}`, `{minutes}`, `{count}` …, and every translation has the same set. Two
/// conventions make arguments language-aware without the caller knowing the language:
/// - an argument named `minutes` holding a whole number is rendered as a localized duration ("5 minutes",
///   "5 Minuten", "5分"), with the language's plural rules;
/// - an argument `X.key` naming a catalog key replaces `{X}` with that key's text in the target language (an
///   attribute's display name: `field` = "Email address", `field.key` = `user:attributes.email.label`).
public enum MessageCatalog {
    public static let tables: [SupportedLocale: LanguageTable] = Dictionary(
        uniqueKeysWithValues: [
            english, arabic, german, spanish, french, hungarian, italian, japanese, korean, dutch, portuguese, russian, slovak,
            simplifiedChinese, traditionalChinese
        ].map { ($0.locale, $0) })

    /// Keys that say exactly what another key says (wire keys kept for compatibility, OAuth codes that share a text).
    public static let aliases: [String: String] = [
        "errors.internal": "error.internal",
        "oauth.server_error": "error.internal",
        "oauth.unauthorized_client": "oauth.invalid_client",
        "oauth.invalid_scope": "oauth.invalid_request", "oauth.invalid_target": "oauth.invalid_request",
        "oauth.unsupported_grant_type": "oauth.invalid_request", "oauth.unsupported_response_type": "oauth.invalid_request",
        "oauth.unsupported_token_type": "oauth.invalid_request", "oauth.invalid_token": "oauth.invalid_grant",
        "oauth.insufficient_scope": "oauth.access_denied", "oauth.request_not_supported": "oauth.invalid_request",
        "oauth.request_uri_not_supported": "oauth.invalid_request", "oauth.consent_required": "oauth.login_required",
        "oauth.interaction_required": "oauth.login_required",
        "flows.errors.bad_request": "error.request",
        "flows.errors.invalid_flow_type": "error.request",
        "flows.errors.attestation_invalid": "flows.errors.attestation_missing",
        "flows.errors.attestation_unconfigured": "flows.errors.attestation_missing",
        "flows.executor.errors.invalid_credentials": "login.invalid_credentials",
        "flows.executor.errors.account_locked": "login.locked",
        "flows.executor.errors.account_disabled": "login.disabled",
        "flows.executor.errors.throttled": "login.throttled",
        "flows.executor.errors.attribute_taken": "signup.identifier_taken",
        "error.userservice.invalid_credentials": "error.userservice.invalid_current_password",
        "signin:forms.credentials.submit.label": "signin:forms.credentials.title",
        "signin:forms.credentials.passkey.label": "page.login.passkey",
        "signin:forms.passkey.submit.label": "signup:forms.invitation.submit.label",
        "signup:forms.passkey.submit.label": "signup:forms.invitation.submit.label",
        "signin:forms.email_otp.otp.label": "signin:forms.totp.otp.label",
        "signin:forms.email_otp.submit.label": "signin:forms.totp.submit.label",
        "signup:forms.credentials.password.label": "signin:forms.credentials.password.label",
        "signup:forms.credentials.submit.label": "signup:forms.invitation.submit.label",
        "recovery:forms.identify.username.label": "signin:forms.credentials.username.label",
        "recovery:forms.code.title": "signin:forms.email_otp.title",
        "recovery:forms.code.submit.label": "signin:forms.totp.submit.label",
        "recovery:forms.code.resend.label": "signin:forms.email_otp.resend.label",
        "page.login.title": "signin:forms.credentials.title",
        "page.login.submit": "signin:forms.credentials.title",
        "page.login.password": "signin:forms.credentials.password.label",
        "page.logout.submit": "page.logout.heading_plain",
        "page.authorize_invalid.title": "page.invalid_request.title",
        "page.logout_invalid.title": "page.invalid_request.title"
    ]

    /// The English table defines the key set; every other table has exactly these keys.
    public static var keys: Set<String> { Set(english.messages.keys) }

    /// True when `key` (or its alias) has a catalog text.
    public static func has(_ key: String) -> Bool { english.messages[aliases[key] ?? key] != nil }

    /// The message `key` in `locale` with `arguments` substituted; nil when the catalog does not know the key.
    public static func text(_ key: String, locale: SupportedLocale, arguments: [String: String] = [:]) -> String? {
        let canonical = aliases[key] ?? key
        guard let template = (tables[locale] ?? english).messages[canonical] ?? english.messages[canonical] else { return nil }
        return substitute(template, locale: locale, arguments: arguments)
    }

    /// `text` with a fallback for keys the catalog does not know.
    public static func text(_ key: String, locale: SupportedLocale, arguments: [String: String] = [:], default fallback: String) -> String {
        text(key, locale: locale, arguments: arguments) ?? fallback
    }

    /// "5 minutes" in the target language (at least one minute).
    public static func duration(minutes: Int, locale: SupportedLocale) -> String {
        let n = max(1, minutes)
        let table = tables[locale] ?? english
        let form = table.minutes[locale.pluralCategory(n)] ?? table.minutes[.other] ?? "{count} min"
        return form.replacingOccurrences(of: "{count}", with: String(n))
    }

    /// Whole minutes (rounded up, at least one) in `seconds`.
    public static func minutes(seconds: Int) -> Int { max(1, (seconds + 59) / 60) }

    /// The `{name}` placeholders of a template.
    public static func placeholders(_ template: String) -> Set<String> {
        var names: Set<String> = []
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            let after = rest[rest.index(after: open)...]
            guard let close = after.firstIndex(of: "}") else { break }
            let name = after[..<close]
            if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0 == "_" || $0 == "." }) { names.insert(String(name)) }
            rest = after[after.index(after: close)...]
        }
        return names
    }

    static func substitute(_ template: String, locale: SupportedLocale, arguments: [String: String]) -> String {
        guard template.contains("{") else { return template }
        var out = template
        for name in placeholders(template) {
            var value: String?
            if let key = arguments[name + ".key"], let localized = text(key, locale: locale) {
                value = localized
            } else if name == "minutes", let raw = arguments[name], let n = Int(raw) {
                value = duration(minutes: n, locale: locale)
            } else {
                value = arguments[name]
            }
            if let value { out = out.replacingOccurrences(of: "{\(name)}", with: value) }
        }
        return out
    }
}
