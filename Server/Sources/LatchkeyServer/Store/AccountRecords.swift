import Foundation

/// A requested change of a user's email address, waiting for the code sent to the new address. The `email` claim
/// keeps the old address (where recovery and sign-in codes go) until the code is entered.
public struct EmailChangeRecord: Sendable, Equatable {
    public var userId: String
    /// The new address.
    public var email: String
    /// SHA-256 of the code sent to `email`.
    public var codeDigest: Data
    public var attempts: Int
    public var createdAt: Date
    public var expiresAt: Date
}

/// What a code did to a pending email change.
public enum EmailChangeRedemption: Sendable, Equatable {
    /// The code matched: the change is removed and returned.
    case redeemed(EmailChangeRecord)
    /// A wrong code; the change stays.
    case wrongCode
    /// A wrong code, the last one allowed: the change is gone.
    case exhausted
    /// No change pending, or it expired.
    case missing
}

/// The conditions of an account query (`UserStore.users(matching:offset:limit:)`), all of which must hold.
public struct UserQuery: Sendable, Equatable {
    public enum Condition: Sendable, Equatable {
        case id(String)
        /// The username, case-insensitively (as `user(username:)` finds it).
        case username(String)
        /// The `email` claim, case-insensitively.
        case email(String)
        case disabled(Bool)
        /// Last change (`updatedAt`, else `createdAt`) at or after the date.
        case modifiedFrom(Date)
        /// Last change strictly before the date.
        case modifiedBefore(Date)
    }

    public var conditions: [Condition]

    public init(_ conditions: [Condition] = []) { self.conditions = conditions }
}

/// One page of an account query.
public struct UserPage: Sendable, Equatable {
    /// How many accounts meet the query, on every page.
    public var total: Int
    public var users: [UserRecord]

    public init(total: Int, users: [UserRecord]) { self.total = total; self.users = users }
}
