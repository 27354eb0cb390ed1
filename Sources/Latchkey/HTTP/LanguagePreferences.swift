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
                  !["c", "posix"].contains(tag.lowercased()) else { continue }
            if seen.insert(tag.lowercased()).inserted { out.append(tag) }
            if out.count == 10 { break }
        }
        return out
    }

    /// `Accept-Language` for the tags (RFC 9110 §12.5.4), descending q-values: `fr-CA, fr;q=0.9, en;q=0.8`. A
    /// regional tag is followed by its bare language when the list does not name it, so servers that only match
    /// whole tags still find the language. Nil for an empty list.
    public static func acceptLanguage(_ tags: [String]) -> String? {
        var expanded: [String] = []
        let lowered = Set(tags.map { $0.lowercased() })
        for tag in tags {
            if !expanded.contains(where: { $0.caseInsensitiveCompare(tag) == .orderedSame }) { expanded.append(tag) }
            if let base = tag.split(separator: "-").first.map(String.init), base.count < tag.count, !lowered.contains(base.lowercased()),
               !expanded.contains(where: { $0.caseInsensitiveCompare(base) == .orderedSame }) {
                expanded.append(base)
            }
        }
        guard !expanded.isEmpty else { return nil }
        return expanded.prefix(10).enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(10 - index)"
        }.joined(separator: ", ")
    }
}

/// The choke point that puts `Accept-Language` on every request the SDK makes (discovery, token, flows, profile,
/// and whatever is added later), unless the caller set one itself.
struct LanguageHTTPClient: HTTPClient {
    let base: any HTTPClient
    let acceptLanguage: String

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var request = request
        if !request.headers.keys.contains(where: { $0.caseInsensitiveCompare("Accept-Language") == .orderedSame }) {
            request.headers["Accept-Language"] = acceptLanguage
        }
        return try await base.send(request)
    }
}
