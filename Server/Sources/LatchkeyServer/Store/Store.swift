import Foundation

/// Errors a store reports for the caller to turn into an API answer.
public enum StoreError: Error, Equatable {
    /// A unique value (username) is already taken.
    case conflict(String)
    /// The database cannot be reached or did not answer in time (the server answers 503 and retries on the next
    /// request). The reason is for the log only: it never names the database URL or its password.
    case unavailable(String)
    /// A value the database cannot hold (PostgreSQL text refuses the NUL character): the request is malformed (400);
    /// SQLite stores such values, so no lookup can match them there either.
    case invalidInput
    /// The database was migrated by a newer Latchkey than this one: starting would write rows it does not understand.
    case schemaTooNew(found: Int, known: Int)
}

/// Accounts: profiles, password attempts and lockouts, pending email changes.
public protocol UserStore: Sendable {
    func insertUser(_ user: UserRecord) async throws
    func user(id: String) async throws -> UserRecord?
    func user(username: String) async throws -> UserRecord?
    /// A new password, in one transaction: replaces only the hash (bumping the version), forgets every failed attempt
    /// and lock of the account from every address, and ends every session and token family of the account except the
    /// kept ones (`revokeUserSessions`). Nothing of it can happen without the rest.
    func replacePassword(userId: String, passwordHash: String, keepingSession: String?, keepingFamily: String?, now: Date) async throws
    /// Replaces the user's username, claims and disabled flag (and password hash), stamping `updatedAt`, only if the
    /// row is still at `user.version`. Throws `StoreError.conflict("username")` when the username is taken and
    /// `StoreError.conflict("version")` when the copy is stale. Prefer `updateProfile`/`replacePassword`.
    func updateUser(_ user: UserRecord) async throws
    /// Users whose claim `name` equals `value` (case-insensitive), for uniqueness checks such as `email`.
    func users(claim name: String, equals value: String) async throws -> [UserRecord]
    /// Reserves one password attempt from `address` (a throttle key) before the password is checked, counting it as
    /// a failure in advance, for the account and address and for the account as a whole (one transaction): refused
    /// while either is locked or has its limit of attempts counted (settled failures plus attempts still being
    /// checked), so concurrent guesses cannot all pass a check made before any of them is recorded.
    func reserveLoginAttempt(userId: String, address: String, now: Date, limits: LoginLimits) async throws -> LoginAttemptReservation
    /// Settles a reserved attempt whose password was wrong: locks the account for that address, or for everyone,
    /// once its limit is counted. Returns the lock's end when this failure locked either.
    func settleLoginFailure(userId: String, address: String, now: Date, limits: LoginLimits) async throws -> Date?
    /// Settles a reserved attempt whose password was right: clears the failure counts, unless the account (for that
    /// address or for everyone) was locked meanwhile by concurrent failures; then nothing changes and the result is
    /// false (refuse the login).
    func settleLoginSuccess(userId: String, address: String, now: Date) async throws -> Bool
    /// Gives back a reserved attempt whose password could not be checked (the hash queue was full, a store error):
    /// an attempt that was never judged must not count towards a lock.
    func releaseLoginAttempt(userId: String, address: String) async throws
    /// The account's lockout now (nil for an unknown account): the account-wide lock and the addresses it is locked for.
    func lockout(userId: String, now: Date) async throws -> AccountLockout?
    /// An administrator's unlock: clears the account-wide lock and failure count and every per-address one. False for an
    /// unknown account.
    func clearLockout(userId: String) async throws -> Bool
    /// Writes the profile (username, claims and, when not nil, the disabled flag) only if the row is still at
    /// `expectedVersion`, and bumps the version. False when another write came first (the caller's copy is stale).
    /// Never touches the password hash. Throws `StoreError.conflict` when the username is taken.
    func updateProfile(
        userId: String, username: String, claims: [String: String], disabled: Bool?, expectedVersion: Int,
        updatedAt: Date
    ) async throws -> Bool

    /// One page of the accounts that meet every condition of `query`, in a stable order (creation time, then id), with
    /// how many meet them in all (`UserPage.total`). `offset` rows are skipped, at most `limit` returned.
    func users(matching query: UserQuery, offset: Int, limit: Int) async throws -> UserPage
    /// Deletes the account, in one transaction with the end of everything it held: every session ends, every token
    /// family is revoked (so its refresh and access tokens stop working; the revoked families stay, as for any
    /// revocation), family-less access tokens are revoked, unredeemed authorization codes, pending second factors,
    /// approved device authorizations and passkey ceremonies of the account are deleted, and its factors, passkeys,
    /// federated links, pending email change and login attempts go with the row (`ON DELETE CASCADE`). False when
    /// there was no such account.
    func deleteUser(id: String, now: Date) async throws -> Bool

    /// Stores the user's pending email change, replacing an earlier one (a new code voids the old).
    func replaceEmailChange(_ change: EmailChangeRecord) async throws
    /// The user's pending email change, if any.
    func emailChange(userId: String) async throws -> EmailChangeRecord?
    /// Checks a code against the pending email change in one transaction: a match removes it (single use) and
    /// returns it; a miss counts an attempt and removes it at `maxAttempts`.
    func redeemEmailChange(userId: String, codeDigest: Data, maxAttempts: Int, now: Date) async throws -> EmailChangeRedemption
}

/// Second factors (TOTP, emailed codes) and TOTP replay protection.
public protocol SecondFactorStore: Sendable {
    func factors(userId: String) async throws -> [UserFactorRecord]
    func upsertFactor(_ factor: UserFactorRecord) async throws
    func deleteFactor(userId: String, kind: UserFactorRecord.Kind) async throws
    /// Records `step` as the user's last accepted TOTP time step if it is later than the stored one (one conditional
    /// update); false when a code of this step or a later one was already accepted (a replay).
    func acceptTOTPStep(userId: String, step: Int64) async throws -> Bool
}

/// Recovery codes: single-use codes that stand in for the account's second factor when its device is lost. Stored as
/// keyed digests (`Accounts.codeDigest`); a set is replaced whole.
public protocol RecoveryCodeStore: Sendable {
    /// Replaces the account's recovery codes with `digests` in one transaction: the earlier set stops working.
    func replaceRecoveryCodes(userId: String, digests: [Data], createdAt: Date) async throws
    /// The account's set, counted; nil when it has none.
    func recoveryCodes(userId: String) async throws -> RecoveryCodeSummary?
    /// Marks the account's unused code with `digest` used at `at`, in one conditional update: true exactly once per
    /// code, however many requests race; false for a used, unknown or another account's code.
    func useRecoveryCode(userId: String, digest: Data, at: Date) async throws -> Bool
    func deleteRecoveryCodes(userId: String) async throws
}

/// Per-account budgets (wrong one-time codes, recovery emails), as sliding windows of events per key. Every caller
/// uses the same window (`LoginPolicy.codeWindowSeconds`): older events may be dropped for all keys.
public protocol AccountEventStore: Sendable {
    /// Records an event for `key` only while fewer than `limit` are within the last `window` seconds (check and record
    /// are one transaction); returns whether it was recorded and the events in the window afterwards.
    func admitAccountEvent(key: String, now: Date, window: TimeInterval, limit: Int) async throws -> (admitted: Bool, events: AccountEventCount)
    func accountEvents(key: String, now: Date, window: TimeInterval) async throws -> AccountEventCount
    func clearAccountEvents(key: String) async throws
}

/// Running app-native flows (thunderID `/flow/execute`).
public protocol FlowExecutionStore: Sendable {
    func insertFlowExecution(_ execution: FlowExecutionRecord) async throws
    func flowExecution(id: String, now: Date) async throws -> FlowExecutionRecord?
    /// Atomically replaces the challenge digest if `presented` is the current one; false when it is not (stale or
    /// replayed token, or a concurrent request won).
    func swapFlowChallenge(id: String, presented: Data, next: Data) async throws -> Bool
    func updateFlowExecution(id: String, state: Data, expiresAt: Date) async throws
    func deleteFlowExecution(id: String) async throws
}

/// Messages kept for the development outbox (`StoreOutbox`); email for a relay waits in the delivery queue.
public protocol OutboxStore: Sendable {
    func insertOutboxMessage(_ message: OutboxMessage) async throws
    func outboxMessages(recipient: String, limit: Int) async throws -> [OutboxMessage]
}

/// Invitations to register.
public protocol InvitationStore: Sendable {
    func insertInvitation(_ invitation: InvitationRecord) async throws
    func invitation(codeHash: Data) async throws -> InvitationRecord?
    /// Marks an unused invitation used; false when it was already used.
    func useInvitation(codeHash: Data, now: Date) async throws -> Bool
}

/// Single-use token ids (DPoP proofs' and the server's own tokens' `jti`).
public protocol SingleUseStore: Sendable {
    /// Records a single-use token id (a DPoP proof's, a flow assertion's, a login ticket's `jti`); false when it was
    /// already consumed. `expiresAt` is the last moment the id could be accepted; the record is kept
    /// `SingleUseRetention.skewMargin` longer and pruned by the database's clock (`pruneExpired`), not by any
    /// instance's: an instance whose clock runs ahead must not forget an id that one running behind still accepts.
    /// Recording never deletes (no scan on the request's path).
    func consumeTokenId(_ jti: String, expiresAt: Date) async throws -> Bool
}

/// Device authorization requests (RFC 8628).
public protocol DeviceAuthorizationStore: Sendable {
    func insertDeviceAuthorization(_ authorization: DeviceAuthorizationRecord) async throws
    /// The pending, unexpired authorization of a user code.
    func pendingDeviceAuthorization(userCodeDigest: Data, now: Date) async throws -> DeviceAuthorizationRecord?
    /// Allows (with the deciding session's user) or denies a pending authorization; false when it is no longer pending.
    func decideDeviceAuthorization(
        userCodeDigest: Data, approve: Bool, userId: String, sessionId: String, authTime: Date,
        amr: [String], now: Date
    ) async throws -> Bool
    /// One poll, atomically: the interval is enforced (and raised on `slow_down`), an approval is handed out once.
    /// Another client's device code is `.notFound` and left untouched.
    func pollDeviceAuthorization(deviceCodeHash: Data, clientId: String, now: Date) async throws -> DevicePoll
}

/// Pushed authorization requests (RFC 9126).
public protocol PushedRequestStore: Sendable {
    func insertPushedRequest(_ request: PushedRequestRecord) async throws
    /// Takes a pushed request of `clientId` out (single use): nil when unknown, another client's (left in place, so
    /// that a leaked `request_uri` presented with the wrong `client_id` cannot burn it), already used or expired.
    func takePushedRequest(uriHash: Data, clientId: String, now: Date) async throws -> PushedRequestRecord?
}

/// Passkeys, their ceremonies, and step-up challenges.
public protocol PasskeyStore: Sendable {
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
    /// Stores the challenge as the one active challenge of its step-up token: a challenge the token already has is
    /// replaced, and its wrong-code count carries over (a new start gives no fresh attempts). Returns that count.
    @discardableResult
    func insertStepUpChallenge(_ challenge: StepUpChallengeRecord, now: Date) async throws -> Int
    func stepUpChallenge(id: String) async throws -> StepUpChallengeRecord?
    /// Reserves one attempt before the code is checked (so concurrent guesses cannot exceed `maxAttempts`); returns
    /// the attempts used including this one, or nil when none remain. An exhausted challenge stays until it expires,
    /// so its step-up token cannot start over.
    func reserveStepUpAttempt(id: String, maxAttempts: Int) async throws -> Int?
    /// Deletes the challenge; false when it was already gone.
    func takeStepUpChallenge(id: String) async throws -> Bool
}

/// Accounts' identities at other providers (Sign in with Apple, federation): one account per provider and subject.
public protocol FederatedIdentityStore: Sendable {
    func federatedIdentity(provider: String, subject: String) async throws -> FederatedIdentityRecord?
    /// Links (provider, subject) to the account; an existing link of that pair is kept as it is (the caller reads it
    /// back to learn whether this one won).
    func linkFederatedIdentity(_ link: FederatedIdentityRecord) async throws
    /// The account's links, oldest first.
    func federatedIdentities(userId: String) async throws -> [FederatedIdentityRecord]
    /// Removes the account's links to `provider`; false when there were none.
    func unlinkFederatedIdentity(provider: String, userId: String) async throws -> Bool
    /// Keeps the provider's newest refresh token (sealed) on the link of (provider, subject); nothing when there is no
    /// such link.
    func keepFederatedRefreshToken(provider: String, subject: String, sealed: String) async throws
}

/// Federated sign-ins in progress: the upstream leg's `state` (with its PKCE verifier and nonce) until the provider
/// comes back, and the verified result until the app that asked collects it. Kept in the store, not in memory, so the
/// callback may land on any instance.
public protocol FederatedLoginStore: Sendable {
    func insertFederatedLogin(_ record: FederatedLoginRecord) async throws
    /// Deletes and returns the record (once: a concurrent take of the same handle gets nil), nil when absent or expired.
    func takeFederatedLogin(handleHash: Data, now: Date) async throws -> FederatedLoginRecord?
}

/// Registered clients (applications).
public protocol ClientStore: Sendable {
    /// Creates or replaces a client with every column of `client` (the configured clients, at start).
    func upsertClient(_ client: ClientRecord) async throws
    func client(id: String) async throws -> ClientRecord?
    /// Creates a client; `StoreError.conflict` when the id is taken.
    func insertClient(_ client: ClientRecord) async throws
    /// Replaces an existing client's row; false when there is none (deleted meanwhile: it is not brought back).
    func updateClient(_ client: ClientRecord) async throws -> Bool
    /// Deletes a client and ends what it holds, in one transaction: its token families are revoked (reason
    /// `client_deleted`), its access tokens revoked, its unused authorization codes and pushed requests deleted.
    /// False when there was no such client.
    func deleteClient(id: String, now: Date) async throws -> Bool
    /// Every client, ordered by id.
    func clients() async throws -> [ClientRecord]
}

/// Authorization requests waiting for the hosted login, and their pending second factors.
public protocol LoginRequestStore: Sendable {
    func insertLoginRequest(_ request: LoginRequestRecord) async throws
    func loginRequest(id: String, now: Date) async throws -> LoginRequestRecord?
    func deleteLoginRequest(id: String) async throws
    /// Records a pending second factor for a login request; false when one already exists (it is never replaced, so
    /// sending the password again cannot reset the attempt counter).
    func insertLoginSecondFactor(_ pending: LoginSecondFactorRecord, now: Date) async throws -> Bool
    func loginSecondFactor(requestId: String) async throws -> LoginSecondFactorRecord?
    /// Counts a wrong code; true while attempts remain (the row is deleted when they run out).
    func failLoginSecondFactor(requestId: String, maxAttempts: Int) async throws -> Bool
    /// Replaces the emailed code if fewer than `maxSends` were sent; false otherwise. Attempts are not reset.
    func resendLoginSecondFactor(requestId: String, codeDigest: Data, expiresAt: Date, maxSends: Int) async throws -> Bool
    /// Deletes the pending second factor; false when it was already gone (used by a concurrent request).
    func takeLoginSecondFactor(requestId: String) async throws -> Bool
}

/// Single-use authorization codes.
public protocol AuthorizationCodeStore: Sendable {
    func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws
    /// Marks the code used, creates token family `familyId` for it (its client, user and session) and attaches it, all
    /// in one transaction; or reports a replay (and revokes the family the first redemption produced).
    func redeemAuthorizationCode(hash: Data, familyId: String, now: Date) async throws -> CodeRedemption
}

/// Token families, refresh tokens (rotated, with replay detection) and access tokens.
public protocol TokenStore: Sendable {
    func insertFamily(_ family: TokenFamilyRecord) async throws
    func family(id: String) async throws -> TokenFamilyRecord?
    func revokeFamily(id: String, reason: String, now: Date) async throws
    func insertRefreshToken(_ token: RefreshTokenRecord) async throws
    func refreshToken(hash: Data) async throws -> RefreshTokenRecord?
    /// Atomically checks `presented` and replaces it by `next` (same family); detects replays. With `reuse`, the
    /// rotation keeps `next` sealed on the presented token's row, and a token presented again that was rotated at or
    /// after `reuse.rotatedSince` is `.reissued` the family's live token when that is unspent and unexpired (nothing is
    /// written); any other reuse is a replay that revokes the family, as without `reuse`.
    func rotateRefreshToken(presented hash: Data, next: RefreshTokenRecord, reuse: RefreshReuse?, now: Date) async throws -> RefreshRotation
    func insertAccessToken(_ token: AccessTokenRecord) async throws
    func accessToken(jti: String) async throws -> AccessTokenRecord?
    func revokeAccessToken(jti: String, now: Date) async throws
}

extension TokenStore {
    /// Rotation without a reuse interval: every reuse of a rotated token is a replay.
    public func rotateRefreshToken(presented hash: Data, next: RefreshTokenRecord, now: Date) async throws -> RefreshRotation {
        try await rotateRefreshToken(presented: hash, next: next, reuse: nil, now: now)
    }
}

/// Sign-in sessions.
public protocol SessionStore: Sendable {
    func insertSession(_ session: SessionRecord) async throws
    func session(secretHash: Data) async throws -> SessionRecord?
    func session(id: String) async throws -> SessionRecord?
    /// Ends the session and revokes its token families, atomically.
    func endSession(id: String, now: Date) async throws
    /// Ends the session only when no token family of it is live any more (its apps signed out, revoking their
    /// tokens), in one step; true when the session is over (now or before), false when live tokens keep it.
    func endSessionHoldingNoTokens(id: String, now: Date) async throws -> Bool
    /// Takes up to `limit` sessions that have ended (by any path) and whose end is not announced yet, oldest end first,
    /// and pushes their lease to `leaseUntil` in the same transaction, so that two instances do not announce one
    /// session (and a pass that dies leaves them to the next after the lease). `BackChannelLogout` announces them.
    func claimEndedSessions(now: Date, leaseUntil: Date, limit: Int) async throws -> [SessionRecord]
    /// Records that a session's end was announced (its notices queued); the pruner may then delete the session.
    func markSessionEndAnnounced(id: String) async throws
    /// The applications that took part in a session: those holding (or having held) a token family of it, revoked or
    /// not. Whom to tell when it ends (`BackChannelLogout`, `FrontChannelLogout`).
    func sessionClientIds(sessionId: String) async throws -> [String]
    /// Ends every session of the user and revokes every token family of the user, except the kept session and the
    /// kept family (the caller's own, when a signed-in user changes the password); nil keeps nothing.
    func revokeUserSessions(userId: String, keepingSession: String?, keepingFamily: String?, reason: String, now: Date) async throws
    /// The user's sessions that are not over and live token families at `now` (see `UserSessionListing`), read in one
    /// snapshot; never another user's.
    func userSessions(userId: String, now: Date) async throws -> UserSessionListing
}

/// The server's signing keys.
public protocol SigningKeyStore: Sendable {
    func signingKeys() async throws -> [SigningKeyRecord]
    func insertSigningKey(_ key: SigningKeyRecord) async throws
    func retireSigningKeys(before: Date, now: Date) async throws
}

/// Per-address throttles shared by every instance (flood limits on failed logins, challenges, starts). A single
/// instance on SQLite keeps them in memory instead (`AddressThrottle`); the server uses these with a shared store.
public protocol AddressEventStore: Sendable {
    /// Counts an event of `bucket` for `address` unless `limit` events are already within the last `window` seconds
    /// (check and count are atomic across instances): nil when admitted, otherwise the seconds (≥ 1) until the oldest
    /// counted event leaves the window.
    func reserveAddressEvent(bucket: String, address: String, now: Date, window: TimeInterval, limit: Int) async throws -> Int?
    /// Takes back one event recorded at `at` (the attempt it reserved turned out not to count).
    func releaseAddressEvent(bucket: String, address: String, at: Date) async throws
}

/// The audit trail (`AuditTrail`): security-relevant events, kept for `audit_retention_days`.
public protocol AuditStore: Sendable {
    func insertAuditEvent(_ event: AuditEvent) async throws
    /// The events `query` selects, newest first by (at, id), at most `query.limit`; from just after `query.after`.
    func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent]
    /// Deletes events older than `before`; returns how many.
    func pruneAuditEvents(before: Date) async throws -> Int
}

/// The delivery queue (`DeliveryLoop`): mail, audit webhooks and back-channel logout in one table, one queue per kind
/// and destination, each row retried until delivered or given up, claimed under a lease so that instances sharing the
/// store never deliver one row at once.
public protocol DeliveryStore: Sendable {
    /// Queues a delivery unless `limit` deliveries of its kind and destination already wait, or, when its event type is
    /// one of `share`'s, unless `share.limit` deliveries of those types already wait there (both checked in the same
    /// transaction); false when that queue (or the share) is full.
    func enqueueDelivery(_ delivery: QueuedDelivery, limit: Int, share: DeliveryQueueShare?) async throws -> Bool
    /// Takes up to `limit` deliveries of `kind` to `destination` due at `now` (the earliest due first, then the oldest)
    /// and, in the same transaction, pushes their next attempt to `leaseUntil`, so a second server sharing the database
    /// does not deliver them too (and takes them up if this one dies before it is done).
    func claimDueDeliveries(kind: DeliveryKind, destination: String, now: Date, leaseUntil: Date, limit: Int) async throws
        -> [QueuedDelivery]
    /// Records the failed attempts so far and when to try again (or gives a claimed row back, attempts unchanged).
    func rescheduleDelivery(id: String, attempts: Int, nextAttemptAt: Date) async throws
    /// Removes a delivered (or given up) delivery: its body may carry a code or a token.
    func deleteDelivery(id: String) async throws
    /// How many deliveries of `kind` wait, by destination (destinations with none are absent).
    func deliveryQueueDepths(kind: DeliveryKind) async throws -> [String: Int]
}

extension DeliveryStore {
    /// Queues a delivery unless `limit` deliveries of its kind and destination already wait (no share).
    func enqueueDelivery(_ delivery: QueuedDelivery, limit: Int) async throws -> Bool {
        try await enqueueDelivery(delivery, limit: limit, share: nil)
    }
}

/// Deleting what can no longer be used.
public protocol MaintenanceStore: Sendable {
    /// Deletes rows that can no longer be used (see `IdentityServer.pruneExpired`); returns how many.
    func pruneExpired(now: Date, outboxBefore: Date) async throws -> Int
}

/// Persistence for the identity server: every aggregate's store in one. Every method is atomic; implementations must be
/// safe to call concurrently from many requests and from several server instances sharing the same database. A part of
/// the server that needs only some aggregates declares only those (`any ClientStore & TokenStore`).
public protocol Store:
    UserStore, SecondFactorStore, RecoveryCodeStore, AccountEventStore, FlowExecutionStore, OutboxStore, InvitationStore, SingleUseStore,
    DeviceAuthorizationStore,
    PushedRequestStore, PasskeyStore, FederatedIdentityStore, FederatedLoginStore, ClientStore, LoginRequestStore, AuthorizationCodeStore, TokenStore,
    SessionStore,
    SigningKeyStore,
    AddressEventStore, MaintenanceStore, AuditStore, DeliveryStore, ConsentStore, AccountDeletionStore
{}

/// How long single-use ids outlive their acceptance (`Store.consumeTokenId`).
public enum SingleUseRetention {
    /// How far apart the clocks of the instances sharing one store may be, with a consumed id still remembered by
    /// all of them: five minutes, far beyond what NTP-synchronised machines drift.
    public static let skewMargin: TimeInterval = 300
}
