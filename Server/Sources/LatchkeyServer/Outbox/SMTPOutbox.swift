import Foundation
import Logging

/// Real email delivery: messages are queued in the database (so a restart or a relay outage loses nothing) and a
/// delivery loop sends them through the SMTP relay, retrying with exponential backoff.
public final class SMTPOutbox: Outbox {
    let settings: SMTPSettings
    let store: any Store
    let clock: ServerClock
    let logger: Logger
    let client: SMTPClient
    /// How often the delivery loop looks for due messages.
    static let pollInterval: Duration = .milliseconds(500)

    init(settings: SMTPSettings, store: any Store, clock: ServerClock, logger: Logger) throws {
        self.settings = settings; self.store = store; self.clock = clock; self.logger = logger
        self.client = try SMTPClient(settings: settings)
    }

    public func send(_ message: OutboxMessage) async throws {
        guard message.channel == .email else { throw OutboxError.unsupportedChannel }
        // Refused before it is stored: a recipient or subject that could inject headers or recipients.
        _ = try MailMessage.render(
            from: settings.from, to: message.recipient, subject: message.subject, body: "",
            messageId: message.id, date: message.createdAt)
        let now = clock.now
        let queued = QueuedMail(
            id: message.id, recipient: message.recipient, subject: message.subject, body: message.body,
            nextAttemptAt: now, createdAt: now)
        guard try await store.enqueueMail(queued, limit: settings.queueLimit) else {
            logger.error("the mail queue is full; an email was refused", metadata: ["queue_limit": "\(settings.queueLimit)"])
            throw OutboxError.queueFull
        }
    }

    /// Sends due messages until cancelled.
    func runDelivery() async {
        while !Task.isCancelled {
            await deliverDue()
            try? await Task.sleep(for: Self.pollInterval)
        }
    }

    /// One pass over the due messages, one at a time.
    func deliverDue() async {
        let now = clock.now
        // Long enough for a whole dialogue; a crash mid-delivery makes the message due again afterwards.
        let lease = now.addingTimeInterval(TimeInterval(settings.timeoutSeconds * 12 + 60))
        let due: [QueuedMail]
        do { due = try await store.claimDueMail(now: now, leaseUntil: lease, limit: 20) } catch {
            logger.error("cannot read the mail queue: \(type(of: error))")
            return
        }
        for mail in due {
            if Task.isCancelled { return }
            await deliver(mail)
        }
    }

    private func deliver(_ mail: QueuedMail) async {
        let attempt = mail.attempts + 1
        do {
            let data = try MailMessage.render(
                from: settings.from, to: mail.recipient, subject: mail.subject, body: mail.body,
                messageId: mail.id, date: mail.createdAt)
            try await client.send(from: settings.from, to: mail.recipient, data: data)
            try await store.deleteMail(id: mail.id)
            logger.info("email delivered", metadata: ["mail_id": .string(mail.id), "attempt": "\(attempt)"])
        } catch {
            let reason = (error as? SMTPError)?.description ?? "\(type(of: error))"
            let permanent = (error as? SMTPError)?.isPermanent ?? false
            if permanent || attempt >= settings.maxAttempts {
                logger.error("giving up on an email", metadata: ["mail_id": .string(mail.id), "attempts": "\(attempt)", "reason": .string(reason)])
                try? await store.deleteMail(id: mail.id)
                return
            }
            let delay = DeliveryBackoff.delay(afterAttempt: attempt, retrySeconds: settings.retrySeconds)
            logger.warning(
                "email delivery failed; will retry",
                metadata: [
                    "mail_id": .string(mail.id), "attempt": "\(attempt)", "retry_in_seconds": "\(Int(delay))",
                    "reason": .string(reason)
                ])
            try? await store.rescheduleMail(id: mail.id, attempts: attempt, nextAttemptAt: clock.now.addingTimeInterval(delay))
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
