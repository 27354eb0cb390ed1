import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
@testable import Latchkey
import Testing

/// The token manager's changes as `authStateChanges` streams them: refresh, expiry on a refused refresh token, and
/// changes published before a stream's initial event waiting behind it.
@Suite("SDK: auth-state broadcast")
struct AuthStateBroadcastTests {
    static func expired(_ refresh: String) -> TokenSet {
        TokenSet(accessToken: "a", refreshToken: refresh, idToken: nil, expiresAt: Date().addingTimeInterval(-10), scope: nil, nonce: nil)
    }

    @Test func refreshThenExpiry() async throws {
        let changes = AuthStateBroadcaster()
        let refusals = Locked(0)
        let manager = TokenManager(storage: InMemoryStorageAdapter(), changes: changes) { old in
            if old.refreshToken == "dead" {
                refusals.withLock { $0 += 1 }
                throw LatchkeyError(.invalidGrant, "refresh token revoked", statusCode: 400, serverCode: "invalid_grant")
            }
            return TokenSet(accessToken: "a2", refreshToken: "r2", idToken: nil, expiresAt: Date().addingTimeInterval(3600), scope: nil, nonce: nil)
        }
        var iterator = changes.stream(sessionId: nil) { false }.makeAsyncIterator()
        #expect(await iterator.next()?.event == .initialSession)
        try await manager.replace(Self.expired("r1"), sessionId: nil)
        #expect(await iterator.next()?.event == .signedIn)
        _ = try await manager.accessToken(nil)
        #expect(await iterator.next() == AuthStateChange(event: .tokenRefreshed, sessionId: nil, isSignedIn: true))
        try await manager.replace(Self.expired("dead"), sessionId: nil)
        #expect(await iterator.next()?.event == .signedIn)
        await #expect(throws: LatchkeyError.self) { try await manager.accessToken(nil) }
        let reason = SessionEndReason(code: .invalidGrant, serverCode: "invalid_grant", message: "refresh token revoked")
        #expect(await iterator.next() == AuthStateChange(event: .sessionExpired, sessionId: nil, isSignedIn: false, reason: reason))
        #expect(refusals.withLock { $0 } == 1)
    }

    @Test func changesWaitBehindTheInitialEvent() async throws {
        let changes = AuthStateBroadcaster()
        let gate = AsyncStream<Void>.makeStream()
        var iterator = changes.stream(sessionId: "s") {
            for await _ in gate.stream { break }
            return true
        }.makeAsyncIterator()
        changes.publish(AuthStateChange(event: .signedOut, sessionId: "s", isSignedIn: false))
        changes.publish(AuthStateChange(event: .signedOut, sessionId: "other", isSignedIn: false))
        gate.continuation.yield()
        #expect(await iterator.next() == AuthStateChange(event: .initialSession, sessionId: "s", isSignedIn: true))
        #expect(await iterator.next() == AuthStateChange(event: .signedOut, sessionId: "s", isSignedIn: false))
    }
}
