import Foundation

/// Counts events (failed logins, challenges, starts) per client address in a sliding window. In memory on purpose:
/// it protects one instance from a burst, while account lockout (persisted in the store) protects each account
/// across instances.
///
/// Addresses are keyed by `ClientAddress.throttleKey` (IPv6 by /64). The map holds at most `capacity` addresses:
/// past that, expired entries are swept, then the least recently seen addresses are dropped, so a flood of new
/// addresses costs bounded memory (the price is that a dropped address starts afresh).
actor AddressThrottle {
    private var events: [String: [Date]] = [:]
    private var lastSeen: [String: Date] = [:]
    private let limit: Int
    private let window: TimeInterval
    let capacity: Int

    init(limit: Int, window: TimeInterval, capacity: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.capacity = max(1, capacity)
    }

    /// Addresses currently tracked (tests of the memory bound).
    var trackedCount: Int { events.count }

    /// Seconds until the address may try again, or nil if it may try now.
    func retryAfter(address: String, now: Date) -> Int? {
        wait(ClientAddress.throttleKey(address), now: now)
    }

    func recordFailure(address: String, now: Date) {
        record(ClientAddress.throttleKey(address), now: now)
    }

    /// Check and count in one step (the actor makes it atomic): nil when the event is admitted, and then it already
    /// counts, so concurrent requests cannot all pass the check before any of them is recorded; otherwise the
    /// seconds to wait. A password check reserves before hashing and `release`s when the password was right.
    func reserve(address: String, now: Date) -> Int? {
        let key = ClientAddress.throttleKey(address)
        if let wait = wait(key, now: now) { return wait }
        record(key, now: now)
        return nil
    }

    /// Takes back one event recorded at `at` by `reserve` (the attempt turned out not to be a failure).
    func release(address: String, at: Date) {
        let key = ClientAddress.throttleKey(address)
        guard var list = events[key], let index = list.firstIndex(of: at) else { return }
        list.remove(at: index)
        events[key] = list.isEmpty ? nil : list
        if list.isEmpty { lastSeen[key] = nil }
    }

    private func wait(_ key: String, now: Date) -> Int? {
        let recent = prune(key, now: now)
        guard recent.count >= limit, let oldest = recent.first else { return nil }
        return Self.secondsUntilFree(oldest: oldest, window: window, now: now)
    }

    /// Whole seconds (at least one) until the oldest counted event leaves the window: the wait every address limiter,
    /// in memory or in a store, reports.
    static func secondsUntilFree(oldest: Date, window: TimeInterval, now: Date) -> Int {
        max(1, Int(oldest.addingTimeInterval(window).timeIntervalSince(now).rounded(.up)))
    }

    private func record(_ key: String, now: Date) {
        if events[key] == nil, events.count >= capacity { makeRoom(now: now) }
        events[key, default: []].append(now)
        lastSeen[key] = now
        _ = prune(key, now: now)
    }

    private func prune(_ key: String, now: Date) -> [Date] {
        let kept = (events[key] ?? []).filter { now.timeIntervalSince($0) < window }
        events[key] = kept.isEmpty ? nil : kept
        if kept.isEmpty { lastSeen[key] = nil }
        return kept
    }

    /// Sweeps expired entries; if the map is still full, drops the least recently seen tenth, so the O(n) work
    /// happens once per `capacity / 10` new addresses rather than on every request.
    private func makeRoom(now: Date) {
        for key in Array(events.keys) { _ = prune(key, now: now) }
        guard events.count >= capacity else { return }
        let drop = max(1, capacity / 10)
        for (key, _) in lastSeen.sorted(by: { $0.value < $1.value }).prefix(drop) {
            events[key] = nil
            lastSeen[key] = nil
        }
    }
}

/// A per-address flood limit, whatever keeps its counts: `AddressThrottle` in this process's memory (one instance on
/// SQLite), or `SharedAddressThrottle` in the store that several instances share (PostgreSQL), so that N instances
/// behind one address do not admit N times the limit.
protocol AddressLimiter: Sendable {
    /// nil when the event is admitted (and then it already counts), else the seconds to wait.
    func reserve(address: String, now: Date) async throws -> Int?
    /// Takes back an event recorded at `at` by `reserve` (the attempt turned out not to count).
    func release(address: String, at: Date) async throws
}

extension AddressThrottle: AddressLimiter {}

/// The store-backed limiter: one bucket per kind of event, addresses keyed as `AddressThrottle` keys them.
struct SharedAddressThrottle: AddressLimiter {
    let store: any Store
    let bucket: String
    let limit: Int
    let window: TimeInterval

    func reserve(address: String, now: Date) async throws -> Int? {
        try await store.reserveAddressEvent(bucket: bucket, address: ClientAddress.throttleKey(address), now: now, window: window, limit: limit)
    }

    func release(address: String, at: Date) async throws {
        try await store.releaseAddressEvent(bucket: bucket, address: ClientAddress.throttleKey(address), at: at)
    }
}

/// Counts the refusals of another limiter in `latchkey_throttled_requests_total{limit=…}`.
struct MeteredAddressLimiter: AddressLimiter {
    let limiter: any AddressLimiter
    let limit: ServerMetrics.Limit
    let metrics: ServerMetrics

    func reserve(address: String, now: Date) async throws -> Int? {
        let wait = try await limiter.reserve(address: address, now: now)
        if wait != nil { metrics.throttled(limit) }
        return wait
    }

    func release(address: String, at: Date) async throws { try await limiter.release(address: address, at: at) }
}
