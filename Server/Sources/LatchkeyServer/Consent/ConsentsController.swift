import Foundation
import Hummingbird

/// The consents a person gave third-party applications, listed and withdrawn: by the person on the protected
/// `/users/me` group (`consents`), and by an administrator on `/admin/v1` (`users/{id}/consents`), in the thunderID
/// dialect like the sessions and grants beside them.
///
/// Withdrawing forgets the consent, so the application's next sign-in asks again (and `prompt=none` answers
/// `consent_required`), and revokes the application's grants for the person at once: access it was given on that
/// consent ends with it.
struct ConsentsController: Sendable {
    let store: any ConsentStore & SessionStore & TokenStore & ClientStore & UserStore
    let clock: ServerClock
    let audit: AuditTrail

    func addSelfRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("consents") { _, context in
            try await self.listing(of: try context.caller.me().id)
        }
        group.delete("consents/:client") { _, context in
            let user = try context.caller.me()
            return try await self.withdraw(try context.parameters.require("client"), of: user.id, context: context, byAdministrator: false)
        }
    }

    func addAdminRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("users/:user/consents") { _, context in
            try await self.listing(of: try await self.administeredUser(context).id)
        }
        group.delete("users/:user/consents/:client") { _, context in
            let user = try await self.administeredUser(context)
            return try await self.withdraw(try context.parameters.require("client"), of: user.id, context: context, byAdministrator: true)
        }
    }

    /// `{consents: [{client_id, client_name, scopes, granted_at, updated_at}]}`, by application id.
    private func listing(of userId: String) async throws -> Response {
        let formatter = ISO8601DateFormatter()
        var entries: [ConsentsBody.Entry] = []
        for consent in try await store.consents(userId: userId) {
            let name = try await store.client(id: consent.clientId)?.configuration.name ?? consent.clientId
            entries.append(
                .init(
                    clientId: consent.clientId, clientName: name, scopes: consent.scopes, grantedAt: formatter.string(from: consent.grantedAt),
                    updatedAt: formatter.string(from: consent.updatedAt)))
        }
        return try Responses.json(ConsentsBody(consents: entries), noStore: true)
    }

    private func withdraw(_ clientId: String, of userId: String, context: ResourceRequestContext, byAdministrator: Bool) async throws -> Response {
        guard let revoked = try await ConsentWithdrawal.withdraw(clientId, of: userId, store: store, now: clock.now, byAdministrator: byAdministrator)
        else {
            throw Self.consentNotFound
        }
        var origin = context.auditOrigin
        origin.client = clientId  // the application whose consent ended, not the caller's
        await audit.record(
            .consentWithdrawn, subject: userId, actor: context.caller.auditActor,
            details: ["grants_revoked": String(revoked), "administrator": String(byAdministrator)], origin: origin)
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    private func administeredUser(_ context: ResourceRequestContext) async throws -> UserRecord {
        guard context.caller.isAdmin else { throw SelfServiceErrors.administratorsOnly }
        guard let user = try await store.user(id: try context.parameters.require("user")) else { throw SelfServiceErrors.userNotFound }
        return user
    }

    static let consentNotFound = APIError(
        status: .notFound, code: "CON-1001", error: "not_found", messageKey: "error.not_found", userMessage: "Consent not found",
        technical: "the user has not consented to that application")
}

/// The answer of `GET /users/me/consents`.
struct ConsentsBody: Encodable {
    struct Entry: Encodable {
        var clientId: String
        var clientName: String
        var scopes: [String]
        var grantedAt: String
        var updatedAt: String

        enum CodingKeys: String, CodingKey {
            case scopes
            case clientId = "client_id", clientName = "client_name", grantedAt = "granted_at", updatedAt = "updated_at"
        }
    }
    var consents: [Entry]
}
