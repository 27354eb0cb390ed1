import Foundation
import Logging

/// Accounts an administrator creates and deletes (SCIM `POST` and `DELETE /scim2/Users`), with the same schema,
/// uniqueness and password rules as registration and profile changes.
extension Accounts {
    /// An account as an administrator describes it.
    struct NewAccount: Sendable {
        var username: String
        /// Claims of the user schema (nil and empty values are left out).
        var claims: [String: String]
        /// Nil: no password. The account then signs in only once its owner sets one (recovery) or with a passkey
        /// or a linked provider.
        var password: String?
        var disabled = false
        var roles: [String] = []
    }

    /// Validates and creates the account. An email address or phone number an administrator sets is recorded as
    /// unverified (`email_verified` false), as an administrator's profile changes are.
    func createAccount(_ account: NewAccount, logger: Logger) async throws -> Result<UserRecord, ProfileRejection> {
        let username = account.username.trimmingCharacters(in: .whitespacesAndNewlines)
        var problems: [UserSchema.Problem] = []
        if let problem = userSchema.problem("username", username) { problems.append(problem) }
        var claims: [String: String] = [:]
        for (name, value) in account.claims.sorted(by: { $0.key < $1.key }) {
            let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            if let problem = userSchema.problem(name, trimmed) { problems.append(problem); continue }
            claims[name] = trimmed
        }
        for attribute in userSchema.attributes where attribute.required && attribute.name != "username" && claims[attribute.name] == nil {
            if let problem = userSchema.problem(attribute.name, "") { problems.append(problem) }
        }
        if let password = account.password, let problem = PasswordPolicy.problem(password, username: username) { problems.append(problem) }
        let roles = Array(Set(account.roles)).sorted()
        if let problem = UserRoles.problem(roles) { problems.append(problem) }
        if !problems.isEmpty { return .failure(.invalid(problems)) }
        for (claim, verified) in Self.verificationClaims where claims[claim] != nil { claims[verified] = "false" }
        var user = UserRecord(
            id: UUID().uuidString.lowercased(), username: username, passwordHash: PasswordHasher.noPassword,
            claims: UserRoles.claims(claims, roles: roles), disabled: account.disabled, failedLogins: 0, lockedUntil: nil,
            createdAt: clock.now)
        // Before hashing: a taken name should not cost a bcrypt round.
        if let conflict = try await uniquenessConflict(for: user) { return .failure(.conflict(conflict)) }
        if let password = account.password { user.passwordHash = try await hasher.hash(password) }
        do {
            try await store.insertUser(user)
        } catch StoreError.conflict {
            // Taken between the check above and the write.
            let taken = UserSchema.Problem(attribute: "username", key: "validation.username.taken", message: "This username is already taken")
            return .failure(.conflict(try await uniquenessConflict(for: user) ?? taken))
        }
        logger.info(
            "account created by an administrator",
            metadata: ["user": .string(user.id), "password": .string(account.password == nil ? "none" : "set")])
        return .success(user)
    }

    /// Tells the new account's address that an account was made for it at `application` and how to choose a
    /// password (the application's "Forgot password?", which sends a recovery code). No code or link is in the mail.
    func sendAccountCreatedInvitation(to user: UserRecord, application: String, locale: SupportedLocale) async throws {
        guard let email = user.claims["email"] else { return }
        let arguments = ["username": user.username, "application": application]
        try await outbox.send(
            OutboxMessage(
                id: Secrets.identifier(), channel: .email, recipient: email,
                subject: MessageCatalog.text(
                    "email.invitation.account_created.subject", locale: locale, default: "An account was created for you"),
                body: MessageCatalog.text(
                    "email.invitation.account_created.body", locale: locale, arguments: arguments,
                    default: "An account was created for you."),
                code: nil, createdAt: clock.now))
    }

    /// Whether mail can leave this server (an outbox other than the refusing one).
    var deliversMail: Bool { !(outbox is UndeliverableOutbox) }
}
