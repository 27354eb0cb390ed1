import Foundation
import Prometheus

/// The server's counters and histograms, exposed at `GET /metrics` in the Prometheus text format.
///
/// Each server owns its registry (no process-wide `MetricsSystem.bootstrap`), so several servers in one process — the
/// tests run dozens — never mix their figures. Every label value comes from a closed set (an enum here, a route
/// *template*, an HTTP method or status code): no user identifier, address, token or path segment a client chose
/// can become a label, which would both leak it and let a client grow the registry without bound.
public final class ServerMetrics: Sendable {
    /// Why the server closed a connection before the router saw (all of) a request, so that no route counts it.
    public enum ConnectionClose: String, Sendable, CaseIterable {
        /// A request head past the limits, answered 431.
        case headerTooLarge = "header_too_large"
        /// A request not delivered whole within `http_request_timeout_seconds` (slowloris).
        case requestTimeout = "request_timeout"
        /// An answer the client did not read for `http_request_timeout_seconds` (a slow reader).
        case responseNotRead = "response_not_read"
        /// A body past the limit, answered 413 before its end: the rest is not read.
        case bodyTooLarge = "body_too_large"
    }

    /// How a person proved who they are.
    public enum SignInMethod: String, Sendable, CaseIterable {
        /// A password: the hosted page or the reachFive password endpoint (the password check's outcome; a second
        /// factor may follow).
        case password
        /// A passkey assertion (reachFive endpoints, the hosted page's passkey button, a flow's passkey step).
        case passkey
        /// A Sign in with Apple ID token.
        case apple
        /// Another identity provider (federation): the upstream leg's outcome.
        case federated
        /// An app-native flow (`/flow/execute`): the refusals of its password checks, and its completions.
        case flow
        /// An existing browser session reused at `/authorize`.
        case sso
    }

    /// What came of a sign-in attempt.
    public enum SignInOutcome: String, Sendable, CaseIterable {
        case success
        /// A wrong credential, an unknown account, a failed verification.
        case failure
        /// Refused because the account is locked.
        case locked
        /// Refused because the caller's address sent too many attempts.
        case throttled
    }

    /// The per-address limits that can refuse a request.
    public enum Limit: String, Sendable, CaseIterable {
        case login, challenge, start, registration
        /// Client authentications that would need a key derivation (`ClientAuthenticator`).
        case clientAuthentication = "client_authentication"
        /// Token requests with a DPoP proof (each proof is recorded) that then fail (`max_starts_per_address`).
        case dpopProof = "dpop_proof"
        /// Recovery-code checks past the budget every account shares (`max_recovery_code_failures`).
        case recoveryCodes = "recovery_codes"
    }

    /// What became of a delivery (`DeliveryLoop`: mail, audit webhooks, back-channel logout).
    public enum DeliveryResult: String, Sendable, CaseIterable {
        /// The receiver took it (2xx; the relay's 250).
        case delivered
        /// One attempt failed (an answer other than 2xx, a timeout, no connection); it is retried.
        case failed
        /// Given up after `max_attempts` or `max_age_seconds` (logged at error level).
        case dropped
        /// Not queued: the destination's queue held `queue_limit` deliveries already (logged at error level). For a
        /// webhook it counts only the events that are not low priority: the ones a flood must never keep from it.
        case queueFull = "queue_full"
        /// A low-priority event (`AuditEvent.Kind.isLowPriority`: failed client authentications) not queued: their
        /// share of the queue (`low_priority_queue_limit`) or the whole queue was full. Expected under a flood.
        case queueFullLowPriority = "queue_full_low_priority"
        /// Not queued: the store refused the write (logged at error level).
        case notQueued = "not_queued"
    }

    let registry = PrometheusCollectorRegistry()

    /// Upper bounds of the request latency histogram: 1 ms to 10 s, roughly ×2.5 apart (bcrypt sits near 250 ms).
    static let latencyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10)
    ]

    public init() {
        // Every series of a closed set is made at once, at zero: a dashboard sees `0`, not a missing series, and
        // `rate()` works from the first increment.
        for method in SignInMethod.allCases {
            for outcome in SignInOutcome.allCases { _ = signInCounter(method, outcome) }
        }
        for limit in Limit.allCases { _ = throttleCounter(limit) }
        _ = refreshCounter("rotated")
        _ = refreshCounter("replayed")
        _ = refreshCounter("reissued")
        _ = lockoutCounter()
        _ = jwksCounter("ok")
        _ = jwksCounter("failed")
        _ = storeErrorCounter("unavailable")
        _ = storeErrorCounter("invalid_input")
        for reason in ConnectionClose.allCases { _ = connectionCloseCounter(reason) }
        for type in AuditEvent.Kind.allCases {
            _ = auditCounter(type, "stored")
            _ = auditCounter(type, "failed")
        }
    }

    // MARK: Recording

    /// One answered request: `route` is the matched route template (`/scim2/Users/{id}`), or `NotFound`.
    func request(route: String, method: String, status: Int, duration: Duration) {
        let labels = [("route", route), ("method", method), ("status", String(status))]
        registry.makeCounter(
            descriptor: Self.name("http_requests", "total", "HTTP requests answered, by route template, method and status"),
            labels: labels
        ).increment()
        registry.makeDurationHistogram(
            descriptor: Self.name(
                "http_request_duration", "seconds",
                "Time from the request head to the response head, by route template and method"),
            labels: [("route", route), ("method", method)], buckets: Self.latencyBuckets
        )
        .record(duration)
    }

    /// A sign-in attempt of `method` ended with `outcome`.
    public func signIn(_ method: SignInMethod, _ outcome: SignInOutcome) { signInCounter(method, outcome).increment() }

    /// A refresh token was exchanged for a new one.
    func refreshRotated() { refreshCounter("rotated").increment() }

    /// A rotated refresh token came back within the reuse interval and was handed its successor again.
    func refreshReissued() { refreshCounter("reissued").increment() }

    /// A refresh token was presented again after its rotation: its family was revoked.
    func refreshReplayDetected() { refreshCounter("replayed").increment() }

    /// An account was locked by repeated failures.
    func lockout() { lockoutCounter().increment() }

    /// A request was refused by a per-address limit.
    func throttled(_ limit: Limit) { throttleCounter(limit).increment() }

    /// The Apple key set was fetched (`ok`) or a fetch failed.
    func jwksFetch(succeeded: Bool) { jwksCounter(succeeded ? "ok" : "failed").increment() }

    /// The store refused or could not do its work (`unavailable`: 503 to the client; `invalid_input`: 400).
    func storeError(_ kind: String) { storeErrorCounter(kind).increment() }

    /// The server closed a connection for `reason` (see `ConnectionClose`).
    func connectionClosed(_ reason: ConnectionClose) { connectionCloseCounter(reason).increment() }

    /// An audit event was written to the store (`stored`), or its write failed (`failed`; the log line has it).
    func auditWrite(_ type: AuditEvent.Kind, succeeded: Bool) { auditCounter(type, succeeded ? "stored" : "failed").increment() }

    /// The series of a kind's configured destinations, at zero (their labels come from the configuration or are one
    /// shared name: a closed set).
    func registerDeliveries(_ kind: DeliveryKind, labels: [String]) {
        for label in labels {
            for result in DeliveryResult.allCases { _ = deliveryCounter(kind, label, result) }
            _ = deliveryQueueGauge(kind, label)
            if kind == .auditWebhook {
                for result in DeliveryResult.allCases { _ = webhookCounter(label, result) }
                _ = webhookQueueGauge(label)
            }
        }
    }

    /// One delivery of `kind` to the destination labelled `label` ended with `result`. An audit webhook's is also
    /// counted under the name it had before every kind shared one queue (`latchkey_webhook_deliveries_total`).
    func delivery(_ kind: DeliveryKind, _ label: String, _ result: DeliveryResult) {
        deliveryCounter(kind, label, result).increment()
        if kind == .auditWebhook { webhookCounter(label, result).increment() }
    }

    /// Deliveries of `kind` waiting for the destination labelled `label`, as last read from the store (every instance
    /// sharing it reads the same).
    func deliveryQueueDepth(_ kind: DeliveryKind, _ label: String, _ depth: Int) {
        deliveryQueueGauge(kind, label).set(to: Double(depth))
        if kind == .auditWebhook { webhookQueueGauge(label).set(to: Double(depth)) }
    }

    // MARK: Exposition

    /// The registry in the Prometheus text exposition format (version 0.0.4).
    public func exposition() -> String {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Series

    /// `latchkey_<name>_<unit>`, with its `# HELP` text.
    private static func name(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "latchkey", metricName: name, unitName: unit, helpText: help)
    }

    private func signInCounter(_ method: SignInMethod, _ outcome: SignInOutcome) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("sign_ins", "total", "Sign-in attempts by method (password, passkey, apple, flow, sso) and outcome"),
            labels: [("method", method.rawValue), ("outcome", outcome.rawValue)])
    }

    private func refreshCounter(_ result: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name(
                "refresh_tokens", "total", "Refresh-token grants: rotated, reissued (a retry within the reuse interval), or replayed (family revoked)"
            ),
            labels: [("result", result)])
    }

    private func lockoutCounter() -> Counter {
        registry.makeCounter(descriptor: Self.name("account_lockouts", "total", "Accounts locked after repeated failed sign-ins"))
    }

    private func throttleCounter(_ limit: Limit) -> Counter {
        registry.makeCounter(
            descriptor: Self.name(
                "throttled_requests", "total",
                "Requests refused by a per-address limit (login, challenge, start, registration)"),
            labels: [("limit", limit.rawValue)])
    }

    private func jwksCounter(_ result: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("jwks_fetches", "total", "Fetches of a remote key set (Sign in with Apple)"),
            labels: [("source", "apple"), ("result", result)])
    }

    private func storeErrorCounter(_ kind: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name(
                "store_errors", "total",
                "Store operations that failed: unavailable (answered 503) or invalid input (answered 400)"),
            labels: [("kind", kind)])
    }

    private func connectionCloseCounter(_ reason: ConnectionClose) -> Counter {
        registry.makeCounter(
            descriptor: Self.name(
                "http_connections_closed", "total",
                "Connections the server closed: header_too_large, request_timeout, response_not_read, body_too_large"),
            labels: [("reason", reason.rawValue)])
    }

    private func deliveryCounter(_ kind: DeliveryKind, _ label: String, _ result: DeliveryResult) -> Counter {
        registry.makeCounter(
            descriptor: Self.name(
                "deliveries", "total",
                "Deliveries by kind (mail, audit_webhook, backchannel_logout), destination and result "
                    + "(delivered, failed, dropped, queue_full, queue_full_low_priority, not_queued)"),
            labels: [("kind", kind.rawValue), ("destination", label), ("result", result.rawValue)])
    }

    private func deliveryQueueGauge(_ kind: DeliveryKind, _ label: String) -> Gauge {
        registry.makeGauge(
            descriptor: Self.name("delivery_queue", "depth", "Deliveries waiting in the store, by kind and destination"),
            labels: [("kind", kind.rawValue), ("destination", label)])
    }

    private func webhookCounter(_ id: String, _ result: DeliveryResult) -> Counter {
        registry.makeCounter(
            descriptor: Self.name(
                "webhook_deliveries", "total",
                "Audit-event deliveries to webhooks by webhook id and result "
                    + "(delivered, failed, dropped, queue_full, queue_full_low_priority, not_queued)"),
            labels: [("webhook", id), ("result", result.rawValue)])
    }

    private func webhookQueueGauge(_ id: String) -> Gauge {
        registry.makeGauge(
            descriptor: Self.name("webhook_queue", "depth", "Audit-event deliveries waiting in the store, by webhook id"),
            labels: [("webhook", id)])
    }

    private func auditCounter(_ type: AuditEvent.Kind, _ result: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("audit_events", "total", "Audit events by type, stored or not (a failed write is logged)"),
            labels: [("type", type.rawValue), ("result", result)])
    }
}
