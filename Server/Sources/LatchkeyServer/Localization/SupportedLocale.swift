import Foundation

/// A BCP 47 language tag split into the parts negotiation needs (`zh-Hant-HK` → `zh`, `Hant`, `HK`). Parsing is
/// deliberately independent of Foundation's `Locale`, whose behaviour differs between Linux and Apple platforms.
public struct LanguageTag: Sendable, Hashable, CustomStringConvertible {
    /// Primary language subtag, lowercased (`fr`, `zh`, `ja`).
    public var language: String
    /// Script subtag, title-cased (`Hans`, `Hant`), when present.
    public var script: String?
    /// Region subtag, uppercased (`CA`, `HK`, `419`), when present.
    public var region: String?

    /// Parses a tag such as `pt-BR`, `zh_Hant_TW` or `sr-Latn-RS`; nil when it is not a language tag (`*`, empty,
    /// digits, garbage). Subtags after the region (variants, extensions) are ignored.
    public init?(_ raw: String) {
        let parts = raw.trimmingCharacters(in: .whitespaces).split(omittingEmptySubsequences: false, whereSeparator: { $0 == "-" || $0 == "_" })
            .map(String.init)
        guard let first = parts.first, (2...8).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        guard parts.allSatisfy({ !$0.isEmpty && $0.count <= 8 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }) else { return nil }
        language = first.lowercased()
        var rest = parts.dropFirst()
        if let next = rest.first, next.count == 4, next.allSatisfy(\.isLetter) {
            script = next.prefix(1).uppercased() + next.dropFirst().lowercased()
            rest = rest.dropFirst()
        }
        if let next = rest.first, (next.count == 2 && next.allSatisfy(\.isLetter)) || (next.count == 3 && next.allSatisfy(\.isNumber)) {
            region = next.uppercased()
        }
    }

    public var description: String { [language, script, region].compactMap { $0 }.joined(separator: "-") }
}

/// The languages the server has message tables for. The seeds list 20 codes; they resolve to these 15 tables:
/// `zh-CN`/`zh-SG` → `zh-Hans`, `zh-HK`/`zh-MO`/`zh-TW` → `zh-Hant`, `jp` (the seeds' spelling) → `ja`,
/// `pt-BR`/`pt-PT` → `pt`, any other region → its language.
public enum SupportedLocale: String, Sendable, CaseIterable, Codable {
    case ar, de, en, es, fr, hu, it, ja, ko, nl, pt, ru, sk
    case zhHans = "zh-Hans"
    case zhHant = "zh-Hant"

    /// The BCP 47 tag (`lang` attribute, `Content-Language`, `/flow/meta` `language`).
    public var tag: String { rawValue }

    /// Text direction for the hosted pages' `dir` attribute.
    public var isRightToLeft: Bool { self == .ar }
    /// `rtl` or `ltr`, as the HTML `dir` attribute wants it.
    public var direction: String { isRightToLeft ? "rtl" : "ltr" }

    /// The table a requested tag resolves to; nil when none fits (the caller then tries the next preference).
    public init?(resolving raw: String) {
        guard let tag = LanguageTag(raw) else { return nil }
        self.init(resolving: tag)
    }

    /// As `init?(resolving:)` for an already parsed tag.
    public init?(resolving tag: LanguageTag) {
        switch tag.language {
        case "zh":
            // Script wins over region (`zh-Hant-CN` is Traditional); without a script, the region decides.
            if let script = tag.script {
                switch script {
                case "Hant": self = .zhHant
                case "Hans": self = .zhHans
                default: return nil
                }
            } else if let region = tag.region, ["HK", "MO", "TW"].contains(region) {
                self = .zhHant
            } else {
                self = .zhHans  // bare `zh`, `zh-CN`, `zh-SG` and the rest: Simplified, the most widely read
            }
        case "jp": self = .ja  // not an ISO 639 code, but what the seeds (and some apps) send
        default:
            guard let known = SupportedLocale(rawValue: tag.language), known != .zhHans, known != .zhHant else { return nil }
            self = known
        }
    }

    /// CLDR plural category of a whole number in this language (used by the duration formats).
    public func pluralCategory(_ n: Int) -> PluralCategory {
        let n = abs(n)
        switch self {
        case .ja, .ko, .zhHans, .zhHant: return .other
        case .fr, .pt: return n <= 1 ? .one : .other  // CLDR: i = 0,1 → one
        case .ar:
            switch n {
            case 0: return .zero
            case 1: return .one
            case 2: return .two
            default:
                let r = n % 100
                if (3...10).contains(r) { return .few }
                if (11...99).contains(r) { return .many }
                return .other
            }
        case .ru:
            let r10 = n % 10, r100 = n % 100
            if r10 == 1 && r100 != 11 { return .one }
            if (2...4).contains(r10) && !(12...14).contains(r100) { return .few }
            return .many
        case .sk:
            if n == 1 { return .one }
            if (2...4).contains(n) { return .few }
            return .other
        case .de, .en, .es, .hu, .it, .nl: return n == 1 ? .one : .other
        }
    }

    /// The categories `pluralCategory` can answer for whole numbers: each language table must define exactly these.
    public var pluralCategories: Set<PluralCategory> {
        switch self {
        case .ja, .ko, .zhHans, .zhHant: [.other]
        case .ar: [.zero, .one, .two, .few, .many, .other]
        case .ru: [.one, .few, .many]
        case .sk: [.one, .few, .other]
        default: [.one, .other]
        }
    }
}

/// CLDR plural categories.
public enum PluralCategory: String, Sendable, CaseIterable { case zero, one, two, few, many, other }
