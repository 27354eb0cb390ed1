import Foundation
import Logging

/// Account changes shared by registration, recovery and self-service: schema validation, uniqueness and password
/// hashing live here once.
extension Accounts {
    /// Applies `changes` (attribute → new value; nil or "" removes an optional attribute) to the user's profile.
    /// Returns the problems instead of saving when any value is invalid or taken.
    ///
    /// A change to the value the attribute already has is not a change: it is skipped before any check, so a client
    /// can send back what it read (a read-only attribute, a claim outside the schema such as `email_verified`).
    /// `disabled` (enable/disable the account) and attributes users may not change themselves are honoured only
    /// `byAdministrator`.
    ///
    /// A user's new email address does not replace the old one here: it is returned in `pendingEmail` for the caller
    /// to verify (`startEmailChange`), and the old one keeps receiving codes until then. Administrators' changes
    /// apply at once (unverified).
    ///
    /// The write is conditional on the version `user` was read at: when another write came in between (a password
    /// reset, a disable), the update is refused as `.stale` instead of overwriting it. Nothing is written when
    /// nothing changed.
    /// `verifyingNewEmail` (default: unless `byAdministrator`) holds a new email back for verification.
    /// `roles` (nil: unchanged) replaces the operator-granted roles (`UserRoles`), only `byAdministrator`.
    func updateProfile(
        of user: UserRecord, changes: [String: String?], disabled: Bool? = nil, roles: Set<String>? = nil,
        byAdministrator: Bool = false, verifyingNewEmail: Bool? = nil, logger: Logger
    ) async throws -> Result<ProfileUpdate, ProfileRejection> {
        let verifyingNewEmail = verifyingNewEmail ?? !byAdministrator
        var updated = user
        var problems: [UserSchema.Problem] = []
        var pendingEmail: String?
        var usernameProblem: UserSchema.Problem?
        var changed = false
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) {
            let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            let current = name == "username" ? user.username : user.claims[name] ?? ""
            if trimmed == current { continue }
            guard let attribute = userSchema.attribute(name) else {
                problems.append(
                    .init(
                        attribute: name, key: "validation.attribute.unknown", message: "\(name) is not an attribute of this user type",
                        arguments: ["field": name]))
                continue
            }
            guard attribute.mutable || byAdministrator else {
                problems.append(
                    .init(
                        attribute: name, key: "validation.attribute.readOnly", message: "\(attribute.displayName) cannot be changed",
                        arguments: userSchema.fieldArguments(attribute)))
                continue
            }
            if let problem = userSchema.problem(name, trimmed) { problems.append(problem); continue }
            if name == "username" {
                // A username that looks like an address would capture sign-ins, passkeys and recovery meant for
                // whoever owns that address: users may take only their own verified one.
                // (Checked after uniqueness, so a taken name still reads as taken.)
                if !byAdministrator, trimmed.contains("@"),
                    trimmed.lowercased() != (user.claims["email"] ?? "").lowercased() || user.claims["email_verified"] != "true"
                {
                    usernameProblem = .init(
                        attribute: name, key: "validation.username.notOwnEmail",
                        message: "A username that looks like an email address must be your own verified email address",
                        arguments: userSchema.fieldArguments(attribute))
                }
                updated.username = trimmed
            } else if name == "email", verifyingNewEmail, !trimmed.isEmpty, current.lowercased() != trimmed.lowercased() {
                // The new address must prove it reaches its owner before codes go there (see `startEmailChange`).
                pendingEmail = trimmed
                continue
            } else {
                // A new (or removed) address or number is not verified, whatever was verified before.
                if let verifiedClaim = Self.verificationClaims[name], current.lowercased() != trimmed.lowercased() {
                    updated.claims[verifiedClaim] = trimmed.isEmpty ? nil : "false"
                }
                updated.claims[name] = trimmed.isEmpty ? nil : trimmed
            }
            changed = true
        }
        if let disabled, disabled != user.disabled {
            if byAdministrator {
                updated.disabled = disabled
                changed = true
            } else {
                problems.append(
                    .init(
                        attribute: "active", key: "validation.attribute.readOnly", message: "Only an administrator can enable or disable an account",
                        messageKey: "validation.account.adminOnly"))
            }
        }
        if let roles, roles != UserRoles.of(user) {
            if !byAdministrator {
                problems.append(
                    .init(
                        attribute: UserRoles.claim, key: "validation.attribute.readOnly", message: "Only an administrator can grant roles",
                        arguments: ["field": "roles"]))
            } else if let problem = UserRoles.problem(roles.sorted()) {
                problems.append(problem)
            } else {
                updated.claims = UserRoles.claims(updated.claims, roles: roles.sorted())
                changed = true
            }
        }
        if !problems.isEmpty { return .failure(.invalid(problems)) }
        if let conflict = try await uniquenessConflict(for: updated) { return .failure(.conflict(conflict)) }
        if let usernameProblem { return .failure(.invalid([usernameProblem])) }
        if let pendingEmail {
            var candidate = updated
            candidate.claims["email"] = pendingEmail
            if let conflict = try await uniquenessConflict(for: candidate) { return .failure(.conflict(conflict)) }
        }
        // Nothing to write: no version bump, no `updatedAt` stamp (and no chance of racing anything).
        guard changed else { return .success(ProfileUpdate(user: user, pendingEmail: pendingEmail)) }
        // One timestamp for the row and the returned copy: the SCIM version (ETag) is computed from it.
        let now = clock.now
        updated.updatedAt = now
        do {
            guard
                try await store.updateProfile(
                    userId: user.id, username: updated.username, claims: updated.claims,
                    disabled: updated.disabled == user.disabled ? nil : updated.disabled,
                    expectedVersion: user.version, updatedAt: now)
            else {
                logger.notice("profile update refused: the account changed since it was read", metadata: ["user": .string(user.id)])
                return .failure(.stale)
            }
        } catch StoreError.conflict {
            // Taken between the check above and the write: the same words as the check would have used.
            let taken = UserSchema.Problem(attribute: "username", key: "validation.username.taken", message: "This username is already taken")
            return .failure(.conflict(try await uniquenessConflict(for: updated) ?? taken))
        }
        updated.version = user.version + 1
        if updated.disabled && !user.disabled {
            // A disabled account is signed out everywhere at once: its sessions end and every refresh family is revoked.
            try await store.revokeUserSessions(userId: user.id, keepingSession: nil, keepingFamily: nil, reason: "account disabled", now: now)
        }
        return .success(ProfileUpdate(user: updated, pendingEmail: pendingEmail))
    }

    /// The `*_verified` claim that vouches for an attribute.
    static let verificationClaims = ["email": "email_verified", "phone_number": "phone_number_verified"]

    /// The first unique attribute whose value another account already has.
    func uniquenessConflict(for user: UserRecord) async throws -> UserSchema.Problem? {
        if let other = try await store.user(username: user.username), other.id != user.id {
            return .init(attribute: "username", key: "validation.username.taken", message: "This username is already taken")
        }
        // Usernames and email addresses name accounts in one space (sign-in, recovery, passkeys and Apple all accept
        // either): a username may not be another account's email, nor an email another account's username.
        if try await store.users(claim: "email", equals: user.username).contains(where: { $0.id != user.id }) {
            return .init(attribute: "username", key: "validation.username.taken", message: "This username is already taken")
        }
        if let email = user.claims["email"], !email.isEmpty, let other = try await store.user(username: email), other.id != user.id {
            let arguments = userSchema.attribute("email").map { userSchema.fieldArguments($0) } ?? ["field": "email"]
            return .init(
                attribute: "email", key: "validation.email.taken", message: "Email is already used by another account.",
                arguments: arguments, messageKey: "signup.identifier_taken")
        }
        for attribute in userSchema.attributes where attribute.unique && attribute.name != "username" {
            guard let value = user.claims[attribute.name], !value.isEmpty else { continue }
            if try await store.users(claim: attribute.name, equals: value).contains(where: { $0.id != user.id }) {
                return .init(
                    attribute: attribute.name, key: "validation.\(attribute.name).taken",
                    message: "\(attribute.displayName) is already used by another account.",
                    arguments: userSchema.fieldArguments(attribute), messageKey: "signup.identifier_taken")
            }
        }
        return nil
    }

    /// Replaces the password (policy checked), clears lockout state, and ends every session and token family of the
    /// account except the kept ones (the signed-in caller's own): whoever held the old password, or tokens obtained
    /// with it, is signed out (a reset also evicts a pre-hijacker who registered the address first).
    func setPassword(
        of user: UserRecord, to password: String, keepingSession: String? = nil,
        keepingFamily: String? = nil
    ) async throws -> Result<UserRecord, ProfileRejection> {
        if let problem = PasswordPolicy.problem(password, username: user.username) { return .failure(.invalid([problem])) }
        var updated = user
        updated.passwordHash = try await hasher.hash(password)
        let now = clock.now
        updated.updatedAt = now
        // Only the hash: the rest of `user` may be stale by now (a disable must not be undone by a password change). The
        // hash, the cleared locks and the ended sessions are one transaction: a crash cannot leave the old sessions alive.
        try await store.replacePassword(
            userId: user.id, passwordHash: updated.passwordHash, keepingSession: keepingSession,
            keepingFamily: keepingFamily, now: now)
        updated.version += 1
        return .success(updated)
    }
}

/// Why a profile change was refused.
enum ProfileRejection: Error {
    case invalid([UserSchema.Problem])
    case conflict(UserSchema.Problem)
    /// The account changed since it was read (optimistic concurrency): read it again and retry.
    case stale
}

/// A saved profile change.
struct ProfileUpdate: Sendable {
    /// The account as saved.
    var user: UserRecord
    /// A new email address the user asked for, not applied yet: it must be verified first.
    var pendingEmail: String?
}
