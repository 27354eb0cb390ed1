import Foundation

/// Account changes shared by registration, recovery and self-service: schema validation, uniqueness and password
/// hashing live here once.
extension IdentityServer {
    var userSchema: UserSchema { configuration.userSchema }

    /// Applies `changes` (attribute → new value; nil or "" removes an optional attribute) to the user's profile.
    /// Returns the problems instead of saving when any value is invalid or taken.
    ///
    /// A change to the value the attribute already has is not a change: it is skipped before any check, so a client
    /// can send back what it read (a read-only attribute, a claim outside the schema such as `email_verified`).
    /// `disabled` (enable/disable the account) and attributes users may not change themselves are honoured only
    /// `byAdministrator`.
    func updateProfile(of user: UserRecord, changes: [String: String?], disabled: Bool? = nil,
                       byAdministrator: Bool = false) async throws -> Result<UserRecord, ProfileRejection> {
        var updated = user
        var problems: [UserSchema.Problem] = []
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) {
            let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            let current = name == "username" ? user.username : user.claims[name] ?? ""
            if trimmed == current { continue }
            guard let attribute = userSchema.attribute(name) else {
                problems.append(.init(attribute: name, key: "validation.attribute.unknown", message: "\(name) is not an attribute of this user type",
                                      arguments: ["field": name]))
                continue
            }
            guard attribute.mutable || byAdministrator else {
                problems.append(.init(attribute: name, key: "validation.attribute.readOnly", message: "\(attribute.displayName) cannot be changed",
                                      arguments: userSchema.fieldArguments(attribute)))
                continue
            }
            if let problem = userSchema.problem(name, trimmed) { problems.append(problem); continue }
            if name == "username" {
                updated.username = trimmed
            } else {
                // A new (or removed) address or number is not verified, whatever was verified before.
                if let verifiedClaim = Self.verificationClaims[name], current.lowercased() != trimmed.lowercased() {
                    updated.claims[verifiedClaim] = trimmed.isEmpty ? nil : "false"
                }
                updated.claims[name] = trimmed.isEmpty ? nil : trimmed
            }
        }
        if let disabled, disabled != user.disabled {
            if byAdministrator {
                updated.disabled = disabled
            } else {
                problems.append(.init(attribute: "active", key: "validation.attribute.readOnly", message: "Only an administrator can enable or disable an account",
                                      messageKey: "validation.account.adminOnly"))
            }
        }
        if !problems.isEmpty { return .failure(.invalid(problems)) }
        if let conflict = try await uniquenessConflict(for: updated) { return .failure(.conflict(conflict)) }
        updated.updatedAt = clock.now
        do { try await store.updateUser(updated) } catch StoreError.conflict {
            return .failure(.conflict(.init(attribute: "username", key: "validation.username.taken", message: "This username is already taken")))
        }
        return .success(updated)
    }

    /// The `*_verified` claim that vouches for an attribute.
    static let verificationClaims = ["email": "email_verified", "phone_number": "phone_number_verified"]

    /// The first unique attribute whose value another account already has.
    func uniquenessConflict(for user: UserRecord) async throws -> UserSchema.Problem? {
        if let other = try await store.user(username: user.username), other.id != user.id {
            return .init(attribute: "username", key: "validation.username.taken", message: "This username is already taken")
        }
        for attribute in userSchema.attributes where attribute.unique && attribute.name != "username" {
            guard let value = user.claims[attribute.name], !value.isEmpty else { continue }
            if try await store.users(claim: attribute.name, equals: value).contains(where: { $0.id != user.id }) {
                return .init(attribute: attribute.name, key: "validation.\(attribute.name).taken",
                             message: "\(attribute.displayName) is already used by another account.",
                             arguments: userSchema.fieldArguments(attribute), messageKey: "signup.identifier_taken")
            }
        }
        return nil
    }

    /// Replaces the password (policy checked), clears lockout state, and ends every session and token family of the
    /// account except the kept ones (the signed-in caller's own): whoever held the old password, or tokens obtained
    /// with it, is signed out (a reset also evicts a pre-hijacker who registered the address first).
    func setPassword(of user: UserRecord, to password: String, keepingSession: String? = nil,
                     keepingFamily: String? = nil) async throws -> Result<UserRecord, ProfileRejection> {
        if let problem = PasswordPolicy.problem(password, username: user.username) { return .failure(.invalid([problem])) }
        var updated = user
        updated.passwordHash = try await hasher.hash(password)
        updated.updatedAt = clock.now
        try await store.updateUser(updated)
        try await store.recordLoginSuccess(userId: user.id)
        try await store.revokeUserSessions(userId: user.id, keepingSession: keepingSession, keepingFamily: keepingFamily,
                                           reason: "password changed", now: clock.now)
        return .success(updated)
    }
}

/// Why a profile change was refused.
enum ProfileRejection: Error {
    case invalid([UserSchema.Problem])
    case conflict(UserSchema.Problem)
}
