import Foundation
import Logging

/// Where the server's emails and text messages go. Production deployments plug in their mail/SMS provider;
/// development records messages in the database, readable at `GET /dev/outbox` (development mode only).
public protocol Outbox: Sendable {
    func send(_ message: OutboxMessage) async throws
}

/// Development delivery: the message is stored, nothing leaves the machine.
public struct StoreOutbox: Outbox {
    let store: any Store
    public func send(_ message: OutboxMessage) async throws { try await store.insertOutboxMessage(message) }
}

/// Outside development with no delivery configured (start-up refuses this when an application sends emails): the
/// request that wanted a message fails rather than silently losing it; the log says so without the message, which
/// carries a code.
public struct UndeliverableOutbox: Outbox {
    let logger: Logger
    public func send(_ message: OutboxMessage) async throws {
        logger.error("no delivery is configured; a \(message.channel.rawValue) message was refused (configure \"smtp\")")
        throw OutboxError.notConfigured
    }
}
