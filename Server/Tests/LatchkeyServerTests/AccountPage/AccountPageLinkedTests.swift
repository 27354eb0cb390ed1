import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The account page's linked accounts (`/account/linked`) over real HTTP against an upstream OpenID provider double:
/// a provider linked through its own sign-in and back (mailed, audited as the page's), signing in with it, unlinked;
/// a link started by one account never completed in another's session; and each change only after a recent sign-in.
@Suite("Account page: linked accounts")
struct AccountPageLinkedTests {
    static let other = "ada@example.com"

    static func start(user: UpstreamProviderDouble.User = .init(sub: "corp-7", email: "someone@upstream.example")) async throws
        -> FederationFixture
    {
        try await FederationFixture.start(
            user: user,
            configure: { configuration in
                configuration.users.append(
                    UserSeed(username: other, password: TestServer.adaPassword, claims: ["email": other, "email_verified": "true"]))
                if let index = configuration.users.firstIndex(where: { $0.username == DevelopmentDefaults.demoUsername }) {
                    configuration.users[index].claims["email_verified"] = "true"
                }
            })
    }

    /// "Link Corp SSO" on the page, the provider's sign-in in `providerBrowser`, back to the page's callback: the
    /// callback URL the provider's browser is sent to, not yet opened.
    static func startLink(_ fixture: FederationFixture, _ browser: TestBrowser, providerBrowser: TestBrowser? = nil) async throws -> String {
        let started = try await AccountPageRig.post(fixture.server, browser, "/account/linked/link", ["provider": "corp"])
        #expect(started.status == 303, "\(started.status) \(started.text.prefix(300))")
        let authorize = try #require(started.location)
        #expect(authorize.hasPrefix(fixture.upstream.base), "\(authorize)")
        let upstreamBrowser = providerBrowser ?? browser
        let back = try await fixture.follow(
            upstreamBrowser, from: try await upstreamBrowser.get(authorize), stopAt: fixture.server.base + "/account/linked/")
        let callback = try #require(back.location, "\(back.status) \(back.text.prefix(300))")
        #expect(callback.hasPrefix(fixture.server.base + AccountLinkedAccounts.callbackPath("corp") + "?"), "\(callback)")
        return callback
    }

    static func notices(_ server: TestServer, _ recipient: String) async throws -> [String] {
        try await server.server.outboxMessages(recipient: recipient).map(\.subject)
    }

    @Test func aProviderIsLinkedSignsInAndIsUnlinked() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let server = fixture.server
        let (browser, page) = try await AccountPageRig.signIn(
            server, username: DevelopmentDefaults.demoUsername, password: DevelopmentDefaults.demoPassword, path: "/account/linked")
        #expect(page.status == 200 && page.text.contains("id=\"no-links\""), "\(page.status)")
        #expect(page.text.contains(">Link Corp SSO</button>") && page.text.contains("name=\"provider\" value=\"corp\""))

        let callback = try await Self.startLink(fixture, browser)
        let done = try await browser.get(callback)
        #expect(done.status == 303, "\(done.status) \(done.text.prefix(300))")
        let listed = try await browser.get(server.base + (try #require(done.location)))
        #expect(listed.text.contains("Corp SSO is linked. You can now sign in with it."), "\(listed.text.prefix(600))")
        #expect(listed.text.contains("<bdi>Corp SSO</bdi>") && listed.text.contains("aria-label=\"Unlink Corp SSO\""))
        #expect(!listed.text.contains("id=\"link-providers\""), "nothing left to link")
        let demo = try #require(try await server.server.user(username: DevelopmentDefaults.demoUsername))
        #expect(try await server.server.store.federatedIdentity(provider: "corp", subject: "corp-7")?.userId == demo.id)
        let linked = try await server.server.store.auditEvents(AuditQuery(subject: demo.id, types: [.federatedIdentityLinked], limit: 5))
        #expect(linked.map { $0.details["how"] } == ["manual"] && linked.first?.clientId == AccountClient.id)
        #expect(try await Self.notices(server, DevelopmentDefaults.demoUsername).contains("A sign-in provider was linked to your account"))
        // The provider now signs in to this very account.
        let federated = try await fixture.tokens()
        let mine = try await server.verifiedClaims(try #require(try await server.tokens().idToken))
        #expect(federated.id["sub"] != nil && federated.id["sub"] == mine["sub"])

        // The code was spent: opening the callback again links nothing and says so.
        let replay = try await browser.get(callback)
        #expect(replay.status == 400 && replay.text.contains("This sign-in has expired or was already used."), "\(replay.status)")

        let unlinked = try await AccountPageRig.post(server, browser, "/account/linked/unlink", ["provider": "corp"])
        #expect(unlinked.status == 303)
        let after = try await browser.get(server.base + (try #require(unlinked.location)))
        #expect(after.text.contains("Corp SSO was unlinked. It can no longer sign in to your account.") && after.text.contains("id=\"no-links\""))
        #expect(try await server.server.store.federatedIdentity(provider: "corp", subject: "corp-7") == nil)
        #expect(try await Self.notices(server, DevelopmentDefaults.demoUsername).contains("A sign-in provider was unlinked from your account"))
        let again = try await AccountPageRig.post(server, browser, "/account/linked/unlink", ["provider": "corp"])
        #expect(again.status == 404)
    }

    /// Someone starts a link on their own account and sends the provider's page to another person: the provider's
    /// answer in that person's browser (signed in to the page as them, without the starter's binding cookie) is refused
    /// before any code is handed off, and links nothing to either account; a code handed off for the starter's browser
    /// is taken only in the starter's session.
    @Test func aLinkCompletesOnlyInTheSessionOfTheAccountThatStartedIt() async throws {
        let fixture = try await Self.start(user: .init(sub: "corp-victim", email: "victim@upstream.example"))
        defer { Task { await fixture.stop() } }
        let server = fixture.server
        let (starter, _) = try await AccountPageRig.signIn(
            server, username: DevelopmentDefaults.demoUsername, password: DevelopmentDefaults.demoPassword, path: "/account/linked")
        let (victim, _) = try await AccountPageRig.signIn(server, username: Self.other, path: "/account/linked")
        let callback = try await Self.startLink(fixture, starter, providerBrowser: victim)
        #expect(URLComponents(string: callback)?.queryItems?.contains { $0.name == "code" } == false, "no code for another browser")
        let refused = try await victim.get(callback)
        #expect(refused.status == 400 && refused.text.contains("This sign-in has expired or was already used."), "\(refused.status)")
        #expect(try await server.server.store.federatedIdentity(provider: "corp", subject: "corp-victim") == nil)
        let demo = try #require(try await server.server.user(username: DevelopmentDefaults.demoUsername))
        let failed = try await server.server.store.auditEvents(AuditQuery(subject: demo.id, types: [.federatedIdentityLinked], limit: 5))
        #expect(failed.map(\.outcome) == [.failure] && failed.first?.details["reason"] != nil, "the starter's link failed")

        // The starter's own browser gets a code; opened in the other person's session it links nothing, and it is spent.
        let handedOff = try await Self.startLink(fixture, starter)
        let elsewhere = try await victim.get(handedOff)
        #expect(elsewhere.status == 400 && elsewhere.text.contains("This sign-in has expired or was already used."))
        #expect(try await starter.get(handedOff).status == 400, "single use")
        #expect(try await server.server.store.federatedIdentity(provider: "corp", subject: "corp-victim") == nil)
        // A query that did not come from the provider shows the page's own words, never the query's, and only a
        // provider the page offers is named.
        let forged = try await victim.get(
            server.base + AccountLinkedAccounts.callbackPath("corp") + "?error=access_denied&error_message_key=page.csrf.body&error_user_msg=Call+us")
        #expect(forged.status == 400 && forged.text.contains("The account wasn&#39;t linked. Try again.") && !forged.text.contains("Call us"))
        let named = try await victim.get(
            server.base + AccountLinkedAccounts.callbackPath("Call-0800-555") + "?error=x&error_message_key=federation.unavailable")
        #expect(named.status == 404 && !named.text.contains("Call-0800-555"), "\(named.status)")
    }

    @Test func linkingAndUnlinkingNeedARecentSignInAndTheLastWayInStays() async throws {
        let fixture = try await Self.start()
        defer { Task { await fixture.stop() } }
        let server = fixture.server
        server.freezeClock()
        let (browser, _) = try await AccountPageRig.signIn(
            server, username: DevelopmentDefaults.demoUsername, password: DevelopmentDefaults.demoPassword, path: "/account/linked")
        let callback = try await Self.startLink(fixture, browser)
        #expect(try await browser.get(callback).status == 303)
        // Without a password, the only link is the only way in.
        var demo = try #require(try await server.server.user(username: DevelopmentDefaults.demoUsername))
        demo.passwordHash = PasswordHasher.noPassword
        try await server.server.store.updateUser(demo)
        let last = try await AccountPageRig.post(server, browser, "/account/linked/unlink", ["provider": "corp"])
        #expect(last.status == 409 && last.text.contains("This is the only way to sign in to your account."), "\(last.status)")

        server.advanceClock(TimeInterval(server.server.configuration.recentAuthenticationSeconds + 1))
        let page = try await browser.get(server.base + "/account/linked")
        #expect(page.text.contains("To link or unlink an account, first confirm it&#39;s you."))
        #expect(page.text.contains("aria-label=\"Unlink Corp SSO\" disabled aria-describedby=\"fresh\""))
        for path in ["/account/linked/link", "/account/linked/unlink"] {
            let stale = try await AccountPageRig.post(server, browser, path, ["provider": "corp"])
            #expect(stale.status == 401 && stale.text.contains("Confirm it&#39;s you"), "\(path): \(stale.status)")
        }
        #expect(try await server.server.store.federatedIdentity(provider: "corp", subject: "corp-7")?.userId == demo.id)
        let unknown = try await AccountPageRig.signIn(
            server, username: Self.other, path: "/account/linked", browser: TestBrowser())
        let refused = try await AccountPageRig.post(server, unknown.0, "/account/linked/link", ["provider": "nowhere"])
        #expect(refused.status == 400 && refused.text.contains("That item no longer exists."), "a provider the page does not offer")
    }
}
