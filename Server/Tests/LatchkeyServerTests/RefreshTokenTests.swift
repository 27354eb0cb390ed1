import LatchkeyTestSupport
import Foundation
import Testing

@Suite("Refresh tokens: rotation and replay detection")
struct RefreshTokenTests {
    @Test func refreshRotatesAndReturnsAFreshVerifiedIDToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let first = try #require(tokens.refreshToken)
        let response = try await server.refresh(first)
        #expect(response.status == 200)
        let json = try response.json()
        let second = try #require(json["refresh_token"] as? String)
        #expect(second != first)
        let idClaims = try await server.verifiedClaims(try #require(json["id_token"] as? String))
        let original = try await server.verifiedClaims(try #require(tokens.idToken))
        #expect(idClaims["sub"] == original["sub"])
        #expect(idClaims["auth_time"] == original["auth_time"], "auth_time stays the original authentication time")
        #expect(idClaims["nonce"] == nil)
        #expect(try await server.userinfo(try #require(json["access_token"] as? String)).status == 200)
        // The chain continues.
        #expect(try await server.refresh(second).status == 200)
    }

    @Test func replayedRefreshTokenRevokesTheWholeFamily() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let first = try #require(tokens.refreshToken)
        let rotated = try await server.refresh(first).json()
        let second = try #require(rotated["refresh_token"] as? String)
        let newAccess = try #require(rotated["access_token"] as? String)

        let replay = try await server.refresh(first)
        #expect(replay.status == 400)
        #expect(try replay.json()["error"] as? String == "invalid_grant")
        #expect((try replay.json()["error_description"] as? String)?.contains("already used") == true)

        let legit = try await server.refresh(second)
        #expect(legit.status == 400, "the newest token of a replayed family is revoked too")
        #expect(try await server.userinfo(newAccess).status == 401, "and so are the family's access tokens")
        #expect(try await server.userinfo(tokens.accessToken).status == 401)
    }

    @Test func refreshTokensAreBoundToTheirClientAndExpire() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let refresh = try #require(tokens.refreshToken)
        let other = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": refresh],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(try other.json()["error"] as? String == "invalid_grant")
        #expect(try await server.refresh(refresh).status == 200, "a foreign client's attempt does not burn the token")

        let fresh = try await server.tokens()
        server.advanceClock(TimeInterval(31 * 24 * 3600))
        let expired = try await server.refresh(try #require(fresh.refreshToken))
        #expect((try expired.json()["error_description"] as? String)?.contains("expired") == true)
    }

    @Test func scopeCanBeNarrowedButNotWidened() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.scope = "openid email offline_access"
        let tokens = try await server.tokens(TestBrowser(), options)
        let wider = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "refresh_token", "refresh_token": tokens.refreshToken!, "client_id": "latchkey-demo", "scope": "openid profile"
            ])
        #expect(try wider.json()["error"] as? String == "invalid_scope")
        let narrower = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "refresh_token", "refresh_token": tokens.refreshToken!, "client_id": "latchkey-demo", "scope": "openid"
            ])
        #expect(try narrower.json()["scope"] as? String == "openid")
    }
}
