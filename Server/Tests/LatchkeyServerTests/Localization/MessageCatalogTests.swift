import Foundation
import Testing
@testable import LatchkeyServer

@Suite("Message catalog: every key in every language, same placeholders, real translations")
struct MessageCatalogTests {
    /// Texts that are genuinely the same word in a language as in English (the Italian for "Password" is "Password").
    /// Anything else identical to English is an untranslated copy and fails the test.
    static let identicalAllowed: Set<String> = [
        "it|signin:forms.credentials.password.label",
        // The account page: "App"/"Apps" is the German, Italian and Dutch word too.
        "de|account.apps.app", "de|account.sessions.app", "de|account.sessions.apps", "it|account.apps.app", "it|account.sessions.app",
        "nl|account.apps.app", "nl|account.sessions.app", "nl|account.sessions.apps",
        // "Passkeys" and "Name" are German words too.
        "de|account.nav.passkeys", "de|account.passkeys.name", "de|account.passkeys.new_name",
        // "Provider" is the word Italian uses for an identity provider.
        "it|account.linked.provider",
        // The admin console: "ID" is "ID" in most languages; headers such as "Status", "Details" or "Sessions" are the same word.
        "de|console.users.id", "es|console.users.id", "fr|console.users.id", "it|console.users.id", "ja|console.users.id",
        "ko|console.users.id", "nl|console.users.id", "pt|console.users.id", "ru|console.users.id", "sk|console.users.id",
        "zh-Hans|console.users.id", "zh-Hant|console.users.id",
        "de|console.apps.name", "de|console.apps.scope", "de|console.users.status", "de|console.audit.details",
        "es|console.users.roles",
        "fr|console.nav.applications", "fr|console.users.sessions", "fr|console.users.sessions.apps", "fr|console.audit.application",
        "nl|console.users.status", "nl|console.audit.details"
    ]

    @Test func fifteenTablesCoverTheTwentySeedLanguages() {
        #expect(MessageCatalog.tables.count == 15)
        #expect(Set(MessageCatalog.tables.keys) == Set(SupportedLocale.allCases))
        let seed = [
            "ar", "de", "en", "es", "fr", "hu", "it", "jp", "ko", "nl", "pt", "ru", "sk", "zh-CN", "zh-Hans", "zh-Hant",
            "zh-HK", "zh-MO", "zh-SG", "zh-TW"
        ]
        for code in seed { #expect(SupportedLocale(resolving: code) != nil, "seed language \(code) has no table") }
    }

    @Test(arguments: SupportedLocale.allCases)
    func everyKeyTranslatedWithTheSamePlaceholders(_ locale: SupportedLocale) throws {
        let english = MessageCatalog.english.messages
        let table = try #require(MessageCatalog.tables[locale])
        #expect(table.locale == locale)
        let missing = Set(english.keys).subtracting(table.messages.keys).sorted()
        let extra = Set(table.messages.keys).subtracting(english.keys).sorted()
        #expect(missing.isEmpty, "\(locale.tag) lacks \(missing)")
        #expect(extra.isEmpty, "\(locale.tag) has keys English does not: \(extra)")
        for (key, text) in table.messages.sorted(by: { $0.key < $1.key }) {
            #expect(!text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(locale.tag) \(key) is empty")
            guard let reference = english[key] else { continue }
            #expect(
                MessageCatalog.placeholders(text) == MessageCatalog.placeholders(reference),
                "\(locale.tag) \(key): placeholders \(MessageCatalog.placeholders(text).sorted()) ≠ English \(MessageCatalog.placeholders(reference).sorted())"
            )
            if locale != .en {
                #expect(
                    text != reference || Self.identicalAllowed.contains("\(locale.tag)|\(key)"),
                    "\(locale.tag) \(key) is identical to English (\"\(text)\"): translate it or allow-list it")
            }
        }
    }

    @Test(arguments: SupportedLocale.allCases)
    func durationFormsMatchThePluralRules(_ locale: SupportedLocale) throws {
        let table = try #require(MessageCatalog.tables[locale])
        #expect(Set(table.minutes.keys) == locale.pluralCategories, "\(locale.tag) plural forms")
        for (category, form) in table.minutes { #expect(form.contains("{count}"), "\(locale.tag) \(category) lacks {count}") }
        for n in 0...120 { #expect(locale.pluralCategories.contains(locale.pluralCategory(n)), "\(locale.tag) \(n)") }
    }

    @Test func durationsAreLocalizedWithPlurals() {
        #expect(MessageCatalog.duration(minutes: 1, locale: .en) == "1 minute")
        #expect(MessageCatalog.duration(minutes: 15, locale: .en) == "15 minutes")
        #expect(MessageCatalog.duration(minutes: 5, locale: .de) == "5 Minuten")
        #expect(MessageCatalog.duration(minutes: 5, locale: .ja) == "5分")
        #expect(MessageCatalog.duration(minutes: 21, locale: .ru) == "21 минуту")
        #expect(MessageCatalog.duration(minutes: 3, locale: .ru) == "3 минуты")
        #expect(MessageCatalog.duration(minutes: 15, locale: .ru) == "15 минут")
        #expect(MessageCatalog.duration(minutes: 3, locale: .sk) == "3 minúty")
        #expect(MessageCatalog.duration(minutes: 2, locale: .ar) == "2 دقيقتين")
        #expect(MessageCatalog.duration(minutes: 0, locale: .en) == "1 minute", "never zero minutes")
        #expect(MessageCatalog.minutes(seconds: 61) == 2 && MessageCatalog.minutes(seconds: 900) == 15 && MessageCatalog.minutes(seconds: 0) == 1)
    }

    @Test func namedPlaceholdersAndLanguageAwareArguments() {
        #expect(
            MessageCatalog.text("login.locked", locale: .fr, arguments: ["minutes": "5"])
                == "Ce compte est verrouillé après trop de tentatives infructueuses. Réessayez dans 5 minutes.")
        #expect(
            MessageCatalog.text("login.throttled", locale: .ja, arguments: ["minutes": "5"])
                == "お使いのネットワークからのサインイン失敗が多すぎます。5分後にもう一度お試しください。")
        // `field.key` names the attribute's label, translated in the target language.
        let field = UserSchema.fieldArguments("email", display: "Email address")
        #expect(
            MessageCatalog.text("signup.identifier_taken", locale: .de, arguments: field)
                == "E-Mail-Adresse wird bereits von einem anderen Konto verwendet.")
        // A deployment's own label is kept as it is.
        #expect(
            MessageCatalog.text("signup.identifier_taken", locale: .de, arguments: UserSchema.fieldArguments("email", display: "Work mail"))
                == "Work mail wird bereits von einem anderen Konto verwendet.")
        #expect(MessageCatalog.text("no.such.key", locale: .fr) == nil)
        #expect(MessageCatalog.text("no.such.key", locale: .fr, default: "English") == "English")
    }

    @Test func aliasesAndFlowTextsResolve() {
        for (alias, target) in MessageCatalog.aliases {
            #expect(MessageCatalog.english.messages[target] != nil, "alias \(alias) → \(target) names no key")
            #expect(MessageCatalog.english.messages[alias] == nil, "\(alias) is both a key and an alias")
        }
        for (namespace, keys) in FlowTexts.keys {
            for key in keys { #expect(MessageCatalog.has("\(namespace):\(key)"), "flow text \(namespace):\(key)") }
        }
        for attribute in UserSchema.standard.attributes {
            #expect(MessageCatalog.text("user:attributes.\(attribute.name).label", locale: .en) == attribute.displayName)
        }
        for code in [
            "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
            "unsupported_response_type", "unsupported_token_type", "invalid_scope", "invalid_target", "invalid_token",
            "insufficient_scope", "access_denied", "login_required", "request_not_supported", "request_uri_not_supported", "server_error"
        ] {
            #expect(MessageCatalog.has("oauth.\(code)"), "oauth.\(code)")
        }
    }

    @Test func thePasskeyWorkKeysAreThereWithTheirEnglish() {
        let expected = [
            "passkey.failed": "We couldn't verify your passkey. Please try again.",
            "passkey.expired": "This passkey request has expired. Please try again.",
            "passkey.unknown": "This passkey isn't recognised. Sign in another way or create an account.",
            "passkey.registration_failed": "We couldn't save your passkey. Please try again.",
            "passkey.already_registered": "This passkey is already registered.",
            "passkey.not_found": "This passkey no longer exists.",
            "passkey.none": "There is no passkey for this account yet.",
            "apple.failed": "Sign in with Apple didn't work. Please try again.",
            "apple.expired": "Your Sign in with Apple attempt has expired. Please try again.",
            "login.invalid_credentials": "The email or password is incorrect.",
            "login.missing_fields": "Enter your email or username and your password.",
            "login.locked": "This account is locked after too many failed attempts. Try again in {minutes}.",
            "login.throttled": "Too many failed sign-in attempts from your network. Try again in {minutes}.",
            "login.disabled": "This account is disabled. Contact your administrator.",
            "signup.identifier_taken": "{field} is already used by another account.",
            "signup.identifier_required": "Enter an email address or a phone number.",
            "page.login.passkey": "Sign in with a passkey",
            "page.login.or": "or",
            "page.login.passkey_failed": "Passkey sign-in didn't work. Try again or use your password."
        ]
        for (key, english) in expected { #expect(MessageCatalog.english.messages[key] == english, "\(key)") }
    }

    @Test func apiErrorsAreLocalizedByKeyAndKeepTheirEnglishOtherwise() {
        let known = APIError(
            status: .badRequest, code: "X-1", error: "invalid_request", messageKey: "passkey.failed",
            userMessage: "We couldn't verify your passkey. Please try again.", technical: "bad signature",
            fieldErrors: [
                .init(
                    field: "password", message: "too short", code: "validation.password.minLength.invalid",
                    arguments: ["count": "8"])
            ])
        let french = known.localized(.fr)
        #expect(french.userMessage == "Nous n'avons pas pu vérifier votre clé d'accès. Veuillez réessayer.")
        #expect(french.technical == "bad signature")
        #expect(french.fieldErrors.first?.message == "Le mot de passe doit contenir au moins 8 caractères")
        let unknown = APIError(
            status: .badRequest, code: "X-2", error: "invalid_request", messageKey: "somebody.elses.key",
            userMessage: "Their English.", technical: "t")
        #expect(unknown.localized(.ja).userMessage == "Their English.")
        // A PasswordCheck outcome reads the same everywhere.
        let locked = PasswordCheck.locked(until: Date(timeIntervalSince1970: 600)).userMessage(now: Date(timeIntervalSince1970: 0))
        #expect(locked?.key == "login.locked" && locked?.arguments["minutes"] == "10")
        #expect(locked?.text(.ko) == "로그인 실패가 너무 많아 이 계정이 잠겼습니다. 10분 후에 다시 시도해 주세요.")
        #expect(locked?.english == "This account is locked after too many failed attempts. Try again in 10 minutes.")
    }
}
