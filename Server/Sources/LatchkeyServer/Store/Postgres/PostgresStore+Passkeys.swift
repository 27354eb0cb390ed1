import Foundation
import PostgresNIO

/// Passkeys, WebAuthn ceremonies, MFA step-up challenges and federated identities.
extension PostgresStore {
    // MARK: Passkeys

    public func insertPasskey(_ p: PasskeyRecord) async throws {
        try await connection { connection in try await self.insertPasskey(p, on: connection) }
    }

    /// Inserts the passkey; `StoreError.conflict("passkey")` when its credential ID is taken. SQLite checks, then
    /// inserts in its serialized write; here `ON CONFLICT DO NOTHING` does both in one statement: a concurrent insert
    /// of the same ID (on any instance) is waited for and then found, and a taken ID does not abort the transaction
    /// of the caller (which rolls back on the thrown conflict).
    func insertPasskey(_ p: PasskeyRecord, on connection: PostgresConnection) async throws {
        let inserted = try await execute(
            """
            INSERT INTO passkeys (id, user_id, public_key, algorithm, sign_count, aaguid, friendly_name, attestation_format,
                                  backup_eligible, backed_up, created_at, last_used_at)
            VALUES (\(p.id), \(p.userId), \(p.publicKey), \(p.algorithm), \(Int(p.signCount)), \(p.aaguid), \(p.friendlyName),
                    \(p.attestationFormat), \(p.backupEligible), \(p.backedUp), \(p.createdAt.epoch), \(p.lastUsedAt?.epoch))
            ON CONFLICT (id) DO NOTHING
            RETURNING 1
            """, on: connection)
        guard inserted == 1 else { throw StoreError.conflict("passkey") }
    }

    public func passkey(id: String) async throws -> PasskeyRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM passkeys WHERE id = \(id)", on: connection).map(Self.passkeyRecord)
        }
    }

    public func passkeys(userId: String) async throws -> [PasskeyRecord] {
        try await connection { connection in
            // SQLite breaks ties of created_at by rowid (insertion order); PostgreSQL has no stable equivalent in this
            // schema (ctid moves on every update), so ties are broken by the credential ID.
            try await self.rows("SELECT * FROM passkeys WHERE user_id = \(userId) ORDER BY created_at, seq", on: connection)
                .map(Self.passkeyRecord)
        }
    }

    public func recordPasskeyUse(id: String, previousSignCount: UInt32, signCount: UInt32, backedUp: Bool, now: Date) async throws -> Bool {
        let t = now.epoch, next = Int(signCount), previous = Int(previousSignCount)
        return try await connection { connection in
            // Compare-and-swap on the counter in one statement: of two concurrent assertions with the same counter (on
            // any instance) the second waits for the first's row lock, re-reads the row and no longer matches.
            try await self.execute(
                """
                UPDATE passkeys SET sign_count = \(next), backed_up = \(backedUp), last_used_at = \(t)
                WHERE id = \(id) AND sign_count = \(previous)
                RETURNING 1
                """, on: connection) == 1
        }
    }

    public func renamePasskey(id: String, userId: String, friendlyName: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute(
                "UPDATE passkeys SET friendly_name = \(friendlyName) WHERE id = \(id) AND user_id = \(userId) RETURNING 1",
                on: connection) == 1
        }
    }

    public func deletePasskey(id: String, userId: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute("DELETE FROM passkeys WHERE id = \(id) AND user_id = \(userId) RETURNING 1", on: connection) == 1
        }
    }

    private static func passkeyRecord(_ row: PostgresRow) throws -> PasskeyRecord {
        let c = Columns(row)
        return PasskeyRecord(
            id: try c("id"), userId: try c("user_id"), publicKey: try c("public_key"), algorithm: try c("algorithm"),
            signCount: UInt32(clamping: try c("sign_count", as: Int.self)), aaguid: try c("aaguid"),
            friendlyName: try c("friendly_name"), attestationFormat: try c("attestation_format"),
            backupEligible: try c("backup_eligible"), backedUp: try c("backed_up"),
            createdAt: try c.date("created_at") ?? .distantPast, lastUsedAt: try c.date("last_used_at"))
    }

    // MARK: Ceremonies

    public func insertPasskeyChallenge(_ c: PasskeyChallengeRecord) async throws {
        let profile = try SQLiteStore.json(c.profile), allowed = try SQLiteStore.json(c.allowedCredentials)
        try await transaction { connection in
            try await self.execute("DELETE FROM passkey_challenges WHERE expires_at < \(c.createdAt.epoch)", on: connection)
            try await self.execute(
                """
                INSERT INTO passkey_challenges (challenge_hash, ceremony, client_id, user_id, profile, friendly_name, origin,
                                                user_verification, allowed_credentials, created_at, expires_at)
                VALUES (\(c.challengeHash), \(c.ceremony.rawValue), \(c.clientId), \(c.userId), \(profile), \(c.friendlyName),
                        \(c.origin), \(c.userVerification), \(allowed), \(c.createdAt.epoch), \(c.expiresAt.epoch))
                """, on: connection)
        }
    }

    public func takePasskeyChallenge(hash: Data, now: Date) async throws -> PasskeyChallengeRecord? {
        try await connection { connection in
            // Take-once in one statement: of two concurrent takes (on any instance) only one gets the row back.
            guard
                let row = try await self.row(
                    "DELETE FROM passkey_challenges WHERE challenge_hash = \(hash) RETURNING *",
                    on: connection)
            else {
                return nil
            }
            let c = Columns(row)
            let ceremony: String = try c("ceremony")
            let profile = (try? SQLiteStore.decode([String: String].self, c("profile"))) ?? [:]
            let allowed = (try? SQLiteStore.decode([String].self, c("allowed_credentials"))) ?? []
            // Expired rows are consumed too (and reported as such by the caller), never reusable.
            return PasskeyChallengeRecord(
                challengeHash: try c("challenge_hash"),
                ceremony: PasskeyChallengeRecord.Ceremony(rawValue: ceremony) ?? .authentication,
                clientId: try c("client_id"), userId: try c("user_id"), profile: profile,
                friendlyName: try c("friendly_name"), origin: try c("origin"), userVerification: try c("user_verification"),
                allowedCredentials: allowed,
                createdAt: try c.date("created_at") ?? .distantPast, expiresAt: try c.date("expires_at") ?? .distantPast)
        }
    }

    /// Creates the account and its first passkey in one transaction: either both exist afterwards or neither.
    public func insertUser(_ user: UserRecord, withPasskey passkey: PasskeyRecord) async throws {
        let claims = try SQLiteStore.json(user.claims)
        do {
            try await transaction { connection in
                // The username check is a rule about rows that may not exist yet: under the lock every account write
                // takes, a concurrent creation or profile change (on any instance) cannot slip between check and insert.
                try await self.lock("accounts", "all", on: connection)
                if try await self.row(
                    "SELECT 1 FROM users WHERE lower(username COLLATE \"C\") = lower(\(user.username) COLLATE \"C\")", on: connection) != nil
                {
                    throw StoreError.conflict("username")
                }
                try await self.checkAccountNamespace(username: user.username, on: connection)
                try await self.execute(
                    """
                    INSERT INTO users (id, username, password_hash, claims, disabled, failed_logins, locked_until, created_at)
                    VALUES (\(user.id), \(user.username), \(user.passwordHash), \(claims), \(user.disabled), 0, NULL, \(user.createdAt.epoch))
                    """, on: connection)
                // A taken credential ID throws `conflict("passkey")` and the account is rolled back with it.
                try await self.insertPasskey(passkey, on: connection)
            }
        } catch let error where Self.isUniqueViolation(error) && (error as? PSQLError)?.serverInfo?[.constraintName] == "users_username" {
            // Only reachable by a writer that skips the accounts lock; same answer as the check above.
            throw StoreError.conflict("username")
        }
    }

    // MARK: MFA step-up challenges

    public func insertStepUpChallenge(_ c: StepUpChallengeRecord, now: Date) async throws -> Int {
        let t = now.epoch
        return try await transaction { connection in
            try await self.execute("DELETE FROM step_up_challenges WHERE expires_at < \(t)", on: connection)
            // One row per step-up token: a second start replaces the challenge (new id, code, kind) but keeps attempts.
            // The upsert is atomic against a concurrent start of the same token, and RETURNING reads the count of the
            // row as this statement left it (SQLite read it back inside its serialized write).
            let row = try await self.row(
                """
                INSERT INTO step_up_challenges (id, step_up_hash, claims, kind, code_digest, attempts, expires_at)
                VALUES (\(c.id), \(c.stepUpHash), \(c.claims), \(c.kind), \(c.codeDigest), \(c.attempts), \(c.expiresAt.epoch))
                ON CONFLICT (step_up_hash) DO UPDATE SET id = excluded.id, kind = excluded.kind, code_digest = excluded.code_digest,
                    expires_at = excluded.expires_at
                RETURNING attempts
                """, on: connection)
            return try row?.decode(Int.self) ?? 0
        }
    }

    public func stepUpChallenge(id: String) async throws -> StepUpChallengeRecord? {
        try await connection { connection in
            guard let row = try await self.row("SELECT * FROM step_up_challenges WHERE id = \(id)", on: connection) else { return nil }
            let c = Columns(row)
            return StepUpChallengeRecord(
                id: try c("id"), stepUpHash: try c("step_up_hash"), claims: try c("claims"), kind: try c("kind"),
                codeDigest: try c("code_digest"), attempts: try c("attempts"),
                expiresAt: try c.date("expires_at") ?? .distantPast)
        }
    }

    public func reserveStepUpAttempt(id: String, maxAttempts: Int) async throws -> Int? {
        try await connection { connection in
            // Check, count and read-back in one conditional UPDATE: concurrent guesses (on any instance) take turns on the
            // row lock and each re-checks the limit against the count the previous one left.
            try await self.row(
                """
                UPDATE step_up_challenges SET attempts = attempts + 1 WHERE id = \(id) AND attempts < \(maxAttempts)
                RETURNING attempts
                """, on: connection)?.decode(Int.self)
        }
    }

    /// Deletes the challenge; false when it was already gone (used by a concurrent request).
    public func takeStepUpChallenge(id: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute("DELETE FROM step_up_challenges WHERE id = \(id) RETURNING 1", on: connection) == 1
        }
    }

    // MARK: Federated identities

    public func federatedIdentity(provider: String, subject: String) async throws -> FederatedIdentityRecord? {
        try await connection { connection in
            guard
                let row = try await self.row(
                    "SELECT * FROM federated_identities WHERE provider = \(provider) AND subject = \(subject)",
                    on: connection)
            else { return nil }
            return try Self.federatedIdentity(row)
        }
    }

    public func linkFederatedIdentity(_ link: FederatedIdentityRecord) async throws {
        try await connection { connection in
            // SQLite's INSERT OR IGNORE: an existing link (provider, subject) is kept as it is.
            try await self.execute(
                """
                INSERT INTO federated_identities (provider, subject, user_id, created_at)
                VALUES (\(link.provider), \(link.subject), \(link.userId), \(link.createdAt.epoch))
                ON CONFLICT (provider, subject) DO NOTHING
                """, on: connection)
        }
    }
}
