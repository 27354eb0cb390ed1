import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Logging
import Testing

/// Deleting an account that signed in with Apple revokes its Apple refresh token at Apple (`auth/revoke`), against
/// an Apple double that checks the client secret JWT and knows the tokens it issued.
@Suite("Account deletion revokes Sign in with Apple")
struct AppleRevocationTests {
    /// A whole Sign in with Apple (web) to tokens; returns the access token and the refresh tokens Apple issued for it.
    static func signIn(_ fixture: FederationFixture) async throws -> (access: String, appleToken: String) {
        let before = fixture.upstream.liveRefreshTokens
        let options = AuthorizeOptions()
        let back = try await fixture.signIn(TestBrowser(), options)
        let code = try #require(back.locationQuery["code"], "signed in: \(back.status) \(back.text.prefix(300))")
        let json = try await fixture.server.exchangeCode(code, options).json()
        let issued = fixture.upstream.liveRefreshTokens.subtracting(before)
        #expect(issued.count == 1, "Apple sent one refresh token with this sign-in")
        return (try #require(json["access_token"] as? String), try #require(issued.first))
    }

    /// The details of the account's newest event of `type`.
    static func details(_ server: TestServer, _ id: String, _ type: AuditEvent.Kind = .userDeleted) async throws -> [String: String]? {
        try await server.server.store.auditEvents(AuditQuery(subject: id, types: [type], limit: 5)).first?.details
    }

    static func userId(_ fixture: FederationFixture) async throws -> String {
        try #require(try await fixture.server.server.store.federatedIdentity(provider: fixture.providerId, subject: fixture.upstream.user.sub)).userId
    }

    @Test("the newest Apple token is kept sealed on the link and revoked with a valid client secret when the account goes")
    func revokesAtApple() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple")
        defer { Task { await fixture.stop() } }
        _ = try await Self.signIn(fixture)
        let second = try await Self.signIn(fixture)
        let id = try await Self.userId(fixture)

        let link = try #require(try await fixture.server.server.store.federatedIdentities(userId: id).first)
        let sealed = try #require(link.sealedRefreshToken, "the link keeps Apple's token")
        #expect(SecretSealer.isSealed(sealed))
        #expect(!fixture.upstream.liveRefreshTokens.contains { sealed.contains($0) }, "never in the clear")

        let deleted = try await fixture.server.call("DELETE", "/users/me", token: second.access)
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(fixture.upstream.revokedTokens == [second.appleToken], "the newest token, accepted with the client secret JWT")
        #expect(fixture.upstream.lastTokenClientAuthentication == "client_secret_post")
        #expect(try await Self.details(fixture.server, id) == ["via": "self", "upstream_revoked": "apple"])
    }

    @Test("Apple unreachable: the account is deleted all the same, and the trail says the token was not revoked")
    func revocationFailureDoesNotUndoTheDeletion() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple")
        defer { Task { await fixture.stop() } }
        let signedIn = try await Self.signIn(fixture)
        let id = try await Self.userId(fixture)
        fixture.upstream.setBehavior { $0.revocationFails = true }

        let deleted = try await fixture.server.call("DELETE", "/users/me", token: signedIn.access)
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(try await fixture.server.server.store.user(id: id) == nil)
        #expect(fixture.upstream.revocationRequests == 1 && fixture.upstream.revokedTokens.isEmpty)
        #expect(try await Self.details(fixture.server, id) == ["via": "self", "upstream_not_revoked": "apple"])
    }

    @Test("with a grace period Apple is told when the account is deleted, not when the deletion is asked for")
    func revokesWhenTheGraceEnds() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple", frozenClock: true) { _ in
        } configure: {
            $0.accountDeletionGraceDays = 7
        }
        defer { Task { await fixture.stop() } }
        let signedIn = try await Self.signIn(fixture)
        let id = try await Self.userId(fixture)

        #expect(try await fixture.server.call("DELETE", "/users/me", token: signedIn.access).status == 202)
        #expect(fixture.upstream.revocationRequests == 0, "a restorable account keeps its Apple link")
        fixture.server.advanceClock(7 * 86_400 + 1)
        fixture.upstream.advanceClock(7 * 86_400 + 1)
        #expect(try await fixture.server.server.deleteDueAccounts() == 1)
        #expect(fixture.upstream.revokedTokens == [signedIn.appleToken])
        #expect(try await Self.details(fixture.server, id) == ["via": "grace_ended", "upstream_revoked": "apple"])
    }

    @Test("unlinking Apple from an account that keeps another way in revokes the token too")
    func unlinkRevokes() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple")
        defer { Task { await fixture.stop() } }
        let signedIn = try await Self.signIn(fixture)
        let id = try await Self.userId(fixture)
        var user = try #require(try await fixture.server.server.store.user(id: id))
        user.passwordHash = try await PasswordHasher(cost: 4).hash("a password of its own")
        try await fixture.server.server.store.updateUser(user)

        let unlinked = try await fixture.server.call("DELETE", "/users/me/identities/apple", token: signedIn.access)
        #expect(unlinked.status == 204, "\(unlinked.text)")
        #expect(fixture.upstream.revokedTokens == [signedIn.appleToken])
        #expect(try await Self.details(fixture.server, id, .federatedIdentityUnlinked) == ["provider": "apple", "upstream_revoked": "apple"])
    }

    @Test("a native Sign in with Apple's authorization code becomes the Apple token the deletion revokes, for the app's bundle id")
    func nativeSignInRevokes() async throws {
        let bundleId = "io.latchkey.demo"
        let issuer = try await AppleStandIn.start()
        let upstream = try await UpstreamProviderDouble.start(FederationFixture.appleFlavor)
        upstream.setBehavior { $0.appleNativeClientIds = [bundleId] }
        guard case .apple(let teamId, let keyId, _) = FederationFixture.appleFlavor else { throw TestFailure("not Apple") }
        let server = try await TestServer.startForNativeLogin(bundleId: bundleId, apple: issuer) { configuration in
            configuration.identityProviders = [
                IdentityProviderConfiguration(
                    id: "apple-web", kind: .apple, authority: upstream.base, clientId: upstream.clientId, teamId: teamId, keyId: keyId,
                    privateKeyPEM: FederationFixture.appleKeyPEM)
            ]
        }
        defer {
            Task {
                await server.stop(); await issuer.stop(); await upstream.stop()
            }
        }
        func nativeSignIn(code: String?) async throws -> String {
            let verifier = try await server.nativeNonce()
            var options = AuthorizeOptions()
            options.nonce = verifier
            var extra = [
                "provider": "apple",
                "id_token": try issuer.identityToken(
                    sub: "001234.native", bundleId: bundleId, verifier: verifier, email: "ada@privaterelay.appleid.com")
            ]
            extra["authorization_code"] = code
            options.extra = extra
            let redirect = try await TestBrowser().get(
                server.authorizeURL(options).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
            let code = try #require(redirect.locationQuery["code"], "signed in: \(redirect.status) \(redirect.location ?? redirect.text)")
            return try #require(try await server.exchangeCode(code, options).json()["access_token"] as? String)
        }

        // A refused sign-in (its address is another account's, unverified by Apple) redeems nothing at Apple: no Apple
        // authorization outlives it that a deletion could revoke.
        let refusedVerifier = try await server.nativeNonce()
        var refusedOptions = AuthorizeOptions()
        refusedOptions.nonce = refusedVerifier
        refusedOptions.extra = [
            "provider": "apple", "authorization_code": upstream.nativeAuthorizationCode(bundleId: bundleId),
            "id_token": try issuer.identityToken(
                sub: "001234.refused", bundleId: bundleId, verifier: refusedVerifier, email: "demo@example.com", emailVerified: false)
        ]
        let refused = try await TestBrowser().get(
            server.authorizeURL(refusedOptions).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
        #expect(refused.locationQuery["error_message_key"] == "federation.email_in_use", "\(refused.location ?? refused.text)")
        #expect(upstream.tokenRequests == 0 && upstream.liveRefreshTokens.isEmpty)

        // A code Apple refuses (another app's) signs in all the same, and keeps nothing.
        _ = try await nativeSignIn(code: "not-a-code-apple-issued")
        #expect(try await server.server.store.federatedIdentity(provider: "apple", subject: "001234.native")?.sealedRefreshToken == nil)
        let access = try await nativeSignIn(code: upstream.nativeAuthorizationCode(bundleId: bundleId))
        let link = try #require(try await server.server.store.federatedIdentity(provider: "apple", subject: "001234.native"))
        #expect(link.sealedRefreshToken.map(SecretSealer.isSealed) == true)
        #expect(upstream.lastTokenForm["client_id"] == bundleId && upstream.lastTokenForm["redirect_uri"] == nil)
        let issued = try #require(upstream.liveRefreshTokens.first)

        #expect(try await server.call("DELETE", "/users/me", token: access).status == 204)
        #expect(upstream.revokedTokens == [issued], "revoked for the app, with a client secret made for its bundle id")
        #expect(try await Self.details(server, link.userId) == ["via": "self", "upstream_revoked": "apple"])
    }

    @Test("an administrator's deletion (SCIM) revokes at Apple too")
    func administratorsDeletionRevokes() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple") { _ in
        } configure: { configuration in
            if let backend = configuration.clients.firstIndex(where: { $0.clientId == "backend" }) {
                configuration.clients[backend].scopes.append("scim.admin")
            }
        }
        defer { Task { await fixture.stop() } }
        let signedIn = try await Self.signIn(fixture)
        let id = try await Self.userId(fixture)

        let deleted = try await fixture.server.call("DELETE", "/scim2/Users/\(id)", token: try await fixture.server.clientToken(scope: "scim.admin"))
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(fixture.upstream.revokedTokens == [signedIn.appleToken])
        #expect(try await Self.details(fixture.server, id) == ["via": "scim", "upstream_revoked": "apple"])
    }

    @Test("a sealed Apple token copied onto another account's link does not open there: nothing is sent to Apple")
    func aSealedTokenIsBoundToItsLink() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple")
        defer { Task { await fixture.stop() } }
        _ = try await Self.signIn(fixture)
        let store = fixture.server.server.store
        let sealed = try #require(try await store.federatedIdentity(provider: "apple", subject: fixture.upstream.user.sub)?.sealedRefreshToken)
        // Someone with write access to the database moves the value to another person's link.
        let other = try #require(try await fixture.server.server.user(username: "demo@example.com"))
        try await store.linkFederatedIdentity(
            FederatedIdentityRecord(provider: "apple", subject: "000999.other", userId: other.id, createdAt: Date()))
        try await store.keepFederatedRefreshToken(provider: "apple", subject: "000999.other", sealed: sealed)

        let revocations = try #require(try await fixture.server.server.accountDeletions.deleteNow(id: other.id, logger: Logger(label: "test")))
        #expect(revocations == Federation.Revocations(revoked: [], failed: ["apple"]))
        #expect(fixture.upstream.revocationRequests == 0, "the value does not open for another link, so Apple is never asked")
        #expect(fixture.upstream.liveRefreshTokens.count == 1)
    }
}
