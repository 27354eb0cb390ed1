import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema, as numbered migrations recorded in `latchkey_schema_migrations`.
///
/// The same tables as the SQLite store, in PostgreSQL's types: times are `DOUBLE PRECISION` seconds since 1970 (as in
/// SQLite, so every comparison reads the same in both stores), digests `BYTEA`, flags `BOOLEAN`. Usernames and email
/// claims are unique and looked up case-insensitively through indexes on `lower(x COLLATE "C")`: ASCII letters only,
/// exactly as SQLite's `COLLATE NOCASE`, so both stores agree on which names are the same account.
///
/// A migration is only ever appended: a released one is never edited (a database that ran it would not run it again).
enum PostgresSchema {
    struct Migration: Sendable {
        var version: Int
        var name: String
        var statements: [String]
    }

    /// The newest version this build knows; a database at a higher one was migrated by a newer Latchkey.
    static var latestVersion: Int { migrations.map(\.version).max() ?? 0 }

    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "identity-server",
            statements: [
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY, username TEXT NOT NULL, password_hash TEXT NOT NULL, claims TEXT NOT NULL,
                    disabled BOOLEAN NOT NULL DEFAULT FALSE, failed_logins BIGINT NOT NULL DEFAULT 0, locked_until DOUBLE PRECISION,
                    created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION, version BIGINT NOT NULL DEFAULT 0)
                """,
                "CREATE UNIQUE INDEX users_username ON users (lower(username COLLATE \"C\"))",
                "CREATE INDEX users_claim_email ON users (lower(((claims::jsonb) ->> 'email') COLLATE \"C\"))",
                "CREATE TABLE clients (id TEXT PRIMARY KEY, configuration TEXT NOT NULL, secret_hash BYTEA)",
                """
                CREATE TABLE login_requests (
                    id TEXT PRIMARY KEY, request TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX login_requests_expiry ON login_requests (expires_at)",
                """
                CREATE TABLE token_families (
                    id TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
                    revoked_at DOUBLE PRECISION, revoked_reason TEXT, session_id TEXT)
                """,
                "CREATE INDEX token_families_session ON token_families (session_id)",
                "CREATE INDEX token_families_user ON token_families (user_id)",
                """
                CREATE TABLE authorization_codes (
                    code_hash BYTEA PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
                    scope TEXT NOT NULL, nonce TEXT, code_challenge TEXT, session_id TEXT, auth_time DOUBLE PRECISION NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL, used_at DOUBLE PRECISION, family_id TEXT, amr TEXT)
                """,
                "CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at)",
                """
                CREATE TABLE refresh_tokens (
                    token_hash BYTEA PRIMARY KEY, family_id TEXT NOT NULL REFERENCES token_families(id),
                    client_id TEXT NOT NULL, user_id TEXT NOT NULL, scope TEXT NOT NULL, session_id TEXT,
                    auth_time DOUBLE PRECISION NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL,
                    used_at DOUBLE PRECISION, amr TEXT, jkt TEXT)
                """,
                "CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id)",
                "CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id)",
                """
                CREATE TABLE access_tokens (
                    jti TEXT PRIMARY KEY, family_id TEXT, client_id TEXT NOT NULL, subject TEXT NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION)
                """,
                "CREATE INDEX access_tokens_subject ON access_tokens (subject)",
                """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY, secret_hash BYTEA NOT NULL UNIQUE, user_id TEXT NOT NULL, auth_time DOUBLE PRECISION NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL, ended_at DOUBLE PRECISION, amr TEXT)
                """,
                "CREATE INDEX sessions_user ON sessions (user_id)",
                """
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY, algorithm TEXT NOT NULL, pem TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
                    retired_at DOUBLE PRECISION)
                """,
                """
                CREATE TABLE user_factors (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, kind TEXT NOT NULL, secret TEXT NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL, totp_last_step BIGINT, PRIMARY KEY (user_id, kind))
                """,
                """
                CREATE TABLE flow_executions (
                    id TEXT PRIMARY KEY, application_id TEXT NOT NULL, flow_type TEXT NOT NULL, challenge_hash BYTEA NOT NULL,
                    state BYTEA NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                """
                CREATE TABLE outbox (
                    id TEXT PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, subject TEXT NOT NULL,
                    body TEXT NOT NULL, code TEXT, created_at DOUBLE PRECISION NOT NULL, seq BIGINT GENERATED ALWAYS AS IDENTITY)
                """,
                "CREATE INDEX outbox_recipient ON outbox (lower(recipient COLLATE \"C\"), created_at)",
                """
                CREATE TABLE invitations (
                    code_hash BYTEA PRIMARY KEY, application_id TEXT NOT NULL, email TEXT, created_at DOUBLE PRECISION NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL, used_at DOUBLE PRECISION)
                """,
                "CREATE TABLE consumed_token_ids (jti TEXT PRIMARY KEY, expires_at DOUBLE PRECISION NOT NULL)",
                """
                CREATE TABLE passkeys (
                    id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, public_key BYTEA NOT NULL,
                    algorithm BIGINT NOT NULL, sign_count BIGINT NOT NULL, aaguid BYTEA NOT NULL, friendly_name TEXT NOT NULL,
                    attestation_format TEXT NOT NULL, backup_eligible BOOLEAN NOT NULL, backed_up BOOLEAN NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL, last_used_at DOUBLE PRECISION,
                    seq BIGINT GENERATED ALWAYS AS IDENTITY)
                """,
                // `seq` orders a user's passkeys as they were added, as SQLite's rowid does.
                "CREATE INDEX passkeys_user ON passkeys (user_id)",
                """
                CREATE TABLE passkey_challenges (
                    challenge_hash BYTEA PRIMARY KEY, ceremony TEXT NOT NULL, client_id TEXT, user_id TEXT, profile TEXT NOT NULL,
                    friendly_name TEXT, origin TEXT NOT NULL, user_verification TEXT NOT NULL, allowed_credentials TEXT NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                """
                CREATE TABLE federated_identities (
                    provider TEXT NOT NULL, subject TEXT NOT NULL, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (provider, subject))
                """,
                "CREATE TABLE account_events (key TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
                "CREATE INDEX account_events_key ON account_events (key, at)",
                "CREATE INDEX account_events_at ON account_events (at)",
                """
                CREATE TABLE step_up_challenges (
                    id TEXT PRIMARY KEY, step_up_hash BYTEA NOT NULL UNIQUE, claims TEXT NOT NULL, kind TEXT NOT NULL,
                    code_digest BYTEA NOT NULL, attempts BIGINT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                """
                CREATE TABLE login_attempts (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, address TEXT NOT NULL,
                    failed BIGINT NOT NULL DEFAULT 0, locked_until DOUBLE PRECISION, updated_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (user_id, address))
                """,
                """
                CREATE TABLE email_changes (
                    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE, email TEXT NOT NULL, code_digest BYTEA NOT NULL,
                    attempts BIGINT NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                """
                CREATE TABLE login_second_factors (
                    request_id TEXT PRIMARY KEY, browser_hash BYTEA NOT NULL, user_id TEXT NOT NULL, kind TEXT NOT NULL,
                    code_digest BYTEA NOT NULL, attempts BIGINT NOT NULL, sends BIGINT NOT NULL, amr TEXT NOT NULL,
                    auth_time DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                """
                CREATE TABLE mail_queue (
                    id TEXT PRIMARY KEY, recipient TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
                    attempts BIGINT NOT NULL DEFAULT 0, next_attempt_at DOUBLE PRECISION NOT NULL, created_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX mail_queue_due ON mail_queue (next_attempt_at)",
                """
                CREATE TABLE pushed_requests (
                    uri_hash BYTEA PRIMARY KEY, client_id TEXT NOT NULL, parameters TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
                """,
                """
                CREATE TABLE device_authorizations (
                    device_code_hash BYTEA PRIMARY KEY, user_code_digest BYTEA NOT NULL UNIQUE, client_id TEXT NOT NULL,
                    scope TEXT NOT NULL, status TEXT NOT NULL, user_id TEXT, session_id TEXT, auth_time DOUBLE PRECISION, amr TEXT,
                    created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL, poll_interval BIGINT NOT NULL,
                    last_polled_at DOUBLE PRECISION)
                """,
                // Per-address throttles shared by every instance (`Store.reserveAddressEvent`).
                "CREATE TABLE address_events (bucket TEXT NOT NULL, address TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
                "CREATE INDEX address_events_key ON address_events (bucket, address, at)",
                "CREATE INDEX address_events_at ON address_events (at)"
            ]),
        // Pruning consumed ids by expiry reads an index, not the whole table.
        Migration(
            version: 2, name: "consumed-ids-expiry-index",
            statements: [
                "CREATE INDEX consumed_token_ids_expires ON consumed_token_ids (expires_at)"
            ]),
        // Federated sign-ins in progress (the upstream `state`, then the verified result), and links by account.
        Migration(
            version: 3, name: "federated-logins",
            statements: [
                """
                CREATE TABLE federated_logins (
                    handle_hash BYTEA PRIMARY KEY, provider TEXT NOT NULL, purpose TEXT NOT NULL, payload BYTEA NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX federated_logins_expires ON federated_logins (expires_at)",
                "CREATE INDEX federated_identities_user ON federated_identities (user_id)"
            ]),
        // The audit trail: ordered and paged by (at, id) newest first, each filter with an index in that order.
        Migration(
            version: 4, name: "audit-events",
            statements: [
                """
                CREATE TABLE audit_events (
                    id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL, type TEXT NOT NULL, outcome TEXT NOT NULL,
                    actor TEXT NOT NULL, subject TEXT, client_id TEXT, client_address TEXT, request_id TEXT, details TEXT NOT NULL)
                """,
                "CREATE INDEX audit_events_at ON audit_events (at, id)",
                "CREATE INDEX audit_events_subject ON audit_events (subject, at, id)",
                "CREATE INDEX audit_events_type ON audit_events (type, at, id)",
                "CREATE INDEX audit_events_client ON audit_events (client_id, at, id)"
            ]),
        // Registered applications (RFC 7591/7592): origin, registration access token, the secret of a rotation's grace
        // period; indexes by client on the token tables, for deleting an application.
        Migration(
            version: 5, name: "registered-clients",
            statements: [
                "ALTER TABLE clients ADD COLUMN origin TEXT NOT NULL DEFAULT 'configuration'",
                "ALTER TABLE clients ADD COLUMN registration_token_hash BYTEA",
                "ALTER TABLE clients ADD COLUMN previous_secret_hash BYTEA",
                "ALTER TABLE clients ADD COLUMN previous_secret_expires_at DOUBLE PRECISION",
                "ALTER TABLE clients ADD COLUMN issued_at DOUBLE PRECISION",
                "CREATE INDEX token_families_client ON token_families (client_id)",
                "CREATE INDEX access_tokens_client ON access_tokens (client_id)"
            ]),
        // Audit events waiting for delivery to webhooks, claimed per webhook in due order.
        Migration(
            version: 6, name: "webhook-deliveries",
            statements: [
                """
                CREATE TABLE webhook_deliveries (
                    id TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL, body TEXT NOT NULL,
                    attempts BIGINT NOT NULL DEFAULT 0, next_attempt_at DOUBLE PRECISION NOT NULL, created_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, next_attempt_at, created_at)",
                "CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at)"
            ]),
        // RFC 9449 §10 (a code bound to a DPoP key) and OpenID Connect Core §5.5 (the claims a code's tokens carry).
        Migration(
            version: 7, name: "code-bindings",
            statements: [
                "ALTER TABLE authorization_codes ADD COLUMN dpop_jkt TEXT", "ALTER TABLE authorization_codes ADD COLUMN claims TEXT"
            ]),
        // Back-channel logout: whether a session's end was announced, and the lease of the pass announcing it. Sessions
        // that ended before are not announced late.
        Migration(
            version: 8, name: "logout-announcements",
            statements: [
                "ALTER TABLE sessions ADD COLUMN logout_announced BOOLEAN NOT NULL DEFAULT FALSE",
                "ALTER TABLE sessions ADD COLUMN logout_lease_until DOUBLE PRECISION NOT NULL DEFAULT 0",
                "UPDATE sessions SET logout_announced = TRUE WHERE ended_at IS NOT NULL",
                "CREATE INDEX sessions_logout_pending ON sessions (ended_at) WHERE NOT logout_announced AND ended_at IS NOT NULL"
            ]),
        // Who registered each registered application (review 3, R3-6): earlier registrations take the actor the audit
        // trail recorded while it still holds it; the others stay unowned (administrators only).
        Migration(
            version: 9, name: "client-registrants",
            statements: [
                "ALTER TABLE clients ADD COLUMN registered_by TEXT",
                """
                UPDATE clients SET registered_by = (
                    SELECT actor FROM audit_events
                    WHERE audit_events.type = 'application.registered' AND audit_events.client_id = clients.id
                    ORDER BY at, id LIMIT 1)
                WHERE origin = 'registration'
                """
            ]),
        // Consents to third-party applications, per (user, application): removed with the account (cascade) and with the
        // application (`deleteClient`).
        Migration(
            version: 10, name: "consents",
            statements: [
                """
                CREATE TABLE consents (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, client_id TEXT NOT NULL, scopes TEXT NOT NULL,
                    granted_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (user_id, client_id))
                """
            ]),
        // `RefreshReuse`: a rotated token's successor (hash and sealed plaintext) for a retry within the interval.
        Migration(
            version: 11, name: "refresh-token-successors",
            statements: [
                "ALTER TABLE refresh_tokens ADD COLUMN successor_hash BYTEA",
                "ALTER TABLE refresh_tokens ADD COLUMN successor_sealed TEXT"
            ]),
        // A family keeps one row with a sealed successor (the live token's predecessor); a session refreshed for a year
        // has 100,000 rows in one family, which `refresh_tokens_family` cannot narrow (measured: 64 ms a rotation at
        // 75,587 rows). Rotation and the reuse lookup find that one row through this partial index.
        Migration(
            version: 12, name: "refresh-token-live-seal-index",
            statements: [
                "CREATE INDEX refresh_tokens_live_seal ON refresh_tokens (family_id) WHERE successor_sealed IS NOT NULL"
            ]),
        // An account whose deletion its owner asked for with a grace period (`account_deletion_grace_days`).
        Migration(
            version: 13, name: "account-deletions",
            statements: [
                """
                CREATE TABLE account_deletions (
                    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE, requested_at DOUBLE PRECISION NOT NULL,
                    due_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX account_deletions_due ON account_deletions (due_at)"
            ]),
        // Sign in with Apple's refresh token, sealed, so that deleting the account can revoke it at Apple.
        Migration(
            version: 14, name: "federated-refresh-tokens",
            statements: ["ALTER TABLE federated_identities ADD COLUMN refresh_token_sealed TEXT"]),
        // Recovery codes, as keyed digests; `used_at` set once (`useRecoveryCode`).
        Migration(
            version: 15, name: "recovery-codes",
            statements: [
                """
                CREATE TABLE recovery_codes (
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, code_digest BYTEA NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL, used_at DOUBLE PRECISION, PRIMARY KEY (user_id, code_digest))
                """
            ]),
        // One delivery queue for every kind (`DeliveryStore`): the rows waiting in the mail and webhook queues move
        // over with their attempts and due times (logout notices, queued under `backchannel_logout:<client>`, become
        // their own kind).
        Migration(
            version: 16, name: "deliveries",
            statements: [
                """
                CREATE TABLE deliveries (
                    id TEXT PRIMARY KEY, kind TEXT NOT NULL, destination TEXT NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL,
                    body TEXT NOT NULL, attempts BIGINT NOT NULL DEFAULT 0, next_attempt_at DOUBLE PRECISION NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL)
                """,
                "CREATE INDEX deliveries_due ON deliveries (kind, destination, next_attempt_at, created_at)",
                "CREATE INDEX deliveries_created ON deliveries (created_at)",
                """
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    SELECT id, 'mail', 'relay', id, 'email',
                        json_build_object('recipient', recipient, 'subject', subject, 'body', body)::text,
                        attempts, next_attempt_at, created_at
                    FROM mail_queue
                """,
                """
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    SELECT id, 'backchannel_logout', substr(webhook_id, 20), event_id, event_type, body, attempts, next_attempt_at,
                        created_at
                    FROM webhook_deliveries WHERE substr(webhook_id, 1, 19) = 'backchannel_logout:'
                """,
                """
                INSERT INTO deliveries (id, kind, destination, event_id, event_type, body, attempts, next_attempt_at, created_at)
                    SELECT id, 'audit_webhook', webhook_id, event_id, event_type, body, attempts, next_attempt_at, created_at
                    FROM webhook_deliveries WHERE substr(webhook_id, 1, 19) <> 'backchannel_logout:'
                """,
                "DROP TABLE mail_queue",
                "DROP TABLE webhook_deliveries"
            ])
    ]

    /// Brings the database to `latestVersion`, one migration per transaction, under an advisory lock: instances that
    /// start together migrate once, the others wait and then find nothing to do. Refuses a database that a newer
    /// Latchkey migrated (`StoreError.schemaTooNew`). Returns the versions applied now.
    @discardableResult
    static func migrate(_ client: PostgresPool, logger: Logger, upTo target: Int = latestVersion) async throws -> [Int] {
        try await client.withConnection { connection in
            // Waiting for another instance's migration, and the DDL itself, may take longer than a request may: no
            // statement or lock timeout on this connection while it migrates (RESET gives the session's back).
            try await connection.query("SET statement_timeout = 0", logger: logger)
            try await connection.query("SET lock_timeout = 0", logger: logger)
            // The lock first, then the bookkeeping table: two first starts must not both create it.
            try await connection.query("SELECT pg_advisory_lock(\(lockKey))", logger: logger)
            let outcome: Result<[Int], any Error>
            do {
                outcome = .success(try await applyMigrations(connection, logger: logger, upTo: target))
            } catch {
                outcome = .failure(error)
            }
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
            _ = try? await connection.query("RESET statement_timeout", logger: logger)
            _ = try? await connection.query("RESET lock_timeout", logger: logger)
            return try outcome.get()
        }
    }

    private static func applyMigrations(_ connection: PostgresConnection, logger: Logger, upTo target: Int) async throws -> [Int] {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS latchkey_schema_migrations (
                version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
            """, logger: logger)
        let applied = try await appliedVersions(connection, logger: logger)
        if let newest = applied.max(), newest > latestVersion {
            throw StoreError.schemaTooNew(found: newest, known: latestVersion)
        }
        var done: [Int] = []
        for migration in migrations where migration.version <= target && !applied.contains(migration.version) {
            try await connection.query("BEGIN", logger: logger)
            do {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO latchkey_schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            done.append(migration.version)
        }
        return done
    }

    /// The version the database is at (0 before the first migration).
    static func currentVersion(_ client: PostgresPool, logger: Logger) async throws -> Int {
        try await client.withConnection { connection in
            let exists =
                try await connection.query("SELECT to_regclass('latchkey_schema_migrations') IS NOT NULL", logger: logger)
                .collect().first?.decode(Bool.self) ?? false
            guard exists else { return 0 }
            return try await appliedVersions(connection, logger: logger).max() ?? 0
        }
    }

    private static func appliedVersions(_ connection: PostgresConnection, logger: Logger) async throws -> Set<Int> {
        var versions: Set<Int> = []
        for try await version in try await connection.query("SELECT version FROM latchkey_schema_migrations", logger: logger).decode(Int.self) {
            versions.insert(version)
        }
        return versions
    }

    /// The advisory lock that serializes migrations ("latchkey" in ASCII).
    private static let lockKey: Int = 0x6C61_7463_686B_6579
}
