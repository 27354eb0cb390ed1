import Foundation
import Latchkey
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The account page's passkeys (`/account/passkeys`) over real HTTP, doing what the page's script does with a software
/// authenticator: a passkey created for this origin (mailed, audited as the page's), renamed, removed (after a recent
/// sign-in only), and another account's never touched.
@Suite("Account page: passkeys")
struct AccountPagePasskeyTests {
    /// What the page's script does: options, the authenticator, the credential; the credential's answer.
    static func create(_ server: TestServer, _ browser: TestBrowser, name: String = "") async throws -> HTTPResult {
        let options = try await AccountPageRig.post(server, browser, "/account/passkeys/options", ["name": name])
        #expect(options.status == 200 && options.header("Cache-Control") == "no-store", "\(options.status) \(options.text.prefix(300))")
        let parsed = try PublicKeyCredentialCreationOptions(json: options.body, style: .w3c)
        let credential = try await SoftwareAuthenticator().createCredential(for: parsed, origin: server.base)
        return try await AccountPageRig.post(
            server, browser, "/account/passkeys/credential",
            [
                "raw_id": Base64URL.encode(credential.rawId), "client_data_json": Base64URL.encode(credential.clientDataJSON),
                "attestation_object": Base64URL.encode(credential.attestationObject)
            ])
    }

    @Test func aPasskeyIsCreatedRenamedAndRemoved() async throws {
        let server = try await AccountPageSecondFactorTests.start()
        defer { Task { await server.stop() } }
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/passkeys")
        #expect(page.text.contains("id=\"no-passkeys\"") && page.text.contains("<form id=\"add-passkey\" hidden>"))
        #expect(page.text.contains("id=\"passkey-unsupported\""), "without script the page says why there is no button")
        let script = try await browser.get(server.base + AccountPasskeyScript.path)
        #expect(script.status == 200 && script.header("Content-Type")?.hasPrefix("text/javascript") == true)

        let created = try await Self.create(server, browser, name: "Work laptop")
        #expect(created.status == 201, "\(created.text)")
        let next = try #require(try created.json()["next"] as? String)
        let listed = try await browser.get(server.base + next)
        #expect(listed.text.contains("Your passkey was created.") && listed.text.contains("<bdi>Work laptop</bdi>"))
        let ada = try await AccountPageRig.ada(server)
        let passkey = try #require(try await server.server.store.passkeys(userId: ada.id).first)
        #expect(passkey.friendlyName == "Work laptop")
        let added = try await server.server.store.auditEvents(AuditQuery(subject: ada.id, types: [.passkeyAdded], limit: 5))
        #expect(added.map { $0.details["how"] } == ["request"] && added.first?.clientId == AccountClient.id)

        // The same authenticator again is refused in words, not a second copy.
        let excluded = try await AccountPageRig.post(server, browser, "/account/passkeys/options")
        #expect(excluded.text.contains(passkey.id), "the account's passkeys are excluded")

        let emptyName = try await AccountPageRig.post(server, browser, "/account/passkeys/rename", ["id": passkey.id, "name": "  "])
        #expect(emptyName.status == 400 && emptyName.text.contains("Enter a name of 1 to 100 characters."))
        let renamed = try await AccountPageRig.post(server, browser, "/account/passkeys/rename", ["id": passkey.id, "name": "Home <desk>"])
        #expect(renamed.status == 303)
        let afterRename = try await browser.get(server.base + (try #require(renamed.location)))
        #expect(afterRename.text.contains("The passkey was renamed.") && afterRename.text.contains("<bdi>Home &lt;desk&gt;</bdi>"))

        let removed = try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": passkey.id])
        #expect(removed.status == 303)
        #expect(try await browser.get(server.base + (try #require(removed.location))).text.contains("The passkey was removed."))
        #expect(try await server.server.store.passkeys(userId: ada.id).isEmpty)
        let mails = try await server.server.outboxMessages(recipient: "ada@example.com")
        #expect(
            mails.map(\.subject).sorted() == ["A passkey was added to your account", "A passkey was removed from your account"],
            "\(mails.map(\.subject))")
        #expect(mails.contains { $0.body.contains("Home <desk>") }, "the removal names the passkey")
        let gone = try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": passkey.id])
        #expect(gone.status == 404 && gone.text.contains("That passkey no longer exists."))
    }

    @Test func anotherAccountsPasskeyIsNeverTouched() async throws {
        let server = try await AccountPageSecondFactorTests.start()
        defer { Task { await server.stop() } }
        let (demoBrowser, _) = try await AccountPageRig.signIn(
            server, username: "demo@example.com", password: DevelopmentDefaults.demoPassword, path: "/account/passkeys")
        #expect(try await Self.create(server, demoBrowser, name: "Demo's").status == 201)
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        let theirs = try #require(try await server.server.store.passkeys(userId: demo.id).first)
        let (browser, _) = try await AccountPageRig.signIn(server, path: "/account/passkeys")
        let rename = try await AccountPageRig.post(server, browser, "/account/passkeys/rename", ["id": theirs.id, "name": "mine now"])
        #expect(rename.status == 404)
        let delete = try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": theirs.id])
        #expect(delete.status == 404)
        #expect(try await server.server.store.passkey(id: theirs.id)?.friendlyName == "Demo's")
        #expect(!(try await browser.get(server.base + "/account/passkeys")).text.contains("Demo&#39;s"))
    }

    @Test func addingAndRemovingNeedARecentSignIn() async throws {
        let server = try await AccountPageSecondFactorTests.start()
        defer { Task { await server.stop() } }
        server.freezeClock()
        let (browser, _) = try await AccountPageRig.signIn(server, path: "/account/passkeys")
        #expect(try await Self.create(server, browser).status == 201)
        let ada = try await AccountPageRig.ada(server)
        let passkey = try #require(try await server.server.store.passkeys(userId: ada.id).first)
        server.advanceClock(301)
        let page = try await browser.get(server.base + "/account/passkeys")
        #expect(page.text.contains("To add or remove a passkey, first confirm it&#39;s you."))
        #expect(page.text.contains("/account/login?fresh=1&amp;return=/account/passkeys"))
        for path in ["/account/passkeys/options", "/account/passkeys/credential", "/account/passkeys/delete"] {
            let stale = try await AccountPageRig.post(server, browser, path, ["id": passkey.id])
            #expect(stale.status == 401 && stale.text.contains("Confirm it&#39;s you"), "\(path): \(stale.status)")
        }
        #expect(try await server.server.store.passkeys(userId: ada.id).count == 1)
        // Renaming changes nothing a thief could use: it needs no fresh sign-in.
        let renamed = try await AccountPageRig.post(server, browser, "/account/passkeys/rename", ["id": passkey.id, "name": "Phone"])
        #expect(renamed.status == 303)
    }

    /// The hosted sign-in page's passkey button for the account page, a `browser` application: served for the server's
    /// own origin (WebAuthn binds the assertion to it), refused for any other, as every sign-in a browser application
    /// would start itself.
    @Test func theHostedPagesPasskeyButtonServesTheAccountPage() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        func options(origin: String) async throws -> HTTPResult {
            try await server.call(
                "POST", "/identity/v1/webauthn/authentication-options", token: nil, json: ["client_id": AccountClient.id, "origin": origin],
                contentType: "application/json")
        }
        let own = try await options(origin: server.base)
        #expect(own.status == 200, "\(own.text)")
        let foreign = try await options(origin: "https://evil.example")
        #expect(foreign.status == 403 && foreign.text.contains("must sign users in through the browser"), "\(foreign.text)")
    }

    /// A file that defines the account page's application without this origin's passkeys: the list and renaming stay,
    /// the page offers no passkey it could not make.
    @Test func noAddFormWhenTheAccountApplicationRefusesThisOrigin() async throws {
        let server = try await TestServer.startForProfiles { configuration in
            configuration.clients.append(AccountClient.application.configuration(issuer: configuration.issuer))
        }
        defer { Task { await server.stop() } }
        let (_, page) = try await AccountPageRig.signIn(server, path: "/account/passkeys")
        #expect(page.status == 200 && page.text.contains("id=\"no-passkeys\""), "\(page.status)")
        #expect(!page.text.contains("id=\"add-passkey\"") && !page.text.contains(AccountPasskeyScript.path))
    }

    /// An account without a password or a linked provider keeps its last passkey: removing it would lock the person
    /// out with one click (the page and `/identity/v1/webauthn/registration/{id}` share the rule).
    @Test func thePasswordlessAccountsLastPasskeyStays() async throws {
        let server = try await AccountPageSecondFactorTests.start()
        defer { Task { await server.stop() } }
        let (browser, _) = try await AccountPageRig.signIn(server, path: "/account/passkeys")
        #expect(try await Self.create(server, browser, name: "Only one").status == 201)
        var ada = try await AccountPageRig.ada(server)
        ada.passwordHash = PasswordHasher.noPassword
        try await server.server.store.updateUser(ada)
        let passkey = try #require(try await server.server.store.passkeys(userId: ada.id).first)
        let refused = try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": passkey.id])
        #expect(refused.status == 409 && refused.text.contains("This passkey is the only way to sign in to your account."), "\(refused.status)")
        #expect(try await server.server.store.passkeys(userId: ada.id).count == 1)
        #expect(try await Self.notices(server) == ["A passkey was added to your account"], "refused: no 'removed' mail")
        // The app's endpoint has the same rule.
        let api = try await server.call(
            "DELETE", "/identity/v1/webauthn/registration/\(passkey.id)", token: try AccountPageRig.token(browser), contentType: "application/json")
        #expect(api.status == 409 && api.text.contains("\"error_message_key\":\"passkey.last_credential\""), "\(api.status) \(api.text)")
        // A linked provider is a way in too: with one, the passkey may go (and comes back for the rest of the test).
        try await server.server.store.linkFederatedIdentity(
            FederatedIdentityRecord(provider: "corp", subject: "ada-corp", userId: ada.id, createdAt: Date()))
        #expect(try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": passkey.id]).status == 303)
        _ = try await server.server.store.unlinkFederatedIdentity(provider: "corp", userId: ada.id)
        #expect(try await Self.create(server, browser, name: "Only one").status == 201)
        let again = try #require(try await server.server.store.passkeys(userId: ada.id).first)
        #expect(try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": again.id]).status == 409)
        // With a second passkey, either may go.
        let second = try await Self.create(server, browser, name: "Spare")
        #expect(second.status == 201, "\(second.text)")
        let removed = try await AccountPageRig.post(server, browser, "/account/passkeys/delete", ["id": again.id])
        #expect(removed.status == 303)
        #expect(try await server.server.store.passkeys(userId: ada.id).map(\.friendlyName) == ["Spare"])
    }

    static func notices(_ server: TestServer) async throws -> [String] { try await AccountPageSecondFactorTests.notices(server) }
}
