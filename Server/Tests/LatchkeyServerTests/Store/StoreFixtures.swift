import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Testing

// MARK: Store kinds

/// The `Store` implementations the contract suite runs against. SQLite always; PostgreSQL when
/// `LATCHKEY_TEST_POSTGRES_URL` names a superuser on a throwaway cluster (`postgres://latchkey@127.0.0.1:55432/postgres`):
/// every test then creates its own database there and drops it at the end.
enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static let postgresURLVariable = "LATCHKEY_TEST_POSTGRES_URL"

    /// The admin URL of the test cluster, if one is configured.
    static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment[postgresURLVariable], !url.isEmpty else { return nil }
        return url
    }

    /// The kinds this run can test: `.postgres` only with `LATCHKEY_TEST_POSTGRES_URL` set.
    static var available: [StoreKind] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }

    /// Runs `body` with a fresh, empty store of this kind, and removes the store's data afterwards (also when `body`
    /// throws).
    func withStore(_ body: (any Store) async throws -> Void) async throws {
        try await withStores(1) { try await body($0[0]) }
    }

    /// As `withStore`, with `count` clients of one database (instances sharing it).
    func withStores(_ count: Int, _ body: ([any Store]) async throws -> Void) async throws {
        switch self {
        case .sqlite: try await Self.withSQLiteStores(count, body)
        case .postgres: try await Self.withPostgresStores(count, body)
        }
    }

    /// A temporary SQLite file (in its own directory under `NSTemporaryDirectory()`), deleted at the end.
    private static func withSQLiteStores(_ count: Int, _ body: ([any Store]) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("latchkey-contract-\(UUID().uuidString.lowercased())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let stores: [any Store] = try (0..<count).map { _ in try SQLiteStore(path: path) }
        try await body(stores)
    }

    /// A new database `latchkey_contract_<random hex>` on the test cluster, opened with a `PostgresStore`, dropped
    /// (`WITH (FORCE)`) at the end.
    private static func withPostgresStores(_ count: Int, _ body: ([any Store]) async throws -> Void) async throws {
        guard let url = postgresURL else {
            Issue.record("\(postgresURLVariable) is not set")
            return
        }
        let admin = try PostgresLocation(url: url)
        // Each store pools up to 10 connections: a few databases at a time keep the cluster under max_connections.
        await PostgresGate.shared.acquire()
        let name = "latchkey_contract_" + StoreFixture.hex(8)
        do {
            try await PostgresAdmin.execute("CREATE DATABASE \(name)", at: admin)
        } catch {
            await PostgresGate.shared.release()
            throw error
        }
        var location = admin
        location.database = name
        var failure: (any Error)?
        do {
            var stores: [PostgresStore] = []
            // Atomicity, not latency: the whole suite may load the machine (a 60 s deadline was missed by 24 concurrent
            // reservations on two busy cores): 600 s.
            for _ in 0..<count {
                stores.append(try await PostgresStore.open(location: location, sealer: nil, poolSize: 10, timeout: .seconds(600)))
            }
            do { try await body(stores) } catch { failure = error }
            for store in stores { store.close() }
        } catch {
            failure = error
        }
        do {
            try await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", at: admin)
        } catch {
            if failure == nil { failure = error }
        }
        await PostgresGate.shared.release()
        if let failure { throw failure }
    }
}

/// Statements on the test cluster's admin database (create and drop the per-test databases), through a short-lived
/// `PostgresClient`.
enum PostgresAdmin {
    static func execute(_ sql: String, at location: PostgresLocation) async throws {
        try await execute([sql], at: location)
    }

    /// `statements` one after the other, on one connection (a query carries one statement).
    static func execute(_ statements: [String], at location: PostgresLocation) async throws {
        // The throwaway cluster is local: no TLS.
        let configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: location.password, database: location.database, tls: .disable)
        var logger = Logger(label: "latchkey.store-contract")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            for sql in statements {
                _ = try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
            }
        }
    }
}

// MARK: Records and helpers

/// Builders of store records with plausible defaults, on a fixed clock: `t0` and whole seconds from it, so every time
/// survives both stores' `DOUBLE` seconds exactly and records compare equal after a round trip.
enum StoreFixture {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// `t0` plus `seconds`.
    static func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

    static func unique(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.lowercased())" }

    /// Random bytes (a digest, a hash key).
    static func bytes(_ count: Int = 32) -> Data { Data((0..<count).map { _ in UInt8.random(in: .min ... .max) }) }

    static func hex(_ count: Int) -> String { bytes(count).map { String(format: "%02x", $0) }.joined() }

    static func limits(perAddress: Int, perAccount: Int, lockFor: TimeInterval = 300) -> LoginLimits {
        LoginLimits(perAddress: perAddress, perAccount: perAccount, lockFor: lockFor)
    }

    /// Runs `operation` `count` times at once (one child task each) and returns the results in completion order.
    static func concurrently<T: Sendable>(_ count: Int, _ operation: @escaping @Sendable (Int) async throws -> T) async throws -> [T] {
        try await withThrowingTaskGroup(of: T.self) { group in
            for index in 0..<count {
                group.addTask { try await operation(index) }
            }
            var results: [T] = []
            for try await result in group { results.append(result) }
            return results
        }
    }

    /// Runs `operation`, which must throw `StoreError.conflict`; returns the conflict's reason (nil, and an issue, when
    /// it did not throw that).
    @discardableResult
    static func expectConflict(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ operation: () async throws -> Void
    ) async -> String? {
        do {
            try await operation()
            Issue.record("expected StoreError.conflict, nothing was thrown: \(what)", sourceLocation: sourceLocation)
        } catch let error as StoreError {
            if case .conflict(let reason) = error { return reason }
            Issue.record("expected StoreError.conflict, got \(error): \(what)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected StoreError.conflict, got \(type(of: error)): \(error): \(what)", sourceLocation: sourceLocation)
        }
        return nil
    }

    // MARK: Accounts

    static func user(
        id: String = StoreFixture.unique("user"), username: String? = nil, claims: [String: String] = [:],
        passwordHash: String = "hash-v1"
    ) -> UserRecord {
        UserRecord(
            id: id, username: username ?? id, passwordHash: passwordHash, claims: claims, disabled: false, failedLogins: 0,
            lockedUntil: nil, createdAt: t0)
    }

    @discardableResult
    static func insertUser(
        _ store: any Store, id: String = StoreFixture.unique("user"), username: String? = nil,
        claims: [String: String] = [:]
    ) async throws -> UserRecord {
        let record = Self.user(id: id, username: username, claims: claims)
        try await store.insertUser(record)
        return record
    }

    static func emailChange(userId: String, email: String = "new@example.com", code: Data, expiresAt: Date = StoreFixture.at(900))
        -> EmailChangeRecord
    {
        EmailChangeRecord(userId: userId, email: email, codeDigest: code, attempts: 0, createdAt: t0, expiresAt: expiresAt)
    }

    // MARK: Sessions and tokens

    static func session(userId: String, id: String = StoreFixture.unique("sid"), expiresAt: Date = StoreFixture.at(3600))
        -> SessionRecord
    {
        SessionRecord(
            id: id, secretHash: bytes(), userId: userId, authTime: t0, createdAt: t0, expiresAt: expiresAt, endedAt: nil,
            amr: ["pwd"])
    }

    static func family(
        userId: String, id: String = StoreFixture.unique("family"), sessionId: String? = nil,
        clientId: String = "app"
    ) -> TokenFamilyRecord {
        TokenFamilyRecord(id: id, clientId: clientId, userId: userId, sessionId: sessionId, createdAt: t0)
    }

    static func refreshToken(
        _ family: TokenFamilyRecord, hash: Data = StoreFixture.bytes(), sessionId: String? = nil,
        createdAt: Date = StoreFixture.t0, expiresAt: Date = StoreFixture.at(3600)
    ) -> RefreshTokenRecord {
        RefreshTokenRecord(
            tokenHash: hash, familyId: family.id, clientId: family.clientId, userId: family.userId,
            scope: ["openid", "offline_access"], sessionId: sessionId ?? family.sessionId, authTime: t0,
            createdAt: createdAt, expiresAt: expiresAt, usedAt: nil, amr: ["pwd", "otp"], jkt: "thumbprint")
    }

    static func accessToken(
        jti: String = StoreFixture.unique("jti"), familyId: String?, subject: String,
        expiresAt: Date = StoreFixture.at(300)
    ) -> AccessTokenRecord {
        AccessTokenRecord(jti: jti, familyId: familyId, clientId: "app", subject: subject, expiresAt: expiresAt, revokedAt: nil)
    }

    static func code(
        userId: String, sessionId: String? = nil, hash: Data = StoreFixture.bytes(),
        expiresAt: Date = StoreFixture.at(60)
    ) -> AuthorizationCodeRecord {
        AuthorizationCodeRecord(
            codeHash: hash, clientId: "app", userId: userId, redirectUri: "https://app.example/callback",
            scope: ["openid", "profile"], nonce: "n-0S6", codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            sessionId: sessionId, authTime: t0, expiresAt: expiresAt, usedAt: nil, familyId: nil, amr: ["pwd"])
    }

    static func signingKey(kid: String, createdAt: Date) -> SigningKeyRecord {
        SigningKeyRecord(
            kid: kid, algorithm: "RS256", pem: "-----BEGIN PRIVATE KEY-----\n\(kid)\n-----END PRIVATE KEY-----\n",
            createdAt: createdAt, retiredAt: nil)
    }

    // MARK: Pending logins and flows

    static func loginRequest(
        id: String = StoreFixture.unique("request"), createdAt: Date = StoreFixture.t0,
        expiresAt: Date = StoreFixture.at(600)
    ) -> LoginRequestRecord {
        let request = AuthorizationRequest(
            clientId: "app", redirectUri: "https://app.example/callback", scope: ["openid", "email"],
            state: "xyz", nonce: "n-0S6", codeChallenge: "challenge", loginHint: "ada@example.com",
            uiLocales: "fr-CA", maxAge: 300, prompt: ["login"], returnTo: nil)
        return LoginRequestRecord(id: id, request: request, createdAt: createdAt, expiresAt: expiresAt)
    }

    static func loginSecondFactor(
        userId: String, requestId: String = StoreFixture.unique("request"), kind: String = "email",
        sends: Int = 1, expiresAt: Date = StoreFixture.at(300)
    ) -> LoginSecondFactorRecord {
        LoginSecondFactorRecord(
            requestId: requestId, browserHash: bytes(), userId: userId, kind: kind, codeDigest: bytes(), attempts: 0,
            sends: sends, amr: ["pwd"], authTime: t0, expiresAt: expiresAt)
    }

    static func flowExecution(
        id: String = StoreFixture.unique("flow"), challenge: Data = StoreFixture.bytes(),
        createdAt: Date = StoreFixture.t0, expiresAt: Date = StoreFixture.at(600)
    ) -> FlowExecutionRecord {
        FlowExecutionRecord(
            id: id, applicationId: "app", flowType: "AUTHENTICATION", challengeHash: challenge,
            state: Data(#"{"node":"start"}"#.utf8), createdAt: createdAt, expiresAt: expiresAt)
    }

    // MARK: Messages

    static func outboxMessage(recipient: String = "ada@example.com", createdAt: Date = StoreFixture.t0) -> OutboxMessage {
        OutboxMessage(
            id: unique("message"), channel: .email, recipient: recipient, subject: "Your code", body: "123456 is your code",
            code: "123456", createdAt: createdAt)
    }

    static func mail(
        id: String = StoreFixture.unique("mail"), nextAttemptAt: Date = StoreFixture.t0,
        createdAt: Date = StoreFixture.t0
    ) -> QueuedDelivery {
        QueuedDelivery(
            id: id, kind: .mail, destination: MailDeliverer.relay, eventId: id, eventType: MailDeliverer.eventType,
            body: #"{"recipient":"ada@example.com","subject":"Your code","body":"123456 is your code"}"#, attempts: 0,
            nextAttemptAt: nextAttemptAt, createdAt: createdAt)
    }

    static func invitation(codeHash: Data = StoreFixture.bytes(), expiresAt: Date = StoreFixture.at(86_400)) -> InvitationRecord {
        InvitationRecord(
            codeHash: codeHash, applicationId: "app", email: "guest@example.com", createdAt: t0, expiresAt: expiresAt,
            usedAt: nil)
    }

    // MARK: OAuth extensions

    static func deviceAuthorization(clientId: String = "tv", expiresAt: Date = StoreFixture.at(600), interval: Int = 5)
        -> DeviceAuthorizationRecord
    {
        DeviceAuthorizationRecord(
            deviceCodeHash: bytes(), userCodeDigest: bytes(), clientId: clientId, scope: ["openid", "profile"],
            status: .pending, userId: nil, sessionId: nil, authTime: nil, amr: [], createdAt: t0,
            expiresAt: expiresAt, interval: interval, lastPolledAt: nil)
    }

    static func pushedRequest(expiresAt: Date = StoreFixture.at(60)) -> PushedRequestRecord {
        PushedRequestRecord(
            uriHash: bytes(), clientId: "app",
            parameters: ["client_id": ["app"], "scope": ["openid profile"], "resource": ["https://a.example", "https://b.example"]],
            expiresAt: expiresAt)
    }

    // MARK: Passkeys and step-up

    static func passkey(
        userId: String, id: String = StoreFixture.unique("credential"), signCount: UInt32 = 0,
        createdAt: Date = StoreFixture.t0
    ) -> PasskeyRecord {
        PasskeyRecord(
            id: id, userId: userId, publicKey: bytes(77), algorithm: -7, signCount: signCount, aaguid: bytes(16),
            friendlyName: "iPhone", attestationFormat: "none", backupEligible: true, backedUp: false, createdAt: createdAt,
            lastUsedAt: nil)
    }

    static func passkeyChallenge(
        hash: Data = StoreFixture.bytes(), userId: String? = "user-1", createdAt: Date = StoreFixture.t0,
        expiresAt: Date = StoreFixture.at(300)
    ) -> PasskeyChallengeRecord {
        PasskeyChallengeRecord(
            challengeHash: hash, ceremony: .signup, clientId: "app", userId: userId,
            profile: ["email": "ada@example.com", "name": "Ada"], friendlyName: "Laptop", origin: "https://app.example",
            userVerification: "required", allowedCredentials: ["cred-a", "cred-b"], createdAt: createdAt,
            expiresAt: expiresAt)
    }

    static func stepUpChallenge(
        id: String = StoreFixture.unique("stepup"), stepUpHash: Data = StoreFixture.bytes(),
        code: Data = StoreFixture.bytes(), expiresAt: Date = StoreFixture.at(300)
    ) -> StepUpChallengeRecord {
        StepUpChallengeRecord(
            id: id, stepUpHash: stepUpHash, claims: #"{"sub":"user-1","jti":"j1"}"#, kind: "email", codeDigest: code,
            attempts: 0, expiresAt: expiresAt)
    }
}
