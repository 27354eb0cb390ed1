import Foundation

extension AuditEvent {
    /// An event on the wire: snake_case members, `at` in RFC 3339 with milliseconds.
    struct Wire: Encodable {
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
