import Foundation
@testable import LatchkeyServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// The one delivery loop (`DeliveryLoop`) with a deliverer of the test's own, on a SQLite store and a frozen clock: it
/// claims a destination's due rows before it reads the destination, and gives the rows back when that read fails.
@Suite("Delivery loop: a destination is read only for rows claimed")
struct DeliveryLoopTests {
    /// What the deliverer saw: reads of a destination, rows sent; `failReads` makes each read throw.
    final class Recorder: Sendable {
        let reads = NIOLockedValueBox(0)
        let sent = NIOLockedValueBox<[String]>([])
        let failReads = NIOLockedValueBox(false)
    }

    /// Destinations come from the queue (as registered applications' do); every attempt is answered 500.
    struct RecordingDeliverer: Deliverer {
        struct ReadFailure: Error {}
        let recorder: Recorder

        var kind: DeliveryKind { .backchannelLogout }
        var batchSize: Int { 10 }
        var concurrency: Int { 2 }
        var leaseTimeoutSeconds: Int { 5 }
        var wording: DeliveryWording { DeliveryWording(attempt: "test delivery", item: "a test delivery") }
        var configuredDestinations: [String]? { nil }
        var metricsLabels: [String] { ["all"] }
        func metricsLabel(of destination: String) -> String { "all" }

        func target(for destination: String) async throws -> (String, DeliveryPolicy)? {
            recorder.reads.withLockedValue { $0 += 1 }
            if recorder.failReads.withLockedValue({ $0 }) { throw ReadFailure() }
            return (destination, DeliveryPolicy(timeoutSeconds: 5, maxAttempts: 5, maxAgeSeconds: 86_400, retrySeconds: 60, queueLimit: 100))
        }

        func send(_ row: QueuedDelivery, to target: String) async -> DeliveryAnswer {
            recorder.sent.withLockedValue { $0.append(row.eventId) }
            return .failed("answered 500")
        }
    }

    static func loop() throws -> (DeliveryLoop<RecordingDeliverer>, Recorder, any Store, ServerClock.Adjustable) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-delivery-\(UUID().uuidString).sqlite").path
        let store = try SQLiteStore(path: path)
        let time = ServerClock.Adjustable(frozen: true)
        let recorder = Recorder()
        var logger = Logger(label: "test.delivery")
        logger.logLevel = .critical
        let loop = DeliveryLoop(
            deliverer: RecordingDeliverer(recorder: recorder), store: store, clock: time.clock, metrics: ServerMetrics(), logger: logger,
            pollInterval: .seconds(1))
        return (loop, recorder, store, time)
    }

    static func enqueue(_ store: any Store, _ eventId: String, dueAt: Date, createdAt: Date) async throws {
        let row = QueuedDelivery(
            id: UUID().uuidString, kind: .backchannelLogout, destination: "app-1", eventId: eventId, eventType: "test", body: "{}",
            nextAttemptAt: dueAt, createdAt: createdAt)
        #expect(try await store.enqueueDelivery(row, limit: 10))
    }

    @Test("a row waiting for its retry costs no read of its destination; a due one is read once, then attempted")
    func nothingDueReadsNothing() async throws {
        let (loop, recorder, store, time) = try Self.loop()
        try await Self.enqueue(store, "e1", dueAt: time.now.addingTimeInterval(60), createdAt: time.now)

        await loop.deliverDue()
        await loop.deliverDue()
        #expect(recorder.reads.withLockedValue { $0 } == 0, "not due: the destination is not read")
        #expect(recorder.sent.withLockedValue { $0 }.isEmpty)

        time.advance(by: 61)
        await loop.deliverDue()
        #expect(recorder.reads.withLockedValue { $0 } == 1)
        #expect(recorder.sent.withLockedValue { $0 } == ["e1"])

        // Failed (500), so due again in 60 s: the next passes read nothing.
        time.advance(by: 1)
        await loop.deliverDue()
        #expect(recorder.reads.withLockedValue { $0 } == 1)
        #expect(recorder.sent.withLockedValue { $0 } == ["e1"])
    }

    @Test("a destination that cannot be read: its claimed rows are given back at once, no attempt counted")
    func aFailedReadGivesTheRowsBack() async throws {
        let (loop, recorder, store, time) = try Self.loop()
        try await Self.enqueue(store, "e1", dueAt: time.now, createdAt: time.now)
        try await Self.enqueue(store, "e2", dueAt: time.now, createdAt: time.now)
        recorder.failReads.withLockedValue { $0 = true }

        await loop.deliverDue()
        #expect(recorder.reads.withLockedValue { $0 } == 1)
        #expect(recorder.sent.withLockedValue { $0 }.isEmpty)
        let due = try await store.claimDueDeliveries(
            kind: .backchannelLogout, destination: "app-1", now: time.now, leaseUntil: time.now.addingTimeInterval(60), limit: 10)
        #expect(due.map(\.eventId).sorted() == ["e1", "e2"], "due again now, not held under the claim's lease")
        #expect(due.allSatisfy { $0.attempts == 0 })
    }
}
