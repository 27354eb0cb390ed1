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

    static let defaultLimit = 50
    static let maxLimit = 200

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("audit-events") { request, context in try await self.list(request, caller: context.caller) }
    }

    private func list(_ request: Request, caller: ResourceCaller) async throws -> Response {
        guard caller.isAdmin else { throw AdminErrors.forbidden }
        var query = try Self.query(from: try Parameters.query(of: request))
        let limit = query.limit
        query.limit = limit + 1  // one more tells whether there is a next page
        let found = try await store.auditEvents(query)
        let page = Array(found.prefix(limit))
        let next = found.count > limit ? page.last.map { AuditCursor(after: $0).token } : nil
        return try Responses.json(Page(events: page.map(WireEvent.init), nextCursor: next), noStore: true)
    }

    /// The filters a request asks for; a malformed or unknown value is 400 (never silently ignored: a typo in `type`
    /// must not look like "no such events").
    static func query(from params: Parameters) throws -> AuditQuery {
        var query = AuditQuery(limit: defaultLimit)
        do {
            if let since = try params.single("since") { query.since = try timestamp(since, "since") }
            if let until = try params.single("until") { query.until = try timestamp(until, "until") }
            if let subject = try params.single("subject") { query.subject = try identifier(subject, "subject") }
            if let clientId = try params.single("client_id") { query.clientId = try identifier(clientId, "client_id") }
            if let types = try params.single("type") {
                query.types = try types.split(separator: ",", omittingEmptySubsequences: false).map { name in
                    guard let kind = AuditEvent.Kind(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                        throw AdminErrors.invalidParameter("type", "unknown event type \(String(name.prefix(64)))")
                    }
                    return kind
                }
            }
            if let outcome = try params.single("outcome") {
                guard let value = AuditEvent.Outcome(rawValue: outcome) else {
                    throw AdminErrors.invalidParameter("outcome", "outcome must be success or failure")
                }
                query.outcome = value
            }
            if let limit = try params.single("limit") {
                guard let value = Int(limit), (1...maxLimit).contains(value) else {
                    throw AdminErrors.invalidParameter("limit", "limit must be a whole number from 1 to \(maxLimit)")
                }
                query.limit = value
            }
            if let cursor = try params.single("cursor") {
                guard let position = AuditCursor(token: cursor) else {
                    throw AdminErrors.invalidParameter("cursor", "cursor is not one this API gave")
                }
                query.after = position
            }
        } catch let error as OAuthError {
            throw AdminErrors.invalidParameter("query", error.description)
        }
        if let since = query.since, let until = query.until, since > until {
            throw AdminErrors.invalidParameter("since", "since must not be after until")
        }
        return query
    }

    private static func timestamp(_ text: String, _ name: String) throws -> Date {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        if let date = try? fractional.parse(text) { return date }
        throw AdminErrors.invalidParameter(name, "\(name) must be an RFC 3339 time such as 2026-01-31T12:00:00Z")
    }

    private static func identifier(_ text: String, _ name: String) throws -> String {
        guard !text.isEmpty, text.count <= 256, !text.contains("\u{0}") else {
            throw AdminErrors.invalidParameter(name, "\(name) must be 1 to 256 characters")
        }
        return text
    }

    struct Page: Encodable {
        var events: [WireEvent]
        var nextCursor: String?

        enum CodingKeys: String, CodingKey {
            case events, nextCursor = "next_cursor"
        }
    }

    /// An event on the wire: snake_case members, `at` in RFC 3339 with milliseconds.
    struct WireEvent: Encodable {
        var id: String
        var at: String
        var type: String
        var outcome: String
        var actor: String
        var subject: String?
        var clientId: String?
        var clientAddress: String?
        var requestId: String?
        var details: [String: String]

        init(_ event: AuditEvent) {
            id = event.id
            at = event.at.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            type = event.type.rawValue
            outcome = event.outcome.rawValue
            actor = event.actor
            subject = event.subject
            clientId = event.clientId
            clientAddress = event.clientAddress
            requestId = event.requestId
            details = event.details
        }

        enum CodingKeys: String, CodingKey {
            case id, at, type, outcome, actor, subject, details
            case clientId = "client_id", clientAddress = "client_address", requestId = "request_id"
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
