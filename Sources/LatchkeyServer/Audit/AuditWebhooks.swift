import Crypto
import Foundation
import Logging
import ServiceLifecycle

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivery of the audit trail to webhooks (`audit_webhooks`), like the mail queue: the audit trail hands every event
/// to this sink, which queues one row per webhook that selects it in the store (`WebhookDeliveryStore`); a delivery
/// loop, run by `AuditWebhookDeliveryService` beside the HTTP server, POSTs each row to its webhook, signed
/// (`WebhookSignature`), and retries failures with exponential backoff until the receiver answers 2xx or the delivery
/// is given up (`max_attempts`, `max_age_seconds`).
///
/// Queueing never fails the request that caused the event (the audit trail's rule): a full queue or a store error is
/// logged at error level and counted (`latchkey_webhook_deliveries_total{result="queue_full"|"not_queued"}`), and the
/// event's own log line and row stay. Delivery is at least once: a receiver deduplicates by `Latchkey-Event-Id` (an
/// instance that dies between the receiver's answer and the row's deletion leaves the row to be sent again).
struct AuditWebhooks: AuditSink {
    let webhooks: [AuditWebhook]
    let store: any WebhookDeliveryStore
    let clock: ServerClock
    let metrics: ServerMetrics
    /// The server's logger: delivery runs in the background, for no request.
    let logger: Logger
    /// One HTTP client per webhook id (`OutboundHTTP`: no redirect followed, so a 3xx is a failed attempt and the
    /// body and its signature go only where the configuration says).
    let clients: [String: OutboundHTTP]
    /// When each webhook's full queue was last logged: once a minute at most, while every refusal is counted.
    private let fullQueueAlarms: [String: OncePerInterval]

    /// How often the delivery loop looks for due deliveries.
    static let pollInterval: Duration = .seconds(1)
    /// Deliveries of one webhook claimed (and sent one after the other) per pass.
    static let batchSize = 10
    /// The longest wait between two attempts.
    static let maximumBackoff: TimeInterval = 3600

    init(webhooks: [AuditWebhook], store: any WebhookDeliveryStore, clock: ServerClock, metrics: ServerMetrics, logger: Logger) {
        self.webhooks = webhooks
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.clients = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.id, OutboundHTTP(timeoutSeconds: $0.timeoutSeconds)) })
        self.fullQueueAlarms = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.id, OncePerInterval()) })
        metrics.registerWebhooks(webhooks.map(\.id))
    }

    // MARK: Queueing (the audit trail's sink)

    /// Queues `event` for every webhook that selects it. Never throws, never fails the request.
    func deliver(_ event: AuditEvent, logger requestLogger: Logger) async {
        let selecting = webhooks.filter { $0.selects(event) }
        guard !selecting.isEmpty else { return }
        let body: String
        do { body = try Self.body(of: event) } catch {
            requestLogger.error("audit event not queued for webhooks: it could not be encoded", metadata: ["audit.id": .string(event.id)])
            for webhook in selecting { metrics.webhookDelivery(webhook.id, .notQueued) }
            return
        }
        let now = clock.now
        for webhook in selecting {
            let delivery = QueuedWebhookDelivery(
                id: Secrets.identifier(), webhookId: webhook.id, eventId: event.id, eventType: event.type.rawValue, body: body,
                nextAttemptAt: now, createdAt: now)
            do {
                if try await store.enqueueWebhookDelivery(delivery, limit: webhook.queueLimit) { continue }
                metrics.webhookDelivery(webhook.id, .queueFull)
                if await fullQueueAlarms[webhook.id]?.claim(now: now, interval: 60) ?? true {
                    requestLogger.error(
                        "a webhook's queue is full: audit events are not queued for it until deliveries succeed or are given up",
                        metadata: [
                            "webhook": .string(webhook.id), "queue_limit": "\(webhook.queueLimit)", "audit.id": .string(event.id)
                        ])
                }
            } catch {
                metrics.webhookDelivery(webhook.id, .notQueued)
                requestLogger.error(
                    "audit event not queued for a webhook",
                    metadata: ["webhook": .string(webhook.id), "audit.id": .string(event.id), "error.type": .string("\(type(of: error))")])
            }
        }
    }

    /// The event as `GET /admin/v1/audit-events` shows it, keys sorted: the body that is signed and sent.
    static func body(of event: AuditEvent) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(AuditController.WireEvent(event)), as: UTF8.self)
    }

    // MARK: Delivery

    /// Delivers due rows until cancelled.
    func runDelivery() async {
        while !Task.isCancelled {
            await deliverDue()
            try? await Task.sleep(for: Self.pollInterval)
        }
    }

    /// One pass: each webhook's due deliveries, the webhooks side by side (a slow or dead receiver holds up only its
    /// own queue), then the queue-depth gauge.
    func deliverDue() async {
        await withTaskGroup(of: Void.self) { group in
            for webhook in webhooks {
                group.addTask { await self.deliverDue(to: webhook) }
            }
        }
        do {
            let depths = try await store.webhookQueueDepths()
            for webhook in webhooks { metrics.webhookQueueDepth(webhook.id, depths[webhook.id] ?? 0) }
        } catch {
            logger.warning("cannot read the webhook queue's depth", metadata: ["error.type": .string("\(type(of: error))")])
        }
    }

    /// The due deliveries of one webhook, one at a time, oldest first.
    private func deliverDue(to webhook: AuditWebhook) async {
        let now = clock.now
        // Long enough for the whole batch to time out one by one; a crash mid-batch makes the rows due again after it.
        let lease = now.addingTimeInterval(TimeInterval(webhook.timeoutSeconds * Self.batchSize + 60))
        let due: [QueuedWebhookDelivery]
        do {
            due = try await store.claimDueWebhookDeliveries(webhookId: webhook.id, now: now, leaseUntil: lease, limit: Self.batchSize)
        } catch {
            logger.error("cannot read the webhook queue", metadata: ["webhook": .string(webhook.id), "error.type": .string("\(type(of: error))")])
            return
        }
        for (index, delivery) in due.enumerated() {
            if Task.isCancelled {
                await giveBack(due[index...], at: now)
                return
            }
            if clock.now.timeIntervalSince(delivery.createdAt) > TimeInterval(webhook.maxAgeSeconds) {
                await drop(delivery, webhook: webhook, attempts: delivery.attempts, reason: "too old")
                continue
            }
            let answer = await send(delivery, to: webhook)
            guard case .failed(let reason, let unreachable) = answer else {
                do { try await store.deleteWebhookDelivery(id: delivery.id) } catch {
                    logger.warning(
                        "a delivered webhook row could not be deleted; it will be sent again",
                        metadata: ["webhook": .string(webhook.id), "delivery_id": .string(delivery.id)])
                }
                metrics.webhookDelivery(webhook.id, .delivered)
                logger.debug(
                    "audit event delivered to a webhook",
                    metadata: [
                        "webhook": .string(webhook.id), "audit.id": .string(delivery.eventId), "attempt": "\(delivery.attempts + 1)"
                    ])
                continue
            }
            if Task.isCancelled {
                // The server is stopping and the POST was cut short: not the receiver's failure, no attempt counted.
                await giveBack(due[index...], at: now)
                return
            }
            metrics.webhookDelivery(webhook.id, .failed)
            let attempt = delivery.attempts + 1
            let next = clock.now.addingTimeInterval(Self.backoff(attempt: attempt, retrySeconds: webhook.retrySeconds))
            if attempt >= webhook.maxAttempts || next.timeIntervalSince(delivery.createdAt) > TimeInterval(webhook.maxAgeSeconds) {
                await drop(delivery, webhook: webhook, attempts: attempt, reason: reason)
            } else {
                logger.warning(
                    "audit event delivery to a webhook failed; will retry",
                    metadata: [
                        "webhook": .string(webhook.id), "audit.id": .string(delivery.eventId), "attempt": "\(attempt)",
                        "retry_in_seconds": "\(Int(next.timeIntervalSince(clock.now)))", "reason": .string(reason)
                    ])
                do { try await store.rescheduleWebhookDelivery(id: delivery.id, attempts: attempt, nextAttemptAt: next) } catch {
                    logger.warning("cannot reschedule a webhook delivery", metadata: ["webhook": .string(webhook.id)])
                }
            }
            // A receiver that cannot be reached (no connection, no answer in time) would make every other row of the
            // batch wait for its own timeout: they wait for the same retry instead, no attempt counted. A receiver that
            // answers (even 500) is tried with each row, so one event it refuses does not hold up the others.
            if unreachable {
                await giveBack(due[(index + 1)...], at: next)
                return
            }
        }
    }

    /// Claimed rows not tried: due again at `at`, their attempts unchanged.
    private func giveBack(_ rows: ArraySlice<QueuedWebhookDelivery>, at: Date) async {
        for row in rows {
            try? await store.rescheduleWebhookDelivery(id: row.id, attempts: row.attempts, nextAttemptAt: at)
        }
    }

    private func drop(_ delivery: QueuedWebhookDelivery, webhook: AuditWebhook, attempts: Int, reason: String) async {
        logger.error(
            "giving up on an audit event's delivery to a webhook",
            metadata: [
                "webhook": .string(webhook.id), "audit.id": .string(delivery.eventId), "audit.type": .string(delivery.eventType),
                "attempts": "\(attempts)", "reason": .string(reason)
            ])
        metrics.webhookDelivery(webhook.id, .dropped)
        try? await store.deleteWebhookDelivery(id: delivery.id)
    }

    /// `retry_seconds` doubled after each failure, at most `maximumBackoff`.
    static func backoff(attempt: Int, retrySeconds: Int) -> TimeInterval {
        min(Double(retrySeconds) * pow(2, Double(max(0, min(attempt - 1, 30)))), maximumBackoff)
    }

    enum Answer: Equatable {
        case delivered
        /// `unreachable`: no answer at all (a connection refused or timed out), rather than a status other than 2xx.
        case failed(String, unreachable: Bool)
    }

    /// One signed POST of the row's body.
    private func send(_ delivery: QueuedWebhookDelivery, to webhook: AuditWebhook) async -> Answer {
        let body = Data(delivery.body.utf8)
        var request = URLRequest(url: webhook.url)
        request.httpMethod = "POST"
        request.httpBody = body
        request.timeoutInterval = TimeInterval(webhook.timeoutSeconds)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Latchkey-Webhooks/1", forHTTPHeaderField: "User-Agent")
        request.setValue(delivery.eventId, forHTTPHeaderField: "Latchkey-Event-Id")
        request.setValue(delivery.eventType, forHTTPHeaderField: "Latchkey-Event-Type")
        request.setValue(String(delivery.attempts + 1), forHTTPHeaderField: "Latchkey-Delivery-Attempt")
        request.setValue(WebhookSignature.header(body: body, secret: webhook.secret, at: clock.now), forHTTPHeaderField: WebhookSignature.headerName)
        guard let client = clients[webhook.id] else { return .failed("no client", unreachable: true) }
        switch await client.post(request) {
        case .status(let status) where (200..<300).contains(status): return .delivered
        case .status(let status): return .failed("answered \(status)", unreachable: false)
        case .unreachable(let reason): return .failed(reason, unreachable: true)
        }
    }
}

/// The signature of a webhook delivery, in the `Latchkey-Signature` header:
///
///     Latchkey-Signature: t=1767225600,v1=b4d580e2c90b2d7200db650ea5c2f15aa9424eb8b0fde7649d9189bd2a7892cf
///
/// (the body `{"id":"e1"}` under the secret `whsec-0123456789abcdef0123456789abcdef`: docs/server.md's test vector)
/// `t` is the time of the attempt (Unix seconds) and `v1` the lower-case hex HMAC-SHA256, keyed with the webhook's
/// secret, of `"<t>.<body>"` (the decimal `t`, a full stop, then the request body's exact bytes). A receiver recomputes
/// it over the raw body before parsing it, compares in constant time, and refuses a `t` far from its own clock (five
/// minutes, say) so a captured request cannot be replayed later; a retry carries a new `t` and signature. Later schemes
/// would be added as further `vN=` pairs, so a receiver looks for the `v1` it knows among them.
enum WebhookSignature {
    static let headerName = "Latchkey-Signature"

    static func header(body: Data, secret: WebhookSecret, at: Date) -> String {
        let t = Int(at.timeIntervalSince1970.rounded(.down))
        return "t=\(t),v1=" + hex(body: body, secret: secret, timestamp: t)
    }

    /// The `v1` value for a body signed at `timestamp`.
    static func hex(body: Data, secret: WebhookSecret, timestamp: Int) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret.bytes))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `header` signs `body` under `secret` (any `v1` pair matches), and when it says it was signed.
    static func verify(_ header: String, body: Data, secret: WebhookSecret) -> Date? {
        var timestamp: Int?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp else { return nil }
        let expected = hex(body: body, secret: secret, timestamp: timestamp)
        guard signatures.contains(where: { Secrets.constantTimeEquals($0, expected) }) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timestamp))
    }
}

/// Runs the webhook delivery loop alongside the HTTP server, stopping with it.
struct AuditWebhookDeliveryService: Service {
    let webhooks: AuditWebhooks
    func run() async throws {
        await cancelWhenGracefulShutdown { await webhooks.runDelivery() }
    }
}
