import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyServer
import LatchkeySwiftUI
import Testing

extension TestServer {
    /// A `LatchkeyState` for the demo application (ID tokens checked with the tolerance tests that move the server's
    /// clock need), in `locale` with an in-memory language store.
    @MainActor
    func uiState(
        storage: any StorageAdapter = InMemoryStorageAdapter(), http: any HTTPClient = productionHTTPClient(),
        clientId: String = "latchkey-demo", locale: String? = "en", passkeys: (any PasskeyAuthenticator)? = nil,
        credentialProvider: (any CredentialProvider)? = nil, sessionCheck: LatchkeyState.SessionCheck = .server
    ) -> LatchkeyState {
        var config = sdkConfig()
        config.clientId = clientId
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        let client = LatchkeyClient(http: http, credentialProvider: credentialProvider, passkeyAuthenticator: passkeys)
        return LatchkeyState(
            config: config, client: client, storage: storage, i18n: LatchkeyI18n(locale: locale, store: InMemoryLocaleStore()),
            sessionCheck: sessionCheck)
    }
}

extension AuthFlowModel {
    /// A model for `flowType` on `state`, both started: the state has read its stored session and the flow shows its
    /// first step.
    static func started(_ state: LatchkeyState, _ flowType: EmbeddedFlowType = .authentication) async -> AuthFlowModel {
        await state.start()
        let model = AuthFlowModel(state: state, flowType: flowType)
        await model.start()
        return model
    }

    /// Types `values` into the step's fields and sends the primary action.
    func fill(_ values: [String: String], action: String? = nil) async {
        for (key, value) in values { setValue(value, for: key) }
        guard let ref = action ?? primaryAction?.ref else { Issue.record("the step has no action"); return }
        await perform(actionId: ref)
    }

    var inputIdentifiers: [String] { inputs.map(\.identifier) }
}

/// Storage whose whole content can be copied and put back (a device that still holds a session the server ended).
actor SnapshotStorage: StorageAdapter {
    private var items: [String: Data] = [:]
    func get(_ key: String) -> Data? { items[key] }
    func set(_ key: String, _ value: Data) { items[key] = value }
    func remove(_ key: String) { items[key] = nil }
    func snapshot() -> [String: Data] { items }
    func restore(_ saved: [String: Data]) { items = saved }
}

extension TestServer {
    /// A started `LatchkeyState` whose storage holds the demo user's session, signed in through the hosted page.
    @MainActor
    func signedInUIState(http: any HTTPClient = productionHTTPClient(), locale: String? = "en", start: Bool = true) async throws -> LatchkeyState {
        let storage = InMemoryStorageAdapter()
        _ = try await signedInClient(storage: storage)
        let state = uiState(storage: storage, http: http, locale: locale)
        if start { await state.start() }
        return state
    }
}

extension TestServer {
    /// A server whose account changes need a sign-in within the last minute (`recent_auth_seconds` 60), its clock
    /// frozen, and a started state signed in there: move the clock past a minute for a sign-in too old.
    @MainActor
    static func signedInWithOneMinuteRecentAuth() async throws -> (TestServer, LatchkeyState) {
        let server = try await startServer { $0.recentAuthenticationSeconds = 60 }
        do {
            let state = try await server.signedInUIState()
            server.freezeClock()
            return (server, state)
        } catch {
            await server.stop()
            throw error
        }
    }
}
