import Foundation

/// Operator-granted entitlements of an account, kept in a reserved claim that no self-service or SCIM path can write
/// (those accept only the user schema's attributes) and that no scope releases to clients.
enum UserRoles {
    /// The reserved claim holding the roles, space-separated.
    static let claim = "latchkey_roles"
    /// Administration of every account through SCIM `/Users` (with the `scim.admin` scope).
    static let admin = "admin"

    /// At most this many roles per account.
    static let maximumCount = 32

    /// Nil when `roles` can be recorded: each a token of letters, digits and `.`, `_`, `:`, `-` (at most 64
    /// characters; they are stored space-separated), and no more than `maximumCount`.
    static func problem(_ roles: [String]) -> UserSchema.Problem? {
        if roles.count > maximumCount {
            return .init(attribute: claim, key: "validation.roles.invalid", message: "an account holds at most \(maximumCount) roles")
        }
        for role in roles where role.range(of: #"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$"#, options: .regularExpression) == nil {
            return .init(
                attribute: claim, key: "validation.roles.invalid",
                message: "a role is 1 to 64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
        }
        return nil
    }

    static func of(_ user: UserRecord) -> Set<String> {
        Set((user.claims[claim] ?? "").split(separator: " ").map(String.init))
    }

    /// `claims` with `roles` recorded (a seed's claims cannot smuggle roles in under the reserved name).
    static func claims(_ claims: [String: String], roles: [String]) -> [String: String] {
        var out = claims
        out[claim] = roles.isEmpty ? nil : roles.joined(separator: " ")
        return out
    }
}
