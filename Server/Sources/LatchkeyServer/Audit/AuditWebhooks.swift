import Crypto
import Foundation
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivery of the audit trail to webhooks (`audit_webhooks`): the audit trail hands every event to this sink, which
/// queues one row per webhook that selects it in the store's delivery queue (`DeliveryStore`, kind `audit_webhook`,
/// the webhook's id as destination); the delivery loop (`DeliveryLoop`), run by a `DeliveryService` beside the HTTP
/// server, POSTs each row to its webhook, signed (`WebhookDeliverer`, `WebhookSignature`), and retries failures with
/// exponential backoff until the receiver answers 2xx or the delivery is given up (`max_attempts`, `max_age_seconds`).
///
/// Queueing never fails the request that caused the event (the audit trail's rule): a full queue or a store error is
/// logged at error level and counted (`latchkey_webhook_deliveries_total{result="queue_full"|"not_queued"}`), and the
/// event's own log line and row stay. Low-priority events (`AuditEvent.Kind.isLowPriority`: failed client
/// authentications, which anyone can cause without credentials) may fill only `low_priority_queue_limit` of the queue
/// (refusals counted as `queue_full_low_priority`), so a flood of them cannot keep the other events out (third review,
/// R3-4). Whatever a webhook lost is reported to it by a `webhook.gap` event, sent ahead of the rest once its queue has
/// room again. Delivery is at least once: a receiver deduplicates by `Latchkey-Event-Id`.
struct AuditWebhooks: AuditSink {
    let webhooks: [AuditWebhook]
    /// The queue, and the audit trail's table for the `webhook.gap` events this sink records itself.
    let store: any DeliveryStore & AuditStore
    let clock: ServerClock
    let metrics: ServerMetrics
    /// The server's logger: delivery runs in the background, for no request.
    let logger: Logger
    /// The delivery loop of the webhooks' queues.
    let loop: DeliveryLoop<WebhookDeliverer>
    /// When each webhook's full queue was last logged: once a minute at most, while every refusal is counted.
    private let fullQueueAlarms: [String: OncePerInterval]
    /// The same for low-priority events refused (expected under a flood: a warning, not an error).
    private let lowPriorityAlarms: [String: OncePerInterval]
    /// The events each webhook lost since it was last told (`webhook.gap`).
    private let gaps: [String: WebhookGap]

    /// How often the delivery loop looks for due deliveries once none is left.
    static let pollInterval: Duration = .seconds(1)
    /// The event types that share `low_priority_queue_limit`.
    static let lowPriorityTypes = AuditEvent.Kind.allCases.filter(\.isLowPriority).map(\.rawValue)
    /// A gap made only of low-priority events is reported at most this often: during a flood one would otherwise come
    /// before each low-priority event the queue takes in. A lost event of any other type is reported at the first chance.
    static let lowPriorityGapInterval: TimeInterval = 60
    /// A gap's delivery is due since long before any other row, so that it is claimed (and sent) first.
    static let gapDueAt = Date(timeIntervalSince1970: 0)

    init(
        webhooks: [AuditWebhook], store: any DeliveryStore & AuditStore, http: OutboundHTTPClient, clock: ServerClock,
        metrics: ServerMetrics, logger: Logger
    ) {
        self.webhooks = webhooks
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.loop = DeliveryLoop(
            deliverer: WebhookDeliverer(webhooks: webhooks, http: http, clock: clock), store: store, clock: clock, metrics: metrics,
            logger: logger, pollInterval: Self.pollInterval)
        self.fullQueueAlarms = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.id, OncePerInterval()) })
        self.lowPriorityAlarms = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.id, OncePerInterval()) })
        self.gaps = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.id, WebhookGap()) })
    }

    // MARK: Queueing (the audit trail's sink)

    /// Queues `event` for every webhook that selects it. Never throws, never fails the request.
    func deliver(_ event: AuditEvent, logger requestLogger: Logger) async {
        let selecting = webhooks.filter { $0.selects(event) }
        guard !selecting.isEmpty else { return }
        let body: String
        do { body = try Self.body(of: event) } catch {
            requestLogger.error("audit event not queued for webhooks: it could not be encoded", metadata: ["audit.id": .string(event.id)])
            for webhook in selecting {
                metrics.delivery(.auditWebhook, webhook.id, .notQueued)
                await gaps[webhook.id]?.lost(event.type, at: clock.now)
            }
            return
        }
        let now = clock.now
        let lowPriority = event.type.isLowPriority
        for webhook in selecting {
            let delivery = QueuedDelivery(
                id: Secrets.identifier(), kind: .auditWebhook, destination: webhook.id, eventId: event.id, eventType: event.type.rawValue,
                body: body, nextAttemptAt: now, createdAt: now)
            // Low-priority events fill only their share of the queue: the rest stays free for the events that matter.
            let share = lowPriority ? DeliveryQueueShare(eventTypes: Self.lowPriorityTypes, limit: webhook.lowPriorityLimit) : nil
            do {
                if try await store.enqueueDelivery(delivery, limit: webhook.queueLimit, share: share) {
                    // The queue has room again: what was lost before is reported first.
                    await queueGap(for: webhook, now: now)
                    continue
                }
                await gaps[webhook.id]?.lost(event.type, at: now)
                if lowPriority {
                    metrics.delivery(.auditWebhook, webhook.id, .queueFullLowPriority)
                    if await lowPriorityAlarms[webhook.id]?.claim(now: now, interval: 60) ?? true {
                        requestLogger.warning(
                            "a webhook's share of its queue for low-priority audit events is full: they are not queued for it",
                            metadata: [
                                "webhook": .string(webhook.id), "low_priority_queue_limit": "\(webhook.lowPriorityLimit)",
                                "audit.type": .string(event.type.rawValue)
                            ])
                    }
                    continue
                }
                metrics.delivery(.auditWebhook, webhook.id, .queueFull)
                if await fullQueueAlarms[webhook.id]?.claim(now: now, interval: 60) ?? true {
                    requestLogger.error(
                        "a webhook's queue is full: audit events are not queued for it until deliveries succeed or are given up",
                        metadata: [
                            "webhook": .string(webhook.id), "queue_limit": "\(webhook.queueLimit)", "audit.id": .string(event.id)
                        ])
                }
            } catch {
                metrics.delivery(.auditWebhook, webhook.id, .notQueued)
                await gaps[webhook.id]?.lost(event.type, at: now)
                requestLogger.error(
                    "audit event not queued for a webhook",
                    metadata: ["webhook": .string(webhook.id), "audit.id": .string(event.id), "error.type": .string("\(type(of: error))")])
            }
        }
    }

    /// Records and queues a `webhook.gap` for `webhook` when it lost events and one is due: a row of the audit trail
    /// (so `GET /admin/v1/audit-events` shows it too) and a delivery to that webhook alone, whatever its filters, due
    /// before every other row so that the receiver learns of the gap before the events that follow it.
    private func queueGap(for webhook: AuditWebhook, now: Date) async {
        guard let gap = gaps[webhook.id], let lost = await gap.take(now: now, lowPriorityInterval: Self.lowPriorityGapInterval) else { return }
        let event = AuditEvent(
            id: AuditTrail.newId(at: now), at: now, type: .webhookGap, outcome: .failure, actor: AuditEvent.anonymous,
            details: [
                "webhook": webhook.id, "dropped": String(lost.count), "types": lost.types.sorted().joined(separator: ","),
                "since": lost.since.formatted(.iso8601)
            ])
        logger.warning(
            "audit events were not queued for a webhook; a webhook.gap event reports them",
            metadata: [
                "webhook": .string(webhook.id), "dropped": "\(lost.count)", "audit.id": .string(event.id),
                "audit.type": .string(event.type.rawValue)
            ])
        // Written as every event is (logged, stored, counted), but sent to the webhooks only below: to this one alone.
        await AuditTrail(store: store, clock: clock, metrics: metrics).record(event, logger: logger)
        do {
            let delivery = QueuedDelivery(
                id: Secrets.identifier(), kind: .auditWebhook, destination: webhook.id, eventId: event.id, eventType: event.type.rawValue,
                body: try Self.body(of: event), nextAttemptAt: Self.gapDueAt, createdAt: now)
            if try await store.enqueueDelivery(delivery, limit: webhook.queueLimit) { return }
        } catch {
            logger.error(
                "a webhook.gap event was not queued", metadata: ["webhook": .string(webhook.id), "error.type": .string("\(type(of: error))")])
        }
        // Not queued after all (the last place was taken meanwhile): told at the next chance, with what follows.
        await gap.restore(lost)
    }

    /// The event as `GET /admin/v1/audit-events` shows it, keys sorted: the body that is signed and sent.
    static func body(of event: AuditEvent) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(AuditEvent.Wire(event)), as: UTF8.self)
    }

    // MARK: Delivery

    /// Delivers due rows until cancelled; waits `pollInterval` only once a pass has left nothing due.
    func runDelivery() async { await loop.run() }

    /// One pass: each webhook's due deliveries, the webhooks side by side, then the queue-depth gauges. True when rows
    /// may still be due.
    @discardableResult
    func deliverDue() async -> Bool { await loop.deliverDue() }
}

/// Sends one queued audit event to its webhook: a signed POST of the row's body (`WebhookSignature`), through the
/// server's HTTP client (`OutboundHTTPClient`: no redirect followed, so a 3xx is a failed attempt and the body and its
/// signature go only where the configuration says).
struct WebhookDeliverer: Deliverer {
    let webhooks: [AuditWebhook]
    let http: OutboundHTTPClient
    let clock: ServerClock

    var kind: DeliveryKind { .auditWebhook }
    /// Deliveries of one webhook claimed at once.
    var batchSize: Int { 50 }
    /// POSTs to one webhook in flight at once.
    var concurrency: Int { 8 }
    var leaseTimeoutSeconds: Int { webhooks.map(\.policy.timeoutSeconds).max() ?? 0 }
    var wording: DeliveryWording { DeliveryWording(attempt: "audit event delivery to a webhook", item: "an audit event's delivery to a webhook") }
    /// The configured webhooks: rows of a webhook removed from the configuration are claimed by nobody and pruned
    /// after `DeliveryRetention.pruneAfterSeconds`.
    var configuredDestinations: [String]? { webhooks.map(\.id) }
    var metricsLabels: [String] { webhooks.map(\.id) }

    func target(for destination: String) async throws -> (AuditWebhook, DeliveryPolicy)? {
        webhooks.first { $0.id == destination }.map { ($0, $0.policy) }
    }

    /// The most of a receiver's answer read (and ignored): only its status matters.
    static let maximumAnswerBytes = 64 * 1024

    func send(_ delivery: QueuedDelivery, to webhook: AuditWebhook) async -> DeliveryAnswer {
        let body = Data(delivery.body.utf8)
        let headers = [
            ("Content-Type", "application/json"), ("User-Agent", "Latchkey-Webhooks/1"), ("Latchkey-Event-Id", delivery.eventId),
            ("Latchkey-Event-Type", delivery.eventType), ("Latchkey-Delivery-Attempt", String(delivery.attempts + 1)),
            (WebhookSignature.headerName, WebhookSignature.header(body: body, secret: webhook.secret, at: clock.now))
        ]
        // The operator named the URL: it may be a service on loopback or inside the network on purpose.
        let limits = OutboundHTTPClient.Limits(timeoutSeconds: webhook.timeoutSeconds, maximumBytes: Self.maximumAnswerBytes, reach: .any)
        return DeliveryAnswer(await http.deliver(webhook.url, headers: headers, body: body, limits: limits))
    }
}

/// The events one webhook lost (not queued: its queue or its low-priority share was full, or the store refused the
/// write) since it was last told, for its next `webhook.gap`. In memory: each instance reports what it lost itself.
actor WebhookGap {
    struct Lost: Sendable {
        var count: Int
        var types: Set<String>
        var since: Date
        /// Whether an event that is not low priority was lost (reported at the first chance, not once a minute).
        var important: Bool
    }

    private var lost: Lost?
    private var lastReported: Date?

    func lost(_ type: AuditEvent.Kind, at now: Date) {
        var current = lost ?? Lost(count: 0, types: [], since: now, important: false)
        current.count += 1
        current.types.insert(type.rawValue)
        current.important = current.important || !type.isLowPriority
        lost = current
    }

    /// What to report now, taken: anything lost when an important event is among it, else at most once per
    /// `lowPriorityInterval`.
    func take(now: Date, lowPriorityInterval: TimeInterval) -> Lost? {
        guard let current = lost else { return nil }
        if !current.important, let lastReported, now.timeIntervalSince(lastReported) < lowPriorityInterval { return nil }
        lost = nil
        lastReported = now
        return current
    }

    /// Puts back what `take` gave when its report could not be queued.
    func restore(_ earlier: Lost) {
        guard var current = lost else {
            lost = earlier
            return
        }
        current.count += earlier.count
        current.types.formUnion(earlier.types)
        current.since = min(current.since, earlier.since)
        current.important = current.important || earlier.important
        lost = current
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
