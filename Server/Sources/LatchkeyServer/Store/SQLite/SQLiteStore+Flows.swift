import Foundation
import GRDB

/// Users' profiles and factors, flow executions, outbox, invitations and single-use token ids.
extension SQLiteStore {
    static func migrateFlowsAndProfile(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE users ADD COLUMN updated_at REAL;
                CREATE TABLE user_factors (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, kind TEXT NOT NULL, secret TEXT NOT NULL,
                    created_at REAL NOT NULL, PRIMARY KEY (user_id, kind));
                CREATE TABLE flow_executions (
                    id TEXT PRIMARY KEY, application_id TEXT NOT NULL, flow_type TEXT NOT NULL, challenge_hash BLOB NOT NULL,
                    state BLOB NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL);
                CREATE TABLE outbox (
                    id TEXT PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL COLLATE NOCASE, subject TEXT NOT NULL,
                    body TEXT NOT NULL, code TEXT, created_at REAL NOT NULL);
                CREATE INDEX outbox_recipient ON outbox(recipient, created_at);
                CREATE TABLE invitations (
                    code_hash BLOB PRIMARY KEY, application_id TEXT NOT NULL, email TEXT, created_at REAL NOT NULL,
                    expires_at REAL NOT NULL, used_at REAL);
                CREATE TABLE consumed_token_ids (jti TEXT PRIMARY KEY, expires_at REAL NOT NULL);
                """)
    }

    /// Pruning consumed ids by expiry reads an index, not the whole table.
    static func migrateConsumedIdsExpiryIndex(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX consumed_token_ids_expires ON consumed_token_ids (expires_at)")
    }

    // MARK: Users

    public func updateUser(_ user: UserRecord) async throws {
        let claims = try Self.json(user.claims)
        let now = (user.updatedAt ?? Date()).timeIntervalSince1970
        try await pool.write { db in
            if try String.fetchOne(db, sql: "SELECT id FROM users WHERE username = ? AND id <> ?", arguments: [user.username, user.id]) != nil {
                throw StoreError.conflict("username")
            }
            // Only over the version the caller read: a whole-row write from a stale copy would undo a newer password
            // reset or disable (lost update).
            try db.execute(
                sql: """
                    UPDATE users SET username = ?, password_hash = ?, claims = ?, disabled = ?, updated_at = ?, version = version + 1
                    WHERE id = ? AND version = ?
                    """, arguments: [user.username, user.passwordHash, claims, user.disabled, now, user.id, user.version])
            if db.changesCount == 0 { throw StoreError.conflict("version") }
        }
    }

    public func users(claim name: String, equals value: String) async throws -> [UserRecord] {
        guard !value.contains("\u{0}") else { return [] }  // NOCASE stops at a NUL (see `user(username:)`)
        if name == "email" {
            // The literal path matches the expression of the `users_claim_email` index (a bound path would not).
            return try await pool.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM users WHERE json_extract(claims, '$.email') = ? COLLATE NOCASE",
                    arguments: [value]
                ).map(Self.user)
            }
        }
        return try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM users WHERE json_extract(claims, ?) = ? COLLATE NOCASE",
                arguments: ["$.\"\(name.replacingOccurrences(of: "\"", with: ""))\"", value]
            ).map(Self.user)
        }
    }

    // MARK: Factors

    public func factors(userId: String) async throws -> [UserFactorRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM user_factors WHERE user_id = ? ORDER BY kind", arguments: [userId]).compactMap { row in
                guard let kind = UserFactorRecord.Kind(rawValue: row["kind"]) else { return nil }
                let secret = try self.opened(row["secret"], context: Self.factorContext(userId: row["user_id"], kind: kind.rawValue))
                return UserFactorRecord(userId: row["user_id"], kind: kind, secret: secret, createdAt: Self.date(row["created_at"]) ?? .distantPast)
            }
        }
    }

    public func upsertFactor(_ factor: UserFactorRecord) async throws {
        let secret = try sealed(factor.secret, context: Self.factorContext(userId: factor.userId, kind: factor.kind.rawValue))
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO user_factors (user_id, kind, secret, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT(user_id, kind) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, totp_last_step = NULL
                    """, arguments: [factor.userId, factor.kind.rawValue, secret, factor.createdAt.timeIntervalSince1970])
        }
    }

    public func deleteFactor(userId: String, kind: UserFactorRecord.Kind) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM user_factors WHERE user_id = ? AND kind = ?", arguments: [userId, kind.rawValue])
        }
    }

    // MARK: Flow executions

    public func insertFlowExecution(_ e: FlowExecutionRecord) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM flow_executions WHERE expires_at < ?", arguments: [e.createdAt.timeIntervalSince1970])
            try db.execute(
                sql: """
                    INSERT INTO flow_executions (id, application_id, flow_type, challenge_hash, state, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    e.id, e.applicationId, e.flowType, e.challengeHash, e.state, e.createdAt.timeIntervalSince1970,
                    e.expiresAt.timeIntervalSince1970
                ])
        }
    }

    public func flowExecution(id: String, now: Date) async throws -> FlowExecutionRecord? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM flow_executions WHERE id = ? AND expires_at > ?",
                arguments: [id, now.timeIntervalSince1970]
            ).map { row in
                FlowExecutionRecord(
                    id: row["id"], applicationId: row["application_id"], flowType: row["flow_type"],
                    challengeHash: row["challenge_hash"], state: row["state"],
                    createdAt: Self.date(row["created_at"]) ?? .distantPast, expiresAt: Self.date(row["expires_at"]) ?? .distantPast)
            }
        }
    }

    public func swapFlowChallenge(id: String, presented: Data, next: Data) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE flow_executions SET challenge_hash = ? WHERE id = ? AND challenge_hash = ?",
                arguments: [next, id, presented])
            return db.changesCount == 1
        }
    }

    public func updateFlowExecution(id: String, state: Data, expiresAt: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE flow_executions SET state = ?, expires_at = ? WHERE id = ?",
                arguments: [state, expiresAt.timeIntervalSince1970, id])
        }
    }

    public func deleteFlowExecution(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM flow_executions WHERE id = ?", arguments: [id]) }
    }

    // MARK: Outbox

    public func insertOutboxMessage(_ m: OutboxMessage) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO outbox (id, channel, recipient, subject, body, code, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [m.id, m.channel.rawValue, m.recipient, m.subject, m.body, m.code, m.createdAt.timeIntervalSince1970])
        }
    }

    public func outboxMessages(recipient: String, limit: Int) async throws -> [OutboxMessage] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM outbox WHERE recipient = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                arguments: [recipient, limit]
            ).map { row in
                OutboxMessage(
                    id: row["id"], channel: OutboxMessage.Channel(rawValue: row["channel"]) ?? .email, recipient: row["recipient"],
                    subject: row["subject"], body: row["body"], code: row["code"], createdAt: Self.date(row["created_at"]) ?? .distantPast)
            }
        }
    }

    // MARK: Invitations

    public func insertInvitation(_ i: InvitationRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO invitations (code_hash, application_id, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [i.codeHash, i.applicationId, i.email, i.createdAt.timeIntervalSince1970, i.expiresAt.timeIntervalSince1970])
        }
    }

    public func invitation(codeHash: Data) async throws -> InvitationRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM invitations WHERE code_hash = ?", arguments: [codeHash]).map { row in
                InvitationRecord(
                    codeHash: row["code_hash"], applicationId: row["application_id"], email: row["email"],
                    createdAt: Self.date(row["created_at"]) ?? .distantPast, expiresAt: Self.date(row["expires_at"]) ?? .distantPast,
                    usedAt: Self.date(row["used_at"]))
            }
        }
    }

    public func useInvitation(codeHash: Data, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE invitations SET used_at = ? WHERE code_hash = ? AND used_at IS NULL",
                arguments: [now.timeIntervalSince1970, codeHash])
            return db.changesCount == 1
        }
    }

    // MARK: Single-use ids and session-wide revocation

    public func consumeTokenId(_ jti: String, expiresAt: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO consumed_token_ids (jti, expires_at) VALUES (?, ?)",
                arguments: [jti, expiresAt.timeIntervalSince1970])
            return db.changesCount == 1
        }
    }
}
