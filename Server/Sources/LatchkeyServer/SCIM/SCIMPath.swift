import Foundation
import LatchkeyJOSE

/// An attribute path of a PATCH operation (RFC 7644 §3.5.2, the `PATH` rule of §3.10), limited to the attributes a
/// Latchkey account has: `userName`, `name.givenName`, `emails[type eq "work"].value`, optionally prefixed by the
/// core User schema URN. Attribute names are case-insensitive (RFC 7643 §2.1); they are kept in canonical case.
struct SCIMPath: Equatable, Sendable {
    enum Attribute: String, Sendable, CaseIterable {
        case userName, name, displayName, emails, phoneNumbers, photos, locale, active
        /// The operator-granted roles: many values, written by administrators only.
        case roles
        /// Read-only: a path naming them is a `mutability` error, not an unknown path.
        case id, meta, schemas

        var multiValued: SCIMUser.MultiValued? { SCIMUser.MultiValued(rawValue: rawValue) }

        /// Sub-attributes a path may name.
        var subAttributes: [String] {
            switch self {
            case .name: ["givenName", "familyName", "formatted"]
            case .emails, .phoneNumbers, .photos: ["value", "type", "primary"]
            case .roles: ["value"]
            default: []
            }
        }

        static func named(_ text: some StringProtocol) -> Attribute? {
            allCases.first { $0.rawValue.caseInsensitiveCompare(text) == .orderedSame }
        }
    }

    var attribute: Attribute
    /// The value filter of a multi-valued attribute (`emails[type eq "work"]`).
    var filter: SCIMFilter?
    /// Canonical sub-attribute name (`givenName`, `value` …).
    var subAttribute: String?

    init(attribute: Attribute, filter: SCIMFilter? = nil, subAttribute: String? = nil) {
        self.attribute = attribute; self.filter = filter; self.subAttribute = subAttribute
    }

    static func parse(_ text: String) throws(SCIMError) -> SCIMPath {
        let path = try stripSchema(text.trimmingCharacters(in: .whitespaces))
        let name: Substring, filterText: Substring?, rest: Substring
        if let open = path.firstIndex(of: "[") {
            guard let close = path.lastIndex(of: "]"), close > open else {
                throw .badRequest(.invalidPath, "\(text): unbalanced brackets")
            }
            name = path[..<open]
            filterText = path[path.index(after: open)..<close]
            rest = path[path.index(after: close)...]
        } else {
            let dot = path.firstIndex(of: ".") ?? path.endIndex
            name = path[..<dot]
            filterText = nil
            rest = path[dot...]
        }
        guard let attribute = Attribute.named(name) else {
            throw .badRequest(.invalidPath, "\(text) is not an attribute of this server's users")
        }
        var sub: String?
        if !rest.isEmpty {
            guard rest.first == ".", case let subName = rest.dropFirst(), !subName.contains("."),
                let canonical = attribute.subAttributes.first(where: { $0.caseInsensitiveCompare(subName) == .orderedSame })
            else {
                throw .badRequest(.invalidPath, "\(text) is not an attribute of this server's users")
            }
            sub = canonical
        }
        var filter: SCIMFilter?
        if let filterText {
            guard attribute.multiValued != nil || attribute == .roles else {
                throw .badRequest(.invalidPath, "\(text): only multi-valued attributes take a filter")
            }
            filter = try SCIMFilter.parse(String(filterText))
        }
        return SCIMPath(attribute: attribute, filter: filter, subAttribute: sub)
    }

    /// Drops the core User schema URN (`urn:…:User:name.givenName`); other schemas (extensions) are not supported.
    static func stripSchema(_ path: String) throws(SCIMError) -> String {
        let prefix = SCIMUser.schemaURN.lowercased() + ":"
        if path.lowercased().hasPrefix(prefix) { return String(path.dropFirst(prefix.count)) }
        if path.lowercased().hasPrefix("urn:") { throw .badRequest(.invalidPath, "\(path): schema extensions are not supported") }
        return path
    }
}

/// A filter (RFC 7644 §3.4.2.2) reduced to what this server evaluates: comparisons (`eq`, and `gt`, `ge`, `lt`, `le`
/// for the attributes that order) joined by `and` (`type eq "work"`, `userName eq "bjensen"`,
/// `meta.lastModified gt "2024-05-01T00:00:00Z"`). Where each operator is accepted is for the evaluator to say.
struct SCIMFilter: Equatable, Sendable {
    enum Operator: String, Sendable { case eq, gt, ge, lt, le }

    struct Comparison: Equatable, Sendable {
        /// Attribute path as written, URN prefix removed (`userName`, `emails.value`).
        var attribute: String
        var value: JSONValue
        var op: Operator = .eq
    }

    var comparisons: [Comparison]

    static func parse(_ text: String) throws(SCIMError) -> SCIMFilter {
        let tokens = try tokenize(text)
        var comparisons: [Comparison] = []
        var index = 0
        while index < tokens.count {
            if !comparisons.isEmpty {
                guard case .word(let joiner) = tokens[index], joiner.lowercased() == "and" else {
                    throw .badRequest(.invalidFilter, "only comparisons joined by `and` are supported: \(text)")
                }
                index += 1
            }
            guard index + 2 < tokens.count, case .word(let attribute) = tokens[index], case .word(let op) = tokens[index + 1] else {
                throw .badRequest(.invalidFilter, "expected `attribute eq value` in \(text)")
            }
            guard let comparisonOperator = Operator(rawValue: op.lowercased()) else {
                throw .badRequest(.invalidFilter, "only the eq, gt, ge, lt and le operators are supported: \(text)")
            }
            let value: JSONValue
            switch tokens[index + 2] {
            case .string(let s): value = .string(s)
            case .word(let w):
                switch w.lowercased() {
                case "true": value = .bool(true)
                case "false": value = .bool(false)
                case "null": value = .null
                default:
                    guard let number = Double(w) else { throw .badRequest(.invalidFilter, "\(w) is not a filter value (quote strings)") }
                    value = .number(number)
                }
            }
            comparisons.append(Comparison(attribute: try SCIMPath.stripSchema(attribute), value: value, op: comparisonOperator))
            index += 3
        }
        guard !comparisons.isEmpty else { throw .badRequest(.invalidFilter, "the filter is empty") }
        return SCIMFilter(comparisons: comparisons)
    }

    private enum Token { case word(String), string(String) }

    private static func tokenize(_ text: String) throws(SCIMError) -> [Token] {
        var tokens: [Token] = []
        let characters = Array(text)
        var i = 0
        while i < characters.count {
            let c = characters[i]
            if c == " " || c == "\t" { i += 1; continue }
            if c == "(" || c == ")" || c == "[" || c == "]" {
                throw .badRequest(.invalidFilter, "grouping and nested filters are not supported: \(text)")
            }
            if c == "\"" {
                // A JSON string literal (RFC 7644 §3.4.2.2 compValue): find the closing quote, let JSON decode escapes.
                var j = i + 1
                while j < characters.count, characters[j] != "\"" { j += characters[j] == "\\" ? 2 : 1 }
                guard j < characters.count,
                    let literal = try? JSONDecoder().decode(String.self, from: Data(String(characters[i...j]).utf8))
                else {
                    throw .badRequest(.invalidFilter, "unterminated string in \(text)")
                }
                tokens.append(.string(literal))
                i = j + 1
                continue
            }
            var j = i
            while j < characters.count, !" \t()[]\"".contains(characters[j]) { j += 1 }
            tokens.append(.word(String(characters[i..<j])))
            i = j
        }
        return tokens
    }
}
