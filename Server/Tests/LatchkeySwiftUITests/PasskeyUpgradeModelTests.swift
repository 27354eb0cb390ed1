import LatchkeyTestSupport
import Foundation
import Latchkey
@testable import LatchkeyServer
import LatchkeySwiftUI
import Testing

/// `SignIn(passkeyUpgrade: true)` (`AuthFlowModel.upgradesToPasskey`) against the real server: after a sign-in flow
/// that took a password, the account is offered a passkey without asking (iOS 18's conditional registration, played
/// on Linux by a software keychain); the server records it as `passkey.added` with `how: upgrade`. Off by default,
/// and never after a flow without a password.
@MainActor
@Suite("SwiftUI view models: the passkey upgrade after a password sign-in")
struct PasskeyUpgradeModelTests {
    static let demo = ("demo@example.com", "correct horse battery staple")

    /// A credential manager with conditional registration (iOS 18): it makes the passkey in `keychain`, shows nothing.
    struct ConditionalKeychain: PasskeyAuthenticator {
        let keychain: SoftwareAuthenticator

        func createCredential(for options: PublicKeyCredentialCreationOptions, origin: String, anchor: PresentationAnchorBox?) async throws
            -> RegistrationCredential
        {
            try await keychain.createCredential(for: options, origin: origin, anchor: anchor)
        }

        func getAssertion(for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode, anchor: PresentationAnchorBox?)
            async throws -> AssertionCredential
        {
            try await keychain.getAssertion(for: options, origin: origin, mode: mode, anchor: anchor)
        }

        func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool {
            await keychain.hasCredential(rpId: rpId, allowCredentials: allowCredentials)
        }

        var supportsConditionalRegistration: Bool { true }

        func createCredentialConditionally(for options: PublicKeyCredentialCreationOptions, origin: String) async throws
            -> ConditionalRegistrationResult
        {
            .created(try await keychain.createCredential(for: options, origin: origin, anchor: nil))
        }
    }

    func upgrades(_ server: TestServer) async throws -> [String?] {
        try await server.server.store.auditEvents(AuditQuery(types: [.passkeyAdded], limit: 10)).map { $0.details["how"] }
    }

    @Test("on: the password sign-in completes, then a passkey is registered without a word (how: upgrade)")
    func passwordSignInIsUpgraded() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let keychain = SoftwareAuthenticator()
        let state = server.uiState(passkeys: ConditionalKeychain(keychain: keychain))
        let model = await AuthFlowModel.started(state)
        model.upgradesToPasskey = true
        var completedBeforeUpgrade: Bool?
        model.onComplete = { _ in completedBeforeUpgrade = model.passkeyUpgrade == nil }

        await model.fill(["username": Self.demo.0, "password": Self.demo.1])
        #expect(model.phase == .completed && state.isSignedIn)
        await model.waitForPasskeyUpgrade()
        #expect(completedBeforeUpgrade == true, "the sign-in is done before the upgrade starts")
        #expect(model.passkeyUpgrade == .registered, "\(String(describing: model.passkeyUpgradeError))")
        #expect(model.passkeyUpgradeError == nil && model.error == nil)
        #expect(try await keychain.credentials().first?.userName == Self.demo.0, "saved under the account's name")
        #expect(try await upgrades(server) == ["upgrade"])
    }

    @Test("off by default; on, an OS without conditional registration reports unsupportedOS and the server is not asked")
    func offOrUnsupported() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let keychain = SoftwareAuthenticator()
        let off = await AuthFlowModel.started(server.uiState(passkeys: ConditionalKeychain(keychain: keychain)))
        await off.fill(["username": Self.demo.0, "password": Self.demo.1])
        await off.waitForPasskeyUpgrade()
        #expect(off.phase == .completed && off.passkeyUpgrade == nil)

        let older = await AuthFlowModel.started(server.uiState(passkeys: SoftwareAuthenticator()))
        older.upgradesToPasskey = true
        await older.fill(["username": Self.demo.0, "password": Self.demo.1])
        await older.waitForPasskeyUpgrade()
        #expect(older.phase == .completed && older.passkeyUpgrade == .notOffered(.unsupportedOS))
        #expect(try await keychain.credentials().isEmpty)
        #expect(try await upgrades(server).isEmpty)
    }
}
