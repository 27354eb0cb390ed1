import Foundation
import LatchkeyJOSE

/// A PATCH request (RFC 7644 §3.5.2): `{"schemas":[PatchOp URN], "Operations":[{op, path?, value?}]}`.
///
/// Operations apply in order to an in-memory copy; the result is saved once, or not at all when any operation
/// fails ("each operation … SHALL be applied … the entire request SHALL be treated as atomic", §3.5.2).
struct SCIMPatch: Sendable {
    static let patchOpURN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"

    enum Op: String, Sendable { case add, remove, replace }

    struct Operation: Sendable {
        var op: Op
        var path: SCIMPath?
        var value: JSONValue?
    }

    var operations: [Operation]

    init(body: [String: JSONValue]) throws(SCIMError) {
        if let schemas = SCIMUser.value(body, "schemas") {
            guard schemas.stringArray?.contains(where: { $0.caseInsensitiveCompare(Self.patchOpURN) == .orderedSame }) == true else {
                throw .badRequest(.invalidSyntax, "schemas must contain \(Self.patchOpURN)")
            }
        }
        guard case .array(let list)? = SCIMUser.value(body, "Operations") else {
            throw .badRequest(.invalidSyntax, "Operations must be an array")
        }
        var operations: [Operation] = []
        for item in list {
            guard case .object(let object) = item, case .string(let name)? = SCIMUser.value(object, "op"),
                let op = Op(rawValue: name.lowercased())
            else {
                throw .badRequest(.invalidSyntax, "each operation needs op add, remove or replace")
            }
            var path: SCIMPath?
            switch SCIMUser.value(object, "path") {
            case nil, .null?: path = nil
            case .string(let text)? where text.isEmpty: path = nil
            case .string(let text)?: path = try SCIMPath.parse(text)
            default: throw .badRequest(.invalidPath, "path must be a string")
            }
            let value = SCIMUser.value(object, "value")
            if op != .remove, value == nil { throw .badRequest(.invalidValue, "\(name) needs a value") }
            operations.append(Operation(op: op, path: path, value: value))
        }
        self.operations = operations
    }

    func apply(to user: SCIMUser) throws(SCIMError) -> SCIMUser {
        var result = user
        for operation in operations { try Self.apply(operation, to: &result) }
        return result
    }

    /// With one value per attribute, `add` and `replace` coincide: adding an address replaces the one there was
    /// (the usual result for single-address directories, and what provisioning clients expect).
    private static func apply(_ operation: Operation, to user: inout SCIMUser) throws(SCIMError) {
        guard let path = operation.path else {
            // No path: the value is an object of attributes (§3.5.2.1, §3.5.2.3); remove needs a target.
            guard operation.op != .remove else { throw .badRequest(.noTarget, "remove needs a path") }
            guard case .object(let members)? = operation.value else {
                throw .badRequest(.invalidValue, "without a path, the value must be an object of attributes")
            }
            for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                // Some clients wrap attributes in the schema URN, or send `name.givenName` as a key.
                if key.caseInsensitiveCompare(SCIMUser.schemaURN) == .orderedSame {
                    try apply(Operation(op: operation.op, path: nil, value: value), to: &user)
                    continue
                }
                let target = try SCIMPath.parse(key)
                if [.id, .meta, .schemas].contains(target.attribute) { continue }  // read-only members are ignored
                try set(target, value, op: operation.op, on: &user)
            }
            return
        }
        if operation.op == .remove {
            try remove(path, from: &user)
        } else {
            try set(path, operation.value ?? .null, op: operation.op, on: &user)
        }
    }

    private static func set(_ path: SCIMPath, _ value: JSONValue, op: Op, on user: inout SCIMUser) throws(SCIMError) {
        let label = path.attribute.rawValue + (path.subAttribute.map { "." + $0 } ?? "")
        switch path.attribute {
        case .id, .meta, .schemas:
            throw .badRequest(.mutability, "\(path.attribute.rawValue) is read-only")
        case .userName:
            user.userName = try SCIMUser.string(value, label) ?? ""
        case .displayName:
            user.fullName = try SCIMUser.string(value, label)
        case .locale:
            user.locale = try SCIMUser.string(value, label)
        case .active:
            user.active = try SCIMUser.bool(value, label)
        case .name:
            if let sub = path.subAttribute {
                try setName(sub, SCIMUser.string(value, label), on: &user)
                return
            }
            // A complex value replaces the sub-attributes it names and leaves the others (§3.5.2.3).
            switch value {
            case .null:
                user.givenName = nil; user.familyName = nil; user.fullName = nil
            case .object(let members):
                for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                    guard let sub = path.attribute.subAttributes.first(where: { $0.caseInsensitiveCompare(key) == .orderedSame }) else {
                        throw .badRequest(.invalidPath, "name.\(key) is not supported")
                    }
                    try setName(sub, SCIMUser.string(member, "name.\(sub)"), on: &user)
                }
            default:
                throw .badRequest(.invalidValue, "name must be an object")
            }
        case .roles:
            guard path.subAttribute == nil else { throw .badRequest(.invalidPath, "roles are written as [{\"value\": …}] entries") }
            let given = try SCIMUser.roles(value)
            if let filter = path.filter {
                // `roles[value eq "x"]`: the matched role is replaced by the given ones.
                let matched = try roleValues(filter)
                user.roles = SCIMUser.normalized(user.roles.filter { !matched.contains($0.lowercased()) } + given)
            } else {
                user.roles = SCIMUser.normalized(op == .add ? user.roles + given : given)
            }
        case .emails, .phoneNumbers, .photos:
            guard let attribute = path.attribute.multiValued else { return }
            try requireMatch(path, attribute, user)
            switch path.subAttribute {
            case nil where path.filter == nil:
                user[attribute] = try SCIMUser.single(value, attribute)
            case nil:
                // `emails[type eq "work"]` with a {value, …} object: replace the matched value.
                guard case .object(let members) = value else { throw .badRequest(.invalidValue, "\(label) needs a {value} object") }
                try checkFixed(members, attribute)
                user[attribute] = try SCIMUser.string(SCIMUser.value(members, "value"), "\(label).value")
            case "value"?:
                user[attribute] = try SCIMUser.string(value, label)
            case "type"?:
                try checkFixed(["type": value], attribute)
            default:  // primary
                try checkFixed(["primary": value], attribute)
            }
        }
    }

    private static func remove(_ path: SCIMPath, from user: inout SCIMUser) throws(SCIMError) {
        switch path.attribute {
        case .id, .meta, .schemas:
            throw .badRequest(.mutability, "\(path.attribute.rawValue) is read-only")
        case .active:
            throw .badRequest(.mutability, "active cannot be removed; replace it with true or false")
        case .userName:
            user.userName = ""  // refused by the schema (required), with its usual message
        case .displayName:
            user.fullName = nil
        case .locale:
            user.locale = nil
        case .name:
            if let sub = path.subAttribute {
                try setName(sub, nil, on: &user)
            } else {
                user.givenName = nil; user.familyName = nil; user.fullName = nil
            }
        case .roles:
            // Removing a role the account does not hold is not an error: deprovisioning may repeat itself.
            if let filter = path.filter {
                let matched = try roleValues(filter)
                user.roles = user.roles.filter { !matched.contains($0.lowercased()) }
            } else {
                user.roles = []
            }
        case .emails, .phoneNumbers, .photos:
            guard let attribute = path.attribute.multiValued else { return }
            try requireMatch(path, attribute, user)
            guard path.subAttribute == nil || path.subAttribute == "value" else {
                throw .badRequest(.mutability, "\(attribute.rawValue).\(path.subAttribute ?? "") cannot be removed")
            }
            user[attribute] = nil
        }
    }

    /// The roles a `roles[value eq "…"]` filter names (lowercased: role names compare case-insensitively, as
    /// RFC 7643 §4.1.2's `caseExact: false` says of `roles.value`).
    private static func roleValues(_ filter: SCIMFilter) throws(SCIMError) -> Set<String> {
        var values: Set<String> = []
        for comparison in filter.comparisons {
            guard comparison.op == .eq, comparison.attribute.lowercased() == "value", let value = comparison.value.stringValue else {
                throw .badRequest(.invalidFilter, "roles can be filtered by value eq \"…\"")
            }
            values.insert(value.lowercased())
        }
        // `value eq "a" and value eq "b"` matches nothing.
        return values.count == 1 ? values : []
    }

    private static func setName(_ sub: String, _ value: String?, on user: inout SCIMUser) throws(SCIMError) {
        switch sub {
        case "givenName": user.givenName = value
        case "familyName": user.familyName = value
        case "formatted": user.fullName = value
        default: throw .badRequest(.invalidPath, "name.\(sub) is not supported")
        }
    }

    /// A value filter must select the account's value. The value has a fixed `type`, so `[type eq "work"]` selects
    /// it even while it is empty — provisioning clients set a first address that way; a filter on `value` selects it
    /// only when it holds that value.
    private static func requireMatch(_ path: SCIMPath, _ attribute: SCIMUser.MultiValued, _ user: SCIMUser) throws(SCIMError) {
        guard let filter = path.filter else { return }
        for comparison in filter.comparisons where try !matches(comparison, attribute, user) {
            throw .badRequest(.noTarget, "no value of \(attribute.rawValue) matches the filter")
        }
    }

    // One function per decision: the earlier single-function shape (a `let` assigned in every case of a switch
    // inside a typed-throws loop) crashed the Swift 6.3 optimizer in release builds.
    private static func matches(
        _ comparison: SCIMFilter.Comparison, _ attribute: SCIMUser.MultiValued,
        _ user: SCIMUser
    ) throws(SCIMError) -> Bool {
        guard comparison.op == .eq else { throw .badRequest(.invalidFilter, "value filters compare with eq") }
        switch comparison.attribute.lowercased() {
        case "type": return comparison.value.stringValue?.lowercased() == attribute.type
        case "primary": return comparison.value.boolValue == (attribute.primary ?? false)
        case "value": return holds(user[attribute], comparison.value.stringValue)
        default: throw .badRequest(.invalidFilter, "\(attribute.rawValue) can be filtered by type, value or primary")
        }
    }

    private static func holds(_ current: String?, _ wanted: String?) -> Bool {
        guard let current, let wanted else { return false }
        return current.caseInsensitiveCompare(wanted) == .orderedSame
    }

    /// `type` and `primary` are fixed; writing the value they have is accepted (clients echo them), anything else is not.
    private static func checkFixed(_ members: [String: JSONValue], _ attribute: SCIMUser.MultiValued) throws(SCIMError) {
        if let type = SCIMUser.value(members, "type"), type != .null, type.stringValue?.lowercased() != attribute.type {
            throw .badRequest(.invalidValue, "\(attribute.rawValue) holds one value, of type \"\(attribute.type)\"")
        }
        if let primary = SCIMUser.value(members, "primary"), primary != .null, primary.boolValue != (attribute.primary ?? false),
            !(attribute.primary == nil && primary.boolValue == true)
        {
            throw .badRequest(.invalidValue, "\(attribute.rawValue).primary cannot be changed")
        }
    }
}
