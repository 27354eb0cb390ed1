import Foundation

/// The texts the built-in flows' components refer to (`{{ t(namespace:key) }}`), served by `GET /flow/meta` so
/// clients can render their own UI. They live in `MessageCatalog` under `namespace:key`, so a template's inside is
/// its catalog key.
enum FlowTexts {
    /// The namespaces of the built-in component trees, with their keys (the catalog has a text for each).
    static let keys: [String: [String]] = [
        "signin": [
            "forms.credentials.title", "forms.credentials.username.label", "forms.credentials.password.label",
            "forms.credentials.submit.label", "forms.credentials.passkey.label", "forms.passkey.title", "forms.passkey.submit.label",
            "forms.totp.title", "forms.totp.otp.label", "forms.totp.submit.label",
            "forms.email_otp.title", "forms.email_otp.otp.label", "forms.email_otp.submit.label", "forms.email_otp.resend.label",
            "forms.federated.title", "forms.federated.submit.label"
        ],
        "signup": [
            "forms.invitation.title", "forms.invitation.code.label", "forms.invitation.submit.label", "forms.credentials.title",
            "forms.credentials.username.label", "forms.credentials.password.label", "forms.credentials.submit.label",
            "forms.credentials.passkey.label", "forms.passkey.title", "forms.passkey.submit.label",
            "forms.attributes.title", "forms.attributes.submit.label"
        ],
        "recovery": [
            "forms.identify.title", "forms.identify.username.label", "forms.identify.submit.label", "forms.code.title",
            "forms.code.code.label", "forms.code.submit.label", "forms.code.resend.label", "forms.password.title",
            "forms.password.password.label", "forms.password.submit.label"
        ]
    ]

    /// The English texts (as before localization; kept for callers that want the reference wording).
    static var english: [String: [String: String]] { translations(.en, schema: .standard).filter { $0.key != "user" } }

    /// Every namespace in `locale`: the flows' own and `user` (attribute labels of `schema`).
    static func translations(_ locale: SupportedLocale, schema: UserSchema) -> [String: [String: String]] {
        var out: [String: [String: String]] = [:]
        for (namespace, keys) in Self.keys {
            out[namespace] = Dictionary(
                uniqueKeysWithValues: keys.map { ($0, MessageCatalog.text("\(namespace):\($0)", locale: locale, default: $0)) })
        }
        out["user"] = attributeLabels(schema, locale: locale)
        return out
    }

    /// Labels of the user-schema attributes (dynamic registration inputs), in the `user` namespace: the catalog's
    /// translation when the schema uses the standard English label, the deployment's own wording otherwise.
    static func attributeLabels(_ schema: UserSchema, locale: SupportedLocale = .en) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: schema.attributes.map { attribute in
                let arguments = UserSchema.fieldArguments(attribute.name, display: attribute.displayName)
                let label = arguments["field.key"].flatMap { MessageCatalog.text($0, locale: locale) } ?? attribute.displayName
                return ("attributes.\(attribute.name).label", label)
            })
    }

    /// The `(namespace, key)` pairs of the `{{ t(namespace:key) }}` templates in a label.
    static func references(in label: String) -> [(namespace: String, key: String)] {
        var found: [(String, String)] = []
        var rest = label[...]
        while let start = rest.range(of: "{{") {
            guard let end = rest[start.upperBound...].range(of: "}}") else { break }
            let inner = rest[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespaces)
            if inner.hasPrefix("t("), inner.hasSuffix(")") {
                let reference = inner.dropFirst(2).dropLast()
                if let colon = reference.firstIndex(of: ":") {
                    found.append(
                        (
                            String(reference[..<colon]).trimmingCharacters(in: .whitespaces),
                            String(reference[reference.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                        ))
                }
            }
            rest = rest[end.upperBound...]
        }
        return found
    }
}
