import Foundation
import LatchkeyJOSE

/// The attributes a user account has: what registration asks for, what `/users/me/meta` publishes and what profile
/// updates are validated against. The username is the account's sign-in name; the rest are OpenID Connect claims.
public struct UserSchema: Sendable {
    public struct Attribute: Sendable, Equatable {
        public enum Kind: String, Sendable { case string, email, phone, url, locale, boolean }
        public var name: String
        public var kind: Kind
        /// Must be present at registration and cannot be removed.
        public var required: Bool
        /// No two accounts may share the value (case-insensitive).
        public var unique: Bool
        /// Users may change it themselves.
        public var mutable: Bool
        public var displayName: String
        public var maxLength: Int

        public init(
            name: String, kind: Kind = .string, required: Bool = false, unique: Bool = false, mutable: Bool = true,
            displayName: String, maxLength: Int = 256
        ) {
            self.name = name; self.kind = kind; self.required = required; self.unique = unique; self.mutable = mutable
            self.displayName = displayName; self.maxLength = maxLength
        }
    }

    /// One validation failure, keyed by attribute.
    public struct Problem: Sendable, Equatable, Error {
        public var attribute: String
        /// Stable machine key (`validation.email.invalid` …), sent as the field error's `code`.
        public var key: String
        /// English text.
        public var message: String
        /// Placeholder values for the catalog text (`field`, `field.key`, `count`).
        public var arguments: [String: String] = [:]
        /// Catalog key of the text when it is not `key` (`validation.email.taken` reads as `signup.identifier_taken`).
        public var messageKey: String?

        /// The text in `locale` (English when the catalog does not know the key).
        public func text(_ locale: SupportedLocale) -> String {
            MessageCatalog.text(messageKey ?? key, locale: locale, arguments: arguments, default: message)
        }

        /// As a field error of the app-facing APIs (localized later, by the error middleware).
        var fieldError: APIError.FieldError {
            .init(field: attribute, message: message, code: key, messageKey: messageKey, arguments: arguments)
        }
    }

    /// Placeholder values naming an attribute: its display name, and the catalog key of its translated label when
    /// the display name is the standard English one (a deployment's own wording is kept as it is).
    public static func fieldArguments(_ name: String, display: String) -> [String: String] {
        let labelKey = "user:attributes.\(name).label"
        if MessageCatalog.text(labelKey, locale: .en) == display { return ["field": display, "field.key": labelKey] }
        return ["field": display]
    }

    func fieldArguments(_ attribute: Attribute, _ extra: [String: String] = [:]) -> [String: String] {
        Self.fieldArguments(attribute.name, display: attribute.displayName).merging(extra) { $1 }
    }

    public var attributes: [Attribute]

    public init(attributes: [Attribute]) { self.attributes = attributes }

    /// The built-in "default" user type: username and email required and unique, the usual profile claims optional.
    public static let standard = UserSchema(attributes: [
        Attribute(name: "username", required: true, unique: true, displayName: "Username", maxLength: 128),
        Attribute(name: "email", kind: .email, required: true, unique: true, displayName: "Email address", maxLength: 254),
        Attribute(name: "given_name", displayName: "First name", maxLength: 128),
        Attribute(name: "family_name", displayName: "Last name", maxLength: 128),
        Attribute(name: "name", displayName: "Full name", maxLength: 256),
        Attribute(name: "phone_number", kind: .phone, displayName: "Phone number", maxLength: 32),
        Attribute(name: "picture", kind: .url, displayName: "Picture URL", maxLength: 2048),
        Attribute(name: "locale", kind: .locale, displayName: "Language", maxLength: 35)
    ])

    public func attribute(_ name: String) -> Attribute? { attributes.first { $0.name == name } }

    /// Claims (other than `username`) that are part of the schema.
    public var claimNames: [String] { attributes.map(\.name).filter { $0 != "username" } }

    /// Checks one value's shape. Returns nil when it is acceptable.
    public func problem(_ name: String, _ value: String) -> Problem? {
        guard let attribute = attribute(name) else {
            return Problem(
                attribute: name, key: "validation.attribute.unknown", message: "\(name) is not an attribute of this user type",
                arguments: ["field": name])
        }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            return attribute.required
                ? Problem(
                    attribute: name, key: "validation.required", message: "\(attribute.displayName) is required",
                    arguments: fieldArguments(attribute)) : nil
        }
        if trimmed.count > attribute.maxLength {
            return Problem(
                attribute: name, key: "validation.maxLength.invalid",
                message: "\(attribute.displayName) must be at most \(attribute.maxLength) characters",
                arguments: fieldArguments(attribute, ["count": String(attribute.maxLength)]))
        }
        if trimmed.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) {
            return Problem(
                attribute: name, key: "validation.characters.invalid", message: "\(attribute.displayName) contains control characters",
                arguments: fieldArguments(attribute))
        }
        let valid: Bool =
            switch attribute.kind {
            case .string: true
            case .email: Self.isEmail(trimmed)
            case .phone: trimmed.range(of: #"^\+?[0-9][0-9 ()\-.]{5,30}$"#, options: .regularExpression) != nil
            case .url: URL(string: trimmed).map { ["https", "http"].contains($0.scheme?.lowercased() ?? "") && $0.host != nil } ?? false
            case .locale: trimmed.range(of: #"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$"#, options: .regularExpression) != nil
            case .boolean: ["true", "false"].contains(trimmed)
            }
        return valid
            ? nil
            : Problem(
                attribute: name, key: "validation.\(attribute.kind.rawValue).invalid",
                message: "\(attribute.displayName) is not a valid \(attribute.kind == .string ? "value" : attribute.kind.rawValue)",
                arguments: fieldArguments(attribute))
    }

    static func isEmail(_ s: String) -> Bool {
        s.range(of: #"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$"#, options: .regularExpression) != nil
    }

    /// The JSON Schema of the user type (`GET /users/me/meta`).
    public func jsonSchema() -> JSONValue {
        var properties: [String: JSONValue] = [:]
        for a in attributes {
            var p: [String: JSONValue] = [
                "type": .string(a.kind == .boolean ? "boolean" : "string"), "title": .string(a.displayName),
                "maxLength": .number(Double(a.maxLength))
            ]
            switch a.kind {
            case .email: p["format"] = .string("email")
            case .url: p["format"] = .string("uri")
            default: break
            }
            if a.unique { p["unique"] = .bool(true) }
            if !a.mutable { p["readOnly"] = .bool(true) }
            properties[a.name] = .object(p)
        }
        return .object([
            "type": .string("object"), "properties": .object(properties),
            "required": .array(attributes.filter(\.required).map { .string($0.name) })
        ])
    }
}

/// Password rules (NIST SP 800-63B §5.1.1.2: length matters, composition rules do not).
public enum PasswordPolicy {
    public static let minimumLength = 8
    public static let maximumLength = 128

    /// Nil when acceptable; otherwise a problem keyed by the `password` attribute.
    public static func problem(_ password: String, username: String? = nil) -> UserSchema.Problem? {
        if password.count < minimumLength {
            return .init(
                attribute: "password", key: "validation.password.minLength.invalid",
                message: "The password must be at least \(minimumLength) characters", arguments: ["count": String(minimumLength)])
        }
        if password.count > maximumLength {
            return .init(
                attribute: "password", key: "validation.password.maxLength.invalid",
                message: "The password must be at most \(maximumLength) characters", arguments: ["count": String(maximumLength)])
        }
        if let username, password.caseInsensitiveCompare(username) == .orderedSame {
            return .init(
                attribute: "password", key: "validation.password.username",
                message: "The password must not be the username")
        }
        return nil
    }
}
