import Foundation

/// Operator-granted entitlements of an account, kept in a reserved claim that no self-service or SCIM path can write
/// (those accept only the user schema's attributes) and that no scope releases to clients.
enum UserRoles {
    /// The reserved claim holding the roles, space-separated.
    static let claim = "latchkey_roles"
    /// Administration of every account through SCIM `/Users` (with the `scim.admin` scope).
    static let admin = "admin"

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
