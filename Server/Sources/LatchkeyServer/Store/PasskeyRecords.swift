import Foundation

/// A registered passkey (WebAuthn public-key credential). The credential ID is the primary key, so one credential can
/// never belong to two accounts (WebAuthn §7.1 step 25).
public struct PasskeyRecord: Sendable, Equatable, Codable {
    /// base64url of the raw credential ID.
    public var id: String
    public var userId: String
    /// The COSE_Key bytes exactly as the authenticator produced them.
    public var publicKey: Data
    public var algorithm: Int
    public var signCount: UInt32
    public var aaguid: Data
    public var friendlyName: String
    public var attestationFormat: String
    public var backupEligible: Bool
    public var backedUp: Bool
    public var createdAt: Date
    public var lastUsedAt: Date?
}

/// How a passkey came to be added to an account (the `how` of the `passkey.added` audit event).
public enum PasskeyAddition: String, Sendable, Codable {
    /// The person asked for it (a "create a passkey" button, an app's `registerNewPasskey`, a flow's passkey step).
    case request
    /// Offered right after a password sign-in and accepted (iOS 18's conditional registration, the hosted page's
    /// offer).
    case upgrade
}

/// One WebAuthn ceremony waiting for the authenticator's answer. The challenge is stored as a SHA-256 digest and the
/// row is deleted when it is consumed, so a challenge works once.
public struct PasskeyChallengeRecord: Sendable, Equatable {
    public enum Ceremony: String, Sendable, Codable {
        /// A new account and its first passkey (reachFive `signup-options`).
        case signup
        /// A passkey added to an existing account.
        case registration
        /// A sign-in.
        case authentication
    }
    public var challengeHash: Data
    public var ceremony: Ceremony
    public var clientId: String?
    /// The account (registration; username-first authentication), or the id reserved for the new account (signup).
    public var userId: String?
    /// Signup only: the profile to create the account with (JSON of claims).
    public var profile: [String: String]
    public var friendlyName: String?
    /// The origin the options were requested for; the response must come from the same one.
    public var origin: String
    public var userVerification: String
    /// Credential IDs the authenticator was allowed to use (username-first), base64url.
    public var allowedCredentials: [String]
    public var createdAt: Date
    public var expiresAt: Date
}

/// A link between an account and an external identity (Sign in with Apple `sub`, a federated provider's subject).
public struct FederatedIdentityRecord: Sendable, Equatable {
    public var provider: String
    public var subject: String
    public var userId: String
    public var createdAt: Date
    /// The provider's refresh token for this person, sealed (`SecretSealer`, bound to the provider and subject), kept
    /// only where the provider must be told when the account goes: Sign in with Apple (its `auth/revoke`).
    public var sealedRefreshToken: String?
    public init(provider: String, subject: String, userId: String, createdAt: Date, sealedRefreshToken: String? = nil) {
        self.provider = provider; self.subject = subject; self.userId = userId; self.createdAt = createdAt
        self.sealedRefreshToken = sealedRefreshToken
    }
}

/// A federated sign-in in progress (`FederatedLoginStore`), found by the digest of its handle: the upstream `state`,
/// or the one-time code the app collects the result with.
public struct FederatedLoginRecord: Sendable, Equatable {
    public var handleHash: Data
    /// The identity provider's id.
    public var provider: String
    /// What the handle stands for, as the federation code reads it (the upstream leg, or a verified result).
    public var purpose: String
    /// JSON the federation code reads back (verifier, nonce, where to go on; or the verified identity).
    public var payload: Data
    public var expiresAt: Date
    public init(handleHash: Data, provider: String, purpose: String, payload: Data, expiresAt: Date) {
        self.handleHash = handleHash; self.provider = provider; self.purpose = purpose; self.payload = payload; self.expiresAt = expiresAt
    }
}

/// A second-factor challenge of a reachFive MFA step-up (`/identity/v1/passwordless/start` → `verify`). The code is
/// kept only as a SHA-256 digest (empty for authenticator-app codes, which are computed, not sent).
public struct StepUpChallengeRecord: Sendable, Equatable {
    public var id: String
    /// SHA-256 of the step-up token it continues (the token itself is not kept: it is a bearer credential).
    public var stepUpHash: Data
    /// The verified step-up token's claims (JSON): whom and what the code will be issued for, and the token's `jti`
    /// and `exp`, checked (and the `jti` consumed) at `verify`.
    public var claims: String
    /// `email` or `otp`.
    public var kind: String
    public var codeDigest: Data
    public var attempts: Int
    public var expiresAt: Date
}
