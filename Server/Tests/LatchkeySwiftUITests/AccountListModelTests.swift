import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyServer
import LatchkeySwiftUI
import Testing

/// The models of `PasskeysView`, `SessionsView` and `LinkedAccountsView` against the real server: each list loaded,
/// each change made only after its confirmation and said in the person's words, a closed sheet or page saying
/// nothing, and the list reloaded after every change.
@MainActor
@Suite("SwiftUI view models: passkeys, sessions and linked accounts")
struct AccountListModelTests {
    static let demo = ("demo@example.com", "correct horse battery staple")

    // MARK: Passkeys

    @Test("passkeys: add one on this device, rename it (an empty or unchanged name is not saved), delete it after a confirmation")
    func passkeys() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let keychain = SoftwareAuthenticator()
        let state = server.uiState(passkeys: keychain)
        let flow = await AuthFlowModel.started(state)
        await flow.fill(["username": Self.demo.0, "password": Self.demo.1])
        #expect(flow.phase == .completed && state.isSignedIn)

        let model = PasskeysModel(state: state)
        await model.load()
        #expect(model.isLoaded && model.passkeys.isEmpty && model.emptyText == "No passkeys yet." && model.title == "Passkeys")
        await model.addPasskey(friendlyName: "iPhone")
        #expect(model.notice == AccountNotice(kind: .done, message: "The passkey was added."), "\(String(describing: model.notice))")
        #expect(model.passkeys.map(\.friendlyName) == ["iPhone"])
        #expect(try await keychain.credentials().count == 1)
        let passkey = try #require(model.passkeys.first)
        #expect(model.detail(of: passkey)?.hasPrefix("Added ") == true)

        model.startRenaming(passkey)
        #expect(model.isRenaming && model.newName == "iPhone" && !model.canSaveName, "the same name is not a change")
        model.newName = "   "
        #expect(!model.canSaveName)
        model.newName = String(repeating: "x", count: 101)
        #expect(!model.canSaveName, "the server's limit is 100")
        model.newName = "  Work phone "
        #expect(model.canSaveName)
        // SwiftUI's order: the alert closes (clearing the name) before the button's task runs.
        let typed = model.newName
        model.isRenaming = false
        #expect(model.renaming == nil && model.newName.isEmpty)
        await model.rename(passkey, to: typed)
        #expect(model.notice == AccountNotice(kind: .done, message: "The passkey was renamed.") && !model.isRenaming)
        #expect(model.passkeys.map(\.friendlyName) == ["Work phone"])

        let renamed = try #require(model.passkeys.first)
        await model.rename(renamed, to: "  ")
        await model.rename(renamed, to: "Work phone")
        #expect(model.notice?.message == "The passkey was renamed." && model.passkeys == [renamed], "nothing sent for no change")
        model.askToDelete(renamed)
        #expect(model.isConfirmingDeletion && model.deletionTitle == "Delete “Work phone”?")
        model.isConfirmingDeletion = false  // SwiftUI's order: closed before the button's task runs
        await model.delete(renamed)
        #expect(model.notice == AccountNotice(kind: .done, message: "The passkey was deleted.") && model.passkeys.isEmpty)
        #expect(try await state.client.listWebAuthnCredentials(authToken: try await state.client.authToken()).isEmpty)
    }

    /// A credential manager whose sheet the person closes.
    struct ClosedSheet: PasskeyAuthenticator {
        func createCredential(for options: PublicKeyCredentialCreationOptions, origin: String, anchor: PresentationAnchorBox?) async throws
            -> RegistrationCredential
        {
            throw LatchkeyError(.canceled, "the person closed the sheet")
        }

        func getAssertion(for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode, anchor: PresentationAnchorBox?)
            async throws -> AssertionCredential
        {
            throw LatchkeyError(.canceled, "the person closed the sheet")
        }

        func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool { false }
    }

    @Test("passkeys: a closed sheet says nothing and adds nothing")
    func closedPasskeySheet() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let state = server.uiState(passkeys: ClosedSheet())
        let flow = await AuthFlowModel.started(state)
        await flow.fill(["username": Self.demo.0, "password": Self.demo.1])
        let model = PasskeysModel(state: state)
        await model.load()
        await model.addPasskey(friendlyName: "iPhone")
        #expect(model.notice == nil && model.passkeys.isEmpty && state.error == nil)
    }

    // MARK: Sessions

    @Test("sessions: this device first and marked; another ended after a confirmation; then everywhere else; the own one signs out")
    func sessions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        let phone = try await server.signedInClient()
        let tablet = try await server.signedInClient()
        let model = SessionsModel(state: state)
        await model.load()
        #expect(model.sessions.count == 3 && model.sessions.first?.isCurrent == true && model.sessions.dropFirst().allSatisfy { !$0.isCurrent })
        #expect(model.hasOtherSessions && model.thisDeviceLabel == "This device" && model.title == "Where you're signed in")
        let own = try #require(model.sessions.first)
        #expect(model.name(of: own) == own.applications.map(\.clientName).joined(separator: ", ") && !model.name(of: own).isEmpty)
        #expect(model.detail(of: own)?.hasPrefix("Signed in ") == true)

        let other = model.sessions[1]
        model.askToEnd(other)
        #expect(model.isConfirmingEnding && model.endingTitle == "Sign out of this session?")
        #expect(model.endingWarning == "Apps signed in through it will have to sign in again.")
        model.isConfirmingEnding = false  // SwiftUI's order: closed before the button's task runs
        #expect(model.ending == nil && model.sessions.count == 3)
        await model.end(.session(other))
        #expect(model.notice == AccountNotice(kind: .done, message: "That session was signed out.") && model.sessions.count == 2)
        #expect(!model.sessions.contains { $0.id == other.id })

        model.askToEndOthers()
        #expect(model.endingTitle == "Sign out of every other session?")
        await model.end(.allOthers)
        #expect(model.notice == AccountNotice(kind: .done, message: "You were signed out everywhere else."))
        #expect(model.sessions.map(\.id) == [own.id] && !model.hasOtherSessions)
        for client in [phone, tablet] {
            await #expect(throws: LatchkeyError.self) { _ = try await client.checkSession() }
        }
        model.askToEndOthers()
        #expect(!model.isConfirmingEnding, "nothing else to end")

        model.askToEnd(own)
        #expect(model.endingTitle == "Sign out on this device?" && model.endingWarning == "You will be signed out of this app here.")
        await model.end(.session(own))
        #expect(model.sessions.isEmpty && model.notice?.kind == .done)
        try await eventually { !state.isSignedIn }
        #expect(try await state.client.isSignedIn() == false)
    }

    // MARK: Linked accounts

    /// A started state over a client of the rig whose browser signed the demo account in by password.
    static func signedInState(_ rig: FederationRig) async throws -> (LatchkeyState, FederatingUserAgent) {
        let (client, agent) = try await rig.client()
        _ = try await client.handleRedirectCallback(url: try await rig.server.browse(try client.buildSignInURL(), browser: agent.browser))
        let state = LatchkeyState(client: client, i18n: LatchkeyI18n(locale: "en", store: InMemoryLocaleStore()))
        await state.start()
        return (state, agent)
    }

    @Test("linked accounts: link the provider the application offers through its page, then unlink it after a confirmation")
    func linkedAccounts() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let (state, agent) = try await Self.signedInState(rig)
        #expect(state.isSignedIn)
        let model = LinkedAccountsModel(state: state)
        await model.load()
        #expect(model.linked?.identities.isEmpty == true && model.emptyText == "No accounts linked yet.")
        let corp = try #require(model.linkable.first)
        #expect(model.linkable.map(\.provider) == ["corp"] && model.linkLabel(corp) == "Link Corp SSO")

        await model.link(corp)
        #expect(model.notice == AccountNotice(kind: .done, message: "Corp SSO was linked."), "\(String(describing: model.notice))")
        #expect(agent.hops.contains { $0.url.hasPrefix(rig.upstream.base + "/authorize?") }, "through the provider's page")
        let linked = try #require(model.linked?.identities.first)
        #expect(model.linked?.identities.map(\.provider) == ["corp"] && model.linkable.isEmpty)
        #expect(model.name(of: linked) == "Corp SSO" && model.detail(of: linked)?.hasPrefix("Linked ") == true)

        model.askToUnlink(linked)
        #expect(model.unlinkingTitle == "Unlink Corp SSO?" && model.unlinkingWarning == "You will no longer be able to sign in with Corp SSO.")
        model.isConfirmingUnlink = false  // SwiftUI's order: closed before the button's task runs
        #expect(model.unlinking == nil && model.linked?.identities.count == 1)
        await model.unlink(linked)
        #expect(model.notice == AccountNotice(kind: .done, message: "Corp SSO was unlinked."))
        #expect(model.linked?.identities.isEmpty == true && model.linkable.map(\.provider) == ["corp"])
    }

    @Test("linked accounts: a provider that refuses is a failure in the person's words; a sign-in too old asks to sign in again")
    func linkRefusedOrTooOld() async throws {
        let rig = try await FederationRig.start()
        defer { Task { await rig.stop() } }
        let (state, agent) = try await Self.signedInState(rig)
        var asked = 0
        let model = LinkedAccountsModel(state: state, onSignInRequired: { asked += 1 })
        await model.load()
        let corp = try #require(model.linkable.first)
        rig.upstream.setBehavior { $0.denyConsent = true }
        await model.link(corp)
        let refused = try #require(model.notice)
        #expect(refused.kind == .failed && refused.code == .authenticationFailed, "\(refused)")
        #expect(!refused.message.contains("access_denied") && !refused.message.isEmpty, "the person's words: \(refused.message)")
        #expect(model.linked?.identities.isEmpty == true && asked == 0)
        rig.upstream.setBehavior { $0.denyConsent = false }

        rig.server.freezeClock()
        rig.server.advanceClock(301)  // past the default recent_auth_seconds (300)
        await model.link(corp)
        #expect(model.notice?.kind == .needsSignIn && asked == 1, "\(String(describing: model.notice))")
        #expect(model.linked?.identities.isEmpty == true)
    }
}
