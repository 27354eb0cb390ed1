import Foundation

/// Per-address limits on unauthenticated work that writes rows or burns CPU, and the pruning of expired rows.
extension IdentityServer {
    /// An authorization request that stores a pending login, or a flow start: past `max_starts_per_address` in the
    /// window, 429 `request.throttled`. Also the moment to delete expired rows when they are due.
    func admitStart(address: String) async throws {
        try await admit(startThrottle, address: address, what: "authorization requests or flow starts")
        pruneIfDue()
    }

    /// A registration start (REGISTRATION flow, passkey sign-up options): past `max_registrations_per_address` in the
    /// window, 429 `request.throttled`.
    func admitRegistration(address: String) async throws {
        try await admit(registrationThrottle, address: address, what: "registrations")
    }

    private func admit(_ throttle: any AddressLimiter, address: String, what: String) async throws {
        guard let wait = try await throttle.reserve(address: address, now: clock.now) else { return }
        throw Self.throttled(wait: wait, what: what)
    }

    /// 429 `request.throttled`: too many `what` from the caller's address; retry after `wait` seconds.
    static func throttled(wait: Int, what: String) -> APIError {
        let message = LocalizedMessage("request.throttled", ["minutes": String(MessageCatalog.minutes(seconds: wait))])
        return APIError(
            status: .tooManyRequests, code: "SRV-429", error: "too_many_requests", messageKey: message.key,
            userMessage: message.english, technical: "too many \(what) from this address; retry after \(wait) s",
            arguments: message.arguments)
    }

    /// Deletes expired rows now: pending logins, flow executions, authorization codes, access tokens, refresh tokens
    /// (expired, or of a revoked family), sessions (expired or ended), consumed token ids, passkey and step-up
    /// ceremonies, and outbox messages older than a day. Returns the number of rows deleted.
    @discardableResult
    public func pruneExpired() async throws -> Int {
        let now = clock.now
        let deleted = try await store.pruneExpired(now: now, outboxBefore: now.addingTimeInterval(-24 * 3600))
        if deleted > 0 { logger.info("pruned expired rows", metadata: ["rows": .stringConvertible(deleted)]) }
        return deleted
    }

    /// Starts a pruning in the background when `prune_interval_seconds` have passed since the last one. Driven by
    /// the requests that add rows, so there is no timer to run or stop, and an idle server has nothing to prune.
    func pruneIfDue() {
        let interval = TimeInterval(configuration.pruneIntervalSeconds)
        guard interval > 0 else { return }
        let now = clock.now
        Task { [self] in
            guard await pruneSchedule.claim(now: now, interval: interval) else { return }
            do { try await pruneExpired() } catch {
                logger.warning("pruning expired rows failed", metadata: ["error.type": .string("\(type(of: error))")])
            }
        }
    }
}

/// Says yes at most once per interval, to whichever caller asks first: one pruning per `prune_interval_seconds`, one
/// log line per window when an alarm trips (not one per refused request).
actor OncePerInterval {
    private var last: Date?

    /// Whether it has said yes yet (tests).
    var hasRun: Bool { last != nil }

    func claim(now: Date, interval: TimeInterval) -> Bool {
        if let last, now.timeIntervalSince(last) < interval { return false }
        last = now
        return true
    }
}
