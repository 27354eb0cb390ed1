import Foundation
import Latchkey
import Observation

/// The texts the components show themselves, and the language the whole SDK uses (ThunderID's `ThunderIDI18n`).
///
/// Texts that come from the server — flow titles, input and action labels, error messages — are already in the
/// user's language because the SDK sends it with every request; this object holds the few the components add
/// (button titles, the client-side checks, "cannot reach the server"). `setLocale(_:)` changes both at once: the
/// component texts at once, the server's from the next request on (a flow in progress switches at its next step).
@MainActor @Observable
public final class LatchkeyI18n {
    /// The active language as a BCP 47 tag (`fr-FR`, `ja`, `ar`); nil follows the device.
    public private(set) var locale: String?
    /// The table the texts come from: the best of `UIStrings.languages` for `locale` (English when none fits).
    public private(set) var language: String
    /// Called with the new languages when `setLocale(_:)` changes them (the state forwards them to the client).
    @ObservationIgnored var onChange: (@MainActor ([String]?) -> Void)?
    @ObservationIgnored private let store: any LocaleStore
    /// The app's own texts, by language tag (`*`: every language), each replacing the table's for its key.
    private var overrides: [String: [UIText: String]] = [:]

    /// - Parameters:
    ///   - locale: the language to start with; nil takes the one `store` kept from an earlier `setLocale(_:)`, else
    ///     the device's.
    ///   - store: where `setLocale(_:)` keeps the choice (`UserDefaults` by default, as ThunderID's package does).
    public init(locale: String? = nil, store: any LocaleStore = UserDefaultsLocaleStore()) {
        self.store = store
        let chosen = locale ?? store.load()
        self.locale = chosen
        self.language = UIStrings.resolve(chosen.map { [$0] } ?? Locale.preferredLanguages)
    }

    /// The languages to send to the server: the chosen locale, or nil for the device's.
    public var preferredLanguages: [String]? { locale.map { [$0] } }

    /// Right-to-left script (Arabic): views lay out mirrored (`layoutDirection`).
    public var isRightToLeft: Bool { UIStrings.isRightToLeft(language) }

    /// Changes the active language for every component and for the server's messages, and keeps it for the next
    /// launch. An unusable tag (empty, not BCP 47) is ignored.
    public func setLocale(_ locale: String) {
        let tags = LanguagePreferences.tags([locale])
        guard let tag = tags.first else { return }
        self.locale = tag
        language = UIStrings.resolve([tag])
        store.save(tag)
        onChange?([tag])
    }

    /// Follows the device's languages again and forgets the kept choice.
    public func resetLocale() {
        locale = nil
        language = UIStrings.resolve(Locale.preferredLanguages)
        store.save(nil)
        onChange?(nil)
    }

    /// The text for `key` in the active language: the app's own when it set one (`override(_:with:language:)`),
    /// else the SDK's.
    public func t(_ key: UIText) -> String {
        overrides[language]?[key] ?? overrides["*"]?[key] ?? UIStrings.text(key, language: language)
    }

    /// Shows `text` wherever the components show `key` — in `language` only (a tag of `UIStrings.languages`, or any
    /// tag that resolves to one: `fr-CA` is `fr`), or in every language when it is nil. A language's own override wins
    /// over an every-language one. Views showing the key update at once.
    ///
    ///     state.i18n.override(.signIn, with: "Log in")
    ///     state.i18n.override(.signIn, with: "Se connecter à Acme", language: "fr")
    public func override(_ key: UIText, with text: String, language: String? = nil) {
        overrides[language.map { UIStrings.resolve([$0]) } ?? "*", default: [:]][key] = text
    }

    /// Sets several overrides at once (`override(_:with:language:)` for each).
    public func override(_ texts: [UIText: String], language: String? = nil) {
        for (key, text) in texts { override(key, with: text, language: language) }
    }

    /// Goes back to the SDK's text for `key` (in `language`, or the every-language override when nil).
    public func removeOverride(_ key: UIText, language: String? = nil) {
        overrides[language.map { UIStrings.resolve([$0]) } ?? "*"]?[key] = nil
    }

    /// The texts of the flow's client-side checks in the active language.
    public var checkMessages: FlowCheckMessages {
        FlowCheckMessages(required: t(.fieldRequired), chooseOption: t(.chooseOption), invalidValue: t(.invalidValue))
    }

    /// What the user should read for `error`: the server's localized message when it sent one; for the passkey
    /// outcomes the SDK raises itself, the SDK's words (`PasskeyErrorMessages`) in this object's language (which may
    /// have changed since the error was made); else this table's text for the kind of failure (never a technical
    /// message with codes in it).
    public func message(for error: LatchkeyError) -> String {
        if error.apiError == nil, error.statusCode == nil, let own = PasskeyErrorMessages.message(for: error.code, language: language) {
            return own
        }
        if let userMessage = error.userMessage, !userMessage.isEmpty { return userMessage }
        return t(UIText.forError(error.code))
    }
}

/// Where `LatchkeyI18n.setLocale(_:)` keeps the chosen language between launches.
public protocol LocaleStore: Sendable {
    /// The kept language, if any.
    func load() -> String?
    /// Keeps `locale`; nil forgets it.
    func save(_ locale: String?)
}

/// `UserDefaults.standard` under `io.latchkey.locale`.
public struct UserDefaultsLocaleStore: LocaleStore {
    /// The defaults key.
    public static let key = "io.latchkey.locale"
    /// A store.
    public init() {}
    public func load() -> String? { UserDefaults.standard.string(forKey: Self.key) }
    public func save(_ locale: String?) {
        if let locale { UserDefaults.standard.set(locale, forKey: Self.key) } else { UserDefaults.standard.removeObject(forKey: Self.key) }
    }
}

/// Keeps the language in memory only (tests, previews, apps that store it themselves).
public final class InMemoryLocaleStore: LocaleStore, @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    /// A store holding `locale`.
    public init(_ locale: String? = nil) { value = locale }
    public func load() -> String? { lock.withLock { value } }
    public func save(_ locale: String?) { lock.withLock { value = locale } }
}
