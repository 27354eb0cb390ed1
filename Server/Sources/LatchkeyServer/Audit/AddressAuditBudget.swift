import Foundation

/// How many refusals one address may have audited one by one in a window; the rest are only counted, and summed up in
/// one event per address and window once the window has closed.
///
/// Failed client authentications cost the caller nothing (an unknown `client_id` needs no secret), and each one used
/// to write an audit row and queue it for every webhook: a flood filled the webhooks' queues and the audit table
/// (third review, R3-4). The first refusals of a window are still recorded as they happen, which is what an operator
/// investigating one client needs; past the budget a flood is one row per address and window, whatever its size.
///
/// In memory, like `AddressThrottle`: with instances sharing PostgreSQL each one keeps its own budget, so a flood
/// spread over them writes at most the budget per instance. Windows are fixed (they open at an address's first refusal
/// and last `window`), so they close in the order they opened, which keeps closing them O(1) per refusal. At most
/// `capacity` addresses are tracked: a new one past that closes the oldest window early (with its summary), so a flood
/// of new addresses costs bounded memory.
actor AddressAuditBudget {
    /// The refusals of one address that were not recorded in one window.
    struct Summary: Sendable, Equatable {
        /// The address as the throttles key it (`ClientAddress.throttleKey`: an IPv6 address by its /64).
        var address: String
        var windowStart: Date
        /// Refusals past the budget: counted, not recorded.
        var count: Int
    }

    private struct Window {
        var start: Date
        var count: Int
    }

    let limit: Int
    let window: TimeInterval
    let capacity: Int
    private var windows: [String: Window] = [:]
    /// Each open window's address and start, in the order they opened (and so the order they close).
    private var opened: [(key: String, start: Date)] = []
    private var head = 0

    init(limit: Int, window: TimeInterval, capacity: Int) {
        self.limit = max(1, limit)
        self.window = max(1, window)
        self.capacity = max(1, capacity)
    }

    /// Addresses with an open window (tests of the memory bound).
    var trackedCount: Int { windows.count }

    /// Counts one refusal from `address` at `now`: whether it is to be recorded one by one, and the summaries of the
    /// windows (of any address) that have closed meanwhile, to be written now.
    func admit(address: String, now: Date) -> (record: Bool, closed: [Summary]) {
        var closed = close(now: now)
        let key = ClientAddress.throttleKey(address)
        if var current = windows[key] {
            current.count += 1
            windows[key] = current
            return (current.count <= limit, closed)
        }
        if windows.count >= capacity, let evicted = closeOldest() { closed.append(evicted) }
        windows[key] = Window(start: now, count: 1)
        opened.append((key, now))
        return (true, closed)
    }

    /// The summaries of the windows that have closed by `now` (only those with refusals past the budget have one).
    func close(now: Date) -> [Summary] {
        var closed: [Summary] = []
        while head < opened.count, now.timeIntervalSince(opened[head].start) >= window {
            if let summary = closeOldest() { closed.append(summary) }
        }
        return closed
    }

    /// Ends the window that opened first; its summary when it had refusals past the budget.
    private func closeOldest() -> Summary? {
        guard head < opened.count else { return nil }
        let (key, start) = opened[head]
        head += 1
        // Drop the consumed entries now and then, not at each call (removing from the front is O(n)).
        if head >= 1024, head * 2 >= opened.count {
            opened.removeFirst(head)
            head = 0
        }
        // Each open window has exactly one entry in `opened` (a key's window is removed here only), so it is this one.
        guard let ended = windows.removeValue(forKey: key) else { return nil }
        return ended.count > limit ? Summary(address: key, windowStart: start, count: ended.count - limit) : nil
    }
}
