import Foundation

/// A user account. Claims are the standard OpenID Connect claims the user has (`email`, `name`, …).
public struct UserRecord: Sendable, Equatable {
    public var id: String
    public var username: String
    public var passwordHash: String
    public var claims: [String: String]
    public var disabled: Bool
    public var failedLogins: Int
    public var lockedUntil: Date?
    public var createdAt: Date
    /// Last change of the profile or password (SCIM `meta.lastModified`); nil until the first change.
    public var updatedAt: Date? = nil
    /// Bumped by every profile, password or status write: profile updates are written only if the row is still at
    /// the version they read (optimistic concurrency), so a stale copy can never overwrite a newer one.
    public var version: Int = 0
}

/// A client as stored: the secret is kept only as a SHA-256 digest.
public struct ClientRecord: Sendable, Equatable {
    public var configuration: ClientConfiguration
    public var secretHash: Data?
    /// Where the application comes from: the configuration file (seeded at every start, the file wins) or a
    /// registration through the API (RFC 7591), which only that API changes.
    public var origin: ClientOrigin = .configuration
    /// SHA-256 of the registration access token (RFC 7592) of a registered application; nil for configured ones.
    public var registrationTokenHash: Data?
    /// The secret before the last rotation, accepted until `previousSecretExpiresAt` (the grace period the rotation
    /// chose), so the application's instances can move to the new secret one by one.
    public var previousSecretHash: Data?
    public var previousSecretExpiresAt: Date?
    /// When a registered application was created (RFC 7591 `client_id_issued_at`).
    public var issuedAt: Date?
    /// Who registered it, as the audit trail names actors: `client:<id>` for an automation acting for itself (client
    /// credentials), a user id for an administrator (the console, or the API with a personal token), `anonymous` for
    /// open registration. An automation manages only what it registered (review 3, R3-6); nil for configured
    /// applications and for registrations older than the record (then only administrators and the application's own
    /// registration access token manage it).
    public var registeredBy: String?

    public init(
        configuration: ClientConfiguration, secretHash: Data?, origin: ClientOrigin = .configuration, registrationTokenHash: Data? = nil,
        previousSecretHash: Data? = nil, previousSecretExpiresAt: Date? = nil, issuedAt: Date? = nil, registeredBy: String? = nil
    ) {
        self.configuration = configuration; self.secretHash = secretHash; self.origin = origin
        self.registrationTokenHash = registrationTokenHash; self.previousSecretHash = previousSecretHash
        self.previousSecretExpiresAt = previousSecretExpiresAt; self.issuedAt = issuedAt; self.registeredBy = registeredBy
    }

    /// The previous secret's hash while its grace period lasts.
    func previousSecretHash(at now: Date) -> Data? {
        guard let previousSecretHash, let until = previousSecretExpiresAt, now < until else { return nil }
        return previousSecretHash
    }
}

/// Where an application's settings live (`ClientRecord.origin`).
public enum ClientOrigin: String, Sendable, Codable {
    case configuration, registration
}

/// A login in progress: the validated authorization request waiting for the user to authenticate.
public struct LoginRequestRecord: Sendable, Equatable {
    public var id: String
    public var request: AuthorizationRequest
    public var createdAt: Date
    public var expiresAt: Date
}

/// The parameters of a validated authorization request, kept until a code is issued.
public struct AuthorizationRequest: Sendable, Codable, Equatable {
    /// The response type in force: `code` when none was recorded.
    var type: ResponseType { responseType ?? .code }

    public var clientId: String
    public var redirectUri: String
    public var scope: [String]
    public var state: String?
    public var nonce: String?
    public var codeChallenge: String?
    public var loginHint: String?
    public var uiLocales: String?
    public var maxAge: Int?
    public var prompt: [String]
    /// Where the hosted login sends the browser once signed in, instead of issuing a code: a same-site path (the
    /// device page, RFC 8628). Nil for authorization requests.
    public var returnTo: String? = nil
    /// RFC 9449 §10: the JWK thumbprint of the DPoP key the code is bound to (`dpop_jkt`, or a pushed request's proof).
    public var dpopJkt: String? = nil
    /// OpenID Connect Core §5.5: the `claims` request parameter, as sent (a JSON object), for the ID token and userinfo.
    public var claims: String? = nil
    /// `form_post` (OAuth 2.0 Form Post Response Mode), `fragment`, or nil for the query.
    public var responseMode: String? = nil
    /// What the response returns (`ResponseType`); nil is `code`, as every request was before the implicit and hybrid
    /// types existed (so a login request stored by an older instance reads the same).
    public var responseType: ResponseType? = nil
    /// The account the consent page may answer this request for: set only by `ConsentGate` once the sign-in (or the
    /// SSO session) is done and a third-party application's consent is owed. Without it the consent page answers
    /// nothing, so it can never stand in for the sign-in page's own checks.
    public var consentFor: String? = nil
    /// The account the passkey offer page (`PasskeyOfferGate`) may answer this request for: set once a password
    /// sign-in on the hosted page is done and the account has no passkey. Like `consentFor`, without it the page
    /// answers nothing.
    public var passkeyOfferFor: String? = nil
}

/// An issued authorization code (stored by hash, single use).
public struct AuthorizationCodeRecord: Sendable, Equatable {
    public var codeHash: Data
    public var clientId: String
    public var userId: String
    public var redirectUri: String
    public var scope: [String]
    public var nonce: String?
    public var codeChallenge: String?
    public var sessionId: String?
    public var authTime: Date
    public var expiresAt: Date
    public var usedAt: Date?
    /// The token family created when the code was redeemed; revoked if the code is replayed (RFC 6749 §4.1.2).
    public var familyId: String?
    /// How the user authenticated (RFC 8176 `amr` values), copied from the session into the tokens.
    public var amr: [String] = []
    /// The DPoP key the code is bound to (RFC 9449 §10): the token request must be proved by it.
    public var dpopJkt: String? = nil
    /// The authorization request's `claims` parameter (OpenID Connect Core §5.5), as sent.
    public var claims: String? = nil
}

/// One refresh token of a family. Only the newest token of a family is usable; presenting an older one is a replay.
public struct RefreshTokenRecord: Sendable, Equatable {
    public var tokenHash: Data
    public var familyId: String
    public var clientId: String
    public var userId: String
    public var scope: [String]
    public var sessionId: String?
    public var authTime: Date
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?
    /// The `amr` of the sign-in the family started from; every rotation keeps it.
    public var amr: [String] = []
    /// The thumbprint of the DPoP key the token is bound to (RFC 9449): refreshing needs a proof by that key. For a
    /// confidential client that uses DPoP, `anyDPoPKey`: refreshing needs a proof, by whichever key (see `TokenRoutes`).
    public var jkt: String? = nil

    /// `jkt` of a confidential client's refresh token issued with DPoP: not bound to the key (RFC 9449 §5: the client
    /// authenticates, and may rotate its key), but not to be refreshed without a proof either.
    public static let anyDPoPKey = "*"
}

/// What a rotation keeps so that the rotated token presented again soon after gets its successor rather than a
/// revocation (`refresh_token_reuse_seconds`; `RefreshTokenReuse`).
public struct RefreshReuse: Sendable, Equatable {
    /// The new token's plaintext sealed under the key-encryption key, bound to the presented token's row; kept on that
    /// row (with the new token's hash) until the new token is itself rotated.
    public var sealedSuccessor: String
    /// A token presented again is handed its successor only when it was rotated at or after this instant.
    public var rotatedSince: Date

    public init(sealedSuccessor: String, rotatedSince: Date) {
        self.sealedSuccessor = sealedSuccessor
        self.rotatedSince = rotatedSince
    }
}

/// A grant: the refresh-token family and every access token issued from it.
public struct TokenFamilyRecord: Sendable, Equatable {
    public var id: String
    public var clientId: String
    public var userId: String
    /// The sign-in session the family belongs to; ending the session revokes the family.
    public var sessionId: String?
    public var createdAt: Date
    public var revokedAt: Date?
    public var revokedReason: String?

    public init(
        id: String, clientId: String, userId: String, sessionId: String? = nil, createdAt: Date,
        revokedAt: Date? = nil, revokedReason: String? = nil
    ) {
        self.id = id; self.clientId = clientId; self.userId = userId; self.sessionId = sessionId; self.createdAt = createdAt
        self.revokedAt = revokedAt; self.revokedReason = revokedReason
    }
}

/// An access token's server-side state, so revocation and family revocation reach self-contained JWTs.
public struct AccessTokenRecord: Sendable, Equatable {
    public var jti: String
    public var familyId: String?
    public var clientId: String
    public var subject: String
    public var expiresAt: Date
    public var revokedAt: Date?
}

/// A browser SSO session (cookie value stored by hash).
public struct SessionRecord: Sendable, Equatable {
    /// Public session id (`sid` claim); not the cookie secret.
    public var id: String
    public var secretHash: Data
    public var userId: String
    public var authTime: Date
    public var createdAt: Date
    public var expiresAt: Date
    public var endedAt: Date?
    /// How the user authenticated (RFC 8176 `amr` values). A session reused for silent SSO must be as strong as the
    /// application and the account require (a password-only session does not satisfy an account with a second factor).
    public var amr: [String] = []
}

/// A grant still in force, as listed to its user or an administrator: a token family that is not revoked and still
/// holds a refresh token or an access token that has not expired.
public struct LiveGrant: Sendable, Equatable {
    public var family: TokenFamilyRecord
    /// The sign-in session the grant belongs to: the family's, or the one its refresh tokens name (families created
    /// before families remembered their session); nil for none.
    public var sessionId: String?
    /// When a refresh token of the family was last exchanged for a new one; nil when it never was.
    public var lastRefreshedAt: Date?
    /// When the last token of the family expires (its unused refresh token's, or its latest access token's).
    public var expiresAt: Date

    public init(family: TokenFamilyRecord, sessionId: String?, lastRefreshedAt: Date?, expiresAt: Date) {
        self.family = family; self.sessionId = sessionId; self.lastRefreshedAt = lastRefreshedAt; self.expiresAt = expiresAt
    }
}

/// A user's sessions and grants as `SessionStore.userSessions` lists them.
public struct UserSessionListing: Sendable, Equatable {
    /// The sessions that are not ended and either not expired or still holding a live grant (an `offline_access`
    /// refresh token outlives its session's expiry), newest first.
    public var sessions: [SessionRecord]
    /// Every live grant of the user, oldest first; a grant whose `sessionId` names none of `sessions` is bound to no
    /// session the user still has.
    public var grants: [LiveGrant]

    public init(sessions: [SessionRecord], grants: [LiveGrant]) { self.sessions = sessions; self.grants = grants }
}

/// A persisted signing key. Retired keys stay published until the tokens they signed have expired.
public struct SigningKeyRecord: Sendable, Equatable {
    public var kid: String
    public var algorithm: String
    public var pem: String
    public var createdAt: Date
    public var retiredAt: Date?
}

/// Outcome of redeeming an authorization code.
public enum CodeRedemption: Sendable, Equatable {
    case redeemed(AuthorizationCodeRecord)
    /// The code was already used; the family it produced (if any) has been revoked.
    case replayed(familyId: String?)
    case notFound
}

/// Outcome of rotating a refresh token.
public enum RefreshRotation: Sendable, Equatable {
    case rotated(previous: RefreshTokenRecord)
    /// A token rotated within the reuse interval (`RefreshReuse`) came back: the family's live token, sealed, is handed
    /// out again instead of revoking the family (its answer was lost, or another process of the same app raced it, or
    /// a request of a killed process arrived late, after the family rotated on). `sealedOn` is the hash of the row
    /// that keeps the sealed copy (the live token's predecessor), which the seal is bound to. Nothing was written.
    case reissued(previous: RefreshTokenRecord, sealedSuccessor: String, sealedOn: Data)
    /// An already-rotated token was presented: the whole family is now revoked.
    case replayed(familyId: String)
    case revoked
    case expired
    case notFound
}

/// An account's password lockout as administrators see it (`Store.lockout`).
public struct AccountLockout: Sendable, Equatable {
    /// The account-wide lock's end, when it is locked for every address.
    public var lockedUntil: Date?
    /// Consecutive failures from all addresses together since the last success.
    public var failedAttempts: Int
    /// Addresses (throttle keys) the account is locked for now, and until when the latest of those locks lasts.
    public var lockedAddresses: Int
    public var latestAddressLockUntil: Date?

    public var isLocked: Bool { lockedUntil != nil || lockedAddresses > 0 }
}

/// The answer of `Store.reserveLoginAttempt`.
public enum LoginAttemptReservation: Sendable, Equatable {
    /// The attempt is counted; check the password, then settle it.
    case reserved
    /// Locked (until the date), or (nil) every allowed attempt is already being checked.
    case refused(lockedUntil: Date?)
}

/// Lockout limits (`LoginPolicy`): failures per account and address, failures per account from all addresses
/// together, and how long a lock lasts.
public struct LoginLimits: Sendable, Equatable {
    public var perAddress: Int
    public var perAccount: Int
    public var lockFor: TimeInterval
    public init(perAddress: Int, perAccount: Int, lockFor: TimeInterval) {
        self.perAddress = perAddress; self.perAccount = perAccount; self.lockFor = lockFor
    }
}

/// A hosted-page sign-in whose first factor was accepted and that now owes the second one. Keyed by the login
/// request id and bound to the browser that passed the first factor (the digest of an HttpOnly cookie).
public struct LoginSecondFactorRecord: Sendable, Equatable {
    public var requestId: String
    /// SHA-256 of the browser-binding cookie's value.
    public var browserHash: Data
    public var userId: String
    /// `totp` or `email`.
    public var kind: String
    /// SHA-256 of the emailed code (empty for authenticator-app codes, which are computed, not sent).
    public var codeDigest: Data
    public var attempts: Int
    public var sends: Int
    /// The first factor's `amr` and time.
    public var amr: [String]
    public var authTime: Date
    public var expiresAt: Date
}

/// An authorization request pushed to `/oauth2/par` (RFC 9126), waiting for its `request_uri` at `/oauth2/authorize`.
public struct PushedRequestRecord: Sendable, Equatable {
    /// SHA-256 of the `request_uri`.
    public var uriHash: Data
    public var clientId: String
    /// The authorization request's parameters, as pushed.
    public var parameters: [String: [String]]
    public var expiresAt: Date
}

/// A device authorization (RFC 8628): the device polls with `device_code` while a person enters `user_code` on the
/// device page and allows or denies it.
public struct DeviceAuthorizationRecord: Sendable, Equatable {
    public enum Status: String, Sendable {
        case pending, approved, denied, used
    }
    /// SHA-256 of the device code (a long random secret).
    public var deviceCodeHash: Data
    /// The keyed digest of the normalized user code (eight letters: short, so a bare hash would be reversible).
    public var userCodeDigest: Data
    public var clientId: String
    public var scope: [String]
    public var status: Status
    /// Who allowed it, from the sign-in session that did.
    public var userId: String?
    public var sessionId: String?
    public var authTime: Date?
    public var amr: [String] = []
    public var createdAt: Date
    public var expiresAt: Date
    /// The polling interval the device must keep, seconds (raised by `slow_down`).
    public var interval: Int
    public var lastPolledAt: Date?
}

/// What a device's poll finds (RFC 8628 §3.5).
public enum DevicePoll: Sendable, Equatable {
    case notFound
    case expired
    /// Polled sooner than the interval; the interval is now `interval`.
    case slowDown(interval: Int)
    case pending
    case denied
    /// Allowed: handed out once (the record is now `used`).
    case approved(DeviceAuthorizationRecord)
}

extension UserSessionListing {
    /// A token family as both stores read it for the listing, before it is known to be live.
    struct Candidate: Sendable {
        var family: TokenFamilyRecord
        var tokenSessionId: String?
        var lastRefreshedAt: Date?
        /// The expiry of the family's unused refresh token, if it has one.
        var refreshExpiresAt: Date?
    }

    /// The listing from what a store read in one snapshot: the user's sessions not ended, the families not revoked (with
    /// what their refresh tokens say), and the latest expiry of each family's unrevoked access tokens. The rules live
    /// here, once for both stores.
    static func assemble(sessions: [SessionRecord], families: [Candidate], accessExpiry: [String: Date], now: Date) -> UserSessionListing {
        let grants = families.compactMap { candidate -> LiveGrant? in
            let expiry = [candidate.refreshExpiresAt, accessExpiry[candidate.family.id]].compactMap { $0 }.max()
            guard let expiry, expiry > now else { return nil }
            return LiveGrant(
                family: candidate.family, sessionId: candidate.family.sessionId ?? candidate.tokenSessionId,
                lastRefreshedAt: candidate.lastRefreshedAt, expiresAt: expiry)
        }.sorted { ($0.family.createdAt, $0.family.id) < ($1.family.createdAt, $1.family.id) }
        let held = Set(grants.compactMap(\.sessionId))
        let open = sessions.filter { $0.endedAt == nil && ($0.expiresAt > now || held.contains($0.id)) }
            .sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
        return UserSessionListing(sessions: open, grants: grants)
    }
}
