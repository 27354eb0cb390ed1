import Foundation

extension AuditQuery {
    /// A page's size when the request names none, and the most it may name.
    static let defaultLimit = 50
    static let maxLimit = 200

    /// The filters a request asks for; a malformed or unknown value is 400 (never silently ignored: a typo in `type`
    /// must not look like "no such events").
    init(parameters params: Parameters) throws {
        var query = AuditQuery(limit: Self.defaultLimit)
        do {
            if let since = try params.single("since") { query.since = try Self.timestamp(since, "since") }
            if let until = try params.single("until") { query.until = try Self.timestamp(until, "until") }
            if let subject = try params.single("subject") { query.subject = try Self.identifier(subject, "subject") }
            if let clientId = try params.single("client_id") { query.clientId = try Self.identifier(clientId, "client_id") }
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
                guard let value = Int(limit), (1...Self.maxLimit).contains(value) else {
                    throw AdminErrors.invalidParameter("limit", "limit must be a whole number from 1 to \(Self.maxLimit)")
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
        self = query
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
}
