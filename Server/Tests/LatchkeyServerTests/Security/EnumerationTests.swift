import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// Nothing tells who has an account. A locked account answers like a wrong password (same words, same decoy
/// hash), username-first passkey options are the same for every name, and lookups by email use an index.
@Suite("No account enumeration through lockout, passkey options or lookups")
struct EnumerationTests {
    static func same(_ a: HTTPResult, _ b: HTTPResult) throws -> Bool {
        let ja = try a.json(), jb = try b.json()
        return a.status == b.status && ja["error_message_key"] as? String == jb["error_message_key"] as? String
            && ja["error_user_msg"] as? String == jb["error_user_msg"] as? String
            && ja["error_description"] as? String == jb["error_description"] as? String
    }

    @Test("a locked account answers a wrong (or right) password exactly as an unknown account does, after a decoy hash")
    func lockedAnswersLikeWrongPassword() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxFailuresPerAccount = 3 }
        defer { Task { await server.stop() } }
        for attempt in 1...3 {
            let wrong = try await server.passwordLogin("demo@example.com", "wrong \(attempt)")
            #expect(wrong.status == 401 && wrong.messageKey == "login.invalid_credentials", "attempt \(attempt), the locking one included")
        }
        let hold = HashHold.install(on: server, holding: [])
        let unknown = try await server.passwordLogin("nobody@example.com", "wrong again")
        let lockedWrong = try await server.passwordLogin("demo@example.com", "wrong again")
        let lockedRight = try await server.passwordLogin("demo@example.com", ConcurrentGuessLockoutTests.right)
        #expect(lockedWrong.status == 401 && lockedWrong.messageKey == "login.invalid_credentials")
        #expect(try Self.same(lockedWrong, unknown), "\(lockedWrong.text) vs \(unknown.text)")
        #expect(try Self.same(lockedRight, unknown), "the right password is no oracle while locked: \(lockedRight.text)")
        // Every one of the three cost one bcrypt (the locked ones against the decoy, so no real hash was tried).
        #expect(await hold.count(.decoy) == 3)
        #expect(await hold.count(.verify) == 0)
    }

    @Test("the hosted page says the same for a locked account and an unknown one")
    func hostedPageLockedAnswersLikeWrongPassword() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxFailuresPerAccount = 2 }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var page = try await server.openLoginPage(browser, AuthorizeOptions())
        for attempt in 1...3 { page = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong \(attempt)") }
        #expect(page.status == 401)
        #expect(page.text.contains("The email or password is incorrect."))
        #expect(!page.text.contains("locked"))
    }

    @Test("the account's owner (self-service password change, signed in) is told of the lock, in their language")
    func ownerIsToldOfTheLock() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        func change(_ current: String) async throws -> HTTPResult {
            try await server.call(
                "POST", "/users/me/update-credentials", token: token,
                json: ["attributes": ["password": "the engine weaves algebra", "currentPassword": current]],
                contentType: "application/json", headers: ["Accept-Language": "ru"])
        }
        for attempt in 1...4 {
            #expect(try await change("wrong \(attempt)").string("message.key") == "error.userservice.invalid_current_password")
        }
        let locking = try await change("wrong 5")
        #expect(try locking.status == 400 && locking.string("message.key") == "login.locked", "\(locking.text)")
        let right = try await change(ConcurrentGuessLockoutTests.right)
        #expect(try right.string("message.key") == "login.locked", "locked whatever the password: \(right.text)")
        #expect(right.text.contains("15 минут"), "\(right.text)")
    }

    /// signup-options → authenticator → signup for `email`.
    static func signUp(_ server: TestServer, _ authenticator: SoftwareAuthenticator, email: String) async throws {
        let options = try await server.call(
            "POST", "/identity/v1/webauthn/signup-options", token: nil,
            json: [
                "client_id": "latchkey-demo", "origin": server.base, "friendly_name": "key", "profile": ["email": email]
            ] as [String: Any],
            contentType: "application/json")
        #expect(options.status == 200, "\(options.text)")
        let parsed = try RegistrationOptions(json: options.body)
        let credential = try await authenticator.createCredential(for: parsed.options, origin: server.base)
        let body = try JSONEncoder().encode(
            JSONValue.object([
                "webauthn_id": .string(parsed.options.user.encodedId),
                "public_key_credential": credential.reachFiveJSON
            ]))
        let signup = try await server.call("POST", "/identity/v1/webauthn/signup", token: nil, body: body, contentType: "application/json")
        #expect(signup.status == 200, "\(signup.text)")
    }

    static func authenticationOptions(_ server: TestServer, email: String) async throws -> HTTPResult {
        try await server.call(
            "POST", "/identity/v1/webauthn/authentication-options", token: nil,
            json: ["client_id": "latchkey-demo", "origin": server.base, "email": email], contentType: "application/json")
    }

    @Test("username-first passkey options list no credential ids, known name or not, yet only that user's passkey answers")
    func usernameFirstOptionsRevealNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let ada = SoftwareAuthenticator(), grace = SoftwareAuthenticator()
        try await Self.signUp(server, ada, email: "ada@example.com")
        try await Self.signUp(server, grace, email: "grace@example.com")

        let known = try await Self.authenticationOptions(server, email: "ada@example.com")
        let unknown = try await Self.authenticationOptions(server, email: "nobody@example.com")
        #expect(known.status == 200 && unknown.status == 200)
        var knownKey = try #require(try known.json()["public_key"] as? [String: Any])
        var unknownKey = try #require(try unknown.json()["public_key"] as? [String: Any])
        #expect(((knownKey["allow_credentials"] as? [Any]) ?? []).isEmpty, "no credential ids for a typed name: \(known.text)")
        knownKey["challenge"] = nil
        unknownKey["challenge"] = nil
        #expect(NSDictionary(dictionary: knownKey).isEqual(to: unknownKey), "\(known.text) vs \(unknown.text)")

        // Grace's passkey cannot answer a ceremony started for Ada; Ada's (discoverable) passkey can.
        let forAda = try PublicKeyCredentialRequestOptions(json: known.body, style: .reachFive)
        let graceAnswer = try await grace.getAssertion(for: forAda, origin: server.base)
        let refused = try await server.call(
            "POST", "/identity/v1/webauthn/authentication", token: nil,
            body: try JSONEncoder().encode(graceAnswer.reachFiveJSON), contentType: "application/json")
        #expect(refused.status == 400 || refused.status == 401, "\(refused.text)")
        let again = try PublicKeyCredentialRequestOptions(
            json: try await Self.authenticationOptions(server, email: "ada@example.com").body,
            style: .reachFive)
        let adaAnswer = try await ada.getAssertion(for: again, origin: server.base)
        let accepted = try await server.call(
            "POST", "/identity/v1/webauthn/authentication", token: nil,
            body: try JSONEncoder().encode(adaAnswer.reachFiveJSON), contentType: "application/json")
        #expect(accepted.status == 200, "\(accepted.text)")
    }

    @Test("lookups by email use an index (no table scan that makes unknown identifiers slower)")
    func emailLookupUsesTheIndex() async throws {
        let server = try await TestServer.start(databasePath: TestServer.newSQLitePath())  // SQLite's query plan
        defer { Task { await server.stop() } }
        let store = try #require(server.server.store as? SQLiteStore)
        let plan = try await store.emailLookupPlan()
        #expect(plan.contains("users_claim_email"), "\(plan)")
        let found = try await store.users(claim: "email", equals: "DEMO@example.com")
        #expect(found.map(\.username) == ["demo@example.com"], "the indexed lookup still ignores case")
    }
}

/// Lockout DoS. Wrong guesses lock the account for the guesser's address only; only many addresses together
/// lock it for everyone.
@Suite("Lockout per account and address")
struct LockoutPerAddressTests {
    @Test("a stranger's wrong guesses do not lock the owner out; guesses from many addresses lock the account for all")
    func strangerCannotLockTheOwnerOut() async throws {
        let proxies = try TrustedProxies(["127.0.0.1"])
        let server = try await TestServer.start {
            $0.trustedProxies = proxies
            $0.loginPolicy.maxFailuresPerAccount = 2
            $0.loginPolicy.maxFailuresPerAccountAllAddresses = 4
        }
        defer { Task { await server.stop() } }
        let stranger = ["X-Forwarded-For": "203.0.113.66"], owner = ["X-Forwarded-For": "198.51.100.5"]
        for attempt in 1...2 { _ = try await server.passwordLogin("demo@example.com", "guess \(attempt)", headers: stranger) }
        let strangerRight = try await server.passwordLogin("demo@example.com", ConcurrentGuessLockoutTests.right, headers: stranger)
        #expect(strangerRight.status == 401, "locked for the stranger's address")
        let ownerRight = try await server.passwordLogin("demo@example.com", ConcurrentGuessLockoutTests.right, headers: owner)
        #expect(ownerRight.status == 200, "the owner signs in from their own address: \(ownerRight.text)")

        // Two more addresses, two failures each: four in all, the account-wide limit.
        for address in ["192.0.2.1", "192.0.2.2"] {
            for attempt in 1...2 { _ = try await server.passwordLogin("demo@example.com", "guess \(attempt)", headers: ["X-Forwarded-For": address]) }
        }
        let lockedForAll = try await server.passwordLogin("demo@example.com", ConcurrentGuessLockoutTests.right, headers: owner)
        #expect(lockedForAll.status == 401 && lockedForAll.messageKey == "login.invalid_credentials", "\(lockedForAll.text)")
        server.advanceClock(15 * 60 + 1)
        #expect(try await server.passwordLogin("demo@example.com", ConcurrentGuessLockoutTests.right, headers: owner).status == 200)
    }
}
