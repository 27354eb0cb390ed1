import Foundation

/// An account whose deletion its owner asked for with a grace period (`account_deletion_grace_days`): until `dueAt`
/// the account stays, without sessions or tokens, and signing in again restores it.
public struct AccountDeletionRecord: Sendable, Equatable {
    public var userId: String
    public var requestedAt: Date
    public var dueAt: Date

    public init(userId: String, requestedAt: Date, dueAt: Date) {
        self.userId = userId; self.requestedAt = requestedAt; self.dueAt = dueAt
    }
}

/// Scheduled account deletions (`AccountDeletionRecord`). The row goes with the account (it cascades), so a deleted or
/// restored account has none.
public protocol AccountDeletionStore: Sendable {
    /// Records that the account is to be deleted at `deletion.dueAt` (replacing an earlier request), and in the same
    /// transaction ends every session, revokes every token and deletes what could still become one (unused
    /// authorization codes, pending device authorizations and second factors): only a new sign-in gets in again.
    func scheduleAccountDeletion(_ deletion: AccountDeletionRecord, now: Date) async throws
    /// The account's scheduled deletion, if there is one.
    func accountDeletion(userId: String) async throws -> AccountDeletionRecord?
    /// Forgets the account's scheduled deletion; false when there was none (or the account is gone already).
    func cancelAccountDeletion(userId: String) async throws -> Bool
    /// Scheduled deletions due at `now`, the oldest first.
    func dueAccountDeletions(now: Date, limit: Int) async throws -> [AccountDeletionRecord]
    /// Deletes the account as `UserStore.deleteUser` does, but only while its deletion is still scheduled and due at
    /// `now`: of instances that race to delete one account, exactly one gets true; a restore (`cancelAccountDeletion`)
    /// that won the race leaves the account in place (false).
    func deleteScheduledUser(id: String, now: Date) async throws -> Bool
}
