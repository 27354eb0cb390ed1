import Foundation

/// A field of the console's application form, named by its row of the settings table (`ClientSetting.console`): the
/// control it is, where it sits on the form, and how it reads and writes the registration metadata. The form, what a
/// submission holds and what it changes are all made from these, so a setting put on the form is one row.
struct ConsoleField: Sendable {
    /// The control, with what it needs to be drawn.
    enum Control: Sendable {
        /// A one-line text box; `leftToRight` for values that are not prose (scopes).
        case text(required: Bool, leftToRight: Bool)
        /// A text area of one value a line (URIs), with a hint's catalog key.
        case lines(hintKey: String?)
        /// A drop-down of one value among `options`; an option's label is the catalog key `labelKeyPrefix` + its value.
        case choice(options: [String], labelKeyPrefix: String)
        /// A check box sent as `yes`.
        case flag
        /// Check boxes for any of `options`: each option's value, and the name its element id (`idPrefix` + name) and
        /// label's catalog key (`labelKeyPrefix` + name) end with.
        case choices(options: [(value: String, name: String)], idPrefix: String, labelKeyPrefix: String)
    }

    /// What a field holds.
    enum Value: Sendable, Equatable {
        case text(String)
        case flag(Bool)
        case set(Set<String>)
    }

    /// The form's name of the field, which is also its element id.
    let name: String
    /// Its place on the form (the table's order is the order registration reads the members in).
    let position: Int
    /// The catalog key of its label (a group's legend for check boxes).
    let labelKey: String
    let control: Control
    /// What a new application's form shows.
    let blank: Value
    /// The value shown for an application described by `metadata`.
    let read: @Sendable (ClientMetadata) -> Value
    /// The submitted `value` written over `metadata`.
    let write: @Sendable (Value, inout ClientMetadata) -> Void
}

extension ConsoleField.Value {
    var text: String {
        if case .text(let text) = self { text } else { "" }
    }
    var isOn: Bool {
        if case .flag(let on) = self { on } else { false }
    }
    var members: Set<String> {
        if case .set(let members) = self { members } else { [] }
    }
}

// MARK: The fields

extension ConsoleField {
    /// A text member (`client_name`, `scope`).
    static func text(
        _ name: String, position: Int, label: String, _ path: any WritableKeyPath<ClientMetadata, String?> & Sendable,
        required: Bool = false, leftToRight: Bool = false, blank: String = ""
    ) -> ConsoleField {
        ConsoleField(
            name: name, position: position, labelKey: label, control: .text(required: required, leftToRight: leftToRight),
            blank: .text(blank), read: { .text($0[keyPath: path] ?? "") }, write: { value, m in m[keyPath: path] = value.text })
    }

    /// A list member edited one value a line (the redirect URIs).
    static func lines(
        _ name: String, position: Int, label: String, hint: String? = nil, _ path: any WritableKeyPath<ClientMetadata, [String]?> & Sendable
    ) -> ConsoleField {
        ConsoleField(
            name: name, position: position, labelKey: label, control: .lines(hintKey: hint), blank: .text(""),
            read: { .text(($0[keyPath: path] ?? []).joined(separator: "\n")) }, write: { value, m in m[keyPath: path] = lines(value.text) })
    }

    /// A flag member (`latchkey_require_mfa`).
    static func flag(
        _ name: String, position: Int, label: String, _ path: any WritableKeyPath<ClientMetadata, Bool?> & Sendable
    ) -> ConsoleField {
        ConsoleField(
            name: name, position: position, labelKey: label, control: .flag, blank: .flag(false),
            read: { .flag($0[keyPath: path] ?? false) }, write: { value, m in m[keyPath: path] = value.isOn })
    }

    /// `latchkey_app_type`; choosing it drops OpenID Connect's coarser `application_type`, which would otherwise win.
    static let appType = ConsoleField(
        name: "app_type", position: 1, labelKey: "console.apps.type",
        control: .choice(options: ClientConfiguration.AppType.allCases.map(\.rawValue), labelKeyPrefix: "console.apps.type."),
        blank: .text(ClientConfiguration.AppType.native.rawValue), read: { .text($0.appType ?? "") },
        write: { value, m in
            m.appType = value.text
            m.applicationType = nil
        })

    /// "Confidential": `token_endpoint_auth_method` `client_secret_basic` rather than `none`. (An update keeps the way a
    /// confidential application already authenticates: `ConsoleApplications.update`.)
    static let confidential = ConsoleField(
        name: "confidential", position: 2, labelKey: "console.apps.confidential", control: .flag, blank: .flag(false),
        read: { .flag(($0.tokenEndpointAuthMethod ?? ClientAuthMethod.none.rawValue) != ClientAuthMethod.none.rawValue) },
        write: { value, m in
            m.tokenEndpointAuthMethod = value.isOn ? ClientAuthMethod.clientSecretBasic.rawValue : ClientAuthMethod.none.rawValue
        })

    /// The grants of the token endpoint. The implicit grant and the response types are not on the form: kept as they
    /// were, as far as the grants chosen still go with them (a code grant chosen brings `code`).
    static let grants = ConsoleField(
        name: "grant_types", position: 5, labelKey: "console.apps.grants",
        control: .choices(
            options: [GrantType.authorizationCode, .refreshToken, .clientCredentials, .deviceCode, .tokenExchange].map { grant in
                let short = (grant.rawValue.split(separator: ":").last.map(String.init) ?? grant.rawValue)
                return (grant.rawValue, short.replacingOccurrences(of: "_", with: "-"))
            }, idPrefix: "grant-", labelKeyPrefix: "console.apps.grant."),
        blank: .set([GrantType.authorizationCode.rawValue, GrantType.refreshToken.rawValue]),
        read: { .set(Set($0.grantTypes ?? [])) },
        write: { value, m in
            let hidden = (m.grantTypes ?? []).filter { $0 == GrantType.implicit.rawValue }
            let chosen = GrantType.allCases.map(\.rawValue).filter { value.members.contains($0) || hidden.contains($0) }
            m.grantTypes = chosen
            var types = (m.responseTypes ?? []).filter { name in
                ResponseType(parameter: name).map { $0.grantTypes.allSatisfy { chosen.contains($0.rawValue) } } ?? false
            }
            if chosen.contains(GrantType.authorizationCode.rawValue), !types.contains(where: { ResponseType(parameter: $0)?.issuesCode == true }) {
                types.insert(ResponseType.code.rawValue, at: 0)
            }
            m.responseTypes = types.isEmpty ? nil : types
        })

    /// The non-empty lines of `text`, trimmed.
    static func lines(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The form's fields, from the settings table, in their places.
    static let all: [ConsoleField] = ClientSetting.all.compactMap { setting in
        if case .field(let field) = setting.console { field } else { nil }
    }.sorted { $0.position < $1.position }
}

// MARK: A submission

extension ConsoleApplications {
    /// What the form holds: a new application's defaults, an application's settings, or a submission.
    struct FormValues {
        var values: [String: ConsoleField.Value]

        static var blank: FormValues { FormValues(values: Dictionary(uniqueKeysWithValues: ConsoleField.all.map { ($0.name, $0.blank) })) }

        init(values: [String: ConsoleField.Value]) { self.values = values }

        /// An application's settings as the form shows them.
        init(_ c: ClientConfiguration) {
            let described = ClientMetadata(describing: c)
            values = Dictionary(uniqueKeysWithValues: ConsoleField.all.map { ($0.name, $0.read(described)) })
        }

        /// A submission. A check box not sent is off; a drop-down not sent is its default.
        init(_ params: Parameters) {
            values = Dictionary(
                uniqueKeysWithValues: ConsoleField.all.map { field in
                    let sent = (try? params.single(field.name)) ?? nil
                    let value: ConsoleField.Value =
                        switch field.control {
                        case .text, .lines: .text(sent ?? "")
                        case .choice: sent.map(ConsoleField.Value.text) ?? field.blank
                        case .flag: .flag(sent == "yes")
                        case .choices: .set(Set(params.values[field.name] ?? []))
                        }
                    return (field.name, value)
                })
        }

        func value(_ field: ConsoleField) -> ConsoleField.Value { values[field.name] ?? field.blank }

        /// Whether the form asks for a confidential application.
        var confidential: Bool { value(.confidential).isOn }

        /// A new application's metadata.
        var metadata: ClientMetadata {
            var m = ClientMetadata()
            apply(to: &m)
            return m
        }

        /// The form's settings over `m`; the settings not on the form stay as they are.
        func apply(to m: inout ClientMetadata) {
            for field in ConsoleField.all { field.write(value(field), &m) }
        }
    }
}

// MARK: The form

extension ConsoleApplications {
    static func form(_ signedIn: ConsoleOperator, values: FormValues, action: String, locale l: SupportedLocale) -> String {
        let fields = ConsoleField.all.map { control($0, values.value($0), l) }.joined(separator: "\n")
        return """
            <form method="post" action="\(HTML.escape(action))" novalidate>\(ConsolePages.csrfField(signedIn))
            \(fields)
            <div class="actions"><button type="submit">\(ConsolePages.e("console.save", l))</button></div>
            </form>
            """
    }

    /// One field's label and control, holding `value`.
    private static func control(_ field: ConsoleField, _ value: ConsoleField.Value, _ l: SupportedLocale) -> String {
        let name = field.name
        let label = ConsolePages.e(field.labelKey, l)
        switch field.control {
        case .text(let required, let leftToRight):
            return """
                <label for="\(name)">\(label)</label>
                <input type="text" id="\(name)" name="\(name)"\(required ? " required" : "")\(leftToRight ? " dir=\"ltr\"" : "") \
                value="\(HTML.escape(value.text))">
                """
        case .lines(let hintKey):
            let hintId = "\(name)-hint"
            let hint = hintKey.map { "\n<p class=\"hint\" id=\"\(hintId)\">\(ConsolePages.e($0, l))</p>" } ?? ""
            return """
                <label for="\(name)">\(label)</label>
                <textarea id="\(name)" name="\(name)" dir="ltr"\(hintKey == nil ? "" : " aria-describedby=\"\(hintId)\"")>\
                \(HTML.escape(value.text))</textarea>\(hint)
                """
        case .choice(let options, let labelKeyPrefix):
            // Typed: a closure's bare string literal would be taken for GRDB's `SQL`, which also has a `joined()`.
            let choices = options.map { (option) -> String in
                let selected = value.text == option ? " selected" : ""
                return "<option value=\"\(HTML.escape(option))\"\(selected)>\(ConsolePages.e(labelKeyPrefix + option, l))</option>"
            }.joined()
            return """
                <label for="\(name)">\(label)</label>
                <select id="\(name)" name="\(name)">\(choices)</select>
                """
        case .flag:
            return """
                <p><input type="checkbox" id="\(name)" name="\(name)" value="yes"\(value.isOn ? " checked" : "")>
                <label class="inline" for="\(name)">\(label)</label></p>
                """
        case .choices(let options, let idPrefix, let labelKeyPrefix):
            let boxes = options.map { (option) -> String in
                let id = idPrefix + option.name
                return """
                    <li><input type="checkbox" id="\(id)" name="\(name)" value="\(HTML.escape(option.value))"\
                    \(value.members.contains(option.value) ? " checked" : "")>
                    <label class="inline" for="\(id)">\(ConsolePages.e(labelKeyPrefix + option.name, l))</label></li>
                    """
            }.joined()
            return "<fieldset><legend>\(label)</legend><ul>\(boxes)</ul></fieldset>"
        }
    }
}
