import LatchkeyTestSupport
import Foundation
import HummingbirdBcrypt
@testable import LatchkeyServer
import Testing

/// Bcrypt cost has a floor outside development, passwords longer than bcrypt's 72 bytes count in full (without
/// breaking hashes stored before), and client secrets are stored salted and slow, not as a bare SHA-256.
@Suite("Hashing parameters: bcrypt cost floor, long passwords, client secrets")
struct HashingParameterTests {
    @Test("bcrypt_cost below 10 is refused outside development mode")
    func bcryptCostFloor() throws {
        var configuration = ServerConfiguration(issuer: try #require(URL(string: "https://id.example")), databasePath: "/tmp/unused.sqlite")
        configuration.bcryptCost = 9
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.bcryptCost = 10
        try configuration.validate()
        configuration.bcryptCost = 32
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.bcryptCost = 4
        configuration.development = true
        configuration.issuer = try #require(URL(string: "http://localhost:8090"))  // development needs a loopback issuer
        try configuration.validate()
    }

    @Test("a password longer than 72 bytes counts in full; a hash stored before (plain bcrypt) still verifies")
    func longPasswordsAndOldHashes() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let long = String(repeating: "a", count: 72) + " and the part bcrypt alone would ignore"
        _ = try await server.server.createUser(username: "long@example.com", password: long)
        let truncated = try await server.passwordLogin("long@example.com", String(repeating: "a", count: 72) + " something else entirely")
        #expect(truncated.status == 401, "only the first 72 bytes matched")
        #expect(try await server.passwordLogin("long@example.com", long).status == 200)
        let stored = try #require(try await server.server.store.user(username: "long@example.com")?.passwordHash)
        #expect(stored.hasPrefix(PasswordHasher.prehashedPrefix))

        // An account hashed by an earlier version (bcrypt of the password itself).
        try await server.server.store.insertUser(
            UserRecord(
                id: "legacy", username: "legacy@example.com",
                passwordHash: Bcrypt.hash("an older password", cost: 4), claims: [:],
                disabled: false, failedLogins: 0, lockedUntil: nil, createdAt: Date()))
        #expect(try await server.passwordLogin("legacy@example.com", "an older password").status == 200)
        #expect(try await server.passwordLogin("legacy@example.com", "another password").status == 401)
    }

    @Test("client secrets are stored salted (not SHA-256 of the secret) and still authenticate; a wrong one is refused")
    func clientSecretsAreSalted() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let secret = "backend-secret-0123456789"
        let stored = try #require(try await server.server.store.client(id: "backend")?.secretHash)
        #expect(stored != Secrets.digest(secret))
        #expect(stored.count > 32)
        #expect(try ClientSecrets.hash(secret, rounds: 1_000) != ClientSecrets.hash(secret, rounds: 1_000), "salted")
        for attempt in 0..<2 {  // the second one is answered from the verified cache
            let ok = try await TestBrowser().postForm(
                server.base + "/oauth2/token", ["grant_type": "client_credentials", "scope": "api.read"],
                headers: ["Authorization": basicAuth("backend", secret)])
            #expect(ok.status == 200, "attempt \(attempt): \(ok.text)")
        }
        let wrong = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials", "scope": "api.read"],
            headers: ["Authorization": basicAuth("backend", secret + "x")])
        #expect(wrong.status == 401)
        #expect(try await ClientSecrets.verify(secret, against: Secrets.digest(secret)), "a bare SHA-256 stored before still verifies")
    }
}
