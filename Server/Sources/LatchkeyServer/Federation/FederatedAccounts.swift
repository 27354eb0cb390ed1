import Foundation
import Logging

/// The account a verified upstream identity signs in to, and the links between accounts and providers.
///
/// A link (provider, subject) names one account. A first sign-in links to an existing account only when the provider
/// is configured to (`link_by_verified_email`) and both the provider and the account have verified the same address;
/// otherwise it creates an account just in time where the application lets anyone register, with the claims the user
/// schema accepts, keeping the email only when the provider verified it. An address already used by an account that
/// may not be linked is refused, never duplicated: the person signs in to that account and links the provider from
/// there.
///
/// What a first sign-in does to accounts is audited here: `federation.linked` with `how: automatic` (linked by
/// verified email) or `how: jit` (with `user.created`, `via: federation`, for the account made just in time).
struct FederatedAccounts: Sendable {
    let store: any UserStore & FederatedIdentityStore & PasskeyStore
    let userSchema: UserSchema
    let clock: ServerClock
    let audit: AuditTrail

    /// The account `identity` signs in to for `client`.
    func signIn(
        _ identity: UpstreamIdentity, provider: IdentityProviderConfiguration, client: ClientConfiguration, origin: AuditOrigin
    ) async throws -> UserRecord {
        let logger = origin.logger
        if let link = try await store.federatedIdentity(provider: identity.provider, subject: identity.subject) {
            guard let user = try await store.user(id: link.userId) else { throw FederationFailure.invalidIdentity("the linked account is gone") }
            guard !user.disabled else { throw FederationFailure.accountDisabled }
            try await keepRefreshToken(of: identity)
            return user
        }
        let holders = try await accountsUsing(identity.email)
        if let email = identity.email, !holders.isEmpty {
            // Both sides must have proven the same address, or an account someone opened with another person's address
            // (or a provider that lets anyone claim any address) would hand over the account.
            let verified = holders.filter { $0.claims["email"]?.lowercased() == email.lowercased() && $0.claims["email_verified"] == "true" }
            guard provider.linkByVerifiedEmail, identity.emailVerified, holders.count == 1, let existing = verified.first else {
                logger.notice(
                    "federated sign-in refused: the address belongs to an account it may not link to",
                    metadata: ["provider": .string(provider.id)])
                throw FederationFailure.emailInUse
            }
            guard !existing.disabled else { throw FederationFailure.accountDisabled }
            try await link(identity, to: existing.id)
            logger.info(
                "federated identity linked to an existing account by verified email",
                metadata: ["user": .string(existing.id), "provider": .string(provider.id)])
            await audit.record(
                .federatedIdentityLinked, subject: existing.id, details: ["provider": provider.id, "how": "automatic"], origin: origin)
            return existing
        }
        guard client.registration == .open else { throw FederationFailure.registrationClosed }
        let user = try await create(identity, logger: logger)
        await audit.record(.userCreated, subject: user.id, details: ["via": "federation", "provider": provider.id], origin: origin)
        await audit.record(.federatedIdentityLinked, subject: user.id, details: ["provider": provider.id, "how": "jit"], origin: origin)
        return user
    }

    /// Links `identity` to the account; refuses when it is another account's, or when the account is already linked
    /// to another identity at the same provider (one per provider, so an unlink means one thing).
    func link(_ identity: UpstreamIdentity, to userId: String) async throws {
        let existing = try await store.federatedIdentities(userId: userId)
        if existing.contains(where: { $0.provider == identity.provider && $0.subject != identity.subject }) {
            throw FederationFailure.alreadyLinked
        }
        try await store.linkFederatedIdentity(
            FederatedIdentityRecord(provider: identity.provider, subject: identity.subject, userId: userId, createdAt: clock.now))
        // The link that exists now is the one that counts (a concurrent link of the same identity may have won).
        guard let link = try await store.federatedIdentity(provider: identity.provider, subject: identity.subject), link.userId == userId else {
            throw FederationFailure.linkedElsewhere
        }
        try await keepRefreshToken(of: identity)
    }

    /// The newest refresh token on the link (Apple sends one with every sign-in; the newest is the one to revoke).
    func keepRefreshToken(of identity: UpstreamIdentity) async throws {
        guard let sealed = identity.sealedRefreshToken else { return }
        try await store.keepFederatedRefreshToken(provider: identity.provider, subject: identity.subject, sealed: sealed)
    }

    /// Unlinks `provider` from the account, unless it is the account's only way to sign in (no password, no passkey,
    /// no other link): the person would be locked out.
    func unlink(provider: String, userId: String) async throws -> UnlinkOutcome {
        let links = try await store.federatedIdentities(userId: userId)
        guard links.contains(where: { $0.provider == provider }) else { return .notLinked }
        guard let user = try await store.user(id: userId) else { return .notLinked }
        let otherLinks = links.contains { $0.provider != provider }
        let hasPassword = user.passwordHash != PasswordHasher.noPassword
        let hasPasskey = try await !store.passkeys(userId: userId).isEmpty
        guard otherLinks || hasPassword || hasPasskey else { return .lastCredential }
        let removed = links.filter { $0.provider == provider }
        return try await store.unlinkFederatedIdentity(provider: provider, userId: userId) ? .unlinked(removed) : .notLinked
    }

    enum UnlinkOutcome {
        /// The links removed, with the tokens they kept (for the provider to be told).
        case unlinked([FederatedIdentityRecord])
        case notLinked, lastCredential
    }

    /// Accounts whose email, or username, is the address.
    private func accountsUsing(_ email: String?) async throws -> [UserRecord] {
        guard let email, !email.isEmpty else { return [] }
        var found = try await store.users(claim: "email", equals: email)
        if let named = try await store.user(username: email), !found.contains(where: { $0.id == named.id }) { found.append(named) }
        return found
    }

    /// A new account with the provider's claims that the schema accepts; its username is the email when that is free.
    private func create(_ identity: UpstreamIdentity, logger: Logger) async throws -> UserRecord {
        let now = clock.now
        var claims: [String: String] = [:]
        for (name, value) in identity.claims where userSchema.claimNames.contains(name) || name == "email_verified" {
            if name == "email_verified" || userSchema.problem(name, value) == nil { claims[name] = value }
        }
        // An address the provider did not verify is not kept: `email` is unique across accounts (and shares its
        // namespace with usernames), so storing it would let anyone whose provider accepts any address take it from its
        // owner, who could then neither register with it nor sign in with a verified identity for it (third review,
        // R3-8). The person can add an address later and prove it with a code (`/users/me/email`).
        if !identity.emailVerified { claims["email"] = nil }
        if claims["email"] == nil { claims["email_verified"] = nil }
        let id = UUID().uuidString.lowercased()
        // A verified address is the sign-in name too.
        let username = claims["email"] ?? "\(identity.provider).\(identity.subject)"
        let user = UserRecord(
            id: id, username: username, passwordHash: PasswordHasher.noPassword, claims: claims, disabled: false, failedLogins: 0,
            lockedUntil: nil, createdAt: now)
        try await store.insertUser(user)
        try await link(identity, to: id)
        logger.info("account created by a federated sign-in", metadata: ["user": .string(id), "provider": .string(identity.provider)])
        return user
    }
}
