import Foundation
import Logging

/// Real email delivery: messages are queued in the store's delivery queue (kind `mail`, so a restart or a relay outage
/// loses nothing) and the delivery loop (`DeliveryLoop`) sends them through the SMTP relay (`MailDeliverer`), retrying
/// with exponential backoff.
public final class SMTPOutbox: Outbox {
    let settings: SMTPSettings
    let store: any Store
    let clock: ServerClock
    let logger: Logger
    let metrics: ServerMetrics
    let loop: DeliveryLoop<MailDeliverer>
    /// How often the delivery loop looks for due messages once none is left.
    static let pollInterval: Duration = .milliseconds(500)

    init(settings: SMTPSettings, store: any Store, clock: ServerClock, metrics: ServerMetrics = ServerMetrics(), logger: Logger) throws {
        self.settings = settings; self.store = store; self.clock = clock; self.logger = logger; self.metrics = metrics
        let deliverer = MailDeliverer(settings: settings, client: try SMTPClient(settings: settings))
        self.loop = DeliveryLoop(
            deliverer: deliverer, store: store, clock: clock, metrics: metrics, logger: logger, pollInterval: Self.pollInterval)
    }

    public func send(_ message: OutboxMessage) async throws {
        guard message.channel == .email else { throw OutboxError.unsupportedChannel }
        // Refused before it is stored: a recipient or subject that could inject headers or recipients.
        _ = try MailMessage.render(
            from: settings.from, to: message.recipient, subject: message.subject, body: "",
            messageId: message.id, date: message.createdAt)
        let now = clock.now
        let queued = QueuedDelivery(
            id: message.id, kind: .mail, destination: MailDeliverer.relay, eventId: message.id, eventType: MailDeliverer.eventType,
            body: try MailDeliverer.Mail(recipient: message.recipient, subject: message.subject, body: message.body).encoded(),
            nextAttemptAt: now, createdAt: now)
        guard try await store.enqueueDelivery(queued, limit: settings.queueLimit) else {
            metrics.delivery(.mail, MailDeliverer.relay, .queueFull)
            logger.error("the mail queue is full; an email was refused", metadata: ["queue_limit": "\(settings.queueLimit)"])
            throw OutboxError.queueFull
        }
    }

    /// Sends due messages until cancelled.
    func runDelivery() async { await loop.run() }

    /// One pass over the due messages.
    func deliverDue() async { await loop.deliverDue() }
}

/// Sends one queued email through the SMTP relay.
struct MailDeliverer: Deliverer {
    let settings: SMTPSettings
    let client: SMTPClient

    /// The one destination: the configured relay.
    static let relay = "relay"
    static let eventType = "email"

    /// What a queued email holds (its `Message-ID` is the row's `eventId`, its `Date` the row's `createdAt`).
    struct Mail: Codable, Equatable {
        var recipient: String
        var subject: String
        var body: String

        func encoded() throws -> String { String(decoding: try JSONEncoder().encode(self), as: UTF8.self) }
    }

    var kind: DeliveryKind { .mail }
    var batchSize: Int { 20 }
    /// One dialogue with the relay at a time.
    var concurrency: Int { 1 }
    var leaseTimeoutSeconds: Int { settings.policy.timeoutSeconds }
    var wording: DeliveryWording { DeliveryWording(attempt: "email delivery", item: "an email") }
    var configuredDestinations: [String]? { [Self.relay] }
    var metricsLabels: [String] { [Self.relay] }

    func target(for destination: String) async throws -> (SMTPSettings, DeliveryPolicy)? {
        (settings, settings.policy)
    }

    func send(_ row: QueuedDelivery, to settings: SMTPSettings) async -> DeliveryAnswer {
        do {
            let mail = try JSONDecoder().decode(Mail.self, from: Data(row.body.utf8))
            let data = try MailMessage.render(
                from: settings.from, to: mail.recipient, subject: mail.subject, body: mail.body, messageId: row.eventId, date: row.createdAt)
            try await client.send(from: settings.from, to: mail.recipient, data: data)
            return .delivered
        } catch let error as SMTPError {
            return .failed(error.description, unreachable: error.isUnreachable, permanent: error.isPermanent)
        } catch {
            return .failed("\(type(of: error))", permanent: error is DecodingError)
        }
    }
}

public enum OutboxError: Error, CustomStringConvertible {
    case notConfigured, queueFull, unsupportedChannel
    public var description: String {
        switch self {
        case .notConfigured: "no email delivery is configured"
        case .queueFull: "the mail queue is full"
        case .unsupportedChannel: "this outbox delivers email only"
        }
    }
}
