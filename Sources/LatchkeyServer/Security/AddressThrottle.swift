import Foundation

/// Counts failed logins per client address in a sliding window. In memory on purpose: it protects one instance
/// from a burst, while account lockout (persisted in the store) protects each account across instances.
actor AddressThrottle {
    private var failures: [String: [Date]] = [:]
    private let limit: Int
    private let window: TimeInterval

    init(limit: Int, window: TimeInterval) {
        self.limit = limit
        self.window = window
    }

    /// Seconds until the address may try again, or nil if it may try now.
    func retryAfter(address: String, now: Date) -> Int? {
        let recent = prune(address, now: now)
        guard recent.count >= limit, let oldest = recent.first else { return nil }
        return max(1, Int((oldest.addingTimeInterval(window).timeIntervalSince(now)).rounded(.up)))
    }

    func recordFailure(address: String, now: Date) {
        failures[address, default: []].append(now)
        _ = prune(address, now: now)
    }

    private func prune(_ address: String, now: Date) -> [Date] {
        let kept = (failures[address] ?? []).filter { now.timeIntervalSince($0) < window }
        failures[address] = kept.isEmpty ? nil : kept
        return kept
    }
}
