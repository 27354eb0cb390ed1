import Foundation
import Hummingbird

/// `GET /admin/v1/audit-events`: the audit trail, newest first, for administrators (`ResourceCaller.isAdmin`: the
/// `scim.admin` scope with a client acting for itself or a user with the `admin` role).
///
/// Query parameters, all optional: `since` and `until` (RFC 3339; `since` inclusive, `until` exclusive), `subject`
/// (a user id), `type` (one or more comma-separated event types, `signin.failed,account.locked`), `outcome`
/// (`success`, `failure`), `client_id`, `limit` (1–200, default 50) and `cursor` (the `next_cursor` of the previous
/// page). Answers `{"events": […], "next_cursor": "…"}`; `next_cursor` is absent on the last page. The cursor is a
/// keyset position, so pages stay stable while events are added or pruned: a new event never shifts a later page.
struct AuditController: Sendable {
    let store: any AuditStore
    let clock: ServerClock

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("audit-events") { request, context in try await self.list(request, caller: context.caller) }
    }

    private func list(_ request: Request, caller: ResourceCaller) async throws -> Response {
        guard caller.isAdmin else { throw AdminErrors.forbidden }
        var query = try AuditQuery(parameters: try Parameters.query(of: request))
        let limit = query.limit
        query.limit = limit + 1  // one more tells whether there is a next page
        let found = try await store.auditEvents(query)
        let page = Array(found.prefix(limit))
        let next = found.count > limit ? page.last.map { AuditCursor(after: $0).token } : nil
        return try Responses.json(Page(events: page.map(AuditEvent.Wire.init), nextCursor: next), noStore: true)
    }

    struct Page: Encodable {
        var events: [AuditEvent.Wire]
        var nextCursor: String?

        enum CodingKeys: String, CodingKey {
            case events, nextCursor = "next_cursor"
        }
    }
}

/// The administration API's refusals (thunderID's shape, like `/users/me`).
enum AdminErrors {
    static let forbidden = APIError(
        status: .forbidden, code: "AUTH-4030", error: "access_denied", messageKey: "error.forbidden", userMessage: "Forbidden",
        technical: "administration needs the scim.admin scope and an administrator (a client acting for itself, or a user with the admin role)")

    static func invalidParameter(_ name: String, _ why: String) -> APIError {
        APIError(
            status: .badRequest, code: "ADM-1001", error: "invalid_request", messageKey: "error.userservice.invalid_request_format",
            userMessage: "Invalid request format", technical: "invalid \(name): \(why)")
    }
}
