import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyServer
import LatchkeySwiftUI
import NIOConcurrencyHelpers
import Testing

/// An HTTP client over the real one that can play a network outage (every request goes to a closed loopback port,
/// so the failure is the real "connection refused" of the platform) and can hold requests until released.
final class ControllableHTTPClient: HTTPClient {
    private let inner = URLSessionHTTPClient()
    private let down = NIOLockedValueBox(false)
    private let gate = NIOLockedValueBox<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    private let log = NIOLockedValueBox<[String]>([])

    /// Requests fail as if the server were gone.
    func goDown() { down.withLockedValue { $0 = true } }
    func comeBack() { down.withLockedValue { $0 = false } }
    /// Requests wait until `release()`.
    func hold() { gate.withLockedValue { $0.held = true } }
    func release() {
        let waiting = gate.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.held = false
            defer { state.waiting = [] }
            return state.waiting
        }
        waiting.forEach { $0.resume() }
    }
    var heldCount: Int { gate.withLockedValue { $0.waiting.count } }
    /// Paths of the requests sent (or attempted), in order.
    var paths: [String] { log.withLockedValue { $0 } }
    func count(_ suffix: String) -> Int { paths.filter { $0.hasSuffix(suffix) }.count }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        log.withLockedValue { $0.append(request.url.path) }
        await withCheckedContinuation { continuation in
            let wait = gate.withLockedValue { state -> Bool in
                if state.held { state.waiting.append(continuation) }
                return state.held
            }
            if !wait { continuation.resume() }
        }
        var request = request
        if down.withLockedValue({ $0 }), var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
            components.host = "127.0.0.1"
            components.port = 9  // discard: nothing listens there
            request.url = components.url ?? request.url
        }
        return try await inner.send(request)
    }
}

extension TestServer {
    /// A `LatchkeyState` for the demo application (ID tokens checked with the tolerance tests that move the server's
    /// clock need), in `locale` with an in-memory language store.
    @MainActor
    func uiState(
        storage: any StorageAdapter = InMemoryStorageAdapter(), http: any HTTPClient = URLSessionHTTPClient(),
        clientId: String = "latchkey-demo", locale: String? = "en", passkeys: (any PasskeyAuthenticator)? = nil
    ) -> LatchkeyState {
        var config = sdkConfig()
        config.clientId = clientId
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        let client = LatchkeyClient(http: http, credentialProvider: nil, passkeyAuthenticator: passkeys)
        return LatchkeyState(config: config, client: client, storage: storage, i18n: LatchkeyI18n(locale: locale, store: InMemoryLocaleStore()))
    }
}

extension AuthFlowModel {
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
    func signedInUIState(http: any HTTPClient = URLSessionHTTPClient(), start: Bool = true) async throws -> LatchkeyState {
        let storage = InMemoryStorageAdapter()
        _ = try await signedInClient(storage: storage)
        let state = uiState(storage: storage, http: http)
        if start { await state.start() }
        return state
    }
}
