import LatchkeyServer
import NIOConcurrencyHelpers

/// A delivery that keeps what it was given, standing in for a real mail provider.
package final class CapturingOutbox: Outbox {
    private let box = NIOLockedValueBox<[OutboxMessage]>([])
    package init() {}
    package var messages: [OutboxMessage] { box.withLockedValue { $0 } }
    package func send(_ message: OutboxMessage) async throws { box.withLockedValue { $0.append(message) } }
}
