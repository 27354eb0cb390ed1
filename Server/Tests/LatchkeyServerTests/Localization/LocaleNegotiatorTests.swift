import Testing
@testable import LatchkeyServer

@Suite("Locale negotiation: tags, Accept-Language, ui_locales, explicit locale")
struct LocaleNegotiatorTests {
    @Test(arguments: [
        ("fr", "fr"), ("fr-CA", "fr"), ("en-GB", "en"), ("en", "en"), ("pt-BR", "pt"), ("pt-PT", "pt"), ("jp", "ja"), ("ja-JP", "ja"),
        ("zh-CN", "zh-Hans"), ("zh-SG", "zh-Hans"), ("zh", "zh-Hans"), ("zh-Hans", "zh-Hans"), ("zh-HK", "zh-Hant"), ("zh-MO", "zh-Hant"),
        ("zh-TW", "zh-Hant"), ("zh-Hant", "zh-Hant"), ("zh-Hant-HK", "zh-Hant"), ("zh-Hans-HK", "zh-Hans"), ("zh_Hant_TW", "zh-Hant"),
        ("ZH-hk", "zh-Hant"), ("ar-EG", "ar"), ("es-419", "es"), ("de-AT", "de"), ("sk", "sk"), ("hu-HU", "hu"), ("ko-KR", "ko"),
        ("nl-BE", "nl"), ("ru", "ru"), ("it-CH", "it")
    ])
    func tagsResolveToTables(_ tag: String, _ expected: String) {
        #expect(SupportedLocale(resolving: tag)?.tag == expected, "\(tag)")
    }

    @Test(arguments: ["tlh", "x", "", "*", "12", "zh-Latn", "fr;q=1", "en US", "-fr", "i-klingon-too-long-subtag"])
    func unsupportedOrMalformedTagsResolveToNothing(_ tag: String) {
        #expect(SupportedLocale(resolving: tag) == nil, "\(tag)")
    }

    @Test(arguments: [
        ("fr-CA, fr;q=0.9, en;q=0.8", "fr"),
        ("en;q=0.5, ja", "ja"),
        ("de;q=0.1, ko;q=0.7, *;q=0.9", "ko"),
        ("*", "en"),
        ("tlh, ar;q=0.4", "ar"),
        ("fr;q=0, de", "de"),
        ("es;q=abc, it;q=0.9", "es"),
        (";;;, ,,, nl", "nl"),
        ("garbage!!", "en"),
        ("", "en"),
        ("zh-HK,zh;q=0.9", "zh-Hant"),
        ("zh-SG", "zh-Hans"),
        ("ja;q=0.8, ja-JP;q=0.9, pt-BR;q=0.85", "ja"),
        ("sk , hu;q=1.0", "sk")
    ])
    func acceptLanguageHonoursQValues(_ header: String, _ expected: String) {
        #expect(LocaleNegotiator.negotiate(acceptLanguage: header).tag == expected, "\(header)")
    }

    @Test func qValueOrderingIsStableForEqualWeights() {
        #expect(LocaleNegotiator.acceptLanguageRanges("a;q=0.5, fr, b;q=0.5, de") == ["fr", "de", "a", "b"])
        #expect(LocaleNegotiator.acceptLanguageRanges("en;q=0, *;q=0.1") == [])
    }

    @Test func precedenceIsExplicitThenUILocalesThenAcceptLanguageThenEnglish() {
        #expect(LocaleNegotiator.negotiate(explicit: "de", uiLocales: "ja", acceptLanguage: "fr").tag == "de")
        #expect(LocaleNegotiator.negotiate(explicit: nil, uiLocales: "ja", acceptLanguage: "fr").tag == "ja")
        #expect(LocaleNegotiator.negotiate(explicit: nil, uiLocales: nil, acceptLanguage: "fr").tag == "fr")
        #expect(LocaleNegotiator.negotiate().tag == "en")
        // A source with nothing usable falls through to the next one.
        #expect(LocaleNegotiator.negotiate(explicit: "tlh", uiLocales: "xx yy", acceptLanguage: "ko").tag == "ko")
        #expect(LocaleNegotiator.negotiate(explicit: nil, uiLocales: "tlh zh-TW", acceptLanguage: "fr").tag == "zh-Hant", "ui_locales in order")
        #expect(LocaleNegotiator.negotiate(explicit: "", uiLocales: "", acceptLanguage: "").tag == "en")
    }

    @Test func languageTagParsing() throws {
        let tag = try #require(LanguageTag("zh-hant-hk"))
        #expect(tag.language == "zh" && tag.script == "Hant" && tag.region == "HK" && tag.description == "zh-Hant-HK")
        #expect(LanguageTag("es-419")?.region == "419")
        #expect(LanguageTag("sr-Latn-RS-variant")?.description == "sr-Latn-RS")
    }

    @Test func textDirection() {
        #expect(SupportedLocale.ar.direction == "rtl")
        #expect(SupportedLocale.allCases.filter(\.isRightToLeft) == [.ar])
    }
}
