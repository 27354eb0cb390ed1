import Foundation

/// A person's consent to a third-party application: the scopes it may be given without asking again. Kept per (user,
/// application); a request for a scope outside `scopes` asks again, and the answer widens the record.
public struct ConsentRecord: Sendable, Equatable {
    public var userId: String
    public var clientId: String
    /// The scopes consented to, sorted, without duplicates.
    public var scopes: [String]
    /// When the person first consented to the application.
    public var grantedAt: Date
    /// When the consent last changed (the scopes grew).
    public var updatedAt: Date

    public init(userId: String, clientId: String, scopes: [String], grantedAt: Date, updatedAt: Date) {
        self.userId = userId; self.clientId = clientId; self.scopes = Array(Set(scopes)).sorted()
        self.grantedAt = grantedAt; self.updatedAt = updatedAt
    }

    /// Whether every scope of `requested` was consented to.
    public func covers(_ requested: [String]) -> Bool { requested.allSatisfy(scopes.contains) }
}

/// Consents to third-party applications (`ConsentRecord`). A consent ends when the person withdraws it, the account
/// is deleted (the rows cascade) or the application is deleted (`ClientStore.deleteClient`).
public protocol ConsentStore: Sendable {
    func consent(userId: String, clientId: String) async throws -> ConsentRecord?
    /// Records consent to `scopes`, adding them to what was consented before (never narrowing it), and returns the
    /// record as it is now.
    @discardableResult
    func grantConsent(userId: String, clientId: String, scopes: [String], now: Date) async throws -> ConsentRecord
    /// The account's consents, by application id.
    func consents(userId: String) async throws -> [ConsentRecord]
    /// Forgets the consent; false when there was none.
    func withdrawConsent(userId: String, clientId: String) async throws -> Bool
}
