import Foundation
import GRDB

/// Passkeys, WebAuthn ceremonies and federated identities.
extension SQLiteStore {
    static func migratePasskeys(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE passkeys (
                    id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, public_key BLOB NOT NULL,
                    algorithm INTEGER NOT NULL, sign_count INTEGER NOT NULL, aaguid BLOB NOT NULL, friendly_name TEXT NOT NULL,
                    attestation_format TEXT NOT NULL, backup_eligible INTEGER NOT NULL, backed_up INTEGER NOT NULL,
                    created_at REAL NOT NULL, last_used_at REAL);
                CREATE INDEX passkeys_user ON passkeys(user_id);
                CREATE TABLE passkey_challenges (
                    challenge_hash BLOB PRIMARY KEY, ceremony TEXT NOT NULL, client_id TEXT, user_id TEXT, profile TEXT NOT NULL,
                    friendly_name TEXT, origin TEXT NOT NULL, user_verification TEXT NOT NULL, allowed_credentials TEXT NOT NULL,
                    created_at REAL NOT NULL, expires_at REAL NOT NULL);
                CREATE TABLE step_up_challenges (
                    id TEXT PRIMARY KEY, step_up_token TEXT NOT NULL, kind TEXT NOT NULL, code_digest BLOB NOT NULL,
                    attempts INTEGER NOT NULL, expires_at REAL NOT NULL);
                CREATE TABLE federated_identities (
                    provider TEXT NOT NULL, subject TEXT NOT NULL, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at REAL NOT NULL, PRIMARY KEY (provider, subject));
                """)
    }

    // MARK: Passkeys

    public func insertPasskey(_ p: PasskeyRecord) async throws {
        try await pool.write { db in try Self.insertPasskey(db, p) }
    }

    static func insertPasskey(_ db: Database, _ p: PasskeyRecord) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM passkeys WHERE id = ?", arguments: [p.id]) == true {
            throw StoreError.conflict("passkey")
        }
        try db.execute(
            sql: """
                INSERT INTO passkeys (id, user_id, public_key, algorithm, sign_count, aaguid, friendly_name, attestation_format,
                                      backup_eligible, backed_up, created_at, last_used_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                p.id, p.userId, p.publicKey, p.algorithm, Int64(p.signCount), p.aaguid, p.friendlyName, p.attestationFormat,
                p.backupEligible, p.backedUp, p.createdAt.timeIntervalSince1970, p.lastUsedAt?.timeIntervalSince1970
            ])
    }

    public func passkey(id: String) async throws -> PasskeyRecord? {
        try await pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM passkeys WHERE id = ?", arguments: [id]).map(Self.passkey) }
    }

    public func passkeys(userId: String) async throws -> [PasskeyRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM passkeys WHERE user_id = ? ORDER BY created_at, rowid", arguments: [userId]).map(Self.passkey)
        }
    }

    public func recordPasskeyUse(id: String, previousSignCount: UInt32, signCount: UInt32, backedUp: Bool, now: Date) async throws -> Bool {
        try await pool.write { db in
            // Compare-and-swap on the counter: two concurrent assertions with the same counter cannot both pass.
            try db.execute(
                sql: "UPDATE passkeys SET sign_count = ?, backed_up = ?, last_used_at = ? WHERE id = ? AND sign_count = ?",
                arguments: [Int64(signCount), backedUp, now.timeIntervalSince1970, id, Int64(previousSignCount)])
            return db.changesCount == 1
        }
    }

    public func renamePasskey(id: String, userId: String, friendlyName: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE passkeys SET friendly_name = ? WHERE id = ? AND user_id = ?", arguments: [friendlyName, id, userId])
            return db.changesCount == 1
        }
    }

    public func deletePasskey(id: String, userId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM passkeys WHERE id = ? AND user_id = ?", arguments: [id, userId])
            return db.changesCount == 1
        }
    }

    private static func passkey(_ row: Row) -> PasskeyRecord {
        PasskeyRecord(
            id: row["id"], userId: row["user_id"], publicKey: row["public_key"], algorithm: row["algorithm"],
            signCount: UInt32(clamping: row["sign_count"] as Int64), aaguid: row["aaguid"], friendlyName: row["friendly_name"],
            attestationFormat: row["attestation_format"], backupEligible: row["backup_eligible"], backedUp: row["backed_up"],
            createdAt: date(row["created_at"]) ?? .distantPast, lastUsedAt: date(row["last_used_at"]))
    }

    // MARK: Ceremonies

    public func insertPasskeyChallenge(_ c: PasskeyChallengeRecord) async throws {
        let profile = try Self.json(c.profile), allowed = try Self.json(c.allowedCredentials)
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM passkey_challenges WHERE expires_at < ?", arguments: [c.createdAt.timeIntervalSince1970])
            try db.execute(
                sql: """
                    INSERT INTO passkey_challenges (challenge_hash, ceremony, client_id, user_id, profile, friendly_name, origin,
                                                    user_verification, allowed_credentials, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    c.challengeHash, c.ceremony.rawValue, c.clientId, c.userId, profile, c.friendlyName, c.origin,
                    c.userVerification, allowed, c.createdAt.timeIntervalSince1970, c.expiresAt.timeIntervalSince1970
                ])
        }
    }

    public func takePasskeyChallenge(hash: Data, now: Date) async throws -> PasskeyChallengeRecord? {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM passkey_challenges WHERE challenge_hash = ?", arguments: [hash]) else {
                return nil
            }
            try db.execute(sql: "DELETE FROM passkey_challenges WHERE challenge_hash = ?", arguments: [hash])
            let record = PasskeyChallengeRecord(
                challengeHash: row["challenge_hash"],
                ceremony: PasskeyChallengeRecord.Ceremony(rawValue: row["ceremony"]) ?? .authentication,
                clientId: row["client_id"], userId: row["user_id"],
                profile: (try? Self.decode([String: String].self, row["profile"])) ?? [:],
                friendlyName: row["friendly_name"], origin: row["origin"], userVerification: row["user_verification"],
                allowedCredentials: (try? Self.decode([String].self, row["allowed_credentials"])) ?? [],
                createdAt: Self.date(row["created_at"]) ?? .distantPast, expiresAt: Self.date(row["expires_at"]) ?? .distantPast)
            // Expired rows are consumed too (and reported as such by the caller), never reusable.
            return record
        }
    }

    /// Creates the account and its first passkey in one transaction: either both exist afterwards or neither.
    public func insertUser(_ user: UserRecord, withPasskey passkey: PasskeyRecord) async throws {
        let claims = try Self.json(user.claims)
        try await pool.write { db in
            try Self.checkAccountNamespace(db, username: user.username)
            try db.execute(
                sql: """
                    INSERT INTO users (id, username, password_hash, claims, disabled, failed_logins, locked_until, created_at)
                    VALUES (?, ?, ?, ?, ?, 0, NULL, ?)
                    """, arguments: [user.id, user.username, user.passwordHash, claims, user.disabled, user.createdAt.timeIntervalSince1970])
            try Self.insertPasskey(db, passkey)
        }
    }

    // MARK: MFA step-up challenges

    public func insertStepUpChallenge(_ c: StepUpChallengeRecord, now: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM step_up_challenges WHERE expires_at < ?", arguments: [now.timeIntervalSince1970])
            // One row per step-up token: a second start replaces the challenge (new id, code, kind) but keeps attempts.
            try db.execute(
                sql: """
                    INSERT INTO step_up_challenges (id, step_up_hash, claims, kind, code_digest, attempts, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(step_up_hash) DO UPDATE SET id = excluded.id, kind = excluded.kind, code_digest = excluded.code_digest,
                        expires_at = excluded.expires_at
                    """, arguments: [c.id, c.stepUpHash, c.claims, c.kind, c.codeDigest, c.attempts, c.expiresAt.timeIntervalSince1970])
            return try Int.fetchOne(db, sql: "SELECT attempts FROM step_up_challenges WHERE step_up_hash = ?", arguments: [c.stepUpHash]) ?? 0
        }
    }

    public func stepUpChallenge(id: String) async throws -> StepUpChallengeRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM step_up_challenges WHERE id = ?", arguments: [id]).map { row in
                StepUpChallengeRecord(
                    id: row["id"], stepUpHash: row["step_up_hash"], claims: row["claims"], kind: row["kind"],
                    codeDigest: row["code_digest"], attempts: row["attempts"], expiresAt: Self.date(row["expires_at"]) ?? .distantPast)
            }
        }
    }

    public func reserveStepUpAttempt(id: String, maxAttempts: Int) async throws -> Int? {
        try await pool.write { db in
            try db.execute(sql: "UPDATE step_up_challenges SET attempts = attempts + 1 WHERE id = ? AND attempts < ?", arguments: [id, maxAttempts])
            guard db.changesCount == 1 else { return nil }
            return try Int.fetchOne(db, sql: "SELECT attempts FROM step_up_challenges WHERE id = ?", arguments: [id])
        }
    }

    /// Deletes the challenge; false when it was already gone (used by a concurrent request).
    public func takeStepUpChallenge(id: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM step_up_challenges WHERE id = ?", arguments: [id])
            return db.changesCount == 1
        }
    }

    // MARK: Federated identities

    public func federatedIdentity(provider: String, subject: String) async throws -> FederatedIdentityRecord? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM federated_identities WHERE provider = ? AND subject = ?",
                arguments: [provider, subject]
            ).map(Self.federatedIdentity)
        }
    }

    public func linkFederatedIdentity(_ link: FederatedIdentityRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO federated_identities (provider, subject, user_id, created_at) VALUES (?, ?, ?, ?)",
                arguments: [link.provider, link.subject, link.userId, link.createdAt.timeIntervalSince1970])
        }
    }
}
