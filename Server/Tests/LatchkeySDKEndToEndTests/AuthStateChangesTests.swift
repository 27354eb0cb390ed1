import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
import Testing

/// `authStateChanges(sessionId:)` against the real server: the initial session, sign-in, profile update, sign-out,
/// a restored session on a second client, and per-session streams.
@Suite("SDK ↔ server: auth-state changes")
struct AuthStateChangesTests {
    /// Collects a stream's events in the background.
    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var events: [AuthStateChange] = []
        private var task: Task<Void, Never>?

        init(_ stream: AsyncStream<AuthStateChange>) {
            task = Task { [weak self] in for await change in stream { self?.append(change) } }
        }
        private func append(_ change: AuthStateChange) { lock.withLock { events.append(change) } }
        var seen: [AuthStateChange.Event] { lock.withLock { events.map(\.event) } }
        var last: AuthStateChange? { lock.withLock { events.last } }
        func stop() { task?.cancel() }

        /// Waits (bounded by a minute, for a saturated machine) until `count` events arrived.
        func wait(for count: Int) async throws {
            try await eventually("\(count) auth-state events") { self.seen.count >= count }
        }
    }

    @Test("initial (signed out) → signedIn → userUpdated → signedOut; a second client restores the stored session")
    func lifecycle() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig(), storage: storage)
        let recorder = Recorder(client.authStateChanges())
        defer { recorder.stop() }
        try await recorder.wait(for: 1)
        #expect(recorder.seen == [.initialSession] && recorder.last?.isSignedIn == false)

        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        try await recorder.wait(for: 2)
        #expect(recorder.seen == [.initialSession, .signedIn] && recorder.last?.isSignedIn == true)

        _ = try await client.updateUserProfile(payload: ["given_name": .string("Dee")])
        try await recorder.wait(for: 3)
        #expect(recorder.seen.last == .userUpdated)

        let restored = LatchkeyClient(http: productionHTTPClient())
        try await restored.initialize(config: server.sdkConfig(), storage: storage)
        let second = Recorder(restored.authStateChanges())
        defer { second.stop() }
        try await second.wait(for: 1)
        #expect(second.seen == [.initialSession] && second.last?.isSignedIn == true, "restored from storage")

        try await client.signOut()
        try await recorder.wait(for: 4)
        #expect(recorder.seen == [.initialSession, .signedIn, .userUpdated, .signedOut] && recorder.last?.isSignedIn == false)
        #expect(second.seen == [.initialSession], "another client's sign-out is not this client's event")
    }

    @Test("streams are per session; a named session's sign-in is not the default session's")
    func perSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig())
        let work = Recorder(client.authStateChanges(sessionId: "work"))
        let main = Recorder(client.authStateChanges())
        defer { work.stop(); main.stop() }
        try await work.wait(for: 1)
        try await main.wait(for: 1)
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL(options: nil, sessionId: "work")))
        try await work.wait(for: 2)
        #expect(work.seen == [.initialSession, .signedIn] && work.last?.sessionId == "work")
        #expect(main.seen == [.initialSession])
    }
}
