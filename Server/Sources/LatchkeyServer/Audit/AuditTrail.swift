import Foundation
import Logging

/// Where else an audit event goes once it is written: the seam for webhook delivery (a sink that queues the event
/// for signed delivery) or a SIEM exporter. A sink is called after the row is written and must not block the request
/// for long: queue, do not deliver inline.
protocol AuditSink: Sendable {
    func deliver(_ event: AuditEvent, logger: Logger) async
}

/// Where an audited action came from: the application, the caller's address, and the request's logger (which carries
/// `request_id`, `RequestIdMiddleware`). Built by the handler that knows them, passed to the domain values that record.
struct AuditOrigin: Sendable {
    var client: String?
    var address: String?
    var logger: Logger

    init(client: String? = nil, address: String?, logger: Logger) {
        self.client = client
        self.address = address
        self.logger = logger
    }

    /// The request's id, as its log lines and `X-Request-Id` carry it.
    var requestId: String? {
        if case .string(let id)? = logger[metadataKey: "request_id"] { return id }
        return nil
    }
}

/// The audit trail: every security-relevant event becomes a row in the store, one structured log line
/// (`audit event`, at notice level, with the event's fields as metadata) and a count in
/// `latchkey_audit_events_total`, then goes to the sinks.
///
/// Recording never fails the request that caused the event. The event happened (the password was wrong, the token
/// revoked, the profile changed) whether or not its row could be written, so answering the user with a 503 would
/// misreport it, invite a retry of something already done, and let an unavailable database turn into refused
/// sign-ins. There is no exception, not even for administrative changes: the change is committed before it is
/// audited, so failing then would only hide a done change from its author. Instead the log line is written first —
/// it is the record of last resort — and a failed write is logged at error level and counted
/// (`latchkey_audit_events_total{result="failed"}`) for an alert.
struct AuditTrail: Sendable {
    let store: any AuditStore
    let clock: ServerClock
    let metrics: ServerMetrics
    let sinks: [any AuditSink]

    init(store: any AuditStore, clock: ServerClock, metrics: ServerMetrics, sinks: [any AuditSink] = []) {
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.sinks = sinks
    }

    /// Records an event of `type` now, from `origin`. `actor` defaults to the subject (a person acting on their own
    /// account), else `anonymous`.
    func record(
        _ type: AuditEvent.Kind, _ outcome: AuditEvent.Outcome = .success, subject: String?, actor: String? = nil,
        details: [String: String] = [:], origin: AuditOrigin
    ) async {
        let event = AuditEvent(
            id: Self.newId(at: clock.now), at: clock.now, type: type, outcome: outcome, actor: actor ?? subject ?? AuditEvent.anonymous,
            subject: subject, clientId: origin.client, clientAddress: origin.address, requestId: origin.requestId, details: details)
        await record(event, logger: origin.logger)
    }

    /// Logs, writes, counts and fans out one event (see the type's comment: never throws).
    func record(_ event: AuditEvent, logger: Logger) async {
        var metadata: Logger.Metadata = [
            "audit.id": .string(event.id), "audit.type": .string(event.type.rawValue), "audit.outcome": .string(event.outcome.rawValue),
            "audit.actor": .string(event.actor)
        ]
        if let subject = event.subject { metadata["audit.subject"] = .string(subject) }
        if let client = event.clientId { metadata["audit.client_id"] = .string(client) }
        if let address = event.clientAddress { metadata["audit.client_address"] = .string(address) }
        for (key, value) in event.details { metadata["audit.\(key)"] = .string(value) }
        // `request_id` is already in the request's logger.
        logger.notice("audit event", metadata: metadata)
        do {
            try await store.insertAuditEvent(event)
            metrics.auditWrite(event.type, succeeded: true)
        } catch {
            metrics.auditWrite(event.type, succeeded: false)
            logger.error(
                "audit event not stored",
                metadata: ["audit.id": .string(event.id), "error.type": .string("\(type(of: error))")])
        }
        for sink in sinks { await sink.deliver(event, logger: logger) }
    }

    /// Events of the same second stay in time order when listed (the id is the tiebreak of equal `at`): a zero-padded
    /// time prefix, then randomness.
    static func newId(at: Date) -> String {
        let micros = UInt64(max(0, at.timeIntervalSince1970 * 1_000_000))
        let prefix = String(micros, radix: 16)
        return String(repeating: "0", count: max(0, 14 - prefix.count)) + prefix + "-" + Secrets.identifier()
    }
}
