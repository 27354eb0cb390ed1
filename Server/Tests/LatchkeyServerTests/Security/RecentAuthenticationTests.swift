import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// A bearer access token whose sign-in is old (a leaked token) cannot change the username or email, nor add or
/// remove a passkey, through any dialect; the answer says why (RFC 9470 `insufficient_user_authentication`, `max_age`)
/// so the app can send the user through a fresh sign-in, after which the same change works.
@Suite("Security: identifier and passkey changes need a recent sign-in")
struct RecentAuthenticationTests {
    static let window = 300

    func put(_ server: TestServer, _ token: String, _ attributes: [String: Any]) async throws -> HTTPResult {
        try await server.call("PUT", "/users/me", token: token, json: ["attributes": attributes], contentType: "application/json")
    }

    func demoAttributes(_ server: TestServer, _ token: String) async throws -> [String: Any] {
        try #require(try await server.call("GET", "/users/me", token: token).value("attributes") as? [String: Any])
    }

    func expectChallenge(_ response: HTTPResult) {
        let challenge = response.header("WWW-Authenticate") ?? ""
        #expect(challenge.contains("error=\"insufficient_user_authentication\""), "\(challenge)")
        #expect(challenge.contains("max_age=\(Self.window)"), "\(challenge)")
    }

    @Test("PUT /users/me with a token signed in long ago cannot change the username or the email (401 AUTH-4011)")
    func selfServiceNeedsRecentSignIn() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let stolen = try await server.userTokens()
        server.advanceClock(TimeInterval(Self.window + 60))  // the token is still valid (1 h), its sign-in is not recent
        let attributes = try await demoAttributes(server, stolen.accessToken)

        var email = attributes
        email["email"] = "attacker@evil.example"
        let refusedEmail = try await put(server, stolen.accessToken, email)
        #expect(refusedEmail.status == 401, "\(refusedEmail.text)")
        #expect(try refusedEmail.string("code") == "AUTH-4011")
        #expect(try refusedEmail.string("message.key") == "error.reauthentication_required")
        expectChallenge(refusedEmail)
        #expect(try await server.server.outboxMessages(recipient: "attacker@evil.example").isEmpty, "no code went to the attacker")

        var username = attributes
        username["username"] = "mallory"
        let refusedUsername = try await put(server, stolen.accessToken, username)
        #expect(refusedUsername.status == 401)
        expectChallenge(refusedUsername)
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(demo.claims["email"] == "demo@example.com")

        // A refreshed token keeps the original sign-in time: refreshing is not signing in.
        let refreshed = try await server.refresh(try #require(stolen.refreshToken))
        let refreshedToken = try #require(try refreshed.json()["access_token"] as? String)
        #expect(try await put(server, refreshedToken, username).status == 401)

        // Other attributes need no fresh sign-in.
        var name = attributes
        name["given_name"] = "Dee"
        #expect(try await put(server, stolen.accessToken, name).status == 200)

        // After signing in again, the same change goes through.
        let fresh = try await server.userTokens()
        var renamed = try await demoAttributes(server, fresh.accessToken)
        renamed["username"] = "demo"
        let accepted = try await put(server, fresh.accessToken, renamed)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(try accepted.string("attributes.username") == "demo")
    }

    @Test("SCIM PUT/PATCH /scim2/Me with an old sign-in cannot change userName or emails (401 SCIM error)")
    func scimMeNeedsRecentSignIn() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let stolen = try await server.userTokens().accessToken
        server.advanceClock(TimeInterval(Self.window + 60))
        let patch = try await server.call(
            "PATCH", "/scim2/Me", token: stolen,
            json: [
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [["op": "replace", "path": "emails", "value": [["value": "attacker@evil.example", "primary": true]]]]
            ])
        #expect(patch.status == 401, "\(patch.text)")
        #expect(try patch.string("status") == "401")
        #expect(try patch.string("detail")?.contains("insufficient_user_authentication") == true)
        expectChallenge(patch)

        let me = try await server.call("GET", "/scim2/Me", token: stolen)
        var body = try me.json()
        body["userName"] = "mallory"
        let put = try await server.call("PUT", "/scim2/Me", token: stolen, json: body)
        #expect(put.status == 401, "\(put.text)")
        expectChallenge(put)
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        #expect(demo.claims["email"] == "demo@example.com")
        #expect(try await server.server.outboxMessages(recipient: "attacker@evil.example").isEmpty)
    }

    func post(_ server: TestServer, _ path: String, _ body: JSONValue, token: String) async throws -> HTTPResult {
        try await server.call("POST", path, token: token, body: try JSONEncoder().encode(body), contentType: "application/json")
    }

    /// registration-options → authenticator → registration with `token`.
    func addPasskey(_ server: TestServer, token: String, authenticator: SoftwareAuthenticator) async throws -> (HTTPResult, HTTPResult?) {
        let options = try await post(
            server, "/identity/v1/webauthn/registration-options",
            .object(["origin": .string(server.base), "friendly_name": .string("attacker's key")]), token: token)
        guard options.status == 200 else { return (options, nil) }
        let parsed = try RegistrationOptions(json: options.body)
        let credential = try await authenticator.createCredential(for: parsed.options, origin: server.base)
        let done = try await post(
            server, "/identity/v1/webauthn/registration",
            .object(["public_key_credential": credential.reachFiveJSON, "friendly_name": .string("attacker's key")]), token: token)
        return (options, done)
    }

    @Test("a token with an old sign-in cannot add or delete a passkey; a fresh one can, and the account's address is told")
    func passkeyRegistrationNeedsRecentSignIn() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let stolen = try await server.userTokens().accessToken
        server.advanceClock(TimeInterval(Self.window + 60))
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))

        let (options, _) = try await addPasskey(server, token: stolen, authenticator: SoftwareAuthenticator())
        #expect(options.status == 401, "\(options.text)")
        #expect(try options.json()["error"] as? String == "insufficient_user_authentication")
        #expect(try options.json()["error_message_key"] as? String == "error.reauthentication_required")
        expectChallenge(options)
        #expect(try await server.server.store.passkeys(userId: demo.id).isEmpty)

        // Options obtained while the sign-in was fresh do not help once it is old.
        let fresh = try await server.userTokens().accessToken
        let early = try await post(server, "/identity/v1/webauthn/registration-options", .object(["origin": .string(server.base)]), token: fresh)
        #expect(early.status == 200, "\(early.text)")
        server.advanceClock(TimeInterval(Self.window + 60))
        let credential = try await SoftwareAuthenticator().createCredential(
            for: try RegistrationOptions(json: early.body).options, origin: server.base)
        let late = try await post(
            server, "/identity/v1/webauthn/registration", .object(["public_key_credential": credential.reachFiveJSON]), token: fresh)
        #expect(late.status == 401)
        #expect(try late.json()["error"] as? String == "insufficient_user_authentication")
        #expect(try await server.server.store.passkeys(userId: demo.id).isEmpty, "no passkey was planted")

        // Signed in again: the passkey is added, and demo's verified address hears of it.
        let again = try await server.userTokens().accessToken
        let (_, added) = try await addPasskey(server, token: again, authenticator: SoftwareAuthenticator())
        #expect(added?.status == 204, "\(added?.text ?? "")")
        let passkey = try #require(try await server.server.store.passkeys(userId: demo.id).first)
        let notice = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first)
        #expect(notice.subject == "A passkey was added to your account")
        #expect(notice.body.contains("attacker's key") && notice.code == nil)

        // Deleting needs a recent sign-in too.
        server.advanceClock(TimeInterval(Self.window + 60))
        let delete = try await server.call("DELETE", "/identity/v1/webauthn/registration/\(passkey.id)", token: again)
        #expect(delete.status == 401)
        #expect(try await server.server.store.passkeys(userId: demo.id).count == 1)
        // With a fresh sign-in it goes, and the address hears of that too, the passkey named.
        let signedInAgain = try await server.userTokens().accessToken
        #expect(try await server.call("DELETE", "/identity/v1/webauthn/registration/\(passkey.id)", token: signedInAgain).status == 204)
        let removed = try await server.server.outboxMessages(recipient: "demo@example.com").filter {
            $0.subject == "A passkey was removed from your account"
        }
        #expect(removed.count == 1 && removed.first?.body.contains(passkey.friendlyName) == true, "\(removed.map(\.body))")
    }

    @Test("recent_auth_seconds is read from the configuration file and must be sensible")
    func configurationKey() throws {
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: "/tmp/unused.sqlite", host: "127.0.0.1")
        #expect(configuration.recentAuthenticationSeconds == 300)
        let file = try JSONDecoder().decode(ConfigurationFile.self, from: Data(#"{"recent_auth_seconds": 900}"#.utf8))
        try file.apply(to: &configuration)
        #expect(configuration.recentAuthenticationSeconds == 900)
        try configuration.validate()
        let bad = try JSONDecoder().decode(ConfigurationFile.self, from: Data(#"{"recent_auth_seconds": 5}"#.utf8))
        try bad.apply(to: &configuration)
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        // The same bound for a configuration built in code (a server embedded in another program).
        var inCode = DevelopmentDefaults.configuration(port: 0, databasePath: "/tmp/unused.sqlite", host: "127.0.0.1")
        inCode.recentAuthenticationSeconds = 100_000
        #expect(throws: ConfigurationError.self) { try inCode.validate() }
        inCode.recentAuthenticationSeconds = 300
        inCode.loginPolicy.maxCodeFailuresPerAccount = 0
        #expect(throws: ConfigurationError.self) { try inCode.validate() }
    }
}
