import Foundation
import LatchkeyJOSE

/// PUT (RFC 7644 §3.5.1) and the value rules shared with PATCH.
extension SCIMUser {
    /// The user as a PUT body describes it. Attributes the body leaves out are cleared (readWrite attributes are
    /// replaced as a whole), except `active`, which keeps its value: a client that never manages it must not disable
    /// the account by omission. Read-only (`id`, `meta`) and unsupported attributes are ignored, as §3.5.1 says of
    /// read-only ones, so resources echoed from other systems (`externalId`, `groups`) still go through; a password
    /// is refused because ignoring it would let an administrator believe it was set.
    static func replacing(_ current: SCIMUser, with body: [String: JSONValue]) throws(SCIMError) -> SCIMUser {
        if let schemas = value(body, "schemas") {
            guard schemas.stringArray?.contains(where: { $0.caseInsensitiveCompare(schemaURN) == .orderedSame }) == true else {
                throw .badRequest(.invalidSyntax, "schemas must contain \(schemaURN)")
            }
        }
        if value(body, "password") != nil {
            throw .badRequest(.mutability, "passwords cannot be set through SCIM; use POST /users/me/update-credentials")
        }
        guard let userName = try string(value(body, "userName"), "userName"), !userName.isEmpty else {
            throw .badRequest(.invalidValue, "userName is required")
        }
        var next = current
        next.userName = userName
        let name = value(body, "name")
        let nameObject: [String: JSONValue]
        switch name {
        case nil, .null?: nameObject = [:]
        case .object(let object)?: nameObject = object
        default: throw .badRequest(.invalidValue, "name must be an object")
        }
        next.givenName = try string(value(nameObject, "givenName"), "name.givenName")
        next.familyName = try string(value(nameObject, "familyName"), "name.familyName")
        // Both show the `name` claim; displayName wins when a client sends two different values.
        let displayName = try string(value(body, "displayName"), "displayName")
        let formatted = try string(value(nameObject, "formatted"), "name.formatted")
        next.fullName = displayName ?? formatted
        for attribute in MultiValued.allCases {
            next[attribute] = try single(value(body, attribute.rawValue), attribute)
        }
        next.locale = try string(value(body, "locale"), "locale")
        if let active = value(body, "active") { next.active = try bool(active, "active") }
        // Like `active`, roles are kept when the body leaves them out: a client that does not manage them must not
        // strip an administrator of its role by omission; `"roles": []` removes them.
        if let roles = value(body, "roles") { next.roles = try Self.roles(roles) }
        return next
    }

    /// The account a `POST /Users` body describes, and its password (RFC 7643 §4.1.1: write-only). Attributes are
    /// read as a PUT reads them; `id`, `meta` and unsupported attributes are ignored.
    static func creating(from body: [String: JSONValue]) throws(SCIMError) -> (user: SCIMUser, password: String?) {
        var rest = body
        var password: String?
        if let key = body.keys.first(where: { $0.caseInsensitiveCompare("password") == .orderedSame }) {
            switch body[key] {
            case .string(let text)?: password = text
            case .null?: password = nil
            default: throw .badRequest(.invalidValue, "password must be a string")
            }
            rest[key] = nil
        }
        return (try replacing(SCIMUser(), with: rest), password)
    }

    /// Role names from `[{"value": …}]` (or one such object); `display`, `type` and `primary` are not kept. Null
    /// is no roles.
    static func roles(_ value: JSONValue?) throws(SCIMError) -> [String] {
        let entries: [JSONValue]
        switch value {
        case nil, .null?: return []
        case .array(let array)?: entries = array
        case .object(let object)?: entries = [.object(object)]
        default: throw .badRequest(.invalidValue, "roles must be an array of {value}")
        }
        var roles: [String] = []
        for entry in entries {
            guard case .object(let object) = entry, case .string(let role)? = Self.value(object, "value"), !role.isEmpty else {
                throw .badRequest(.invalidValue, "each roles entry needs a string value")
            }
            roles.append(role)
        }
        return normalized(roles)
    }

    /// Sorted, one of each (case-insensitively: the first spelling is kept).
    static func normalized(_ roles: [String]) -> [String] {
        var seen: Set<String> = []
        return roles.filter { seen.insert($0.lowercased()).inserted }.sorted()
    }

    /// A member by case-insensitive name (RFC 7643 §2.1).
    static func value(_ object: [String: JSONValue], _ name: String) -> JSONValue? {
        object.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// A string attribute; null clears it, an empty string too (the claims store no empty values).
    static func string(_ value: JSONValue?, _ path: String) throws(SCIMError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let s)?: return s.isEmpty ? nil : s
        default: throw .badRequest(.invalidValue, "\(path) must be a string")
        }
    }

    /// A boolean. Some provisioning clients (Microsoft Entra ID) send `"True"`/`"False"` strings; those are accepted.
    static func bool(_ value: JSONValue, _ path: String) throws(SCIMError) -> Bool {
        switch value {
        case .bool(let b): return b
        case .string(let s) where s.lowercased() == "true": return true
        case .string(let s) where s.lowercased() == "false": return false
        default: throw .badRequest(.invalidValue, "\(path) must be true or false")
        }
    }

    /// The one value of a multi-valued attribute given as `[{value, type, primary}]` (or one such object). More than
    /// one distinct value is refused rather than silently dropping all but one.
    static func single(_ value: JSONValue?, _ attribute: MultiValued) throws(SCIMError) -> String? {
        let entries: [JSONValue]
        switch value {
        case nil, .null?: return nil
        case .array(let array)?: entries = array
        case .object(let object)?: entries = [.object(object)]
        default: throw .badRequest(.invalidValue, "\(attribute.rawValue) must be an array of {value, type}")
        }
        var values: [String] = []
        for entry in entries {
            guard case .object(let object) = entry, let text = try string(Self.value(object, "value"), "\(attribute.rawValue).value") else {
                throw .badRequest(.invalidValue, "each \(attribute.rawValue) entry needs a string value")
            }
            if !values.contains(where: { $0.caseInsensitiveCompare(text) == .orderedSame }) { values.append(text) }
        }
        guard values.count <= 1 else {
            throw .badRequest(.invalidValue, "an account holds one value of \(attribute.rawValue), got \(values.count)")
        }
        return values.first
    }
}
