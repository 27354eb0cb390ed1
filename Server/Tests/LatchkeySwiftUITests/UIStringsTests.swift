import Foundation
import Latchkey
import LatchkeySwiftUI
import Testing

/// The components' own texts: every key in every table, translated, and the language tags the SDK meets resolved to
/// the right table (the same 15 tables as the server's catalog).
@Suite("SwiftUI view models: component texts")
struct UIStringsTests {
    @Test("15 tables, each with every key, none an untranslated copy of English")
    func tablesAreComplete() {
        #expect(UIStrings.languages.count == 15)
        // German, like Apple's German, says "Passkeys".
        let sameWordAsEnglish: Set = ["de.passkeys"]
        for language in UIStrings.languages where language != "en" {
            for key in UIText.allCases {
                let text = UIStrings.text(key, language: language)
                let copyAllowed = sameWordAsEnglish.contains("\(language).\(key.rawValue)")
                #expect(!text.isEmpty && (copyAllowed || text != UIStrings.text(key, language: "en")), "\(language).\(key.rawValue)")
            }
        }
        for key in UIText.allCases { #expect(UIStrings.text(key, language: "en") != key.rawValue, "en.\(key.rawValue)") }
    }

    @Test("every placeholder of an English text is in each translation, and no other")
    func placeholders() throws {
        let pattern = try Regex("\\{[a-z]+\\}")
        func names(_ text: String) -> Set<String> { Set(text.matches(of: pattern).map { String(text[$0.range]) }) }
        for key in UIText.allCases {
            let english = names(UIStrings.text(key, language: "en"))
            for language in UIStrings.languages {
                #expect(names(UIStrings.text(key, language: language)) == english, "\(language).\(key.rawValue)")
            }
        }
    }

    @Test("tags resolve to tables: regions, scripts, Chinese variants, unknown languages to English")
    func resolution() {
        let cases: [([String], String)] = [
            (["fr-CA"], "fr"), (["pt_BR"], "pt"), (["zh-TW"], "zh-Hant"), (["zh-HK"], "zh-Hant"), (["zh-Hant-CN"], "zh-Hant"),
            (["zh-Hans-HK"], "zh-Hans"), (["zh"], "zh-Hans"), (["sw", "de-AT"], "de"), (["tlh"], "en"), ([], "en"), (["AR"], "ar")
        ]
        for (tags, expected) in cases { #expect(UIStrings.resolve(tags) == expected, "\(tags)") }
        #expect(UIStrings.isRightToLeft("ar") && !UIStrings.isRightToLeft("fr"))
    }

    @Test("an error's text: the server's localized message when there is one, else the table's words for its kind")
    @MainActor
    func errorMessages() {
        let i18n = LatchkeyI18n(locale: "ja", store: InMemoryLocaleStore())
        #expect(
            i18n.message(for: LatchkeyError(.networkError, "GET 127.0.0.1/x failed: connection refused"))
                == UIStrings.text(.networkError, language: "ja"))
        #expect(i18n.message(for: LatchkeyError(.authenticationFailed, "FET-1005", userMessage: "サーバーの文")) == "サーバーの文")
        #expect(i18n.checkMessages.required == UIStrings.text(.fieldRequired, language: "ja"))
    }
}
