import Foundation
import Logging

/// Deleting an account at its owner's request (`DELETE /users/me`; App Store Review Guideline 5.1.1(v)).
///
/// With `account_deletion_grace_days` 0 the account goes at once, as an administrator's deletion does
/// (`UserStore.deleteUser`: sessions ended and announced on the back channel, every token family revoked, passkeys,
/// factors, linked identities, consents and pending codes deleted). With a grace period it is kept until the period
/// ends, without sessions or tokens; a completed sign-in restores it (`restoreIfScheduled`, from `SignInSessions`),
/// and after it the next maintenance pass deletes it (`deleteDue`) — once, however many instances share the store.
///
/// The person hears of each step by email (a verified address only), and the audit trail records each with the
/// account's id alone: no name, address or other personal data.
struct AccountDeletions: Sendable {
    let store: any AccountDeletionStore & UserStore & FederatedIdentityStore
    let accounts: Accounts
    /// Revokes Sign in with Apple's tokens once the account is gone.
    let federation: Federation
    let audit: AuditTrail
    let clock: ServerClock
    /// `account_deletion_grace_days`.
    let graceDays: Int
    /// The server's logger, for the deletions made in the background.
    let logger: Logger

    /// What a request did.
    enum Outcome: Equatable, Sendable {
        /// The account is gone.
        case deleted
        /// The account will be deleted at this time unless its owner signs in before.
        case scheduled(dueAt: Date)
    }

    /// Deletes `user`'s account now, or schedules its deletion when there is a grace period.
    func request(_ user: UserRecord, locale: SupportedLocale, origin: AuditOrigin) async throws -> Outcome {
        let now = clock.now
        guard let due = dueDate(requestedAt: now) else {
            // No grace period. Another request (a second tap, an administrator) may have deleted it meanwhile.
            guard let revocations = try await deleteNow(id: user.id, logger: origin.logger) else { throw SelfServiceErrors.userNotFound }
            await deleted(user, revocations: revocations, via: "self", locale: locale, origin: origin)
            return .deleted
        }
        try await store.scheduleAccountDeletion(AccountDeletionRecord(userId: user.id, requestedAt: now, dueAt: due), now: now)
        await audit.record(.accountDeletionRequested, subject: user.id, details: ["due": Self.day(due)], origin: origin)
        origin.logger.info("account deletion scheduled by its owner", metadata: ["user": .string(user.id), "due": .string(Self.day(due))])
        await notify(user, "account_deletion_scheduled", arguments: ["date": Self.day(due)], locale: locale, logger: origin.logger)
        return .scheduled(dueAt: due)
    }

    /// When a deletion requested at `now` would be carried out: after the grace period; nil without one (at once).
    func dueDate(requestedAt now: Date) -> Date? {
        graceDays > 0 ? now.addingTimeInterval(TimeInterval(graceDays) * 86_400) : nil
    }

    /// Deletes the account at once (`UserStore.deleteUser`) and then revokes at its providers what its links kept
    /// (Sign in with Apple); nil when there was no such account. The owner's deletion and an administrator's.
    func deleteNow(id: String, logger: Logger) async throws -> Federation.Revocations? {
        // Read first: the links, and the tokens they keep, go with the account.
        let links = try await store.federatedIdentities(userId: id)
        guard try await store.deleteUser(id: id, now: clock.now) else { return nil }
        return await federation.revokeUpstreamTokens(of: links, logger: logger)
    }

    /// After a completed sign-in: an account scheduled for deletion is kept. Never fails the sign-in: a store error
    /// is logged, and the next sign-in tries again.
    func restoreIfScheduled(userId: String, origin: AuditOrigin) async {
        do {
            guard try await store.cancelAccountDeletion(userId: userId) else { return }
            await audit.record(.accountRestored, subject: userId, origin: origin)
            origin.logger.info("account deletion cancelled by a sign-in", metadata: ["user": .string(userId)])
            if let user = try await store.user(id: userId) {
                await notify(user, "account_restored", locale: Self.locale(of: user), logger: origin.logger)
            }
        } catch {
            origin.logger.error(
                "could not check for a scheduled account deletion", metadata: ["user": .string(userId), "error.type": .string("\(type(of: error))")])
        }
    }

    /// Deletes the accounts whose grace period has ended (at most `limit` per call); returns how many this call
    /// deleted. An account restored, or deleted by another instance, meanwhile is skipped.
    @discardableResult
    func deleteDue(limit: Int = 100) async throws -> Int {
        let now = clock.now
        var count = 0
        for deletion in try await store.dueAccountDeletions(now: now, limit: limit) {
            // Read first: the confirmation goes to the address the account had, and the links go with the account.
            guard let user = try await store.user(id: deletion.userId) else { continue }
            let links = try await store.federatedIdentities(userId: user.id)
            guard try await store.deleteScheduledUser(id: deletion.userId, now: now) else { continue }
            count += 1
            let revocations = await federation.revokeUpstreamTokens(of: links, logger: logger)
            await deleted(
                user, revocations: revocations, via: "grace_ended", locale: Self.locale(of: user),
                origin: AuditOrigin(address: nil, logger: logger))
        }
        return count
    }

    /// The trail and the mail of a deletion.
    private func deleted(
        _ user: UserRecord, revocations: Federation.Revocations, via: String, locale: SupportedLocale, origin: AuditOrigin
    ) async {
        await audit.record(.userDeleted, subject: user.id, details: revocations.auditDetails(["via": via]), origin: origin)
        origin.logger.info("account deleted at its owner's request", metadata: ["user": .string(user.id), "via": .string(via)])
        await notify(user, "account_deleted", locale: locale, logger: origin.logger)
    }

    /// A notice to the account's verified address; a failed delivery is logged, never undoes what was done.
    private func notify(_ user: UserRecord, _ kind: String, arguments: [String: String] = [:], locale: SupportedLocale, logger: Logger) async {
        await accounts.notifyAccountChange(user, kind, arguments: arguments, locale: locale, logger: logger)
    }

    /// The account's language (its `locale` claim), English without one.
    static func locale(of user: UserRecord) -> SupportedLocale {
        user.claims["locale"].flatMap { SupportedLocale(resolving: $0) } ?? .en
    }

    /// `2026-12-07`: the day, in UTC, as the notice and the trail name it.
    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }
}
