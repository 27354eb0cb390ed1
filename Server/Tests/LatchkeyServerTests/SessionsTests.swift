import LatchkeyTestSupport
import Foundation
import Testing

/// A user's sessions and grants over real HTTP: the signed-in user's own (`/users/me/sessions`, `/users/me/grants`)
/// and an administrator's (`/admin/v1/users/{id}/…`), in the thunderID dialect.
@Suite("Sessions: /users/me/sessions and /admin/v1/users/{id}/sessions")
struct SessionsTests {
    /// A thunderID error with `code`.
    static func expectError(_ result: HTTPResult, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status == status, "\(result.text)", sourceLocation: sourceLocation)
        #expect(try result.string("code") == code, "\(result.text)", sourceLocation: sourceLocation)
    }

    static func sid(_ server: TestServer, _ tokens: IssuedTokens) async throws -> String {
        try #require(try await server.verifiedClaims(tokens.accessToken)["sid"]?.stringValue)
    }

    static func sub(_ server: TestServer, _ tokens: IssuedTokens) async throws -> String {
        try #require(try await server.verifiedClaims(tokens.accessToken)["sub"]?.stringValue)
    }

    /// The sessions of a listing, by id.
    static func sessions(_ listing: HTTPResult) throws -> [String: [String: Any]] {
        let sessions = try #require(try listing.value("sessions") as? [[String: Any]], "\(listing.text)")
        return Dictionary(uniqueKeysWithValues: sessions.map { ($0["id"] as? String ?? "", $0) })
    }

    /// Whether a token still works: its refresh token at the token endpoint, its access token at userinfo.
    static func expectEnded(_ server: TestServer, _ tokens: IssuedTokens, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await expectEnded(server, access: tokens.accessToken, refresh: tokens.refreshToken, sourceLocation: sourceLocation)
    }

    static func expectEnded(_ server: TestServer, access: String, refresh: String?, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        #expect(try await server.userinfo(access).status == 401, "the access token stops at once", sourceLocation: sourceLocation)
        if let refresh {
            let refreshed = try await server.refresh(refresh)
            #expect(refreshed.status == 400, sourceLocation: sourceLocation)
            #expect(try refreshed.json()["error"] as? String == "invalid_grant", sourceLocation: sourceLocation)
        }
    }

    static func expectLive(_ server: TestServer, _ tokens: IssuedTokens, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await server.userinfo(tokens.accessToken).status == 200, sourceLocation: sourceLocation)
    }

    @Test func theUserListsAndEndsTheirOwnSessions() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        // Two browsers, each signed in.
        let laptop = try await server.userTokens(), phone = try await server.userTokens()
        let laptopSid = try await Self.sid(server, laptop), phoneSid = try await Self.sid(server, phone)
        #expect(laptopSid != phoneSid)

        // The phone refreshes once: its grant says when.
        let refreshed = try await server.refresh(try #require(phone.refreshToken))
        #expect(refreshed.status == 200)
        let phoneAccess = try #require(try refreshed.json()["access_token"] as? String)
        let phoneRefresh = try #require(try refreshed.json()["refresh_token"] as? String)

        let listing = try await server.call("GET", "/users/me/sessions", token: laptop.accessToken)
        #expect(listing.status == 200, "\(listing.text)")
        #expect(listing.header("Cache-Control") == "no-store")
        let sessions = try Self.sessions(listing)
        #expect(Set(sessions.keys) == [laptopSid, phoneSid])
        #expect(sessions[laptopSid]?["current"] as? Bool == true, "the caller's own session is marked")
        #expect(sessions[phoneSid]?["current"] as? Bool == false)
        #expect((sessions[laptopSid]?["amr"] as? [String])?.contains("pwd") == true)
        for key in ["created_at", "auth_time", "expires_at"] {
            #expect((sessions[laptopSid]?[key] as? String).flatMap { try? Date($0, strategy: .iso8601) } != nil, "\(key) is a time")
        }
        let laptopApps = try #require(sessions[laptopSid]?["applications"] as? [[String: Any]])
        #expect(laptopApps.count == 1)
        #expect(laptopApps.first?["client_id"] as? String == "latchkey-demo")
        #expect(laptopApps.first?["client_name"] as? String == "Latchkey Demo")
        #expect(laptopApps.first?["current"] as? Bool == true)
        #expect(laptopApps.first?["last_refreshed_at"] == nil, "never refreshed")
        let phoneApps = try #require(sessions[phoneSid]?["applications"] as? [[String: Any]])
        #expect(phoneApps.first?["current"] as? Bool == false)
        #expect(phoneApps.first?["last_refreshed_at"] is String, "refreshed once")
        #expect(try listing.value("applications") as? [Any] != nil)
        // No secret in the answer: no token, no session cookie, no hash.
        for secret in [laptop.accessToken, laptop.refreshToken, phone.refreshToken, phoneAccess, phoneRefresh].compactMap({ $0 }) {
            #expect(!listing.text.contains(secret))
        }
        #expect(!listing.text.contains("secret") && !listing.text.contains("hash"))

        // The laptop ends the phone's session: its refresh token and its access token stop at once.
        let ended = try await server.call("DELETE", "/users/me/sessions/\(phoneSid)", token: laptop.accessToken)
        #expect(ended.status == 204, "\(ended.text)")
        try await Self.expectEnded(server, access: phoneAccess, refresh: phoneRefresh)
        try await Self.expectLive(server, laptop)
        #expect(try Self.sessions(try await server.call("GET", "/users/me/sessions", token: laptop.accessToken)).keys.sorted() == [laptopSid])
        // Again: done already.
        #expect(try await server.call("DELETE", "/users/me/sessions/\(phoneSid)", token: laptop.accessToken).status == 204)
    }

    @Test func anotherUsersSessionOrGrantIsNotFound() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let demo = try await server.userTokens()
        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let adaSid = try await Self.sid(server, ada)
        let adaListing = try await server.call("GET", "/users/me/sessions", token: ada.accessToken)
        let adaGrant = try #require(try adaListing.string("sessions.0.applications.0.grant_id"))
        #expect(!(try await server.call("GET", "/users/me/sessions", token: demo.accessToken).text.contains(adaSid)))

        try Self.expectError(try await server.call("DELETE", "/users/me/sessions/\(adaSid)", token: demo.accessToken), 404, "SES-1001")
        try Self.expectError(try await server.call("DELETE", "/users/me/sessions/no-such-session", token: demo.accessToken), 404, "SES-1001")
        try Self.expectError(try await server.call("DELETE", "/users/me/grants/\(adaGrant)", token: demo.accessToken), 404, "SES-1002")
        try await Self.expectLive(server, ada)

        // Ada revokes her own grant: the app is signed out, the browser session stays.
        #expect(try await server.call("DELETE", "/users/me/grants/\(adaGrant)", token: ada.accessToken).status == 204)
        try await Self.expectEnded(server, ada)

        // Without a token, or a client's own token: refused as the rest of /users/me.
        try Self.expectError(try await server.call("GET", "/users/me/sessions", token: nil), 401, "AUTH-4010")
        try Self.expectError(
            try await server.call("GET", "/users/me/sessions", token: try await server.clientToken(scope: "scim.admin")), 403, "AUTH-4030")
    }

    @Test func signOutEverywhereKeepingThisDeviceOrNot() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let here = try await server.userTokens(), there = try await server.userTokens(), elsewhere = try await server.userTokens()
        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)

        try Self.expectError(try await server.call("DELETE", "/users/me/sessions?keep_current=perhaps", token: here.accessToken), 400, "USR-1001")
        #expect(try await server.call("DELETE", "/users/me/sessions?keep_current=true", token: here.accessToken).status == 204)
        try await Self.expectLive(server, here)
        try await Self.expectEnded(server, there)
        try await Self.expectEnded(server, elsewhere)
        try await Self.expectLive(server, ada)
        #expect(
            try Self.sessions(try await server.call("GET", "/users/me/sessions", token: here.accessToken)).keys.sorted() == [
                try await Self.sid(server, here)
            ])

        let another = try await server.userTokens()
        #expect(try await server.call("DELETE", "/users/me/sessions", token: here.accessToken).status == 204)
        try await Self.expectEnded(server, here)
        try await Self.expectEnded(server, another)
        try await Self.expectLive(server, ada)
    }

    @Test func onlyAdministratorsManageOtherUsersSessions() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let first = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let second = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let adaId = try await Self.sub(server, first)
        let path = "/admin/v1/users/\(adaId)/sessions"

        // Refused: no token; a user's token without the scope (Ada's own, and the admin's); the scope without the role.
        try Self.expectError(try await server.call("GET", path, token: nil), 401, "AUTH-4010")
        try Self.expectError(try await server.call("GET", path, token: first.accessToken), 403, "AUTH-4030")
        try Self.expectError(try await server.call("GET", path, token: try await server.userTokens().accessToken), 403, "AUTH-4030")
        let graceWithScope = try await server.userTokens(
            username: "grace+ops@example.com", password: "grace's compiler password", scope: "openid profile scim.admin")
        try Self.expectError(try await server.call("GET", path, token: graceWithScope.accessToken), 403, "AUTH-4030")
        try Self.expectError(try await server.call("DELETE", path, token: graceWithScope.accessToken), 403, "AUTH-4030")
        try Self.expectError(
            try await server.call("DELETE", "\(path)/\(try await Self.sid(server, first))", token: graceWithScope.accessToken), 403, "AUTH-4030")
        try await Self.expectLive(server, first)

        // An administrator: a user with the role whose token carries the scope, or a client for itself.
        let userAdmin = try await server.userTokens(scope: "openid profile scim.admin").accessToken
        let clientAdmin = try await server.clientToken(scope: "scim.admin")
        let listing = try await server.call("GET", path, token: userAdmin)
        #expect(listing.status == 200, "\(listing.text)")
        let sessions = try Self.sessions(listing)
        #expect(Set(sessions.keys) == [try await Self.sid(server, first), try await Self.sid(server, second)])
        #expect(sessions.values.allSatisfy { $0["current"] as? Bool == false }, "none is the administrator's")
        try Self.expectError(try await server.call("GET", "/admin/v1/users/no-such-user/sessions", token: clientAdmin), 404, "USR-1003")
        // The administrator's own session, named under Ada: not hers.
        let adminSid = try #require(try await server.verifiedClaims(userAdmin)["sid"]?.stringValue)
        try Self.expectError(try await server.call("DELETE", "\(path)/\(adminSid)", token: clientAdmin), 404, "SES-1001")

        // One session ended: its tokens stop; the other goes on.
        #expect(try await server.call("DELETE", "\(path)/\(try await Self.sid(server, first))", token: clientAdmin).status == 204)
        try await Self.expectEnded(server, first)
        try await Self.expectLive(server, second)

        // One grant revoked.
        let grant = try #require(try await server.call("GET", path, token: clientAdmin).string("sessions.0.applications.0.grant_id"))
        #expect(try await server.call("DELETE", "/admin/v1/users/\(adaId)/grants/\(grant)", token: clientAdmin).status == 204)
        try await Self.expectEnded(server, second)

        // Everything of the user ended, the administrator's own session untouched.
        let third = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        #expect(try await server.call("DELETE", path, token: userAdmin).status == 204)
        try await Self.expectEnded(server, third)
        #expect(try Self.sessions(try await server.call("GET", path, token: userAdmin)).isEmpty)
        #expect(try await server.call("GET", path, token: userAdmin).status == 200, "the administrator is still signed in")
    }
}
