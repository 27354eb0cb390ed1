import Foundation

/// Picks the language of a response. Precedence, highest first:
///
/// 1. an explicit locale the client asked for in the API call (`/flow/execute` `locale`, `/flow/meta?language=`),
/// 2. OpenID Connect `ui_locales` (space-separated, in order of preference; remembered with the pending login),
/// 3. the `Accept-Language` header (q-values honoured, `*` and malformed entries tolerated),
/// 4. English.
///
/// Within each source the first tag that resolves to a table wins; a source with nothing usable falls through to the
/// next one, so `ui_locales=tlh` still lets `Accept-Language: fr` decide.
public enum LocaleNegotiator {
    /// The table to answer in, from the sources above (each may be absent or unusable).
    public static func negotiate(explicit: String? = nil, uiLocales: String? = nil, acceptLanguage: String? = nil) -> SupportedLocale {
        if let explicit, let locale = firstSupported(explicit.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)) {
            return locale
        }
        if let uiLocales, let locale = firstSupported(uiLocales.split(separator: " ").map(String.init)) { return locale }
        if let acceptLanguage, let locale = firstSupported(acceptLanguageRanges(acceptLanguage)) { return locale }
        return .en
    }

    /// The first tag (in order) that resolves to a supported table.
    public static func firstSupported(_ tags: [String]) -> SupportedLocale? {
        for tag in tags { if let locale = SupportedLocale(resolving: tag) { return locale } }
        return nil
    }

    /// RFC 9110 §12.5.4 language ranges, best first: sorted by q-value (stable, so equal weights keep the header's
    /// order); `q=0` ("not acceptable") and `*` are dropped, and so is anything that does not parse. A malformed
    /// q-value counts as 1, as lenient servers do, rather than discarding the whole header.
    public static func acceptLanguageRanges(_ header: String) -> [String] {
        var ranges: [(tag: String, q: Double, index: Int)] = []
        for (index, item) in header.split(separator: ",").prefix(64).enumerated() {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = parts.first, !tag.isEmpty, tag != "*" else { continue }
            var q = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2, pair[0].lowercased() == "q", let value = Double(pair[1]), value.isFinite { q = min(max(value, 0), 1) }
            }
            if q > 0 { ranges.append((tag, q, index)) }
        }
        return ranges.sorted { $0.q != $1.q ? $0.q > $1.q : $0.index < $1.index }.map(\.tag)
    }
}
