import Foundation
import PostgresNIO

/// Users' profiles and factors, flow executions, outbox, invitations and single-use token ids.
extension PostgresStore {
    // MARK: Users

    public func updateUser(_ user: UserRecord) async throws {
        let claims = try SQLiteStore.json(user.claims)
        let now = (user.updatedAt ?? Date()).epoch
        do {
            try await transaction { connection in
                // The username check and the write run under the lock every account write takes, so no other instance
                // can take the same username between them (SQLite got this from its single writer).
                try await self.lock("accounts", "all", on: connection)
                let taken = try await self.row(
                    """
                    SELECT id FROM users WHERE lower(username COLLATE "C") = lower(\(user.username) COLLATE "C") AND id <> \(user.id) LIMIT 1
                    """, on: connection)
                if taken != nil { throw StoreError.conflict("username") }
                // Only over the version the caller read: a whole-row write from a stale copy would undo a newer password
                // reset or disable (lost update).
                let changed = try await self.execute(
                    """
                    UPDATE users SET username = \(user.username), password_hash = \(user.passwordHash), claims = \(claims),
                        disabled = \(user.disabled), updated_at = \(now), version = version + 1
                    WHERE id = \(user.id) AND version = \(user.version) RETURNING 1
                    """, on: connection)
                if changed == 0 { throw StoreError.conflict("version") }
            }
        } catch let error where PostgresStore.isUniqueViolation(error) {
            // A writer that did not take the lock got the username first: the unique index on lower(username COLLATE "C") refused it.
            throw StoreError.conflict("username")
        }
    }

    public func users(claim name: String, equals value: String) async throws -> [UserRecord] {
        let rows: [PostgresRow]
        if name == "email" {
            // The literal key matches the expression of the `users_claim_email` index (a bound key would not).
            rows = try await connection { connection in
                try await self.rows(
                    """
                    SELECT * FROM users WHERE lower(((claims::jsonb) ->> 'email') COLLATE "C") = lower(\(value) COLLATE "C") ORDER BY created_at, id
                    """, on: connection)
            }
        } else {
            let key = name.replacingOccurrences(of: "\"", with: "")
            rows = try await connection { connection in
                try await self.rows(
                    """
                    SELECT * FROM users WHERE lower(((claims::jsonb) ->> \(key)) COLLATE "C") = lower(\(value) COLLATE "C") ORDER BY created_at, id
                    """, on: connection)
            }
        }
        return try rows.map { try Self.user($0) }
    }

    // MARK: Factors

    public func factors(userId: String) async throws -> [UserFactorRecord] {
        let rows = try await connection { connection in
            // Byte order, as SQLite's BINARY collation.
            try await self.rows("SELECT * FROM user_factors WHERE user_id = \(userId) ORDER BY kind COLLATE \"C\"", on: connection)
        }
        return try rows.compactMap { row -> UserFactorRecord? in
            let c = Columns(row)
            let kindText: String = try c("kind")
            guard let kind = UserFactorRecord.Kind(rawValue: kindText) else { return nil }
            let owner: String = try c("user_id")
            let stored: String = try c("secret")
            let secret = try self.opened(stored, context: SQLiteStore.factorContext(userId: owner, kind: kind.rawValue))
            return UserFactorRecord(userId: owner, kind: kind, secret: secret, createdAt: try c.date("created_at") ?? .distantPast)
        }
    }

    public func upsertFactor(_ factor: UserFactorRecord) async throws {
        let secret = try sealed(factor.secret, context: SQLiteStore.factorContext(userId: factor.userId, kind: factor.kind.rawValue))
        let userId = factor.userId
        let kind = factor.kind.rawValue
        let createdAt = factor.createdAt.epoch
        try await connection { connection in
            // One statement: INSERT … ON CONFLICT DO UPDATE is atomic against a concurrent enrolment of the same kind.
            _ = try await self.execute(
                """
                INSERT INTO user_factors (user_id, kind, secret, created_at) VALUES (\(userId), \(kind), \(secret), \(createdAt))
                ON CONFLICT (user_id, kind) DO UPDATE SET secret = EXCLUDED.secret, created_at = EXCLUDED.created_at, totp_last_step = NULL
                """, on: connection)
        }
    }

    public func deleteFactor(userId: String, kind: UserFactorRecord.Kind) async throws {
        let kind = kind.rawValue
        try await connection { connection in
            _ = try await self.execute("DELETE FROM user_factors WHERE user_id = \(userId) AND kind = \(kind)", on: connection)
        }
    }

    // MARK: Flow executions

    public func insertFlowExecution(_ e: FlowExecutionRecord) async throws {
        try await transaction { connection in
            try await self.execute("DELETE FROM flow_executions WHERE expires_at < \(e.createdAt.epoch)", on: connection)
            try await self.execute(
                """
                INSERT INTO flow_executions (id, application_id, flow_type, challenge_hash, state, created_at, expires_at)
                VALUES (\(e.id), \(e.applicationId), \(e.flowType), \(e.challengeHash), \(e.state), \(e.createdAt.epoch), \(e.expiresAt.epoch))
                """, on: connection)
        }
    }

    public func flowExecution(id: String, now: Date) async throws -> FlowExecutionRecord? {
        let t = now.epoch
        let found = try await connection { connection in
            try await self.row("SELECT * FROM flow_executions WHERE id = \(id) AND expires_at > \(t)", on: connection)
        }
        guard let row = found else { return nil }
        let c = Columns(row)
        let rowId: String = try c("id")
        let applicationId: String = try c("application_id")
        let flowType: String = try c("flow_type")
        let challengeHash: Data = try c("challenge_hash")
        let state: Data = try c("state")
        return FlowExecutionRecord(
            id: rowId, applicationId: applicationId, flowType: flowType, challengeHash: challengeHash, state: state,
            createdAt: try c.date("created_at") ?? .distantPast, expiresAt: try c.date("expires_at") ?? .distantPast)
    }

    public func swapFlowChallenge(id: String, presented: Data, next: Data) async throws -> Bool {
        try await connection { connection in
            // One conditional UPDATE: of two requests presenting the same challenge, exactly one replaces it.
            try await self.execute(
                """
                UPDATE flow_executions SET challenge_hash = \(next) WHERE id = \(id) AND challenge_hash = \(presented) RETURNING 1
                """, on: connection) == 1
        }
    }

    public func updateFlowExecution(id: String, state: Data, expiresAt: Date) async throws {
        let expires = expiresAt.epoch
        try await connection { connection in
            _ = try await self.execute("UPDATE flow_executions SET state = \(state), expires_at = \(expires) WHERE id = \(id)", on: connection)
        }
    }

    public func deleteFlowExecution(id: String) async throws {
        try await connection { connection in
            _ = try await self.execute("DELETE FROM flow_executions WHERE id = \(id)", on: connection)
        }
    }

    // MARK: Outbox

    public func insertOutboxMessage(_ m: OutboxMessage) async throws {
        let channel = m.channel.rawValue
        let createdAt = m.createdAt.epoch
        try await connection { connection in
            _ = try await self.execute(
                """
                INSERT INTO outbox (id, channel, recipient, subject, body, code, created_at)
                VALUES (\(m.id), \(channel), \(m.recipient), \(m.subject), \(m.body), \(m.code), \(createdAt))
                """, on: connection)
        }
    }

    public func outboxMessages(recipient: String, limit: Int) async throws -> [OutboxMessage] {
        // SQLite's negative LIMIT means no limit; PostgreSQL's is LIMIT NULL (a negative one is an error).
        let bound: Int? = limit >= 0 ? limit : nil
        let rows = try await connection { connection in
            // Newest first; messages with the same time, the last written first (`seq`, as SQLite's rowid).
            try await self.rows(
                """
                SELECT * FROM outbox WHERE lower(recipient COLLATE "C") = lower(\(recipient) COLLATE "C")
                ORDER BY created_at DESC, seq DESC LIMIT \(bound)
                """, on: connection)
        }
        return try rows.map { row -> OutboxMessage in
            let c = Columns(row)
            let id: String = try c("id")
            let channel: String = try c("channel")
            let to: String = try c("recipient")
            let subject: String = try c("subject")
            let body: String = try c("body")
            let code: String? = try c("code")
            return OutboxMessage(
                id: id, channel: OutboxMessage.Channel(rawValue: channel) ?? .email, recipient: to, subject: subject,
                body: body, code: code, createdAt: try c.date("created_at") ?? .distantPast)
        }
    }

    // MARK: Invitations

    public func insertInvitation(_ i: InvitationRecord) async throws {
        let createdAt = i.createdAt.epoch
        let expiresAt = i.expiresAt.epoch
        try await connection { connection in
            _ = try await self.execute(
                """
                INSERT INTO invitations (code_hash, application_id, email, created_at, expires_at)
                VALUES (\(i.codeHash), \(i.applicationId), \(i.email), \(createdAt), \(expiresAt))
                """, on: connection)
        }
    }

    public func invitation(codeHash: Data) async throws -> InvitationRecord? {
        let found = try await connection { connection in
            try await self.row("SELECT * FROM invitations WHERE code_hash = \(codeHash)", on: connection)
        }
        guard let row = found else { return nil }
        let c = Columns(row)
        let hash: Data = try c("code_hash")
        let applicationId: String = try c("application_id")
        let email: String? = try c("email")
        return InvitationRecord(
            codeHash: hash, applicationId: applicationId, email: email,
            createdAt: try c.date("created_at") ?? .distantPast, expiresAt: try c.date("expires_at") ?? .distantPast,
            usedAt: try c.date("used_at"))
    }

    public func useInvitation(codeHash: Data, now: Date) async throws -> Bool {
        let t = now.epoch
        return try await connection { connection in
            // One conditional UPDATE: of two concurrent uses, exactly one finds it unused.
            try await self.execute(
                """
                UPDATE invitations SET used_at = \(t) WHERE code_hash = \(codeHash) AND used_at IS NULL RETURNING 1
                """, on: connection) == 1
        }
    }

    // MARK: Single-use ids and session-wide revocation

    public func consumeTokenId(_ jti: String, expiresAt: Date) async throws -> Bool {
        let expires = expiresAt.epoch
        return try await connection { connection -> Bool in
            // ON CONFLICT DO NOTHING waits for a concurrent insert of the same id and then does nothing: of two
            // concurrent uses exactly one inserts (SQLite: INSERT OR IGNORE under its single writer).
            try await self.execute(
                """
                INSERT INTO consumed_token_ids (jti, expires_at) VALUES (\(jti), \(expires)) ON CONFLICT (jti) DO NOTHING RETURNING 1
                """, on: connection) == 1
        }
    }
}

/// Account queries and deletion (SCIM administration).
extension PostgresStore {
    public func users(matching query: UserQuery, offset: Int, limit: Int) async throws -> UserPage {
        var clauses: [String] = []
        var binds = PostgresBindings()
        func placeholder(_ value: some PostgresThrowingDynamicTypeEncodable) throws -> String {
            try binds.append(value)
            return "$\(binds.count)"
        }
        for condition in query.conditions {
            switch condition {
            case .id(let id):
                clauses.append("id = \(try placeholder(id))")
            case .username(let username):
                // The expressions of the `users_username` and `users_claim_email` indexes, as in `user(username:)`.
                clauses.append("lower(username COLLATE \"C\") = lower(\(try placeholder(username)) COLLATE \"C\")")
            case .email(let email):
                clauses.append("lower(((claims::jsonb) ->> 'email') COLLATE \"C\") = lower(\(try placeholder(email)) COLLATE \"C\")")
            case .disabled(let disabled):
                clauses.append("disabled = \(try placeholder(disabled))")
            case .modifiedFrom(let date):
                clauses.append("COALESCE(updated_at, created_at) >= \(try placeholder(date.epoch))")
            case .modifiedBefore(let date):
                clauses.append("COALESCE(updated_at, created_at) < \(try placeholder(date.epoch))")
            }
        }
        let whereClause = clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND ")
        let countQuery = PostgresQuery(unsafeSQL: "SELECT COUNT(*) AS total FROM users" + whereClause, binds: binds)
        var pageBinds = binds
        try pageBinds.append(Int64(max(0, limit)))
        try pageBinds.append(Int64(max(0, offset)))
        // Ids in byte order, as SQLite's BINARY collation orders them.
        let pageQuery = PostgresQuery(
            unsafeSQL: "SELECT * FROM users" + whereClause
                + " ORDER BY created_at, id COLLATE \"C\" LIMIT $\(binds.count + 1) OFFSET $\(binds.count + 2)",
            binds: pageBinds)
        // One transaction: the count and the page see the same rows.
        return try await transaction { connection in
            let total: Int64 = try await self.row(countQuery, on: connection).map { try Columns($0)("total") } ?? 0
            let users = try await self.rows(pageQuery, on: connection).map { try Self.user($0) }
            return UserPage(total: Int(total), users: users)
        }
    }

    public func deleteUser(id: String, now: Date) async throws -> Bool {
        try await transaction { connection in try await self.deleteUserRows(id: id, now: now, on: connection) }
    }

    /// The account and everything it held, in the caller's transaction (`deleteUser`, `deleteScheduledUser`).
    func deleteUserRows(id: String, now: Date, on connection: PostgresConnection) async throws -> Bool {
        guard try await row("SELECT 1 FROM users WHERE id = \(id) FOR UPDATE", on: connection) != nil else { return false }
        try await endAccountAccess(userId: id, reason: "account deleted", now: now, on: connection)
        // Factors, passkeys, federated links, consents, the pending email change, a scheduled deletion and login
        // attempts cascade.
        return try await execute("DELETE FROM users WHERE id = \(id) RETURNING 1", on: connection) == 1
    }

    /// Ends every session, revokes every token and deletes what could still turn into tokens or a sign-in for the
    /// account (these tables name users without a key): deleting it, or scheduling its deletion.
    func endAccountAccess(userId id: String, reason: String, now: Date, on connection: PostgresConnection) async throws {
        try await revokeUserSessions(userId: id, keepingSession: nil, keepingFamily: nil, reason: reason, now: now, on: connection)
        try await execute("DELETE FROM authorization_codes WHERE user_id = \(id) AND used_at IS NULL", on: connection)
        try await execute("DELETE FROM login_second_factors WHERE user_id = \(id)", on: connection)
        try await execute("DELETE FROM device_authorizations WHERE user_id = \(id)", on: connection)
        try await execute("DELETE FROM passkey_challenges WHERE user_id = \(id)", on: connection)
    }
}
