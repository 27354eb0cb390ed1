import Foundation
@testable import Latchkey
import Testing

/// A refresh that succeeds while the token store cannot be written (a locked device's Keychain): the old refresh
/// token is already spent, so the new set must not be lost — it is used from memory and written on the next access.
@Suite("SDK: refresh while storage is locked")
struct LockedStorageRefreshTests {
    actor LockableStorage: StorageAdapter {
        var items: [String: Data] = [:]
        var locked = false
        func lock(_ value: Bool) { locked = value }
        func get(_ key: String) throws -> Data? { items[key] }
        func set(_ key: String, _ value: Data) throws {
            guard !locked else { throw LatchkeyError(.storageUnavailable, "locked") }
            items[key] = value
        }
        func remove(_ key: String) throws { items[key] = nil }
    }

    @Test func refreshedTokensSurviveAFailedWrite() async throws {
        let storage = LockableStorage()
        let manager = TokenManager(storage: storage) { old in
            TokenSet(
                accessToken: old.accessToken + "+", refreshToken: (old.refreshToken ?? "") + "+", idToken: nil,
                expiresAt: Date().addingTimeInterval(3600), scope: nil, nonce: nil)
        }
        let expired = TokenSet(accessToken: "a", refreshToken: "r", idToken: nil, expiresAt: Date().addingTimeInterval(-10), scope: nil, nonce: nil)
        try await manager.replace(expired, sessionId: nil)
        await storage.lock(true)
        #expect(try await manager.accessToken(nil) == "a+", "the refresh worked; the failed write does not fail the caller")
        let stale = try #require(await storage.items[TokenManager.key(nil)])
        #expect(try StoredSession.decode(stale).refreshToken == "r", "still the spent token on disk")
        await storage.lock(false)
        #expect(try await manager.accessToken(nil) == "a+")
        let saved = try #require(await storage.items[TokenManager.key(nil)])
        #expect(try StoredSession.decode(saved).refreshToken == "r+", "written on the next access")
    }
}
