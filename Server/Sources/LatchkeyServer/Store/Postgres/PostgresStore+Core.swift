import Foundation
import PostgresNIO

/// Users, clients, pending logins, authorization codes, token families and tokens, sessions and signing keys.
extension PostgresStore {
    // MARK: Users

    public func insertUser(_ user: UserRecord) async throws {
        let claims = try SQLiteStore.json(user.claims)
        do {
            try await transaction { connection in
                // Usernames and emails name accounts in one space: account writes take one lock, so the check below and
                // the profile writes of other instances cannot interleave.
                try await self.lock("accounts", "all", on: connection)
                try await self.checkAccountNamespace(username: user.username, on: connection)
                try await self.execute(
                    """
                    INSERT INTO users (id, username, password_hash, claims, disabled, failed_logins, locked_until, created_at)
                    VALUES (\(user.id), \(user.username), \(user.passwordHash), \(claims), \(user.disabled), \(user.failedLogins),
                            \(user.lockedUntil?.epoch), \(user.createdAt.epoch))
                    """, on: connection)
            }
        } catch let error where Self.isUniqueViolation(error) {
            throw StoreError.conflict("username")
        }
    }

    /// The one-namespace rule for a new account, checked under the accounts lock: its username may not be another
    /// account's email (sign-in by that name would be ambiguous). Its email *may* be another account's username: Sign in
    /// with Apple creates `apple.<sub>` with the Apple address as email when someone registered that address as a name.
    func checkAccountNamespace(username: String, on connection: PostgresConnection) async throws {
        if try await row(
            """
            SELECT 1 FROM users WHERE lower(((claims::jsonb) ->> 'email') COLLATE "C") = lower(\(username) COLLATE "C") LIMIT 1
            """, on: connection) != nil
        {
            throw StoreError.conflict("username")
        }
    }

    public func user(id: String) async throws -> UserRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM users WHERE id = \(id)", on: connection).map(Self.user)
        }
    }

    public func user(username: String) async throws -> UserRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM users WHERE lower(username COLLATE \"C\") = lower(\(username) COLLATE \"C\")", on: connection).map(
                Self.user)
        }
    }

    static func user(_ row: PostgresRow) throws -> UserRecord {
        let c = Columns(row)
        return UserRecord(
            id: try c("id"), username: try c("username"), passwordHash: try c("password_hash"),
            claims: try c.json("claims"), disabled: try c("disabled"), failedLogins: try c("failed_logins"),
            lockedUntil: try c.date("locked_until"), createdAt: try c.date("created_at") ?? .distantPast,
            updatedAt: try c.date("updated_at"), version: try c("version"))
    }

    // MARK: Pending logins

    public func insertLoginRequest(_ request: LoginRequestRecord) async throws {
        let json = try SQLiteStore.json(request.request)
        try await transaction { connection in
            try await self.execute("DELETE FROM login_requests WHERE expires_at < \(request.createdAt.epoch)", on: connection)
            try await self.execute(
                """
                INSERT INTO login_requests (id, request, created_at, expires_at)
                VALUES (\(request.id), \(json), \(request.createdAt.epoch), \(request.expiresAt.epoch))
                """, on: connection)
        }
    }

    public func loginRequest(id: String, now: Date) async throws -> LoginRequestRecord? {
        try await connection { connection in
            guard
                let row = try await self.row(
                    "SELECT * FROM login_requests WHERE id = \(id) AND expires_at > \(now.epoch)",
                    on: connection)
            else { return nil }
            let c = Columns(row)
            return LoginRequestRecord(
                id: try c("id"), request: try c.json("request"), createdAt: try c.date("created_at") ?? now,
                expiresAt: try c.date("expires_at") ?? now)
        }
    }

    public func deleteLoginRequest(id: String) async throws {
        try await connection { connection in try await self.execute("DELETE FROM login_requests WHERE id = \(id)", on: connection) }
    }

    // MARK: Authorization codes

    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws {
        let amr = try SQLiteStore.json(code.amr), scope = code.scope.joined(separator: " ")
        try await transaction { connection in
            // Used and expired codes are kept about two hours, so a late replay is still recognised as one.
            try await self.execute(
                "DELETE FROM authorization_codes WHERE expires_at < \(code.expiresAt.addingTimeInterval(-2 * 3600).epoch)",
                on: connection)
            try await self.execute(
                """
                INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, nonce, code_challenge,
                    session_id, auth_time, expires_at, used_at, family_id, amr, dpop_jkt, claims)
                VALUES (\(code.codeHash), \(code.clientId), \(code.userId), \(code.redirectUri), \(scope), \(code.nonce),
                        \(code.codeChallenge), \(code.sessionId), \(code.authTime.epoch), \(code.expiresAt.epoch), NULL, NULL, \(amr),
                        \(code.dpopJkt), \(code.claims))
                """, on: connection)
        }
    }

    public func redeemAuthorizationCode(hash: Data, familyId: String, now: Date) async throws -> CodeRedemption {
        try await transaction { connection in
            // The row lock makes concurrent redemptions (on any instance) take turns: the second one sees `used_at`.
            guard let row = try await self.row("SELECT * FROM authorization_codes WHERE code_hash = \(hash) FOR UPDATE", on: connection) else {
                return .notFound
            }
            var record = try Self.code(row)
            if record.usedAt != nil {
                if let family = record.familyId {
                    try await self.revokeFamily(id: family, reason: "authorization code replayed", now: now, on: connection)
                }
                return .replayed(familyId: record.familyId)
            }
            try await self.insertFamily(
                TokenFamilyRecord(
                    id: familyId, clientId: record.clientId, userId: record.userId,
                    sessionId: record.sessionId, createdAt: now), on: connection)
            try await self.execute(
                "UPDATE authorization_codes SET used_at = \(now.epoch), family_id = \(familyId) WHERE code_hash = \(hash)",
                on: connection)
            record.usedAt = now
            record.familyId = familyId
            return .redeemed(record)
        }
    }

    private static func code(_ row: PostgresRow) throws -> AuthorizationCodeRecord {
        let c = Columns(row)
        return AuthorizationCodeRecord(
            codeHash: try c("code_hash"), clientId: try c("client_id"), userId: try c("user_id"), redirectUri: try c("redirect_uri"),
            scope: SQLiteStore.scopes(try c("scope")), nonce: try c("nonce"), codeChallenge: try c("code_challenge"),
            sessionId: try c("session_id"), authTime: try c.date("auth_time") ?? .distantPast,
            expiresAt: try c.date("expires_at") ?? .distantPast, usedAt: try c.date("used_at"), familyId: try c("family_id"),
            amr: SQLiteStore.amr(try c("amr")), dpopJkt: try c("dpop_jkt"), claims: try c("claims"))
    }

    // MARK: Families and tokens

    public func insertFamily(_ family: TokenFamilyRecord) async throws {
        try await connection { connection in try await self.insertFamily(family, on: connection) }
    }

    func insertFamily(_ family: TokenFamilyRecord, on connection: PostgresConnection) async throws {
        try await execute(
            """
            INSERT INTO token_families (id, client_id, user_id, session_id, created_at)
            VALUES (\(family.id), \(family.clientId), \(family.userId), \(family.sessionId), \(family.createdAt.epoch))
            """, on: connection)
    }

    public func family(id: String) async throws -> TokenFamilyRecord? {
        try await connection { connection in
            guard let row = try await self.row("SELECT * FROM token_families WHERE id = \(id)", on: connection) else { return nil }
            let c = Columns(row)
            return TokenFamilyRecord(
                id: try c("id"), clientId: try c("client_id"), userId: try c("user_id"), sessionId: try c("session_id"),
                createdAt: try c.date("created_at") ?? .distantPast, revokedAt: try c.date("revoked_at"),
                revokedReason: try c("revoked_reason"))
        }
    }

    public func revokeFamily(id: String, reason: String, now: Date) async throws {
        try await connection { connection in try await self.revokeFamily(id: id, reason: reason, now: now, on: connection) }
    }

    func revokeFamily(id: String, reason: String, now: Date, on connection: PostgresConnection) async throws {
        try await execute(
            """
            UPDATE token_families SET revoked_at = \(now.epoch), revoked_reason = \(reason) WHERE id = \(id) AND revoked_at IS NULL
            """, on: connection)
    }

    public func insertRefreshToken(_ token: RefreshTokenRecord) async throws {
        try await connection { connection in try await self.insertRefreshToken(token, on: connection) }
    }

    private func insertRefreshToken(_ t: RefreshTokenRecord, on connection: PostgresConnection) async throws {
        let amr = try SQLiteStore.json(t.amr), scope = t.scope.joined(separator: " ")
        try await execute(
            """
            INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scope, session_id, auth_time, created_at, expires_at, amr, jkt)
            VALUES (\(t.tokenHash), \(t.familyId), \(t.clientId), \(t.userId), \(scope), \(t.sessionId), \(t.authTime.epoch),
                    \(t.createdAt.epoch), \(t.expiresAt.epoch), \(amr), \(t.jkt))
            """, on: connection)
    }

    public func refreshToken(hash: Data) async throws -> RefreshTokenRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM refresh_tokens WHERE token_hash = \(hash)", on: connection).map(Self.refresh)
        }
    }

    public func rotateRefreshToken(presented hash: Data, next: RefreshTokenRecord, reuse: RefreshReuse?, now: Date) async throws
        -> RefreshRotation
    {
        try await transaction { connection in
            // Locking the presented token's row serializes concurrent rotations of it across instances: exactly one
            // sees it unused; every other one finds `used_at` set and is handed the same successor (within the reuse
            // interval) or revokes the family (replay detection).
            guard let row = try await self.row("SELECT * FROM refresh_tokens WHERE token_hash = \(hash) FOR UPDATE", on: connection) else {
                return .notFound
            }
            let current = try Self.refresh(row)
            let revoked =
                try await self.row("SELECT revoked_at IS NOT NULL FROM token_families WHERE id = \(current.familyId)", on: connection)
                .map { try $0.decode(Bool.self) } ?? true
            if revoked { return .revoked }
            if let usedAt = current.usedAt {
                if let reuse, usedAt >= reuse.rotatedSince, try Columns(row)("successor_hash", as: Data?.self) != nil,
                    let (sealed, sealedOn) = try await self.liveTokenSealed(family: current.familyId, now: now, on: connection)
                {
                    return .reissued(previous: current, sealedSuccessor: sealed, sealedOn: sealedOn)
                }
                try await self.revokeFamily(id: current.familyId, reason: "refresh token replayed", now: now, on: connection)
                return .replayed(familyId: current.familyId)
            }
            if current.expiresAt <= now { return .expired }
            let successorHash: Data? = reuse == nil ? nil : next.tokenHash
            try await self.execute(
                """
                UPDATE refresh_tokens SET used_at = \(now.epoch), successor_hash = \(successorHash),
                    successor_sealed = \(reuse?.sealedSuccessor) WHERE token_hash = \(hash)
                """, on: connection)
            // The predecessor's sealed copy of the token just spent can never be handed out again: drop it.
            try await self.execute(
                """
                UPDATE refresh_tokens SET successor_sealed = NULL
                WHERE family_id = \(current.familyId) AND successor_hash = \(hash) AND successor_sealed IS NOT NULL
                """,
                on: connection)
            var successor = next
            successor.familyId = current.familyId
            try await self.insertRefreshToken(successor, on: connection)
            return .rotated(previous: current)
        }
    }

    /// The family's live refresh token, sealed, and the hash of the row that keeps it (its predecessor's: each rotation
    /// drops the sealed copy of the token it spends, so one row of a family holds one). Nil when the live token was not
    /// rotated in with a reuse interval, or is spent or expired.
    ///
    /// The live token's row is not locked: another instance may be rotating it right now. Read committed, the holder
    /// found may then already have given its copy up, or its token be spent; looked up again, the next one is found. A
    /// copy handed out just before its token is rotated is itself within the interval when presented.
    private func liveTokenSealed(family: String, now: Date, on connection: PostgresConnection) async throws -> (sealed: String, sealedOn: Data)? {
        for _ in 0..<8 {
            guard
                let holder = try await self.row(
                    """
                    SELECT token_hash, successor_hash, successor_sealed FROM refresh_tokens
                    WHERE family_id = \(family) AND successor_sealed IS NOT NULL ORDER BY used_at DESC LIMIT 1
                    """, on: connection)
            else { return nil }
            let columns = Columns(holder)
            let liveHash: Data = try columns("successor_hash")
            guard let live = try await self.row("SELECT * FROM refresh_tokens WHERE token_hash = \(liveHash)", on: connection).map(Self.refresh)
            else { return nil }
            if live.expiresAt <= now { return nil }
            if live.usedAt == nil { return (try columns("successor_sealed"), try columns("token_hash")) }
            // Spent since the holder was read: rotated meanwhile by another instance. Look again.
        }
        return nil
    }

    private static func refresh(_ row: PostgresRow) throws -> RefreshTokenRecord {
        let c = Columns(row)
        return RefreshTokenRecord(
            tokenHash: try c("token_hash"), familyId: try c("family_id"), clientId: try c("client_id"), userId: try c("user_id"),
            scope: SQLiteStore.scopes(try c("scope")), sessionId: try c("session_id"), authTime: try c.date("auth_time") ?? .distantPast,
            createdAt: try c.date("created_at") ?? .distantPast, expiresAt: try c.date("expires_at") ?? .distantPast,
            usedAt: try c.date("used_at"), amr: SQLiteStore.amr(try c("amr")), jkt: try c("jkt"))
    }

    public func insertAccessToken(_ token: AccessTokenRecord) async throws {
        try await connection { connection in
            try await self.execute(
                """
                INSERT INTO access_tokens (jti, family_id, client_id, subject, expires_at)
                VALUES (\(token.jti), \(token.familyId), \(token.clientId), \(token.subject), \(token.expiresAt.epoch))
                """, on: connection)
        }
    }

    public func accessToken(jti: String) async throws -> AccessTokenRecord? {
        try await connection { connection in
            guard let row = try await self.row("SELECT * FROM access_tokens WHERE jti = \(jti)", on: connection) else { return nil }
            let c = Columns(row)
            return AccessTokenRecord(
                jti: try c("jti"), familyId: try c("family_id"), clientId: try c("client_id"), subject: try c("subject"),
                expiresAt: try c.date("expires_at") ?? .distantPast, revokedAt: try c.date("revoked_at"))
        }
    }

    public func revokeAccessToken(jti: String, now: Date) async throws {
        try await connection { connection in
            try await self.execute("UPDATE access_tokens SET revoked_at = \(now.epoch) WHERE jti = \(jti) AND revoked_at IS NULL", on: connection)
        }
    }

    // MARK: Sessions

    public func insertSession(_ s: SessionRecord) async throws {
        let amr = try SQLiteStore.json(s.amr)
        try await connection { connection in
            try await self.execute(
                """
                INSERT INTO sessions (id, secret_hash, user_id, auth_time, created_at, expires_at, amr)
                VALUES (\(s.id), \(s.secretHash), \(s.userId), \(s.authTime.epoch), \(s.createdAt.epoch), \(s.expiresAt.epoch), \(amr))
                """, on: connection)
        }
    }

    public func session(secretHash: Data) async throws -> SessionRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM sessions WHERE secret_hash = \(secretHash)", on: connection).map(Self.session)
        }
    }

    public func session(id: String) async throws -> SessionRecord? {
        try await connection { connection in
            try await self.row("SELECT * FROM sessions WHERE id = \(id)", on: connection).map(Self.session)
        }
    }

    private static func session(_ row: PostgresRow) throws -> SessionRecord {
        let c = Columns(row)
        return SessionRecord(
            id: try c("id"), secretHash: try c("secret_hash"), userId: try c("user_id"),
            authTime: try c.date("auth_time") ?? .distantPast, createdAt: try c.date("created_at") ?? .distantPast,
            expiresAt: try c.date("expires_at") ?? .distantPast, endedAt: try c.date("ended_at"),
            amr: SQLiteStore.amr(try c("amr")))
    }

    public func endSession(id: String, now: Date) async throws {
        try await transaction { connection in
            try await self.execute("UPDATE sessions SET ended_at = \(now.epoch) WHERE id = \(id) AND ended_at IS NULL", on: connection)
            try await self.revokeSessionFamilies(sessionId: id, reason: "session ended", now: now, on: connection)
        }
    }

    public func endSessionHoldingNoTokens(id: String, now: Date) async throws -> Bool {
        try await transaction { connection in
            // One conditional UPDATE, as on SQLite; then whether the session is over (now, before, or gone).
            try await self.execute(
                """
                UPDATE sessions SET ended_at = \(now.epoch) WHERE id = \(id) AND ended_at IS NULL AND NOT EXISTS (
                    SELECT 1 FROM token_families WHERE revoked_at IS NULL
                    AND (session_id = \(id) OR id IN (SELECT family_id FROM refresh_tokens WHERE session_id = \(id))))
                """, on: connection)
            let row = try await self.row("SELECT ended_at IS NOT NULL FROM sessions WHERE id = \(id)", on: connection)
            return try row?.decode(Bool.self) ?? true
        }
    }

    public func claimEndedSessions(now: Date, leaseUntil: Date, limit: Int) async throws -> [SessionRecord] {
        let rowLimit: Int? = limit >= 0 ? limit : nil
        return try await transaction { connection -> [SessionRecord] in
            // SKIP LOCKED, as the delivery queues: two instances never announce one session's end at once.
            let ended = try await self.rows(
                """
                SELECT * FROM sessions WHERE ended_at IS NOT NULL AND NOT logout_announced AND logout_lease_until <= \(now.epoch)
                ORDER BY ended_at, id LIMIT \(rowLimit) FOR UPDATE SKIP LOCKED
                """, on: connection
            ).map(Self.session)
            guard !ended.isEmpty else { return [] }
            let ids = ended.map(\.id)
            _ = try await self.execute("UPDATE sessions SET logout_lease_until = \(leaseUntil.epoch) WHERE id = ANY(\(ids))", on: connection)
            return ended
        }
    }

    public func markSessionEndAnnounced(id: String) async throws {
        try await connection { connection in
            _ = try await self.execute("UPDATE sessions SET logout_announced = TRUE WHERE id = \(id)", on: connection)
        }
    }

    public func sessionClientIds(sessionId: String) async throws -> [String] {
        try await connection { connection -> [String] in
            try await self.rows(
                """
                SELECT DISTINCT client_id FROM token_families
                WHERE session_id = \(sessionId) OR id IN (SELECT family_id FROM refresh_tokens WHERE session_id = \(sessionId))
                ORDER BY client_id
                """, on: connection
            ).map { try $0.decode(String.self) }
        }
    }

    /// Revokes every family of the session: those created for it and those whose refresh tokens name it.
    func revokeSessionFamilies(sessionId: String, reason: String, now: Date, on connection: PostgresConnection) async throws {
        try await execute(
            """
            UPDATE token_families SET revoked_at = \(now.epoch), revoked_reason = \(reason)
            WHERE revoked_at IS NULL AND (session_id = \(sessionId) OR id IN (SELECT family_id FROM refresh_tokens WHERE session_id = \(sessionId)))
            """, on: connection)
    }

    public func revokeUserSessions(
        userId: String, keepingSession keptSession: String?, keepingFamily keptFamily: String?,
        reason: String, now: Date
    ) async throws {
        try await transaction { connection in
            try await self.revokeUserSessions(
                userId: userId, keepingSession: keptSession, keepingFamily: keptFamily, reason: reason,
                now: now, on: connection)
        }
    }

    func revokeUserSessions(
        userId: String, keepingSession keptSession: String?, keepingFamily keptFamily: String?, reason: String,
        now: Date, on connection: PostgresConnection
    ) async throws {
        let t = now.epoch
        try await execute(
            """
            UPDATE sessions SET ended_at = \(t) WHERE user_id = \(userId) AND ended_at IS NULL AND id IS DISTINCT FROM \(keptSession)
            """, on: connection)
        try await execute(
            """
            UPDATE token_families SET revoked_at = \(t), revoked_reason = \(reason)
            WHERE user_id = \(userId) AND revoked_at IS NULL AND id IS DISTINCT FROM \(keptFamily)
              AND (session_id IS NULL OR session_id IS DISTINCT FROM \(keptSession))
            """, on: connection)
        // Access tokens outside any family (none are minted for users today) are revoked one by one.
        try await execute(
            """
            UPDATE access_tokens SET revoked_at = \(t) WHERE subject = \(userId) AND family_id IS NULL AND revoked_at IS NULL
            """, on: connection)
    }

    public func userSessions(userId: String, now: Date) async throws -> UserSessionListing {
        let (sessionRows, familyRows, accessRows) = try await transaction { connection in
            // One snapshot for the three reads, as SQLite's read transaction gives.
            try await self.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", on: connection)
            let sessions = try await self.rows("SELECT * FROM sessions WHERE user_id = \(userId) AND ended_at IS NULL", on: connection)
            let families = try await self.rows(
                """
                SELECT f.id, f.client_id, f.user_id, f.session_id, f.created_at,
                    MAX(r.session_id) AS token_session, MAX(r.used_at) AS last_refreshed,
                    MAX(CASE WHEN r.used_at IS NULL THEN r.expires_at END) AS refresh_expires
                FROM token_families f LEFT JOIN refresh_tokens r ON r.family_id = f.id
                WHERE f.user_id = \(userId) AND f.revoked_at IS NULL
                GROUP BY f.id, f.client_id, f.user_id, f.session_id, f.created_at
                """, on: connection)
            let access = try await self.rows(
                """
                SELECT family_id, MAX(expires_at) AS expires FROM access_tokens
                WHERE subject = \(userId) AND family_id IS NOT NULL AND revoked_at IS NULL GROUP BY family_id
                """, on: connection)
            return (sessions, families, access)
        }
        let families = try familyRows.map { row in
            let c = Columns(row)
            return UserSessionListing.Candidate(
                family: TokenFamilyRecord(
                    id: try c("id"), clientId: try c("client_id"), userId: try c("user_id"), sessionId: try c("session_id"),
                    createdAt: try c.date("created_at") ?? .distantPast),
                tokenSessionId: try c("token_session"), lastRefreshedAt: try c.date("last_refreshed"),
                refreshExpiresAt: try c.date("refresh_expires"))
        }
        var accessExpiry: [String: Date] = [:]
        for row in accessRows {
            let c = Columns(row)
            if let familyId: String = try c("family_id"), let expiry = try c.date("expires") { accessExpiry[familyId] = expiry }
        }
        return UserSessionListing.assemble(
            sessions: try sessionRows.map(Self.session), families: families, accessExpiry: accessExpiry, now: now)
    }

    public func replacePassword(
        userId: String, passwordHash: String, keepingSession: String?, keepingFamily: String?,
        now: Date
    ) async throws {
        try await transaction { connection in
            try await self.execute(
                """
                UPDATE users SET password_hash = \(passwordHash), updated_at = \(now.epoch), version = version + 1, failed_logins = 0,
                    locked_until = NULL WHERE id = \(userId)
                """, on: connection)
            try await self.execute("DELETE FROM login_attempts WHERE user_id = \(userId)", on: connection)
            try await self.revokeUserSessions(
                userId: userId, keepingSession: keepingSession, keepingFamily: keepingFamily,
                reason: "password changed", now: now, on: connection)
        }
    }

    // MARK: Signing keys

    public func signingKeys() async throws -> [SigningKeyRecord] {
        let rows = try await connection { connection in
            try await self.rows("SELECT * FROM signing_keys ORDER BY created_at", on: connection)
        }
        return try rows.map { row in
            let c = Columns(row)
            let kid: String = try c("kid")
            return SigningKeyRecord(
                kid: kid, algorithm: try c("algorithm"), pem: try opened(try c("pem"), context: SQLiteStore.signingKeyContext(kid)),
                createdAt: try c.date("created_at") ?? .distantPast, retiredAt: try c.date("retired_at"))
        }
    }

    public func insertSigningKey(_ key: SigningKeyRecord) async throws {
        let pem = try sealed(key.pem, context: SQLiteStore.signingKeyContext(key.kid))
        try await connection { connection in
            try await self.execute(
                """
                INSERT INTO signing_keys (kid, algorithm, pem, created_at) VALUES (\(key.kid), \(key.algorithm), \(pem), \(key.createdAt.epoch))
                """, on: connection)
        }
    }

    public func retireSigningKeys(before: Date, now: Date) async throws {
        try await connection { connection in
            try await self.execute(
                """
                UPDATE signing_keys SET retired_at = \(now.epoch) WHERE retired_at IS NULL AND created_at < \(before.epoch)
                """, on: connection)
        }
    }

    // MARK: Per-address throttles

    public func reserveAddressEvent(bucket: String, address: String, now: Date, window: TimeInterval, limit: Int) async throws -> Int? {
        try await transaction { connection in
            // The count and the insert must not interleave with another instance's: one lock per bucket and address.
            try await self.lock("address_events:\(bucket)", address, on: connection)
            let since = now.epoch - window
            let row = try await self.row(
                """
                SELECT COUNT(*) AS n, MIN(at) AS oldest FROM address_events
                WHERE bucket = \(bucket) AND address = \(address) AND at > \(since)
                """, on: connection)
            let c = row.map(Columns.init)
            let count: Int = try c?("n") ?? 0
            if count >= limit {
                return AddressThrottle.secondsUntilFree(oldest: try c?.date("oldest") ?? now, window: window, now: now)
            }
            try await self.execute(
                "INSERT INTO address_events (bucket, address, at) VALUES (\(bucket), \(address), \(now.epoch))",
                on: connection)
            return nil
        }
    }

    public func releaseAddressEvent(bucket: String, address: String, at: Date) async throws {
        try await transaction { connection in
            // Under reserve's lock: two releases of events with the same time each remove one.
            try await self.lock("address_events:\(bucket)", address, on: connection)
            try await self.execute(
                """
                DELETE FROM address_events WHERE ctid IN (
                    SELECT ctid FROM address_events WHERE bucket = \(bucket) AND address = \(address) AND at = \(at.epoch) LIMIT 1)
                """, on: connection)
        }
    }
}
