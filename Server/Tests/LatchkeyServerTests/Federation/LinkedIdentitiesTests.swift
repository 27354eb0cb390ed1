import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `/users/me/identities`: a signed-in person links and unlinks other providers; the app completes the link.
@Suite("Linked identities (self-service)")
struct LinkedIdentitiesTests {
    private let redirect = "http://127.0.0.1:7777/callback"

    private func api(_ fixture: FederationFixture, _ method: String, _ path: String, token: String, body: [String: Any]? = nil) async throws
        -> HTTPResult
    {
        try await TestBrowser().send(
            fixture.server.base + "/users/me/identities" + path, method: method,
            body: try body.map { try JSONSerialization.data(withJSONObject: $0) },
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"])
    }

    /// Starts a link, follows the provider in a browser, and returns the app's callback query.
    private func startLink(_ fixture: FederationFixture, token: String) async throws -> [String: String] {
        let started = try await api(fixture, "POST", "/corp", token: token, body: ["redirect_uri": redirect])
        #expect(started.status == 200, "\(started.text)")
        let json = try started.json()
        let url = try #require(json["authorization_url"] as? String)
        let back = try await fixture.follow(TestBrowser(), from: try await TestBrowser().get(url))
        #expect(back.location?.hasPrefix(redirect) == true, "\(back.status) \(back.text.prefix(200))")
        #expect(back.locationQuery["state"] == json["state"] as? String)
        return back.locationQuery
    }

    @Test func aSignedInPersonLinksListsAndUnlinksAProvider() async throws {
        let fixture = try await FederationFixture.start(user: UpstreamProviderDouble.User(sub: "corp-42", email: "someone@upstream.example"))
        defer { Task { await fixture.stop() } }
        let own = try await fixture.server.tokens()
        let listed = try await api(fixture, "GET", "", token: own.accessToken)
        #expect(listed.status == 200)
        #expect((try listed.json()["available"] as? [[String: Any]])?.first?["provider"] as? String == "corp")
        let callback = try await startLink(fixture, token: own.accessToken)
        let completed = try await api(
            fixture, "POST", "/corp/complete", token: own.accessToken,
            body: ["code": try #require(callback["code"]), "state": try #require(callback["state"])])
        #expect(completed.status == 200, "\(completed.text)")
        let identities = try await api(fixture, "GET", "", token: own.accessToken).json()["identities"] as? [[String: Any]]
        #expect(identities?.first?["provider"] as? String == "corp")
        // The provider now signs in to this very account.
        let federated = try await fixture.tokens()
        let mine = try await fixture.server.verifiedClaims(try #require(own.idToken))
        #expect(federated.id["sub"] == mine["sub"])
        // The account has a password: the link may go.
        let unlinked = try await api(fixture, "DELETE", "/corp", token: own.accessToken)
        #expect(unlinked.status == 204)
        #expect(try await fixture.server.server.store.federatedIdentity(provider: "corp", subject: "corp-42") == nil)
        let again = try await api(fixture, "DELETE", "/corp", token: own.accessToken)
        #expect(again.status == 404)
    }

    @Test func aRefusedLinkTellsTheAppInThePersonsWordsAndOneLinkPerProvider() async throws {
        let fixture = try await FederationFixture.start(user: UpstreamProviderDouble.User(sub: "corp-44", email: "one@upstream.example"))
        defer { Task { await fixture.stop() } }
        let own = try await fixture.server.tokens()
        fixture.upstream.setBehavior { $0.denyConsent = true }
        let denied = try await startLinkRaw(fixture, token: own.accessToken)
        #expect(denied["error"] == "access_denied")
        #expect(denied["error_user_msg"]?.contains("Corp SSO") == true)
        #expect(denied["error_message_key"] == "federation.denied")
        fixture.upstream.setBehavior { $0.denyConsent = false }
        let first = try await startLink(fixture, token: own.accessToken)
        let linked = try await api(
            fixture, "POST", "/corp/complete", token: own.accessToken, body: ["code": first["code"] ?? "", "state": first["state"] ?? ""])
        #expect(linked.status == 200)
        // Another Corp SSO account for the same Latchkey account: refused (an unlink must mean one thing).
        fixture.upstream.setUser(UpstreamProviderDouble.User(sub: "corp-45", email: "two@upstream.example"))
        let second = try await startLink(fixture, token: own.accessToken)
        let refused = try await api(
            fixture, "POST", "/corp/complete", token: own.accessToken, body: ["code": second["code"] ?? "", "state": second["state"] ?? ""])
        #expect(refused.status == 409, "\(refused.text)")
    }

    /// Starts a link and follows it to whatever comes back to the app (an error included).
    private func startLinkRaw(_ fixture: FederationFixture, token: String) async throws -> [String: String] {
        let started = try await api(fixture, "POST", "/corp", token: token, body: ["redirect_uri": redirect])
        let url = try #require(try started.json()["authorization_url"] as? String)
        let back = try await fixture.follow(TestBrowser(), from: try await TestBrowser().get(url))
        return back.locationQuery
    }

    @Test func theLinkIsCompletedOnlyByTheAccountThatStartedIt() async throws {
        let fixture = try await FederationFixture.start(user: UpstreamProviderDouble.User(sub: "corp-43", email: "victim@upstream.example"))
        defer { Task { await fixture.stop() } }
        // Someone starts a link for their own account and gets the code to another person's app: the other person's
        // token cannot complete it, and neither can a wrong state.
        let starter = try await fixture.server.tokens()
        let callback = try await startLink(fixture, token: starter.accessToken)
        let wrongState = try await api(
            fixture, "POST", "/corp/complete", token: starter.accessToken, body: ["code": try #require(callback["code"]), "state": "forged"])
        #expect(wrongState.status == 400)
        // The code was spent by that attempt: a second one, even right, fails too (one try per code).
        let retry = try await api(
            fixture, "POST", "/corp/complete", token: starter.accessToken,
            body: ["code": try #require(callback["code"]), "state": try #require(callback["state"])])
        #expect(retry.status == 400)
        #expect(try await fixture.server.server.store.federatedIdentity(provider: "corp", subject: "corp-43") == nil)
    }

    @Test func linkingNeedsARecentSignInAndTheLastWayInStays() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        // A federated-only account (created by the provider, no password, no passkey) keeps its only provider.
        let options = AuthorizeOptions()
        let back = try await fixture.signIn(TestBrowser(), options)
        let code = try #require(back.locationQuery["code"])
        let exchanged = try await fixture.server.exchangeCode(code, options).json()
        let token = try #require(exchanged["access_token"] as? String)
        let refused = try await api(fixture, "DELETE", "/corp", token: token)
        #expect(refused.status == 409, "\(refused.text)")
        // Later than recent_auth_seconds after the sign-in, no link changes.
        fixture.server.advanceClock(TimeInterval(fixture.server.server.configuration.recentAuthenticationSeconds + 60))
        let stale = try await api(fixture, "POST", "/corp", token: token, body: ["redirect_uri": redirect])
        #expect(stale.status == 403 || stale.status == 401, "\(stale.status) \(stale.text)")
        let asText = try await TestBrowser().send(
            fixture.server.base + "/users/me/identities/corp", method: "POST", body: Data(#"{"redirect_uri":"x"}"#.utf8),
            headers: ["Authorization": "Bearer \(try await fixture.server.tokens().accessToken)", "Content-Type": "text/plain"])
        #expect(asText.status == 415, "a cross-site form's text/plain is not JSON")
        let unregistered = try await api(
            fixture, "POST", "/corp", token: try await fixture.server.tokens().accessToken, body: ["redirect_uri": "https://evil.example/cb"])
        #expect(unregistered.status == 400)
    }

    /// A link is completed by the application that started it: another application's token for the same account, with
    /// the right code and state, links nothing.
    @Test func theLinkIsCompletedOnlyByTheApplicationThatStartedIt() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(sub: "corp-46", email: "other-app@upstream.example"),
            configure: { configuration in
                var other = DevelopmentDefaults.demoClient()
                other.clientId = "other-app"
                other.identityProviders = ["corp"]
                configuration.clients.append(other)
            })
        defer { Task { await fixture.stop() } }
        let starter = try await fixture.server.tokens()
        let callback = try await startLink(fixture, token: starter.accessToken)
        var options = AuthorizeOptions()
        options.clientId = "other-app"
        let other = try await fixture.server.tokens(TestBrowser(), options)
        let refused = try await api(
            fixture, "POST", "/corp/complete", token: other.accessToken,
            body: ["code": try #require(callback["code"]), "state": try #require(callback["state"])])
        #expect(refused.status == 400, "\(refused.text)")
        #expect(try await fixture.server.server.store.federatedIdentity(provider: "corp", subject: "corp-46") == nil)
    }
}
