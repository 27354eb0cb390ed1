import LatchkeyServer
import NIOConcurrencyHelpers

/// A delivery that keeps what it was given, standing in for a real mail provider.
final class CapturingOutbox: Outbox {
    private let box = NIOLockedValueBox<[OutboxMessage]>([])
    var messages: [OutboxMessage] { box.withLockedValue { $0 } }
    func send(_ message: OutboxMessage) async throws { box.withLockedValue { $0.append(message) } }
}
