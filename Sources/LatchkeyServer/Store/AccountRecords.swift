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
