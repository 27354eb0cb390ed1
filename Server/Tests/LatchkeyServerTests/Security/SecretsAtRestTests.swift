import LatchkeyTestSupport
import Crypto
import Foundation
import HummingbirdOTP
import LatchkeyJOSE
@testable import LatchkeyServer
import Logging
import Testing

/// A copy of the database (a backup, a stray file, another local user) yields no signing key, no TOTP secret, no
/// step-up token and no reversible one-time code digest; its files are private; and a wrong key-encryption key is a
/// clear start-up error rather than garbage at the first sign-in.
@Suite("Security: secrets at rest")
struct SecretsAtRestTests {
    /// Every byte SQLite keeps for the database: the file, its write-ahead log and shared memory.
    static func databaseBytes(_ path: String) -> Data {
        var bytes = Data()
        for file in [path, path + "-wal", path + "-shm"] { bytes.append((try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()) }
        return bytes
    }

    static func contains(_ haystack: Data, _ needle: String) -> Bool { haystack.range(of: Data(needle.utf8)) != nil }

    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    static func freshPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-m8-\(UUID().uuidString)/data/latchkey.sqlite").path
    }

    @Test("the database file holds no PEM private key, TOTP secret, step-up token or bare digest of an emailed code")
    func noSecretsInClear() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo", databasePath: TestServer.newSQLitePath())
        defer { Task { await server.stop() } }
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: demo.id).secret
        // A step-up challenge (its row used to keep the whole step-up JWT).
        let token = try await OneTimeCodeBudgetTests.stepUpToken(server)
        #expect(try await OneTimeCodeBudgetTests.startChallenge(server, token).status == 200)
        // A pending emailed code in a flow execution.
        let grace = try await server.server.createUser(
            username: "grace", password: "compiler pioneer", claims: ["email": "grace@example.com", "email_verified": "true"])
        try await server.server.enrollEmailOTP(userId: grace)
        let flow = FlowDriver(server)
        try await flow.start("AUTHENTICATION")
        #expect(try await flow.submit("action_001", ["username": "grace", "password": "compiler pioneer"]).flowStatus == "INCOMPLETE")
        let code = try #require(try await server.server.outboxMessages(recipient: "grace@example.com").first?.code)

        let bytes = Self.databaseBytes(server.databasePath)
        #expect(bytes.count > 0)
        #expect(!Self.contains(bytes, "PRIVATE KEY"), "a PEM private key is in the database in clear")
        #expect(!Self.contains(bytes, secret), "the TOTP secret is in the database in clear")
        #expect(!Self.contains(bytes, token), "the step-up token is in the database")
        // The flow state is JSON, where a digest is base64: the bare SHA-256 of the 6 digits must not be there.
        // (JSONEncoder writes "/" as "\/" in strings.)
        let unkeyed = Data(SHA256.hash(data: Data(code.utf8))).base64EncodedString()
        #expect(
            !Self.contains(bytes, unkeyed) && !Self.contains(bytes, unkeyed.replacingOccurrences(of: "/", with: "\\/")), "the code digest is unkeyed")
        // And all of it still works: tokens are signed, the TOTP secret is read back.
        #expect(try await server.server.jwks().keys.count >= 2)
        let stored = try await server.server.store.factors(userId: demo.id).first { $0.kind == .totp }
        #expect(stored?.secret == secret)
    }

    @Test("the database directory is 0700 and its files 0600, the development key file too")
    func privateFiles() async throws {
        let path = Self.freshPath()
        let server = try await TestServer.start(databasePath: path)
        defer { Task { await server.stop() } }
        _ = try await server.server.createUser(username: "someone", password: "a long enough password")  // a write: WAL in use
        #expect(try Self.mode(URL(fileURLWithPath: path).deletingLastPathComponent().path) & 0o777 == 0o700)
        for file in [path, path + "-wal", path + "-shm", path + ".kek"] where FileManager.default.fileExists(atPath: file) {
            #expect(try Self.mode(file) & 0o777 == 0o600, "\(file)")
        }
        #expect(FileManager.default.fileExists(atPath: path + ".kek"), "development generates its key next to the database")
    }

    static func configuration(_ path: String) -> ServerConfiguration {
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: path, host: "127.0.0.1")
        configuration.bcryptCost = 4
        return configuration
    }

    @Test("a wrong key-encryption key is a clear start-up error; production without a key does not start")
    func wrongKeyFailsAtStart() async throws {
        let path = Self.freshPath()
        var configuration = Self.configuration(path)
        configuration.keyEncryptionKey = Data(repeating: 1, count: 32)
        _ = try await IdentityServer.open(configuration: configuration)
        configuration.keyEncryptionKey = Data(repeating: 2, count: 32)
        do {
            _ = try await IdentityServer.open(configuration: configuration)
            Issue.record("the server started with the wrong key-encryption key")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("key-encryption key"), "\(error)")
        }
        // A key file readable by others is refused.
        let keyFile = path + ".other-key"
        try Data((Data(repeating: 1, count: 32).base64EncodedString() + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
        _ = chmod(keyFile, 0o644)
        configuration.keyEncryptionKey = nil
        configuration.keyEncryptionKeyFile = keyFile
        await #expect(throws: ConfigurationError.self) { _ = try await IdentityServer.open(configuration: configuration) }
        _ = chmod(keyFile, 0o600)
        _ = try await IdentityServer.open(configuration: configuration)
        // Outside development, no key means no start (rather than secrets in clear).
        var production = Self.configuration(Self.freshPath())
        production.development = false
        await #expect(throws: ConfigurationError.self) { _ = try await IdentityServer.open(configuration: production) }
    }

    @Test("rows an older version stored in clear are encrypted at start, and keep working")
    func plaintextRowsAreSealedAtStart() async throws {
        let path = Self.freshPath()
        let key = try SigningKey.generate(.es256)
        let secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
        do {
            // What the previous version wrote: no sealer.
            let bare = try SQLiteStore(path: path)
            try await bare.insertSigningKey(
                SigningKeyRecord(kid: key.kid, algorithm: "ES256", pem: key.pemRepresentation, createdAt: Date(), retiredAt: nil))
            try await bare.insertUser(
                UserRecord(
                    id: "u1", username: "old", passwordHash: "x", claims: [:], disabled: false, failedLogins: 0,
                    lockedUntil: nil, createdAt: Date()))
            try await bare.upsertFactor(UserFactorRecord(userId: "u1", kind: .totp, secret: secret, createdAt: Date()))
            #expect(Self.contains(Self.databaseBytes(path), "PRIVATE KEY"))
        }
        let server = try await IdentityServer.open(configuration: Self.configuration(path))
        let bytes = Self.databaseBytes(path)
        #expect(!Self.contains(bytes, "PRIVATE KEY") && !Self.contains(bytes, secret))
        #expect(try await server.jwks().keys.contains { $0.kid == key.kid })
        #expect(try await server.store.factors(userId: "u1").first?.secret == secret)
    }
}
