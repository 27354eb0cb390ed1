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

    /// Administration needs both the scope and an entitlement: a client acting for itself (client credentials, which
    /// only confidential clients get), or a user the operator gave the `admin` role. The scope alone is not enough,
    /// because a client may list it and every user who signs in to that client could then ask for it.
    var isAdmin: Bool {
        guard claims.scopes.contains(Self.adminScope) else { return false }
        switch subject {
        case .client: return true
        case .user(let user): return UserRoles.of(user).contains(UserRoles.admin)
        case .missingUser: return false
        }
    }
    var user: UserRecord? { if case .user(let user) = subject { user } else { nil } }
}

extension ResourceAuthenticator {
    /// Authenticates the bearer access token of a resource request (RFC 6750 §2.1, header only: these endpoints take
    /// JSON bodies, so §2.2 form-body tokens do not apply).
    ///
    /// Only access tokens are accepted. Unlike the thunderID server, which takes any JWT it signed, flow assertions
    /// and ID tokens are refused: they are not meant as API credentials, and an ID token in particular travels to
    /// places (logs, front ends) where an access token would not. The token must also be meant for this server
    /// (`aud`): one obtained by token exchange for another API must not work here. A disabled user's token is dead.
    func resourceCaller(_ request: Request) async throws(OAuthError) -> ResourceCaller {
        let claims = try await authenticateResource(request, body: nil)
        let subject: ResourceCaller.Subject
        do {
            if let user = try await store.user(id: claims.sub) {
                guard !user.disabled else { throw OAuthError(.invalidToken, "the user can no longer sign in") }
                subject = .user(user)
            } else if claims.sub == claims.clientId {
                subject = .client  // client credentials put the client id in `sub`
            } else if try await store.client(id: claims.sub) != nil {
                subject = .client  // a client's own token exchanged by another client keeps the first client in `sub`
            } else {
                subject = .missingUser
            }
        } catch let error as OAuthError {
            throw error
        } catch {
            throw OAuthError(.serverError, "could not look up the token's subject")
        }
        return ResourceCaller(claims: claims, subject: subject)
    }
}
