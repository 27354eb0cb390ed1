import Foundation

/// Persistence for the identity server. Every method is atomic; implementations must be safe to call concurrently
/// from many requests and from several server instances sharing the same database.
public protocol Store: Sendable {
    // Users
    func insertUser(_ user: UserRecord) async throws
    func user(id: String) async throws -> UserRecord?
    func user(username: String) async throws -> UserRecord?
    /// Records a failed password attempt; locks the account once `maxFailures` is reached.
    func recordLoginFailure(userId: String, now: Date, maxFailures: Int, lockFor: TimeInterval) async throws -> UserRecord?
    func recordLoginSuccess(userId: String) async throws
    /// Replaces the user's username, claims and disabled flag (and password hash), stamping `updatedAt`.
    /// Throws `StoreError.conflict` when the username is taken.
    func updateUser(_ user: UserRecord) async throws
    /// Users whose claim `name` equals `value` (case-insensitive), for uniqueness checks such as `email`.
    func users(claim name: String, equals value: String) async throws -> [UserRecord]

    // Second factors
    func factors(userId: String) async throws -> [UserFactorRecord]
    func upsertFactor(_ factor: UserFactorRecord) async throws
    func deleteFactor(userId: String, kind: UserFactorRecord.Kind) async throws

    // Flow executions
    func insertFlowExecution(_ execution: FlowExecutionRecord) async throws
    func flowExecution(id: String, now: Date) async throws -> FlowExecutionRecord?
    /// Atomically replaces the challenge digest if `presented` is the current one; false when it is not (stale or
    /// replayed token, or a concurrent request won).
    func swapFlowChallenge(id: String, presented: Data, next: Data) async throws -> Bool
    func updateFlowExecution(id: String, state: Data, expiresAt: Date) async throws
    func deleteFlowExecution(id: String) async throws

    // Outbox (development delivery of email and SMS)
    func insertOutboxMessage(_ message: OutboxMessage) async throws
    func outboxMessages(recipient: String, limit: Int) async throws -> [OutboxMessage]
    /// Queues an email for SMTP delivery unless `limit` messages already wait (checked in the same transaction);
    /// false when the queue is full.
    func enqueueMail(_ mail: QueuedMail, limit: Int) async throws -> Bool
    /// Takes up to `limit` queued emails due at `now` and, in the same transaction, pushes their next attempt to
    /// `leaseUntil`, so a second server sharing the database does not send them too.
    func claimDueMail(now: Date, leaseUntil: Date, limit: Int) async throws -> [QueuedMail]
    /// Records a failed attempt and when to try again.
    func rescheduleMail(id: String, attempts: Int, nextAttemptAt: Date) async throws
    /// Removes a delivered (or abandoned) email: its body carries a code.
    func deleteMail(id: String) async throws

    // Invitations
    func insertInvitation(_ invitation: InvitationRecord) async throws
    func invitation(codeHash: Data) async throws -> InvitationRecord?
    /// Marks an unused invitation used; false when it was already used.
    func useInvitation(codeHash: Data, now: Date) async throws -> Bool

    /// Records a single-use token id (a flow assertion's `jti`); false when it was already consumed.
    func consumeTokenId(_ jti: String, expiresAt: Date, now: Date) async throws -> Bool
    /// Revokes every token family that holds a refresh token bound to the SSO session.
    func revokeFamilies(sessionId: String, reason: String, now: Date) async throws

    // Passkeys (WebAuthn) and federated identities
    func insertPasskey(_ passkey: PasskeyRecord) async throws
    /// Creates an account together with its first passkey, atomically (`StoreError.conflict` when either exists).
    func insertUser(_ user: UserRecord, withPasskey passkey: PasskeyRecord) async throws
    func passkey(id: String) async throws -> PasskeyRecord?
    func passkeys(userId: String) async throws -> [PasskeyRecord]
    /// Stores a new sign counter if the stored one is still `previousSignCount`; false when another sign-in won.
    func recordPasskeyUse(id: String, previousSignCount: UInt32, signCount: UInt32, backedUp: Bool, now: Date) async throws -> Bool
    func renamePasskey(id: String, userId: String, friendlyName: String) async throws -> Bool
    func deletePasskey(id: String, userId: String) async throws -> Bool
    func insertPasskeyChallenge(_ challenge: PasskeyChallengeRecord) async throws
    /// Removes and returns the ceremony with this challenge digest (single use), expired or not.
    func takePasskeyChallenge(hash: Data, now: Date) async throws -> PasskeyChallengeRecord?
    func insertStepUpChallenge(_ challenge: StepUpChallengeRecord, now: Date) async throws
    func stepUpChallenge(id: String) async throws -> StepUpChallengeRecord?
    /// Counts a wrong code; true while attempts remain (the challenge is deleted when they run out).
    func failStepUpChallenge(id: String, maxAttempts: Int) async throws -> Bool
    /// Deletes the challenge; false when it was already gone.
    func takeStepUpChallenge(id: String) async throws -> Bool
    func federatedIdentity(provider: String, subject: String) async throws -> FederatedIdentityRecord?
    func linkFederatedIdentity(_ link: FederatedIdentityRecord) async throws

    // Clients
    func upsertClient(_ client: ClientRecord) async throws
    func client(id: String) async throws -> ClientRecord?

    // Pending logins
    func insertLoginRequest(_ request: LoginRequestRecord) async throws
    func loginRequest(id: String, now: Date) async throws -> LoginRequestRecord?
    func deleteLoginRequest(id: String) async throws

    // Authorization codes
    func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws
    /// Marks the code used and returns it, or reports a replay (and revokes what the first redemption produced).
    func redeemAuthorizationCode(hash: Data, now: Date) async throws -> CodeRedemption
    func attachFamily(toCodeHash hash: Data, familyId: String) async throws

    // Token families, refresh and access tokens
    func insertFamily(_ family: TokenFamilyRecord) async throws
    func family(id: String) async throws -> TokenFamilyRecord?
    func revokeFamily(id: String, reason: String, now: Date) async throws
    func insertRefreshToken(_ token: RefreshTokenRecord) async throws
    func refreshToken(hash: Data) async throws -> RefreshTokenRecord?
    /// Atomically checks `presented` and replaces it by `next` (same family); detects replays.
    func rotateRefreshToken(presented hash: Data, next: RefreshTokenRecord, now: Date) async throws -> RefreshRotation
    func insertAccessToken(_ token: AccessTokenRecord) async throws
    func accessToken(jti: String) async throws -> AccessTokenRecord?
    func revokeAccessToken(jti: String, now: Date) async throws

    // SSO sessions
    func insertSession(_ session: SessionRecord) async throws
    func session(secretHash: Data) async throws -> SessionRecord?
    func endSession(id: String, now: Date) async throws

    // Signing keys
    func signingKeys() async throws -> [SigningKeyRecord]
    func insertSigningKey(_ key: SigningKeyRecord) async throws
    func retireSigningKeys(before: Date, now: Date) async throws
}
