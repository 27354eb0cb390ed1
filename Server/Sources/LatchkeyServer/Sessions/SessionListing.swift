import Foundation

/// A user's open sessions and live grants, as `GET /users/me/sessions`, the administrator's
/// `GET /admin/v1/users/{id}/sessions` and the account export show them.
struct SessionListing: Sendable {
    let store: any SessionStore & TokenStore & ClientStore
    let clock: ServerClock

    /// `{sessions: [...], applications: [...]}`: the open sessions, newest first, each with the grants (applications)
    /// signed in through it; then the grants bound to no open session (an app signed in without a browser session,
    /// or an `offline_access` grant that outlived its session). The caller's own session and grant are `current`.
    /// Nothing secret: ids, client ids and names, times, `amr`.
    func body(of userId: String, caller: ResourceCaller) async throws -> SessionsBody {
        let now = clock.now
        let listing = try await store.userSessions(userId: userId, now: now)
        let own = caller.user?.id == userId
        let currentSession = own ? caller.claims.sid : nil
        let currentGrant = own ? try await store.accessToken(jti: caller.claims.jti)?.familyId : nil
        var names: [String: String] = [:]
        for clientId in Set(listing.grants.map(\.family.clientId)) {
            names[clientId] = try await store.client(id: clientId)?.configuration.name
        }
        let formatter = ISO8601DateFormatter()
        func application(_ grant: LiveGrant) -> SessionsBody.Application {
            SessionsBody.Application(
                grantId: grant.family.id, clientId: grant.family.clientId, clientName: names[grant.family.clientId] ?? grant.family.clientId,
                createdAt: formatter.string(from: grant.family.createdAt),
                lastRefreshedAt: grant.lastRefreshedAt.map(formatter.string(from:)), expiresAt: formatter.string(from: grant.expiresAt),
                current: grant.family.id == currentGrant)
        }
        let sessionIds = Set(listing.sessions.map(\.id))
        let body = SessionsBody(
            sessions: listing.sessions.map { session in
                SessionsBody.Session(
                    id: session.id, current: session.id == currentSession, createdAt: formatter.string(from: session.createdAt),
                    authTime: formatter.string(from: session.authTime), expiresAt: formatter.string(from: session.expiresAt),
                    amr: AuthenticationMethods.published(session.amr), idp: AuthenticationMethods.provider(session.amr),
                    applications: listing.grants.filter { $0.sessionId == session.id }.map(application))
            },
            applications: listing.grants.filter { grant in grant.sessionId.map { !sessionIds.contains($0) } ?? true }.map(application))
        return body
    }

}

/// `GET /users/me/sessions` (and the administrator's and the account export's copy of it).
struct SessionsBody: Encodable {
    struct Session: Encodable {
        var id: String
        var current: Bool
        var createdAt: String
        var authTime: String
        var expiresAt: String
        var amr: [String]
        /// The identity provider of a federated sign-in.
        var idp: String?
        var applications: [Application]
        enum CodingKeys: String, CodingKey {
            case id, current, createdAt = "created_at", authTime = "auth_time", expiresAt = "expires_at", amr, idp, applications
        }
    }
    struct Application: Encodable {
        var grantId: String
        var clientId: String
        var clientName: String
        var createdAt: String
        var lastRefreshedAt: String?
        var expiresAt: String
        var current: Bool
        enum CodingKeys: String, CodingKey {
            case grantId = "grant_id", clientId = "client_id", clientName = "client_name", createdAt = "created_at"
            case lastRefreshedAt = "last_refreshed_at", expiresAt = "expires_at", current
        }
    }
    var sessions: [Session]
    var applications: [Application]
}
