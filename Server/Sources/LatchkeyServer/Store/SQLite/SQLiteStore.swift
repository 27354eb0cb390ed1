import Foundation
import GRDB

/// The default `Store`: one SQLite file in WAL mode, opened through a GRDB `DatabasePool`.
///
/// SQLite's default `synchronous=FULL` is kept, so a commit that returned survives a crash of the process (and of
/// the machine). GRDB runs pool writes one at a time in `IMMEDIATE` transactions, so two concurrent rotations of one
/// refresh token serialize and the second sees the first one's result.
public final class SQLiteStore: Store {
    let pool: DatabasePool
    /// Client configurations by their stored JSON (every token request reads its client).
    let decodedClients = DecodedClientConfigurations()
    /// Encrypts signing keys and TOTP secrets at rest; nil keeps them in clear (a bare store in tools and tests).
    let sealer: SecretSealer?

    public init(path: String, sealer: SecretSealer? = nil) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        self.sealer = sealer
        try Self.createPrivateDirectory(for: path)
        pool = try DatabasePool(path: path, configuration: configuration)
        Self.restrictFiles(of: path)
        try Self.refuseNewerSchema(pool)
        try Self.migrator.migrate(pool)
        try sealSecretsAtRest()
        Self.restrictFiles(of: path)
    }

    // MARK: Schema

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-oidc-core") { db in
            try db.execute(
                sql: """
                    CREATE TABLE users (
                        id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE COLLATE NOCASE, password_hash TEXT NOT NULL,
                        claims TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0, failed_logins INTEGER NOT NULL DEFAULT 0,
                        locked_until REAL, created_at REAL NOT NULL);
                    CREATE TABLE clients (
                        id TEXT PRIMARY KEY, configuration TEXT NOT NULL, secret_hash BLOB);
                    CREATE TABLE login_requests (
                        id TEXT PRIMARY KEY, request TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL);
                    CREATE TABLE token_families (
                        id TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT NOT NULL, created_at REAL NOT NULL,
                        revoked_at REAL, revoked_reason TEXT);
                    CREATE TABLE authorization_codes (
                        code_hash BLOB PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
                        scope TEXT NOT NULL, nonce TEXT, code_challenge TEXT, session_id TEXT, auth_time REAL NOT NULL,
                        expires_at REAL NOT NULL, used_at REAL, family_id TEXT);
                    CREATE TABLE refresh_tokens (
                        token_hash BLOB PRIMARY KEY, family_id TEXT NOT NULL REFERENCES token_families(id),
                        client_id TEXT NOT NULL, user_id TEXT NOT NULL, scope TEXT NOT NULL, session_id TEXT,
                        auth_time REAL NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, used_at REAL);
                    CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
                    CREATE TABLE access_tokens (
                        jti TEXT PRIMARY KEY, family_id TEXT, client_id TEXT NOT NULL, subject TEXT NOT NULL,
                        expires_at REAL NOT NULL, revoked_at REAL);
                    CREATE TABLE sessions (
                        id TEXT PRIMARY KEY, secret_hash BLOB NOT NULL UNIQUE, user_id TEXT NOT NULL, auth_time REAL NOT NULL,
                        created_at REAL NOT NULL, expires_at REAL NOT NULL, ended_at REAL);
                    CREATE TABLE signing_keys (
                        kid TEXT PRIMARY KEY, algorithm TEXT NOT NULL, pem TEXT NOT NULL, created_at REAL NOT NULL, retired_at REAL);
                    """)
        }
        migrator.registerMigration("v2-flows-profile", migrate: Self.migrateFlowsAndProfile)
        migrator.registerMigration("v3-passkeys", migrate: Self.migratePasskeys)
        migrator.registerMigration("v4-main-family-sessions") { db in
            // A family remembers the sign-in session it belongs to, so ending the session (logout, sign-out, a password
            // change) reaches every token of it, also families that never held a refresh token.
            try db.execute(
                sql: """
                    ALTER TABLE token_families ADD COLUMN session_id TEXT;
                    CREATE INDEX token_families_session ON token_families(session_id);
                    CREATE INDEX token_families_user ON token_families(user_id);
                    CREATE INDEX sessions_user ON sessions(user_id);
                    CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id);
                    """)
        }
        migrator.registerMigration("v4-codes-budgets", migrate: Self.migrateCodeBudgets)
        migrator.registerMigration("v4-throttle-email-index", migrate: Self.migrateEmailIndex)
        migrator.registerMigration("v4-throttle-login-attempts", migrate: Self.migrateLoginAttempts)
        migrator.registerMigration("v4-accounts-user-version-email-changes", migrate: Self.migrateAccountVersionsAndEmailChanges)
        migrator.registerMigration("v4-hosted-amr-second-factor", migrate: Self.migrateAMRAndLoginSecondFactor)
        migrator.registerMigration("v4-mail-queue", migrate: Self.migrateMailQueue)
        migrator.registerMigration("v5-pushed-requests", migrate: Self.migratePushedRequests)
        migrator.registerMigration("v5-device-authorizations", migrate: Self.migrateDeviceAuthorizations)
        migrator.registerMigration("v5-dpop-bound-refresh-tokens") { db in
            // RFC 9449: a public client's refresh token is bound to the DPoP key it was issued to.
            try db.execute(sql: "ALTER TABLE refresh_tokens ADD COLUMN jkt TEXT")
        }
        migrator.registerMigration("v6-address-events", migrate: Self.migrateAddressEvents)
        migrator.registerMigration("v7-consumed-ids-expiry-index", migrate: Self.migrateConsumedIdsExpiryIndex)
        migrator.registerMigration("v8-federated-logins", migrate: Self.migrateFederatedLogins)
        migrator.registerMigration("v9-audit-events", migrate: Self.migrateAuditEvents)
        migrator.registerMigration("v10-registered-clients", migrate: Self.migrateRegisteredClients)
        migrator.registerMigration("v11-webhook-deliveries", migrate: Self.migrateWebhookDeliveries)
        migrator.registerMigration("v12-code-bindings") { db in
            // RFC 9449 §10 (a code bound to a DPoP key) and OpenID Connect Core §5.5 (the claims a code's tokens carry).
            try db.execute(sql: "ALTER TABLE authorization_codes ADD COLUMN dpop_jkt TEXT; ALTER TABLE authorization_codes ADD COLUMN claims TEXT")
        }
        migrator.registerMigration("v13-logout-announcements", migrate: Self.migrateLogoutAnnouncements)
        migrator.registerMigration("v14-client-registrants", migrate: Self.migrateClientRegistrants)
        migrator.registerMigration("v15-consents", migrate: Self.migrateConsents)
        migrator.registerMigration("v16-refresh-token-successors") { db in
            // `RefreshReuse`: a rotated token's successor (hash and sealed plaintext) for a retry within the interval.
            try db.execute(sql: "ALTER TABLE refresh_tokens ADD COLUMN successor_hash BLOB")
            try db.execute(sql: "ALTER TABLE refresh_tokens ADD COLUMN successor_sealed TEXT")
        }
        migrator.registerMigration("v17-refresh-token-live-seal-index") { db in
            // A family keeps one row with a sealed successor (the live token's predecessor); a session refreshed for a
            // year has 100,000 rows in one family, which `refresh_tokens_family` cannot narrow. Rotation and the reuse
            // lookup find that one row through this partial index instead of scanning the family.
            try db.execute(
                sql: "CREATE INDEX refresh_tokens_live_seal ON refresh_tokens(family_id) WHERE successor_sealed IS NOT NULL")
        }
        migrator.registerMigration("v18-account-deletions", migrate: Self.migrateAccountDeletions)
        migrator.registerMigration("v19-federated-refresh-tokens") { db in
            try db.execute(sql: "ALTER TABLE federated_identities ADD COLUMN refresh_token_sealed TEXT")
        }
        migrator.registerMigration("v20-recovery-codes", migrate: Self.migrateRecoveryCodes)
        migrator.registerMigration("v21-deliveries", migrate: Self.migrateDeliveries)
        return migrator
    }

    /// The schema's version is the number of migrations applied (GRDB records each by name in `grdb_migrations`).
    static var latestVersion: Int { migrator.migrations.count }

    /// A database migrated by a newer Latchkey has migrations this build does not know: writing to it could corrupt
    /// rows the newer version relies on, so the server refuses to start (`StoreError.schemaTooNew`).
    static func refuseNewerSchema(_ pool: DatabasePool) throws {
        let known = Set(migrator.migrations)
        let applied = try pool.read { db in try migrator.appliedIdentifiers(db) }
        let unknown = applied.subtracting(known)
        if !unknown.isEmpty {
            throw StoreError.schemaTooNew(found: applied.count, known: known.count)
        }
    }

    // MARK: Users

    public func insertUser(_ user: UserRecord) async throws {
        try await pool.write { db in
            try Self.checkAccountNamespace(db, username: user.username)
            try db.execute(
                sql: """
                    INSERT INTO users (id, username, password_hash, claims, disabled, failed_logins, locked_until, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    user.id, user.username, user.passwordHash, try Self.json(user.claims), user.disabled,
                    user.failedLogins, user.lockedUntil?.timeIntervalSince1970, user.createdAt.timeIntervalSince1970
                ])
        }
    }

    /// A new account's username, inside its write: taken (the unique index would refuse it too, but as a driver error;
    /// the store's contract is `StoreError.conflict`), or another account's email — the one-namespace rule: sign-in
    /// by that name would be ambiguous. Its email *may* be another account's username: Sign in with Apple creates
    /// `apple.<sub>` with the Apple address as email when someone registered that address as a name.
    static func checkAccountNamespace(_ db: Database, username: String) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE username = ?", arguments: [username]) == true {
            throw StoreError.conflict("username")
        }
        if try Bool.fetchOne(
            db, sql: "SELECT 1 FROM users WHERE json_extract(claims, '$.email') = ? COLLATE NOCASE LIMIT 1",
            arguments: [username]) == true
        {
            throw StoreError.conflict("username")
        }
    }

    public func user(id: String) async throws -> UserRecord? {
        try await pool.read { db in try Self.row(db, "SELECT * FROM users WHERE id = ?", [id]).map(Self.user) }
    }

    public func user(username: String) async throws -> UserRecord? {
        // SQLite's NOCASE stops comparing at a NUL, so "ada\0x" would find "ada": such a name names nobody.
        guard !username.contains("\u{0}") else { return nil }
        return try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM users WHERE username = ?", arguments: [username]).map(Self.user)
        }
    }

    static func user(_ row: Row) throws -> UserRecord {
        UserRecord(
            id: row["id"], username: row["username"], passwordHash: row["password_hash"],
            claims: try decode([String: String].self, row["claims"]), disabled: row["disabled"],
            failedLogins: row["failed_logins"], lockedUntil: date(row["locked_until"]), createdAt: date(row["created_at"]) ?? .distantPast,
            updatedAt: date(row["updated_at"]), version: row["version"] ?? 0)
    }

    // MARK: Pending logins

    public func insertLoginRequest(_ request: LoginRequestRecord) async throws {
        let json = try Self.json(request.request)
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM login_requests WHERE expires_at < ?", arguments: [request.createdAt.timeIntervalSince1970])
            try db.execute(
                sql: "INSERT INTO login_requests (id, request, created_at, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [request.id, json, request.createdAt.timeIntervalSince1970, request.expiresAt.timeIntervalSince1970])
        }
    }

    public func loginRequest(id: String, now: Date) async throws -> LoginRequestRecord? {
        try await pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM login_requests WHERE id = ? AND expires_at > ?",
                    arguments: [id, now.timeIntervalSince1970])
            else { return nil }
            return LoginRequestRecord(
                id: row["id"], request: try Self.decode(AuthorizationRequest.self, row["request"]),
                createdAt: Self.date(row["created_at"]) ?? now, expiresAt: Self.date(row["expires_at"]) ?? now)
        }
    }

    public func deleteLoginRequest(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM login_requests WHERE id = ?", arguments: [id]) }
    }

    // MARK: Authorization codes

    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws {
        try await pool.write { db in
            // Used and expired codes are kept about two hours (the new code's expiry is "now" plus a minute), so a
            // late replay is still recognised as one and revokes what the first redemption issued.
            try db.execute(
                sql: "DELETE FROM authorization_codes WHERE expires_at < ?",
                arguments: [code.expiresAt.addingTimeInterval(-2 * 3600).timeIntervalSince1970])
            try db.execute(
                sql: """
                    INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, nonce, code_challenge,
                        session_id, auth_time, expires_at, used_at, family_id, amr, dpop_jkt, claims)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)
                    """,
                arguments: [
                    code.codeHash, code.clientId, code.userId, code.redirectUri, code.scope.joined(separator: " "),
                    code.nonce, code.codeChallenge, code.sessionId, code.authTime.timeIntervalSince1970,
                    code.expiresAt.timeIntervalSince1970, try Self.json(code.amr), code.dpopJkt, code.claims
                ])
        }
    }

    public func redeemAuthorizationCode(hash: Data, familyId: String, now: Date) async throws -> CodeRedemption {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM authorization_codes WHERE code_hash = ?", arguments: [hash]) else {
                return .notFound
            }
            var record = Self.code(row)
            if record.usedAt != nil {
                if let family = record.familyId {
                    try Self.revokeFamily(db, id: family, reason: "authorization code replayed", now: now)
                }
                return .replayed(familyId: record.familyId)
            }
            // The family exists and is attached in the same transaction that spends the code, so a replay arriving at
            // any moment after this commit finds it and revokes what the first redemption produced.
            try Self.insertFamily(
                db,
                TokenFamilyRecord(
                    id: familyId, clientId: record.clientId, userId: record.userId,
                    sessionId: record.sessionId, createdAt: now))
            try db.execute(
                sql: "UPDATE authorization_codes SET used_at = ?, family_id = ? WHERE code_hash = ?",
                arguments: [now.timeIntervalSince1970, familyId, hash])
            record.usedAt = now
            record.familyId = familyId
            return .redeemed(record)
        }
    }

    private static func code(_ row: Row) -> AuthorizationCodeRecord {
        AuthorizationCodeRecord(
            codeHash: row["code_hash"], clientId: row["client_id"], userId: row["user_id"],
            redirectUri: row["redirect_uri"], scope: scopes(row["scope"]), nonce: row["nonce"],
            codeChallenge: row["code_challenge"], sessionId: row["session_id"],
            authTime: date(row["auth_time"]) ?? .distantPast, expiresAt: date(row["expires_at"]) ?? .distantPast,
            usedAt: date(row["used_at"]), familyId: row["family_id"], amr: amr(row["amr"]), dpopJkt: row["dpop_jkt"], claims: row["claims"])
    }

    // MARK: Families and tokens

    public func insertFamily(_ family: TokenFamilyRecord) async throws {
        try await pool.write { db in
            try Self.insertFamily(db, family)
        }
    }

    private static func insertFamily(_ db: Database, _ family: TokenFamilyRecord) throws {
        try db.execute(
            sql: "INSERT INTO token_families (id, client_id, user_id, session_id, created_at) VALUES (?, ?, ?, ?, ?)",
            arguments: [family.id, family.clientId, family.userId, family.sessionId, family.createdAt.timeIntervalSince1970])
    }

    public func family(id: String) async throws -> TokenFamilyRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM token_families WHERE id = ?", arguments: [id]).map { row in
                TokenFamilyRecord(
                    id: row["id"], clientId: row["client_id"], userId: row["user_id"], sessionId: row["session_id"],
                    createdAt: Self.date(row["created_at"]) ?? .distantPast, revokedAt: Self.date(row["revoked_at"]),
                    revokedReason: row["revoked_reason"])
            }
        }
    }

    public func revokeFamily(id: String, reason: String, now: Date) async throws {
        try await pool.write { db in try Self.revokeFamily(db, id: id, reason: reason, now: now) }
    }

    static func revokeFamily(_ db: Database, id: String, reason: String, now: Date) throws {
        try db.execute(
            sql: "UPDATE token_families SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL",
            arguments: [now.timeIntervalSince1970, reason, id])
    }

    public func insertRefreshToken(_ token: RefreshTokenRecord) async throws {
        try await pool.write { db in try Self.insertRefreshToken(db, token) }
    }

    private static func insertRefreshToken(_ db: Database, _ t: RefreshTokenRecord) throws {
        try execute(
            db,
            """
            INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scope, session_id, auth_time, created_at, expires_at, amr, jkt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                t.tokenHash, t.familyId, t.clientId, t.userId, t.scope.joined(separator: " "), t.sessionId,
                t.authTime.timeIntervalSince1970, t.createdAt.timeIntervalSince1970, t.expiresAt.timeIntervalSince1970,
                try Self.json(t.amr), t.jkt
            ])
    }

    public func refreshToken(hash: Data) async throws -> RefreshTokenRecord? {
        try await pool.read { db in
            try Self.row(db, "SELECT * FROM refresh_tokens WHERE token_hash = ?", [hash]).map(Self.refresh)
        }
    }

    public func rotateRefreshToken(presented hash: Data, next: RefreshTokenRecord, reuse: RefreshReuse?, now: Date) async throws
        -> RefreshRotation
    {
        try await pool.write { db in
            guard let row = try Self.row(db, "SELECT * FROM refresh_tokens WHERE token_hash = ?", [hash]) else {
                return .notFound
            }
            let current = Self.refresh(row)
            let familyRevoked =
                try Bool.fetchOne(
                    db.cachedStatement(sql: "SELECT revoked_at IS NOT NULL FROM token_families WHERE id = ?"),
                    arguments: [current.familyId]) ?? true
            if familyRevoked { return .revoked }
            if let usedAt = current.usedAt {
                if let reuse, usedAt >= reuse.rotatedSince, row["successor_hash"] as Data? != nil,
                    let (sealed, sealedOn) = try Self.liveTokenSealed(db, family: current.familyId, now: now)
                {
                    return .reissued(previous: current, sealedSuccessor: sealed, sealedOn: sealedOn)
                }
                try Self.revokeFamily(db, id: current.familyId, reason: "refresh token replayed", now: now)
                return .replayed(familyId: current.familyId)
            }
            if current.expiresAt <= now { return .expired }
            try Self.execute(
                db, "UPDATE refresh_tokens SET used_at = ?, successor_hash = ?, successor_sealed = ? WHERE token_hash = ?",
                [now.timeIntervalSince1970, reuse == nil ? nil : next.tokenHash, reuse?.sealedSuccessor, hash])
            // The predecessor's sealed copy of the token just spent can never be handed out again: drop it.
            try Self.execute(db, Self.dropSpentSealSQL, [current.familyId, hash])
            var successor = next
            successor.familyId = current.familyId
            try Self.insertRefreshToken(db, successor)
            return .rotated(previous: current)
        }
    }

    /// Drops the sealed copy of a token being spent from its predecessor's row (family, spent token's hash). Both this and
    /// `liveSealLookupSQL` go through the partial index `refresh_tokens_live_seal`, not a scan of the family.
    static let dropSpentSealSQL =
        "UPDATE refresh_tokens SET successor_sealed = NULL WHERE family_id = ? AND successor_hash = ? AND successor_sealed IS NOT NULL"
    /// The row of a family (one) that keeps the live token's sealed copy.
    static let liveSealLookupSQL =
        "SELECT token_hash, successor_hash, successor_sealed FROM refresh_tokens WHERE family_id = ? AND successor_sealed IS NOT NULL"
        + " ORDER BY used_at DESC LIMIT 1"

    /// The family's live refresh token, sealed, and the hash of the row that keeps it (its predecessor's: each rotation
    /// drops the sealed copy of the token it spends, so one row of a family holds one). Nil when the live token was not
    /// rotated in with a reuse interval, or is spent or expired.
    private static func liveTokenSealed(_ db: Database, family: String, now: Date) throws -> (sealed: String, sealedOn: Data)? {
        guard
            let holder = try Self.row(db, Self.liveSealLookupSQL, [family]),
            let sealed: String = holder["successor_sealed"], let liveHash: Data = holder["successor_hash"],
            let live = try Self.row(db, "SELECT * FROM refresh_tokens WHERE token_hash = ?", [liveHash]).map(Self.refresh),
            live.usedAt == nil, live.expiresAt > now
        else { return nil }
        return (sealed, holder["token_hash"])
    }

    private static func refresh(_ row: Row) -> RefreshTokenRecord {
        RefreshTokenRecord(
            tokenHash: row["token_hash"], familyId: row["family_id"], clientId: row["client_id"], userId: row["user_id"],
            scope: scopes(row["scope"]), sessionId: row["session_id"], authTime: date(row["auth_time"]) ?? .distantPast,
            createdAt: date(row["created_at"]) ?? .distantPast, expiresAt: date(row["expires_at"]) ?? .distantPast,
            usedAt: date(row["used_at"]), amr: amr(row["amr"]), jkt: row["jkt"])
    }

    public func insertAccessToken(_ token: AccessTokenRecord) async throws {
        try await pool.write { db in
            try Self.execute(
                db, "INSERT INTO access_tokens (jti, family_id, client_id, subject, expires_at) VALUES (?, ?, ?, ?, ?)",
                [token.jti, token.familyId, token.clientId, token.subject, token.expiresAt.timeIntervalSince1970])
        }
    }

    public func accessToken(jti: String) async throws -> AccessTokenRecord? {
        try await pool.read { db in
            try Self.row(db, "SELECT * FROM access_tokens WHERE jti = ?", [jti]).map { row in
                AccessTokenRecord(
                    jti: row["jti"], familyId: row["family_id"], clientId: row["client_id"], subject: row["subject"],
                    expiresAt: Self.date(row["expires_at"]) ?? .distantPast, revokedAt: Self.date(row["revoked_at"]))
            }
        }
    }

    public func revokeAccessToken(jti: String, now: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE access_tokens SET revoked_at = ? WHERE jti = ? AND revoked_at IS NULL",
                arguments: [now.timeIntervalSince1970, jti])
        }
    }

    // MARK: Sessions

    public func insertSession(_ s: SessionRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO sessions (id, secret_hash, user_id, auth_time, created_at, expires_at, amr) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    s.id, s.secretHash, s.userId, s.authTime.timeIntervalSince1970, s.createdAt.timeIntervalSince1970,
                    s.expiresAt.timeIntervalSince1970, try Self.json(s.amr)
                ])
        }
    }

    public func session(secretHash: Data) async throws -> SessionRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM sessions WHERE secret_hash = ?", arguments: [secretHash]).map(Self.session)
        }
    }

    public func session(id: String) async throws -> SessionRecord? {
        try await pool.read { db in
            try Self.row(db, "SELECT * FROM sessions WHERE id = ?", [id]).map(Self.session)
        }
    }

    private static func session(_ row: Row) -> SessionRecord {
        SessionRecord(
            id: row["id"], secretHash: row["secret_hash"], userId: row["user_id"],
            authTime: date(row["auth_time"]) ?? .distantPast, createdAt: date(row["created_at"]) ?? .distantPast,
            expiresAt: date(row["expires_at"]) ?? .distantPast, endedAt: date(row["ended_at"]), amr: amr(row["amr"]))
    }

    public func endSession(id: String, now: Date) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL", arguments: [now.timeIntervalSince1970, id])
            try Self.revokeSessionFamilies(db, sessionId: id, reason: "session ended", now: now)
        }
    }

    public func endSessionHoldingNoTokens(id: String, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL AND NOT EXISTS (
                        SELECT 1 FROM token_families WHERE revoked_at IS NULL
                        AND (session_id = ? OR id IN (SELECT family_id FROM refresh_tokens WHERE session_id = ?)))
                    """, arguments: [now.timeIntervalSince1970, id, id, id])
            return try Bool.fetchOne(db, sql: "SELECT ended_at IS NOT NULL FROM sessions WHERE id = ?", arguments: [id]) ?? true
        }
    }

    /// Back-channel logout (`SessionStore.claimEndedSessions`): whether a session's end was announced, and the lease of
    /// the pass announcing it. Sessions that ended before this migration are not announced late.
    static func migrateLogoutAnnouncements(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE sessions ADD COLUMN logout_announced INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE sessions ADD COLUMN logout_lease_until REAL NOT NULL DEFAULT 0;
                UPDATE sessions SET logout_announced = 1 WHERE ended_at IS NOT NULL;
                CREATE INDEX sessions_logout_pending ON sessions(ended_at) WHERE logout_announced = 0 AND ended_at IS NOT NULL;
                """)
    }

    public func claimEndedSessions(now: Date, leaseUntil: Date, limit: Int) async throws -> [SessionRecord] {
        try await pool.write { db in
            let ended = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM sessions WHERE ended_at IS NOT NULL AND logout_announced = 0 AND logout_lease_until <= ?
                    ORDER BY ended_at, id LIMIT ?
                    """, arguments: [now.timeIntervalSince1970, limit]
            ).map(Self.session)
            for session in ended {
                try db.execute(
                    sql: "UPDATE sessions SET logout_lease_until = ? WHERE id = ?", arguments: [leaseUntil.timeIntervalSince1970, session.id])
            }
            return ended
        }
    }

    public func markSessionEndAnnounced(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "UPDATE sessions SET logout_announced = 1 WHERE id = ?", arguments: [id]) }
    }

    public func sessionClientIds(sessionId: String) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT client_id FROM token_families
                    WHERE session_id = ? OR id IN (SELECT family_id FROM refresh_tokens WHERE session_id = ?) ORDER BY client_id
                    """, arguments: [sessionId, sessionId])
        }
    }

    /// Revokes every family of the session: those created for it and those whose refresh tokens name it.
    static func revokeSessionFamilies(_ db: Database, sessionId: String, reason: String, now: Date) throws {
        try db.execute(
            sql: """
                UPDATE token_families SET revoked_at = ?, revoked_reason = ?
                WHERE revoked_at IS NULL AND (session_id = ? OR id IN (SELECT family_id FROM refresh_tokens WHERE session_id = ?))
                """, arguments: [now.timeIntervalSince1970, reason, sessionId, sessionId])
    }

    public func revokeUserSessions(
        userId: String, keepingSession keptSession: String?, keepingFamily keptFamily: String?,
        reason: String, now: Date
    ) async throws {
        try await pool.write { db in
            try Self.revokeUserSessions(db, userId: userId, keepingSession: keptSession, keepingFamily: keptFamily, reason: reason, now: now)
        }
    }

    static func revokeUserSessions(
        _ db: Database, userId: String, keepingSession keptSession: String?, keepingFamily keptFamily: String?,
        reason: String, now: Date
    ) throws {
        let t = now.timeIntervalSince1970
        try db.execute(
            sql: "UPDATE sessions SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL AND id IS NOT ?",
            arguments: [t, userId, keptSession])
        try db.execute(
            sql: """
                UPDATE token_families SET revoked_at = ?, revoked_reason = ?
                WHERE user_id = ? AND revoked_at IS NULL AND id IS NOT ? AND (session_id IS NULL OR session_id IS NOT ?)
                """, arguments: [t, reason, userId, keptFamily, keptSession])
        // Access tokens outside any family (none are minted for users today) are revoked one by one.
        try db.execute(
            sql: "UPDATE access_tokens SET revoked_at = ? WHERE subject = ? AND family_id IS NULL AND revoked_at IS NULL",
            arguments: [t, userId])
    }

    public func userSessions(userId: String, now: Date) async throws -> UserSessionListing {
        try await pool.read { db in
            let sessions = try Row.fetchAll(db, sql: "SELECT * FROM sessions WHERE user_id = ? AND ended_at IS NULL", arguments: [userId])
                .map(Self.session)
            let families = try Row.fetchAll(db, sql: Self.userFamiliesQuery, arguments: [userId]).map { row in
                UserSessionListing.Candidate(
                    family: TokenFamilyRecord(
                        id: row["id"], clientId: row["client_id"], userId: row["user_id"], sessionId: row["session_id"],
                        createdAt: Self.date(row["created_at"]) ?? .distantPast),
                    tokenSessionId: row["token_session"], lastRefreshedAt: Self.date(row["last_refreshed"]),
                    refreshExpiresAt: Self.date(row["refresh_expires"]))
            }
            var accessExpiry: [String: Date] = [:]
            for row in try Row.fetchAll(db, sql: Self.userAccessExpiryQuery, arguments: [userId]) {
                if let familyId: String = row["family_id"], let expiry = Self.date(row["expires"]) { accessExpiry[familyId] = expiry }
            }
            return UserSessionListing.assemble(sessions: sessions, families: families, accessExpiry: accessExpiry, now: now)
        }
    }

    /// The user's unrevoked families with what their refresh tokens say: the session they name, the last rotation, the
    /// expiry of the unused one. (PostgreSQL runs the same query.)
    private static let userFamiliesQuery = """
        SELECT f.id, f.client_id, f.user_id, f.session_id, f.created_at,
            MAX(r.session_id) AS token_session, MAX(r.used_at) AS last_refreshed,
            MAX(CASE WHEN r.used_at IS NULL THEN r.expires_at END) AS refresh_expires
        FROM token_families f LEFT JOIN refresh_tokens r ON r.family_id = f.id
        WHERE f.user_id = ? AND f.revoked_at IS NULL
        GROUP BY f.id, f.client_id, f.user_id, f.session_id, f.created_at
        """

    /// The latest expiry of the user's unrevoked access tokens, by family.
    private static let userAccessExpiryQuery = """
        SELECT family_id, MAX(expires_at) AS expires FROM access_tokens
        WHERE subject = ? AND family_id IS NOT NULL AND revoked_at IS NULL GROUP BY family_id
        """

    public func replacePassword(
        userId: String, passwordHash: String, keepingSession: String?, keepingFamily: String?,
        now: Date
    ) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE users SET password_hash = ?, updated_at = ?, version = version + 1, failed_logins = 0, locked_until = NULL WHERE id = ?",
                arguments: [passwordHash, now.timeIntervalSince1970, userId])
            try db.execute(sql: "DELETE FROM login_attempts WHERE user_id = ?", arguments: [userId])
            try Self.revokeUserSessions(
                db, userId: userId, keepingSession: keepingSession, keepingFamily: keepingFamily,
                reason: "password changed", now: now)
        }
    }

    // MARK: Signing keys

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM signing_keys ORDER BY created_at").map { row in
                SigningKeyRecord(
                    kid: row["kid"], algorithm: row["algorithm"], pem: try self.opened(row["pem"], context: Self.signingKeyContext(row["kid"])),
                    createdAt: Self.date(row["created_at"]) ?? .distantPast, retiredAt: Self.date(row["retired_at"]))
            }
        }
    }

    public func insertSigningKey(_ key: SigningKeyRecord) async throws {
        let pem = try sealed(key.pem, context: Self.signingKeyContext(key.kid))
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO signing_keys (kid, algorithm, pem, created_at) VALUES (?, ?, ?, ?)",
                arguments: [key.kid, key.algorithm, pem, key.createdAt.timeIntervalSince1970])
        }
    }

    public func retireSigningKeys(before: Date, now: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL AND created_at < ?",
                arguments: [now.timeIntervalSince1970, before.timeIntervalSince1970])
        }
    }

    // MARK: Helpers

    static func date(_ value: Double?) -> Date? { value.map(Date.init(timeIntervalSince1970:)) }
    static func scopes(_ value: String) -> [String] { value.split(separator: " ").map(String.init) }
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    /// One row through the connection's statement cache. The statements every token request runs are compiled once
    /// per connection instead of on every request: compiling them (GRDB authorizes each compilation) was about a tenth
    /// of a refresh grant's CPU.
    static func row(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> Row? {
        try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    /// `row`, for a statement that returns nothing.
    static func execute(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
