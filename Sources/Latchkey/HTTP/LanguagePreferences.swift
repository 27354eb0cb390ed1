import Foundation

/// Turns the user's language preferences into what goes on the wire.
public enum LanguagePreferences {
    /// Clean BCP 47 tags: `_` becomes `-` (`Locale` identifiers such as `fr_CA`), POSIX suffixes (`.UTF-8`, `@euro`)
    /// and anything that is not a language tag (`C`, `POSIX`, header-breaking characters) are dropped, duplicates
    /// removed (case-insensitively), order kept. At most 10 tags.
    public static func tags(_ languages: [String]) -> [String] {
        var seen: Set<String> = []
        var out: [String] = []
        for raw in languages {
            var tag = raw.split(whereSeparator: { $0 == "." || $0 == "@" }).first.map(String.init) ?? ""
            tag = tag.replacingOccurrences(of: "_", with: "-").trimmingCharacters(in: .whitespaces)
            let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
            guard let first = subtags.first, (2...8).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }),
                subtags.allSatisfy({ !$0.isEmpty && $0.count <= 8 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }),
                !["c", "posix"].contains(tag.lowercased())
            else { continue }
            if seen.insert(tag.lowercased()).inserted { out.append(tag) }
            if out.count == 10 { break }
        }
        return out
    }

    /// The languages the SDK's own texts are written in (the server's 15, as BCP 47 tags): the passkey messages of
    /// `PasskeyErrorMessages` and the SwiftUI components' `UIStrings`.
    public static let sdkLanguages: [String] = [
        "ar", "de", "en", "es", "fr", "hu", "it", "ja", "ko", "nl", "pt", "ru", "sk", "zh-Hans", "zh-Hant"
    ]

    /// The first of `preferred` the SDK's texts are written in (`fr-CA` → `fr`, `pt_BR` → `pt`, `zh-TW` → `zh-Hant`,
    /// `zh` → `zh-Hans`), else `en`: the same choice the server makes from `Accept-Language`, so the SDK's words and
    /// the server's are in one language.
    public static func sdkLanguage(for preferred: [String]) -> String {
        for raw in preferred {
            let parts = raw.replacingOccurrences(of: "_", with: "-").split(separator: "-").map(String.init)
            guard let language = parts.first?.lowercased(), !language.isEmpty else { continue }
            if language == "zh" {
                // The script decides; without one, the regions that write Traditional Chinese.
                let rest = parts.dropFirst().map { $0.lowercased() }
                if rest.contains("hant") || rest.contains(where: { ["hk", "mo", "tw"].contains($0) }) && !rest.contains("hans") { return "zh-Hant" }
                return "zh-Hans"
            }
            if sdkLanguages.contains(language) { return language }
        }
        return "en"
    }

    /// `Accept-Language` for the tags (RFC 9110 §12.5.4), descending q-values: `fr-CA, fr;q=0.9, en;q=0.8`. A
    /// regional tag is followed by its bare language when the list does not name it, so servers that only match
    /// whole tags still find the language. Nil for an empty list.
    public static func acceptLanguage(_ tags: [String]) -> String? {
        var expanded: [String] = []
        let lowered = tags.map { $0.lowercased() }
        func base(_ tag: String) -> String { tag.split(separator: "-").first.map { String($0).lowercased() } ?? tag.lowercased() }
        for (index, tag) in tags.enumerated() {
            expanded.append(tag)
            // After the last tag of a language, its bare language (unless listed): `fr-CA, en` → `fr-CA, fr, en`.
            let language = base(tag)
            let isLastOfLanguage = !tags[(index + 1)...].contains { base($0) == language }
            if isLastOfLanguage, language != tag.lowercased(), !lowered.contains(language) { expanded.append(language) }
        }
        guard !expanded.isEmpty else { return nil }
        return expanded.prefix(10).enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(10 - index)"
        }.joined(separator: ", ")
    }
}

/// The choke point that puts `Accept-Language` on every request the SDK makes (discovery, token, flows, profile,
/// and whatever is added later), unless the request already has one (in any letter case). `LatchkeyClient` wraps
/// its HTTP client in one of these from `LatchkeyConfig.preferredLanguages`.
public struct LanguageHTTPClient: HTTPClient {
    public let base: any HTTPClient
    public let acceptLanguage: String

    public init(base: any HTTPClient, acceptLanguage: String) {
        self.base = base
        self.acceptLanguage = acceptLanguage
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var request = request
        if !request.headers.keys.contains(where: { $0.caseInsensitiveCompare("Accept-Language") == .orderedSame }) {
            request.headers["Accept-Language"] = acceptLanguage
        }
        return try await base.send(request)
    }
}

/// As `LanguageHTTPClient`, reading the header value for each request, so a language switch applies to the next
/// request of every part of the SDK at once.
struct PreferredLanguageHTTPClient: HTTPClient {
    let base: any HTTPClient
    let acceptLanguage: @Sendable () -> String?

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let value = acceptLanguage() else { return try await base.send(request) }
        return try await LanguageHTTPClient(base: base, acceptLanguage: value).send(request)
    }
}
