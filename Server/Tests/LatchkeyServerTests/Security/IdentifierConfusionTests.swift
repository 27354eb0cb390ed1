import LatchkeyTestSupport
import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// Usernames and email addresses name accounts in one space. A username may not be another account's email
/// (nor an email another's username), a username that looks like an address must be the account's own verified
/// email, and Sign in with Apple links only an account whose verified *email claim* is Apple's address.
@Suite("Security: usernames and emails cannot be confused")
struct IdentifierConfusionTests {
    static let bundleId = "io.latchkey.demo"

    func put(_ server: TestServer, _ token: String, _ changes: [String: Any]) async throws -> HTTPResult {
        var attributes = try #require(try await server.call("GET", "/users/me", token: token).value("attributes") as? [String: Any])
        attributes.merge(changes) { _, new in new }
        return try await server.call("PUT", "/users/me", token: token, json: ["attributes": attributes], contentType: "application/json")
    }

    @Test("a username that is another account's email is refused, and so is an email that is another account's username")
    func crossUniqueness() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        _ = try await server.server.createUser(
            username: "victim", password: "victim's long password",
            claims: ["email": "victim@gmail.example", "email_verified": "true"])
        _ = try await server.server.createUser(
            username: "boss@corp.example", password: "boss's long password",
            claims: ["email": "boss.private@mail.example", "email_verified": "true"])
        let token = try await server.userTokens().accessToken
        let username = try await put(server, token, ["username": "victim@gmail.example"])
        #expect(username.status != 200, "\(username.text)")
        #expect(try await server.server.store.user(username: "victim@gmail.example") == nil)
        let email = try await put(server, token, ["email": "boss@corp.example"])
        #expect(email.status == 409, "\(email.text)")
        #expect(try email.string("code") == "USR-1014")
        #expect(try await server.server.outboxMessages(recipient: "boss@corp.example").isEmpty, "no code to another account's name")
        // Through SCIM as well.
        let scim = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: [
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [["op": "replace", "path": "userName", "value": "victim@gmail.example"]]
            ])
        #expect(scim.status == 409 || scim.status == 400, "\(scim.text)")
        #expect(try await server.server.store.user(username: "victim@gmail.example") == nil)
    }

    @Test("a username that looks like an email address must be the account's own verified email")
    func emailLikeUsernames() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        // Nobody has this address yet: squatting it as a username would capture its owner's future sign-ins.
        let squat = try await put(server, token, ["username": "future.victim@gmail.example"])
        #expect(squat.status == 400, "\(squat.text)")
        #expect(try squat.string("code") == "USR-1019")
        #expect(try await server.server.store.user(username: "future.victim@gmail.example") == nil)
        // A plain name is fine, and so is going back to one's own verified address.
        #expect(try await put(server, token, ["username": "demo"]).status == 200)
        let back = try await put(server, token, ["username": "DEMO@example.com"])
        #expect(back.status == 200, "\(back.text)")
    }

    func apple(_ server: TestServer, _ issuer: AppleStandIn, sub: String, email: String) async throws -> HTTPResult {
        try await server.appleSignIn(issuer, sub: sub, email: email, bundleId: Self.bundleId)
    }

    @Test("Sign in with Apple does not link the victim into an account whose username (not verified email) is the victim's address")
    func appleLinksOnTheVerifiedEmailClaimOnly() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await TestServer.startForNativeLogin(bundleId: Self.bundleId, apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        // The attacker's account: their own verified Apple address, and the victim's address as username (as the
        // attack left it, or as data from before usernames were checked).
        let attacker = try await server.server.createUser(
            username: "victim@gmail.example", password: "attacker's long password",
            claims: ["email": "attacker@icloud.example", "email_verified": "true"])
        let response = try await apple(server, issuer, sub: "apple-victim", email: "victim@gmail.example")
        #expect(response.status == 302)
        // The federation's rule, Apple's too: an address an account uses (here as its username) that may not be
        // linked is refused, never linked and never given to a second account.
        #expect(response.locationQuery["code"] == nil, "\(response.location ?? "")")
        #expect(response.locationQuery["error_message_key"] == "federation.email_in_use")
        #expect(
            try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-victim") == nil,
            "the victim's Apple ID must not be linked to the attacker's account")
        #expect(try await server.server.store.users(claim: "email", equals: "victim@gmail.example").isEmpty)
        #expect(try await server.server.store.user(id: attacker)?.claims["email"] == "attacker@icloud.example")
    }

    @Test("the Apple attack end to end: the attacker cannot take the victim's address as username in the first place")
    func appleAttackFirstStepRefused() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await TestServer.startForNativeLogin(bundleId: Self.bundleId, apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let signIn = try await apple(server, issuer, sub: "apple-attacker", email: "attacker@icloud.example")
        #expect(signIn.locationQuery["code"] != nil, "\(signIn.location ?? "")")
        // The attacker's signed-in rename, as `PUT /users/me` performs it (the HTTP path is covered above).
        let attacker = try #require(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-attacker"))
        let account = try #require(try await server.server.store.user(id: attacker.userId))
        let result = try await server.server.accounts.updateProfile(
            of: account, changes: ["username": "victim@gmail.example"], logger: server.server.logger)
        guard case .failure(.invalid(let problems)) = result else { Issue.record("the username was accepted: \(result)"); return }
        #expect(problems.map(\.attribute) == ["username"])
        let victim = try await apple(server, issuer, sub: "apple-victim", email: "victim@gmail.example")
        #expect(victim.locationQuery["code"] != nil)
        let link = try #require(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-victim"))
        #expect(link.userId != attacker.userId)
    }

    @Test(
        "the one-namespace rule holds inside the write too: a username that is another account's email, or an email that is another account's username, is a conflict even past the directory's check (concurrent changes)"
    )
    func crossUniquenessInsideTheWrite() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let store = server.server.store
        _ = try await server.server.createUser(
            username: "alice@example.com", password: "alice's own password",
            claims: ["email": "alice.private@example.com", "email_verified": "true"])
        let malloryId = try await server.server.createUser(
            username: "mallory", password: "mallory's own password",
            claims: ["email": "mallory@example.com"])
        let mallory = try #require(try await store.user(id: malloryId))
        await #expect(throws: StoreError.conflict("username")) {
            _ = try await store.updateProfile(
                userId: malloryId, username: "ALICE.PRIVATE@example.com", claims: mallory.claims, disabled: nil,
                expectedVersion: mallory.version, updatedAt: Date())
        }
        var claims = mallory.claims
        claims["email"] = "alice@example.com"
        await #expect(throws: StoreError.conflict("email")) {
            _ = try await store.updateProfile(
                userId: malloryId, username: "mallory", claims: claims, disabled: nil,
                expectedVersion: mallory.version, updatedAt: Date())
        }
        #expect(try await store.user(id: malloryId)?.username == "mallory", "nothing was written")
    }
}
