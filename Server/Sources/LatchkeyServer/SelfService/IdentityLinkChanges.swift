import Foundation
import Logging

/// A person's own links to other identity providers: listing them, the providers still to link, completing a link
/// and unlinking — the one way the account API (`/users/me/identities`, `LinkedIdentitiesController`) and the account
/// page (`/account/linked`, `AccountLinkedAccounts`) make these changes.
///
/// A link adds a way into the account and an unlink takes one away: each needs a recent interactive sign-in (checked by
/// the caller, before the provider is even opened), mails the account's verified address and is audited
/// (`federation.linked`, `federation.unlinked`). The account's last way to sign in stays (`FederatedAccounts.unlink`).
/// A link is completed by whoever holds the account's session, with the one-time code the provider's answer was handed
/// off under (`Federation.collect`, bound to the account that started it), never by the provider's browser alone.
struct IdentityLinkChanges: Sendable {
    let store: any FederatedIdentityStore
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    let accounts: Accounts
    let audit: AuditTrail

    /// One link of the account, named as a person reads it.
    struct Link: Sendable {
        var provider: String
        var name: String
        var linkedAt: Date
    }

    /// The account's links, oldest first.
    func links(of userId: String) async throws -> [Link] {
        try await store.federatedIdentities(userId: userId).sorted { $0.createdAt < $1.createdAt }.map {
            Link(provider: $0.provider, name: name(of: $0.provider), linkedAt: $0.createdAt)
        }
    }

    /// The providers `client` offers that the account has no link with yet, in the application's order.
    func available(for client: ClientConfiguration?, besides links: [Link]) -> [IdentityProviderConfiguration] {
        guard let client else { return [] }
        return federation.providers(for: client).filter { provider in !links.contains { $0.provider == provider.id } }
    }

    /// A provider's configured name. Sign in with Apple's native links have no configured provider; they show under
    /// Apple's name.
    func name(of providerId: String) -> String {
        federation.providers.first { $0.id == providerId }?.name ?? (providerId == "apple" ? "Apple" : Federation.printable(providerId))
    }

    /// Links the identity the provider vouched for, handed off under `code` for a link of `user` that `clientId`
    /// started with `state`; the provider's name. A refusal is audited and thrown as the `FederationFailure` it is.
    func complete(
        providerId: String, code: String, state: String, user: UserRecord, clientId: String, locale: SupportedLocale, origin: AuditOrigin
    ) async throws -> String {
        do {
            let identity = try await federation.collect(code: code, state: state, purpose: .link, target: user.id, clientId: clientId)
            guard identity.provider == providerId else { throw FederationFailure.unknownResult }
            try await federatedAccounts.link(identity, to: user.id)
        } catch let failure as FederationFailure {
            await audit.record(
                .federatedIdentityLinked, .failure, subject: user.id,
                details: ["provider": String(providerId.prefix(64)), "reason": failure.auditReason],
                origin: origin)
            throw failure
        }
        origin.logger.info("federated identity linked by its account", metadata: ["user": .string(user.id), "provider": .string(providerId)])
        await audit.record(.federatedIdentityLinked, subject: user.id, details: ["provider": providerId, "how": "manual"], origin: origin)
        let name = name(of: providerId)
        await notify(user, "identity_linked", provider: name, locale: locale, origin: origin)
        return name
    }

    /// What unlinking did.
    enum Unlinked: Sendable {
        /// Unlinked; the provider's name.
        case unlinked(String)
        case notLinked
        /// It is the account's only way to sign in.
        case lastCredential
    }

    /// Unlinks `providerId` from `user`'s account; a provider that kept a token for the link (Apple) is told the person
    /// left, as on deletion.
    func unlink(providerId: String, user: UserRecord, locale: SupportedLocale, origin: AuditOrigin) async throws -> Unlinked {
        switch try await federatedAccounts.unlink(provider: providerId, userId: user.id) {
        case .unlinked(let removed):
            origin.logger.info("federated identity unlinked", metadata: ["user": .string(user.id), "provider": .string(providerId)])
            let revocations = await federation.revokeUpstreamTokens(of: removed, logger: origin.logger)
            await audit.record(
                .federatedIdentityUnlinked, subject: user.id, details: revocations.auditDetails(["provider": providerId]), origin: origin)
            let name = name(of: providerId)
            await notify(user, "identity_unlinked", provider: name, locale: locale, origin: origin)
            return .unlinked(name)
        case .notLinked: return .notLinked
        case .lastCredential: return .lastCredential
        }
    }

    /// A mail that cannot be sent now is logged, not turned into a failure of what was done.
    private func notify(_ user: UserRecord, _ notice: String, provider: String, locale: SupportedLocale, origin: AuditOrigin) async {
        await accounts.notifyAccountChange(user, notice, arguments: ["provider": provider], locale: locale, logger: origin.logger)
    }
}
