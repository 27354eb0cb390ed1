import Foundation
import Logging

/// The one delivery loop: it works the store's queue (`DeliveryStore`) of one kind of delivery for its `Deliverer`.
///
/// Each pass serves every destination side by side (a receiver that is slow or dead holds up only its own queue); for
/// each, it claims due rows a batch at a time (the earliest due first, then the oldest), under a lease long enough for
/// the batch to time out, so that instances sharing the store never send one row at once and a crash leaves the rows
/// due again after it. The pass's first row goes alone: a receiver that cannot be reached costs one attempt and one
/// timeout, and the rest of its rows are given back for the same retry with no attempt counted; once it has answered,
/// `concurrency` rows are in flight at once. A failed attempt is retried after the policy's doubling delay; a row is
/// given up (deleted, logged at error level, counted) after `maxAttempts` attempts, past `maxAgeSeconds`, or at a
/// permanent failure. A stopping server gives its claimed rows back at once. Delivery is at least once: an instance
/// that dies between the receiver's answer and the row's deletion leaves the row to be sent again, with the same
/// `eventId` for the receiver to recognise.
struct DeliveryLoop<D: Deliverer>: Sendable {
    let deliverer: D
    let store: any DeliveryStore
    let clock: ServerClock
    let metrics: ServerMetrics
    /// The server's logger: delivery runs in the background, for no request.
    let logger: Logger
    /// How long the loop waits once nothing is due.
    let pollInterval: Duration

    /// Batches of one destination per pass: between passes the queue depths are read, and `beforePass` runs; the loop
    /// starts the next pass at once while rows remain due.
    static var batchesPerPass: Int { 20 }

    init(deliverer: D, store: any DeliveryStore, clock: ServerClock, metrics: ServerMetrics, logger: Logger, pollInterval: Duration) {
        self.deliverer = deliverer
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.pollInterval = pollInterval
        metrics.registerDeliveries(deliverer.kind, labels: deliverer.metricsLabels)
    }

    /// Delivers due rows until cancelled.
    func run() async {
        while !Task.isCancelled {
            if await deliverDue() { continue }
            try? await Task.sleep(for: pollInterval)
        }
    }

    /// One pass: `beforePass`, then every destination's due rows, then the depth gauges. True when rows may still be
    /// due (a destination stopped at `batchesPerPass` batches).
    @discardableResult
    func deliverDue() async -> Bool {
        await deliverer.beforePass()
        let destinations: [String]
        if let configured = deliverer.configuredDestinations {
            destinations = configured
        } else {
            do { destinations = try await store.deliveryQueueDepths(kind: deliverer.kind).keys.sorted() } catch {
                logFailure("cannot read the delivery queue", error)
                return false
            }
        }
        let more = await withTaskGroup(of: Bool.self) { group in
            for destination in destinations {
                group.addTask { await self.deliverDue(to: destination) }
            }
            var more = false
            for await destinationHasMore in group { more = more || destinationHasMore }
            return more
        }
        await reportDepths()
        return more
    }

    /// The depth gauges, per metrics label (a shared label sums its destinations; an empty queue reads 0).
    private func reportDepths() async {
        do {
            let depths = try await store.deliveryQueueDepths(kind: deliverer.kind)
            var byLabel = Dictionary(deliverer.metricsLabels.map { ($0, 0) }, uniquingKeysWith: { first, _ in first })
            for (destination, depth) in depths {
                // A destination outside the labels (a webhook removed from the configuration) is not reported.
                let label = deliverer.metricsLabel(of: destination)
                if let sum = byLabel[label] { byLabel[label] = sum + depth }
            }
            for (label, depth) in byLabel { metrics.deliveryQueueDepth(deliverer.kind, label, depth) }
        } catch {
            logFailure("cannot read the delivery queue's depth", error, level: .warning)
        }
    }

    /// What became of one claimed row's attempt.
    private enum Attempt: Sendable {
        /// Delivered, given up after its last attempt, or rescheduled after an answer.
        case done
        /// Given up without an attempt (too old, or the destination takes no more): says nothing about the receiver.
        case skipped
        /// No answer at all: the rest of the destination's rows wait for the same retry.
        case unreachable(retryAt: Date)
        /// The server is stopping: the row was given back, no attempt counted.
        case cancelled
    }

    /// The due rows of one destination, a batch at a time, until none is due. True when rows may remain due after
    /// `batchesPerPass` batches.
    private func deliverDue(to destination: String) async -> Bool {
        var answered = false
        for _ in 0..<Self.batchesPerPass {
            let now = clock.now
            let due: [QueuedDelivery]
            do {
                // The lease covers the whole batch timing out, `concurrency` at a time, and a minute more.
                let rounds = (deliverer.batchSize + deliverer.concurrency - 1) / deliverer.concurrency + 1
                let lease = now.addingTimeInterval(TimeInterval(deliverer.leaseTimeoutSeconds * rounds + 60))
                due = try await store.claimDueDeliveries(
                    kind: deliverer.kind, destination: destination, now: now, leaseUntil: lease, limit: deliverer.batchSize)
            } catch {
                logFailure("cannot read the delivery queue", error, destination: destination)
                return false
            }
            // Nothing due: the destination is not read (an application with a notice waiting for its retry costs no
            // read of it per pass).
            guard !due.isEmpty else { return false }
            let resolved: (D.Target, DeliveryPolicy)?
            do { resolved = try await deliverer.target(for: destination) } catch {
                logFailure("cannot read a delivery's destination", error, destination: destination)
                await giveBack(due[...], at: now)
                return false
            }
            guard let resolved else {
                for row in due { await drop(row, destination: destination, attempts: row.attempts, reason: "the destination takes no more") }
                return due.count == deliverer.batchSize
            }
            let (target, policy) = resolved
            var rest = due[...]
            while !answered, let first = rest.popFirst() {
                switch await attempt(first, to: target, policy: policy) {
                case .done: answered = true
                case .skipped: continue
                case .unreachable(let retryAt):
                    await giveBack(rest, at: retryAt)
                    return false
                case .cancelled:
                    await giveBack(rest, at: now)
                    return false
                }
            }
            guard await attemptAll(rest, to: target, policy: policy, claimedAt: now) else { return false }
            if due.count < deliverer.batchSize { return false }
        }
        return true
    }

    /// Tries `rows`, at most `concurrency` at a time; stops starting new ones when the receiver cannot be reached or the
    /// server is stopping, and gives the rows not tried back. False when it stopped.
    private func attemptAll(_ rows: ArraySlice<QueuedDelivery>, to target: D.Target, policy: DeliveryPolicy, claimedAt now: Date) async -> Bool {
        guard !rows.isEmpty else { return true }
        return await withTaskGroup(of: Attempt.self) { group in
            var waiting = rows.makeIterator()
            for _ in 0..<max(1, deliverer.concurrency) {
                guard let row = waiting.next() else { break }
                group.addTask { await self.attempt(row, to: target, policy: policy) }
            }
            var retryAt: Date?
            var stopping = false
            while let outcome = await group.next() {
                switch outcome {
                case .done, .skipped: break
                case .unreachable(let at): retryAt = min(retryAt ?? at, at)
                case .cancelled: stopping = true
                }
                if retryAt == nil, !stopping, !Task.isCancelled, let row = waiting.next() {
                    group.addTask { await self.attempt(row, to: target, policy: policy) }
                }
            }
            let untried = Array(IteratorSequence(waiting))
            if stopping || Task.isCancelled {
                await giveBack(untried[...], at: now)
                return false
            }
            if let retryAt {
                await giveBack(untried[...], at: retryAt)
                return false
            }
            return true
        }
    }

    /// One attempt of one claimed row: delivered and deleted, given up, or rescheduled.
    private func attempt(_ row: QueuedDelivery, to target: D.Target, policy: DeliveryPolicy) async -> Attempt {
        if Task.isCancelled {
            await giveBack([row], at: clock.now)
            return .cancelled
        }
        if clock.now.timeIntervalSince(row.createdAt) > TimeInterval(policy.maxAgeSeconds) {
            await drop(row, destination: row.destination, attempts: row.attempts, reason: "too old")
            return .skipped
        }
        let answer = await deliverer.send(row, to: target)
        guard case .failed(let reason, let unreachable, let permanent) = answer else {
            do { try await store.deleteDelivery(id: row.id) } catch {
                logger.warning(
                    "a delivered row could not be deleted; it will be sent again", metadata: metadata(of: row, ["delivery_id": .string(row.id)]))
            }
            metrics.delivery(deliverer.kind, deliverer.metricsLabel(of: row.destination), .delivered)
            logger.debug("\(deliverer.wording.attempt) succeeded", metadata: metadata(of: row, ["attempt": "\(row.attempts + 1)"]))
            return .done
        }
        if Task.isCancelled {
            // The server is stopping and the attempt was cut short: not the receiver's failure, no attempt counted.
            await giveBack([row], at: clock.now)
            return .cancelled
        }
        metrics.delivery(deliverer.kind, deliverer.metricsLabel(of: row.destination), .failed)
        let attempt = row.attempts + 1
        let next = clock.now.addingTimeInterval(policy.retryDelay(afterAttempt: attempt))
        if permanent || attempt >= policy.maxAttempts || next.timeIntervalSince(row.createdAt) > TimeInterval(policy.maxAgeSeconds) {
            await drop(row, destination: row.destination, attempts: attempt, reason: reason)
        } else {
            logger.warning(
                "\(deliverer.wording.attempt) failed; will retry",
                metadata: metadata(
                    of: row,
                    [
                        "attempt": "\(attempt)", "retry_in_seconds": "\(Int(next.timeIntervalSince(clock.now)))", "reason": .string(reason)
                    ]))
            do { try await store.rescheduleDelivery(id: row.id, attempts: attempt, nextAttemptAt: next) } catch {
                logFailure("cannot reschedule a delivery", error, destination: row.destination, level: .warning)
            }
        }
        // A receiver that cannot be reached would make every other row wait for its own timeout: they wait for the same
        // retry instead, no attempt counted. A receiver that answers (even 500) is tried with each row, so one message
        // it refuses does not hold up the others.
        return unreachable ? .unreachable(retryAt: next) : .done
    }

    /// Claimed rows not tried: due again at `at`, their attempts unchanged.
    private func giveBack(_ rows: ArraySlice<QueuedDelivery>, at: Date) async {
        for row in rows {
            try? await store.rescheduleDelivery(id: row.id, attempts: row.attempts, nextAttemptAt: at)
        }
    }

    private func drop(_ row: QueuedDelivery, destination: String, attempts: Int, reason: String) async {
        logger.error(
            "giving up on \(deliverer.wording.item)", metadata: metadata(of: row, ["attempts": "\(attempts)", "reason": .string(reason)]))
        metrics.delivery(deliverer.kind, deliverer.metricsLabel(of: destination), .dropped)
        try? await store.deleteDelivery(id: row.id)
    }

    /// A row's log metadata: its kind, destination and event, never its body (a code, a token).
    private func metadata(of row: QueuedDelivery, _ extra: Logger.Metadata) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "delivery.kind": .string(row.kind.rawValue), "destination": .string(row.destination), "event.id": .string(row.eventId),
            "event.type": .string(row.eventType)
        ]
        metadata.merge(extra) { _, new in new }
        return metadata
    }

    private func logFailure(_ message: Logger.Message, _ error: any Error, destination: String? = nil, level: Logger.Level = .error) {
        var metadata: Logger.Metadata = ["delivery.kind": .string(deliverer.kind.rawValue), "error.type": .string("\(type(of: error))")]
        if let destination { metadata["destination"] = .string(destination) }
        logger.log(level: level, message, metadata: metadata)
    }
}
