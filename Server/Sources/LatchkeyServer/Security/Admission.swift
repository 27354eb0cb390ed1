import Foundation
import HTTPTypes
import Logging

/// Per-address limits on unauthenticated work that writes rows or burns CPU: authorization requests and flow starts,
/// registrations, and challenges (passkey ceremonies, step-up and sign-in codes). An admitted start is also the
/// moment to delete expired rows when they are due (`Pruner`).
struct Admission: Sendable {
    /// Authorization requests and flow starts per address (each one writes a row).
    let startThrottle: any AddressLimiter
    /// Registrations started per address (REGISTRATION flows, passkey sign-up).
    let registrationThrottle: any AddressLimiter
    /// Passkey challenges and step-up codes per address (every request counts, not only failures).
    let challengeThrottle: any AddressLimiter
    let clock: ServerClock
    let pruner: Pruner

    /// An authorization request that stores a pending login, or a flow start: past `max_starts_per_address` in the
    /// window, 429 `request.throttled`. Also the moment to delete expired rows when they are due.
    func admitStart(address: String) async throws {
        try await admit(startThrottle, address: address, what: "authorization requests or flow starts")
        pruner.pruneIfDue()
    }

    /// A registration start (REGISTRATION flow, passkey sign-up options): past `max_registrations_per_address` in the
    /// window, 429 `request.throttled`.
    func admitRegistration(address: String) async throws {
        try await admit(registrationThrottle, address: address, what: "registrations")
    }

    private func admit(_ throttle: any AddressLimiter, address: String, what: String) async throws {
        guard let wait = try await throttle.reserve(address: address, now: clock.now) else { return }
        throw APIError.throttled(wait: wait, what: what)
    }

    /// Spends one request of the per-address challenge throttle (the one passkey challenges and step-up codes use);
    /// nil when admitted, else the seconds to wait.
    func admitChallengeRequest(address: String) async throws -> Int? {
        // Checked and counted in one step, as `admitChallenge` does: concurrent starts cannot all pass the check first.
        try await challengeThrottle.reserve(address: address, now: clock.now)
    }

    /// Every challenge request counts against the caller's address (each stores a ceremony; a step-up may send an
    /// email): past `max_challenges_per_address` in the window, 429 `login.throttled`.
    func admitChallenge(address: String) async throws {
        if let wait = try await admitChallengeRequest(address: address) {
            throw APIError.login(
                .tooManyRequests, LocalizedMessage("login.throttled", ["minutes": String(MessageCatalog.minutes(seconds: wait))]),
                "too many passkey or code requests from this address; retry after \(wait) s")
        }
    }
}

/// Deletes expired rows: on demand (`IdentityServer.pruneExpired`) and, driven by the requests that add rows, at most
/// once per `prune_interval_seconds`.
struct Pruner: Sendable {
    let store: any MaintenanceStore & AuditStore
    let clock: ServerClock
    let intervalSeconds: Int
    /// Audit events older than this many days are deleted with the expired rows (`audit_retention_days`).
    let auditRetentionDays: Int
    /// Accounts whose deletion grace period ended are deleted with the expired rows.
    let deletions: AccountDeletions
    /// When expired rows were last deleted.
    let schedule: OncePerInterval
    /// The server's logger: pruning runs in the background, for no request.
    let logger: Logger

    /// Deletes expired rows now: pending logins, flow executions, authorization codes, access tokens, refresh tokens
    /// (expired, or of a revoked family), sessions (expired or ended), consumed token ids, passkey and step-up
    /// ceremonies, outbox messages older than a day, audit events past their retention, and accounts whose deletion grace
    /// period ended (`AccountDeletions.deleteDue`). Returns the number of rows (and accounts) deleted.
    @discardableResult
    func pruneExpired() async throws -> Int {
        let now = clock.now
        var deleted = try await store.pruneExpired(now: now, outboxBefore: now.addingTimeInterval(-24 * 3600))
        deleted += try await store.pruneAuditEvents(before: now.addingTimeInterval(-TimeInterval(auditRetentionDays) * 86400))
        deleted += try await deletions.deleteDue()
        if deleted > 0 { logger.info("pruned expired rows", metadata: ["rows": .stringConvertible(deleted)]) }
        return deleted
    }

    /// Starts a pruning in the background when `prune_interval_seconds` have passed since the last one. Driven by
    /// the requests that add rows, so there is no timer to run or stop, and an idle server has nothing to prune.
    func pruneIfDue() {
        let interval = TimeInterval(intervalSeconds)
        guard interval > 0 else { return }
        let now = clock.now
        Task { [self] in
            guard await schedule.claim(now: now, interval: interval) else { return }
            do { try await pruneExpired() } catch {
                logger.warning("pruning expired rows failed", metadata: ["error.type": .string("\(type(of: error))")])
            }
        }
    }
}

extension APIError {
    /// 429 `request.throttled`: too many `what` from the caller's address; retry after `wait` seconds.
    static func throttled(wait: Int, what: String) -> APIError {
        let message = LocalizedMessage("request.throttled", ["minutes": String(MessageCatalog.minutes(seconds: wait))])
        return APIError(
            status: .tooManyRequests, code: "SRV-429", error: "too_many_requests", messageKey: message.key,
            userMessage: message.english, technical: "too many \(what) from this address; retry after \(wait) s",
            arguments: message.arguments)
    }

    /// A reachFive sign-in error (`AUTH-<status>`): 429 `too_many_requests`, anything else `invalid_grant`.
    static func login(_ status: HTTPResponse.Status, _ message: LocalizedMessage, _ technical: String) -> APIError {
        APIError(
            status: status, code: "AUTH-\(status.code)", error: status == .tooManyRequests ? "too_many_requests" : "invalid_grant",
            messageKey: message.key, userMessage: message.english, technical: technical, arguments: message.arguments)
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
