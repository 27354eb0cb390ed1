import Foundation
import Hummingbird

/// An account's password lockout, for administrators (`ResourceCaller.isAdmin`, else 403 before saying whether the
/// account exists):
///
/// - `GET /admin/v1/users/{id}/lockout`: `{locked, locked_until, failed_attempts, locked_addresses,
///   address_locked_until}` — whether repeated wrong passwords locked the account for everyone (`locked_until`) or for
///   some addresses (the lock most people meet: the count of addresses and the latest of their locks' ends).
/// - `DELETE /admin/v1/users/{id}/lockout`: lifts every lock and clears the failure counts (204), audited as
///   `account.unlocked` with the administrator as actor. The password is unchanged: unlock after making sure the
///   owner, not a guesser, is the one locked out (the audit trail's `signin.failed` events name the addresses). An
///   administrator's personal token needs a recent sign-in for it (`AdministratorFreshness`).
struct LockoutController: Sendable {
    let store: any UserStore
    let clock: ServerClock
    let audit: AuditTrail
    let freshness: AdministratorFreshness

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("users/:user/lockout") { _, context in
            let user = try await self.administeredUser(context)
            guard let lockout = try await self.store.lockout(userId: user.id, now: self.clock.now) else {
                throw SelfServiceErrors.userNotFound
            }
            return try Responses.json(Status(lockout), noStore: true)
        }
        group.delete("users/:user/lockout") { _, context in
            let user = try await self.administeredUser(context)
            try self.freshness.check(context.caller)
            let before = try await self.store.lockout(userId: user.id, now: self.clock.now)
            guard try await self.store.clearLockout(userId: user.id) else { throw SelfServiceErrors.userNotFound }
            await self.audit.record(
                .accountUnlocked, subject: user.id, actor: context.caller.auditActor,
                details: ["was_locked": (before?.isLocked ?? false) ? "true" : "false"],
                origin: AuditOrigin(address: context.clientAddress, logger: context.logger))
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
    }

    private func administeredUser(_ context: ResourceRequestContext) async throws -> UserRecord {
        guard context.caller.isAdmin else { throw AdminErrors.forbidden }
        guard let user = try await store.user(id: try context.parameters.require("user")) else { throw SelfServiceErrors.userNotFound }
        return user
    }

    private struct Status: Encodable {
        var locked: Bool
        var lockedUntil: Date?
        var failedAttempts: Int
        var lockedAddresses: Int
        var addressLockedUntil: Date?

        init(_ lockout: AccountLockout) {
            locked = lockout.isLocked
            lockedUntil = lockout.lockedUntil
            failedAttempts = lockout.failedAttempts
            lockedAddresses = lockout.lockedAddresses
            addressLockedUntil = lockout.latestAddressLockUntil
        }

        enum CodingKeys: String, CodingKey {
            case locked, lockedUntil = "locked_until", failedAttempts = "failed_attempts", lockedAddresses = "locked_addresses"
            case addressLockedUntil = "address_locked_until"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(locked, forKey: .locked)
            try c.encodeIfPresent(lockedUntil.map(Self.timestamp), forKey: .lockedUntil)
            try c.encode(failedAttempts, forKey: .failedAttempts)
            try c.encode(lockedAddresses, forKey: .lockedAddresses)
            try c.encodeIfPresent(addressLockedUntil.map(Self.timestamp), forKey: .addressLockedUntil)
        }

        static func timestamp(_ date: Date) -> String { date.formatted(.iso8601) }
    }
}
