import Foundation

/// How many events of one kind (wrong one-time codes, recovery emails) a key has within a sliding window.
public struct AccountEventCount: Sendable, Equatable {
    public var count: Int
    /// The oldest event still in the window: the budget frees up one event when it leaves.
    public var oldest: Date?
    public init(count: Int, oldest: Date?) { self.count = count; self.oldest = oldest }
}
