import Foundation

/// The keys a configuration file may hold, level by level, so that a typo is refused at start rather than silently
/// ignored: a misspelt `login_policy` or `require_mfa` would otherwise leave the default in force without a word.
///
/// Built from the decoders' own `CodingKeys`, so a key the server reads is a key this accepts, and nothing else.
indirect enum ConfigurationShape: Sendable {
    /// An object with these keys, each of its own shape.
    case object([String: ConfigurationShape])
    /// An array whose elements all have one shape.
    case array(ConfigurationShape)
    /// A value read whole: a scalar, or a free-form object whose keys are data (user claims, flow graphs).
    case value

    /// The configuration file.
    static let file: ConfigurationShape = .object(
        keys(
            ConfigurationFile.CodingKeys.self,
            nested: [
                "clients": .array(.object(keys(ClientConfiguration.CodingKeys.self))),
                "users": .array(.object(keys(UserSeed.CodingKeys.self))),
                "lifetimes": .object(keys(ConfigurationFile.Lifetimes.CodingKeys.self)),
                "login_policy": .object(keys(ConfigurationFile.Policy.CodingKeys.self)),
                "webauthn": .object(keys(ConfigurationFile.WebAuthn.CodingKeys.self)),
                "apple": .object(keys(ConfigurationFile.Apple.CodingKeys.self)),
                "smtp": .object(keys(SMTPFile.CodingKeys.self)),
                "dpop": .object(keys(ConfigurationFile.DPoPFile.CodingKeys.self)),
                "identity_providers": .array(.object(keys(IdentityProviderFile.CodingKeys.self))),
                "client_registration": .object(keys(ClientRegistrationPolicy.CodingKeys.self)),
                "audit_webhooks": .array(.object(keys(AuditWebhookFile.CodingKeys.self))),
                "associations": .object(keys(ConfigurationFile.Associations.CodingKeys.self))
            ]))

    private static func keys<K: CodingKey & CaseIterable>(_ type: K.Type, nested: [String: ConfigurationShape] = [:]) -> [String: ConfigurationShape]
    {
        Dictionary(uniqueKeysWithValues: K.allCases.map { ($0.stringValue, nested[$0.stringValue] ?? .value) })
    }

    /// Every key of `json` this shape does not know, as one error naming each one's path and the nearest known key.
    func check(_ json: Any) throws {
        let unknown = unknownKeys(json, path: "")
        guard !unknown.isEmpty else { return }
        // One per line when there are several, so each reads as the issue's own sentence.
        throw ConfigurationError.invalid(unknown.count == 1 ? unknown[0] : "\n  " + unknown.joined(separator: "\n  "))
    }

    private func unknownKeys(_ json: Any, path: String) -> [String] {
        switch (self, json) {
        case (.object(let known), let object as [String: Any]):
            return object.keys.sorted().flatMap { key -> [String] in
                let here = path.isEmpty ? key : path + "." + key
                guard let shape = known[key] else {
                    let hint = Self.nearest(to: key, in: Array(known.keys)).map { "; did you mean `\($0)`?" } ?? ""
                    return ["`\(here)`: unknown key\(hint)"]
                }
                return object[key].map { shape.unknownKeys($0, path: here) } ?? []
            }
        case (.array(let element), let array as [Any]):
            return array.enumerated().flatMap { element.unknownKeys($1, path: "\(path)[\($0)]") }
        default:
            return []  // a wrong type is the decoder's to report, in its own words
        }
    }

    /// The known key closest to `key` by edit distance, if it is close enough to be what was meant.
    static func nearest(to key: String, in known: [String]) -> String? {
        var best: (key: String, score: Int)?
        for candidate in known.sorted() {
            let score = distance(key.lowercased(), candidate.lowercased())
            if score < (best?.score ?? .max) { best = (candidate, score) }
        }
        guard let best, best.score <= max(2, key.count / 3) else { return nil }
        return best.key
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
