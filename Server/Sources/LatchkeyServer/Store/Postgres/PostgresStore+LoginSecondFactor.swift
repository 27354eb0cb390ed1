import Foundation
import PostgresNIO

/// The hosted page's pending second factors.
extension PostgresStore {
    public func insertLoginSecondFactor(_ p: LoginSecondFactorRecord, now: Date) async throws -> Bool {
        let amr = try SQLiteStore.json(p.amr), t = now.epoch
        return try await transaction { connection in
            try await self.execute("DELETE FROM login_second_factors WHERE expires_at < \(t)", on: connection)
            // SQLite's INSERT OR IGNORE: a pending second factor is never replaced. A concurrent insert for the same
            // request (on any instance) is waited for, then this one does nothing and reports false.
            return try await self.execute(
                """
                INSERT INTO login_second_factors (request_id, browser_hash, user_id, kind, code_digest, attempts, sends, amr,
                    auth_time, expires_at)
                VALUES (\(p.requestId), \(p.browserHash), \(p.userId), \(p.kind), \(p.codeDigest), \(p.attempts), \(p.sends), \(amr),
                        \(p.authTime.epoch), \(p.expiresAt.epoch))
                ON CONFLICT (request_id) DO NOTHING
                RETURNING 1
                """, on: connection) == 1
        }
    }

    public func loginSecondFactor(requestId: String) async throws -> LoginSecondFactorRecord? {
        try await connection { connection in
            guard let row = try await self.row("SELECT * FROM login_second_factors WHERE request_id = \(requestId)", on: connection) else {
                return nil
            }
            let c = Columns(row)
            return LoginSecondFactorRecord(
                requestId: try c("request_id"), browserHash: try c("browser_hash"), userId: try c("user_id"),
                kind: try c("kind"), codeDigest: try c("code_digest"), attempts: try c("attempts"),
                sends: try c("sends"), amr: SQLiteStore.amr(try c("amr", as: String?.self)),
                authTime: try c.date("auth_time") ?? .distantPast,
                expiresAt: try c.date("expires_at") ?? .distantPast)
        }
    }

    public func failLoginSecondFactor(requestId: String, maxAttempts: Int) async throws -> Bool {
        try await transaction { connection in
            // The UPDATE … RETURNING counts and reads in one statement and holds the row's lock until commit, so the
            // delete at the limit follows from the same state for concurrent failures on any instance.
            guard
                let attempts = try await self.row(
                    """
                    UPDATE login_second_factors SET attempts = attempts + 1 WHERE request_id = \(requestId) RETURNING attempts
                    """, on: connection)?.decode(Int.self)
            else {
                // No pending second factor: false, as SQLite (which reads a missing row as exhausted). Nothing to delete,
                // and no second statement that could see a row inserted meanwhile.
                return false
            }
            if attempts >= maxAttempts {
                try await self.execute("DELETE FROM login_second_factors WHERE request_id = \(requestId)", on: connection)
            }
            return attempts < maxAttempts
        }
    }

    public func resendLoginSecondFactor(requestId: String, codeDigest: Data, expiresAt: Date, maxSends: Int) async throws -> Bool {
        let until = expiresAt.epoch
        return try await connection { connection in
            // One conditional UPDATE: concurrent resends (on any instance) re-check `sends` after each other's write.
            try await self.execute(
                """
                UPDATE login_second_factors SET code_digest = \(codeDigest), expires_at = \(until), sends = sends + 1
                WHERE request_id = \(requestId) AND kind = 'email' AND sends < \(maxSends)
                RETURNING 1
                """, on: connection) == 1
        }
    }

    public func takeLoginSecondFactor(requestId: String) async throws -> Bool {
        try await connection { connection in
            try await self.execute("DELETE FROM login_second_factors WHERE request_id = \(requestId) RETURNING 1", on: connection) == 1
        }
    }
}
