import Foundation
import Hummingbird
import Logging

/// A user's sign-in sessions and grants (refresh-token families), listed and ended: by the signed-in user on the
/// protected `/users/me` group (`sessions`, `grants`), and by an administrator on the protected `/admin/v1` group
/// (`users/{id}/sessions`, `users/{id}/grants`). Both speak the thunderID dialect (`{code, message, description}`).
///
/// Ending a session ends it and revokes every grant of it (`SessionStore.endSession`); revoking a grant revokes its
/// refresh tokens and its access tokens at once (`TokenValidator` refuses an access token of a revoked family).
///
/// No recent sign-in is needed to end sessions, unlike changing the email or linking identities. Reading the list
/// changes nothing. Ending sessions only takes access away: a thief holding a stolen token gains nothing by signing
/// the owner out (the owner signs in again), while the owner who lost a device must be able to end the thief's
/// session at once, from a session that may be hours old, without first proving a fresh sign-in that a stolen
/// second factor could block.
struct SessionsController: Sendable {
    let store: any SessionStore & TokenStore & ClientStore & UserStore
    let clock: ServerClock
    let audit: AuditTrail

    private var ending: SessionEnding { SessionEnding(store: store, clock: clock, audit: audit) }

    // MARK: Routes

    /// `/users/me/sessions` and `/users/me/grants`, on the protected `/users/me` group.
    func addSelfRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("sessions") { _, context in
            let user = try context.caller.me()
            return try await self.listing(of: user.id, caller: context.caller)
        }
        group.delete("sessions") { request, context in
            let user = try context.caller.me()
            let keepCurrent = try Self.flag("keep_current", of: request)
            let caller = context.caller
            let family = keepCurrent ? try await store.accessToken(jti: caller.claims.jti)?.familyId : nil
            try await ending.endAll(
                of: user.id, keepingCurrent: keepCurrent, session: keepCurrent ? caller.claims.sid : nil, family: family,
                by: .init(id: caller.auditActor, administrator: false), origin: context.auditOrigin)
            return Self.noContent
        }
        group.delete("sessions/:session") { _, context in
            let user = try context.caller.me()
            return try await self.endSession(try context.parameters.require("session"), of: user.id, context: context, by: "user")
        }
        group.delete("grants/:grant") { _, context in
            let user = try context.caller.me()
            return try await self.revokeGrant(try context.parameters.require("grant"), of: user.id, context: context, by: "user")
        }
    }

    /// `/admin/v1/users/{id}/sessions` and `/admin/v1/users/{id}/grants`, on the protected `/admin/v1` group. The
    /// caller must be an administrator (`ResourceCaller.isAdmin`: the `scim.admin` scope with the `admin` role, or a
    /// client for itself), else 403.
    func addAdminRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("users/:user/sessions") { _, context in
            let user = try await self.administeredUser(context)
            return try await self.listing(of: user.id, caller: context.caller)
        }
        group.delete("users/:user/sessions") { _, context in
            let user = try await self.administeredUser(context)
            try await ending.endAll(of: user.id, by: .init(id: context.caller.auditActor, administrator: true), origin: context.auditOrigin)
            return Self.noContent
        }
        group.delete("users/:user/sessions/:session") { _, context in
            let user = try await self.administeredUser(context)
            return try await self.endSession(
                try context.parameters.require("session"), of: user.id, context: context, by: context.caller.claims.sub)
        }
        group.delete("users/:user/grants/:grant") { _, context in
            let user = try await self.administeredUser(context)
            return try await self.revokeGrant(
                try context.parameters.require("grant"), of: user.id, context: context, by: context.caller.claims.sub)
        }
    }

    // MARK: Handlers

    /// Ends one session of `userId` and revokes its grants. Another user's session, an unknown id and a pruned one
    /// are the same 404, so that an id reveals nothing. Ending an ended session again is done already: 204.
    private func endSession(_ id: String, of userId: String, context: ResourceRequestContext, by actor: String) async throws -> Response {
        let actor = SessionEnding.Actor(id: context.caller.auditActor, administrator: actor != "user")
        guard try await ending.endSession(id, of: userId, by: actor, origin: context.auditOrigin) else { throw Self.sessionNotFound }
        return Self.noContent
    }

    /// Revokes one grant of `userId`: its refresh tokens and its access tokens stop working at once.
    private func revokeGrant(_ id: String, of userId: String, context: ResourceRequestContext, by actor: String) async throws -> Response {
        let actor = SessionEnding.Actor(id: context.caller.auditActor, administrator: actor != "user")
        guard try await ending.revokeGrant(id, of: userId, by: actor, origin: context.auditOrigin) else { throw Self.grantNotFound }
        return Self.noContent
    }

    /// The user an administrator names in the path; 403 for anyone else (before saying whether the user exists).
    private func administeredUser(_ context: ResourceRequestContext) async throws -> UserRecord {
        guard context.caller.isAdmin else { throw SelfServiceErrors.administratorsOnly }
        guard let user = try await store.user(id: try context.parameters.require("user")) else { throw SelfServiceErrors.userNotFound }
        return user
    }

    /// The listing (`SessionListing`) as the answer.
    private func listing(of userId: String, caller: ResourceCaller) async throws -> Response {
        try Responses.json(try await SessionListing(store: store, clock: clock).body(of: userId, caller: caller), noStore: true)
    }

    private static var noContent: Response { Response(status: .noContent, headers: [.cacheControl: "no-store"]) }

    /// A boolean query parameter: absent is false; `true`/`false` (or `1`/`0`); anything else is `400 USR-1001`.
    private static func flag(_ name: String, of request: Request) throws -> Bool {
        let value: String?
        do { value = try Parameters.query(of: request).single(name) } catch {
            throw SelfServiceErrors.invalidRequest("\(name) must be given once")
        }
        switch value?.lowercased() {
        case nil, "false", "0": return false
        case "true", "1": return true
        default: throw SelfServiceErrors.invalidRequest("\(name) must be true or false")
        }
    }

    static let sessionNotFound = APIError(
        status: .notFound, code: "SES-1001", error: "not_found", messageKey: "error.not_found", userMessage: "Session not found",
        technical: "the user has no session with that id")

    static let grantNotFound = APIError(
        status: .notFound, code: "SES-1002", error: "not_found", messageKey: "error.not_found", userMessage: "Application grant not found",
        technical: "the user has no grant with that id")
}
