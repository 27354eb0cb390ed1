import Foundation
import Hummingbird

/// Who is calling a protected resource (`/users/me`, `/scim2/…`): the verified access token and, when its subject is
/// a user, that user.
struct ResourceCaller: Sendable {
    /// The scope that grants SCIM administration of every account (`/scim2/Users`).
    static let adminScope = "scim.admin"

    enum Subject: Sendable {
        case user(UserRecord)
        /// A client acting for itself (client credentials): there is no "me".
        case client
        /// The token names a user that no longer exists.
        case missingUser
    }

    let claims: AccessTokenClaims
    let subject: Subject
    /// Whose application the token was issued to (`ApplicationTrust`), read on the account-management routes only
    /// (`ResourceAuthenticator.resourceCaller(_:resolvingTrust:)`); unread, or an application no longer known, it is
    /// third-party, so a route that forgot to read it refuses rather than serves.
    var trust: ApplicationTrust = .thirdParty

    /// Whether the token may manage its user's account (profile, email, credentials, sessions, linked identities):
    /// a first-party application's token, or one with `latchkey.account`, a scope registration never grants. A token
    /// a registered application got with `openid` alone reads `sub` at userinfo and nothing more.
    var mayManageAccount: Bool { trust == .firstParty || claims.scopes.contains(ApplicationTrust.accountScope) }

    /// Refuses (403 `insufficient_scope`) a token that may not manage the account.
    func requireAccountManagement() throws(OAuthError) {
        guard mayManageAccount else {
            throw OAuthError(
                .insufficientScope, "managing the account needs the \(ApplicationTrust.accountScope) scope, which this application was not given")
        }
    }

    /// Administration needs both the scope and an entitlement: a client acting for itself (client credentials, which
    /// only confidential clients get), or a user the operator gave the `admin` role. The scope alone is not enough,
    /// because a client may list it and every user who signs in to that client could then ask for it.
    var isAdmin: Bool { isEntitled(to: Self.adminScope) }
    /// Registering and managing applications (`/oauth2/register`) needs the `registration` scope and the same
    /// entitlement as administration: a client acting for itself, or a user with the `admin` role.
    var mayRegisterApplications: Bool { isEntitled(to: ClientRegistrationPolicy.registrationScope) }

    /// An administrative `scope` in the token, held by a client acting for itself or a user with the `admin` role.
    private func isEntitled(to scope: String) -> Bool {
        guard claims.scopes.contains(scope) else { return false }
        switch subject {
        case .client: return true
        case .user(let user): return UserRoles.of(user).contains(UserRoles.admin)
        case .missingUser: return false
        }
    }
    var user: UserRecord? { if case .user(let user) = subject { user } else { nil } }

    /// Who acts, for the audit trail: the user, or the client acting for itself (`client:<id>`).
    var auditActor: String {
        switch subject {
        case .user(let user): user.id
        case .client: AuditEvent.clientActor(claims.clientId)
        case .missingUser: claims.sub
        }
    }
}
