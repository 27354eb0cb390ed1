import LatchkeySDKTestSupport
import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
@testable import Latchkey
import Testing

/// `getAccessToken()`'s lock-only path: the cache answers exactly what the token manager's actor would, at every
/// change of the default session, and nothing once the session or the client's context is gone.
@Suite("SDK: the access-token cache in front of the token manager")
struct AccessTokenCacheTests {
    /// Storage that counts reads (slowly, so concurrent first callers overlap) and can refuse writes.
    actor CountingStorage: StorageAdapter {
        var items: [String: Data] = [:]
        var reads = 0
        var locked = false
        func lock(_ value: Bool) { locked = value }
        func get(_ key: String) async throws -> Data? {
            reads += 1
            // Latency, not a wait for anything: a Keychain read takes time, so concurrent first callers overlap (the
            // count below holds whether or not they do).
            try await Task.sleep(for: .milliseconds(20))
            return items[key]
        }
        func set(_ key: String, _ value: Data) throws {
            guard !locked else { throw LatchkeyError(.storageUnavailable, "locked") }
            items[key] = value
        }
        func remove(_ key: String) throws { items[key] = nil }
    }

    static func tokens(_ access: String, expiresIn: TimeInterval) -> TokenSet {
        TokenSet(
            accessToken: access, refreshToken: "r-" + access, idToken: nil, expiresAt: Date().addingTimeInterval(expiresIn), scope: nil, nonce: nil)
    }

    static func cached(_ cache: AccessTokenCache) -> String? {
        if case .token(let token) = cache.lookup() { return token }
        return nil
    }

    @Test("sign-in, refresh, a failed write, the retried write and sign-out each change what the cache answers")
    func followsTheSession() async throws {
        let storage = CountingStorage()
        let cache = AccessTokenCache()
        let refreshed = Locked(0)
        let manager = TokenManager(storage: storage, cache: cache) { old in
            refreshed.withLock { $0 += 1 }
            return Self.tokens(old.accessToken + "+", expiresIn: 3600)
        }
        cache.bind(to: manager)
        guard case .askTheManager = cache.lookup() else { Issue.record("nothing is cached before the session is known"); return }

        try await manager.replace(Self.tokens("a", expiresIn: 3600), sessionId: nil)
        #expect(Self.cached(cache) == "a", "a sign-in is cached")

        // Within the refresh skew (30 s): the cache no longer hands the token out; the manager refreshes it.
        try await manager.replace(Self.tokens("b", expiresIn: 10), sessionId: nil)
        #expect(Self.cached(cache) == nil)
        await storage.lock(true)
        #expect(try await manager.accessToken(nil) == "b+")
        #expect(Self.cached(cache) == nil, "a set that could not be saved is left to the manager, which retries the write")
        await storage.lock(false)
        #expect(try await manager.accessToken(nil) == "b+")
        #expect(Self.cached(cache) == "b+", "cached once written")
        #expect(refreshed.withLock { $0 } == 1)

        try await manager.clear(nil)
        guard case .askTheManager = cache.lookup() else { Issue.record("a signed-out session is not served from the cache"); return }
        await #expect(throws: LatchkeyError.self) { try await manager.accessToken(nil) }

        // Other sessions are the manager's alone.
        try await manager.replace(Self.tokens("other", expiresIn: 3600), sessionId: "s2")
        guard case .askTheManager = cache.lookup() else { Issue.record("another session's token is not the default one"); return }
    }

    @Test("a refresh in flight is what callers find, and only while it runs")
    func refreshInFlight() async throws {
        let cache = AccessTokenCache()
        let gate = AsyncStream<Void>.makeStream()
        let manager = TokenManager(storage: InMemoryStorageAdapter(), cache: cache) { old in
            for await _ in gate.stream { break }
            return Self.tokens(old.accessToken + "+", expiresIn: 3600)
        }
        cache.bind(to: manager)
        try await manager.replace(Self.tokens("a", expiresIn: -1), sessionId: nil)
        let first = Task { try await manager.accessToken(nil) }
        try await eventually { if case .refreshing = cache.lookup() { return true } else { return false } }
        guard case .refreshing(let task) = cache.lookup() else { Issue.record("no refresh published"); return }
        gate.continuation.yield()
        #expect(try await task.value.accessToken == "a+")
        #expect(try await first.value == "a+")
        #expect(Self.cached(cache) == "a+", "the refreshed token replaces the refresh")
    }

    @Test("a context that was replaced cannot write: reInitialize's old token manager is ignored")
    func ownerOnly() async throws {
        let cache = AccessTokenCache()
        let old = TokenManager(storage: InMemoryStorageAdapter(), cache: cache) { $0 }
        let new = TokenManager(storage: InMemoryStorageAdapter(), cache: cache) { $0 }
        cache.bind(to: old)
        try await old.replace(Self.tokens("old", expiresIn: 3600), sessionId: nil)
        #expect(Self.cached(cache) == "old")
        cache.bind(to: new)
        #expect(Self.cached(cache) == nil, "binding forgets the previous owner's token")
        try await old.replace(Self.tokens("old-again", expiresIn: 3600), sessionId: nil)
        #expect(Self.cached(cache) == nil, "the old owner's writes are dropped")
        try await new.replace(Self.tokens("new", expiresIn: 3600), sessionId: nil)
        #expect(Self.cached(cache) == "new")
    }

    @Test("concurrent first callers share one read of the stored session")
    func oneLoad() async throws {
        let storage = CountingStorage()
        try await storage.set(TokenManager.key(nil), JSONEncoder().encode(Self.tokens("stored", expiresIn: 3600)))
        let cache = AccessTokenCache()
        let manager = TokenManager(storage: storage, cache: cache) { $0 }
        cache.bind(to: manager)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 { group.addTask { try await manager.accessToken(nil) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(tokens.count == 200 && Set(tokens) == ["stored"])
        #expect(await storage.reads == 1, "one read for 200 callers")
        #expect(Self.cached(cache) == "stored")
    }
}
