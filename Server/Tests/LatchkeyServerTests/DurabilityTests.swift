import LatchkeyTestSupport
import Foundation
import LatchkeyJOSE
import Testing

@Suite("Persistence across restarts and key rotation")
struct DurabilityTests {
    @Test func restartLosesNothing() async throws {
        let first = try await TestServer.start()
        let browser = TestBrowser()
        let tokens = try await first.tokens(browser)
        let kids = Set(try await first.server.jwks().keys.compactMap(\.kid))
        let path = first.databasePath
        await first.stop(keepingDatabase: true)

        let second = try await TestServer.start(databasePath: path)
        defer { Task { await second.stop() } }
        #expect(Set(try await second.server.jwks().keys.compactMap(\.kid)) == kids, "signing keys persist")
        let refreshed = try await second.refresh(try #require(tokens.refreshToken))
        #expect(refreshed.status == 200, "refresh tokens survive a restart: \(refreshed.text)")
        // The old ID token still verifies against the restarted server's JWKS.
        let jws = try CompactJWS(parsing: try #require(tokens.idToken))
        let jwks = try JSONDecoder().decode(JWKSet.self, from: try await TestBrowser().get(second.base + "/oauth2/jwks").body)
        try jws.verify(with: jwks)
        // The SSO session cookie is still good (the port changed, so ask with the new server's URL).
        var none = AuthorizeOptions()
        none.prompt = "none"
        let silent = try await browser.get(second.authorizeURL(none))
        #expect(silent.locationQuery["code"] != nil)
    }

    @Test func rotationKeepsOldKeysPublishedAndSignsWithNewOnes() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let before = try await server.tokens()
        let oldKid = try CompactJWS(parsing: before.idToken!).header.kid
        let newKids = try await server.server.rotateKeys()
        #expect(newKids.count == 2)
        let published = try await server.server.jwks().keys.compactMap(\.kid)
        #expect(published.count == 4)
        #expect(published.contains(oldKid ?? ""))
        let after = try await server.tokens()
        let newKid = try CompactJWS(parsing: after.idToken!).header.kid
        #expect(newKid != oldKid && newKids.contains(newKid ?? ""))
        #expect(try await server.userinfo(before.accessToken).status == 200, "tokens signed by the retired key stay valid")
    }
}
