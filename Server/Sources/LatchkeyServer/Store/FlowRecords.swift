import Foundation

/// A second factor a user has enrolled.
public struct UserFactorRecord: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// RFC 6238 time-based one-time passwords; `secret` is the shared key.
        case totp
        /// A one-time code sent to the user's email address; `secret` is unused.
        case emailOTP = "email_otp"
    }
    public var userId: String
    public var kind: Kind
    public var secret: String
    public var createdAt: Date
}

/// An account's recovery codes, counted: the codes themselves are stored only as keyed digests and never read back.
public struct RecoveryCodeSummary: Sendable, Equatable {
    /// When this set was generated (a new set replaces the old one).
    public var createdAt: Date
    /// Codes of the set not used yet.
    public var remaining: Int
    public var total: Int
}

/// A flow execution in progress (`POST /flow/execute`). The state is the engine's JSON; the challenge token is
/// stored only as a SHA-256 digest and replaced on every step.
public struct FlowExecutionRecord: Sendable, Equatable {
    public var id: String
    public var applicationId: String
    public var flowType: String
    public var challengeHash: Data
    public var state: Data
    public var createdAt: Date
    public var expiresAt: Date
}

/// An email or SMS the server sent (or, in development, only recorded).
public struct OutboxMessage: Sendable, Equatable, Codable {
    public enum Channel: String, Sendable, Codable { case email, sms }
    public var id: String
    public var channel: Channel
    public var recipient: String
    public var subject: String
    public var body: String
    /// The one-time code the message carries, kept so development tooling can read it without parsing text.
    public var code: String?
    public var createdAt: Date
}

/// An invitation to register with an invite-only application (code stored by hash).
public struct InvitationRecord: Sendable, Equatable {
    public var codeHash: Data
    public var applicationId: String
    /// When set, the account must be registered with this email address.
    public var email: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?
}
