import Foundation
import Latchkey
#if canImport(Security)
import Security
#else
import AppleFrameworkStandIns
#endif

/// One refresh at a time across the processes that share a session's Keychain item (an app and its extensions).
///
/// The Keychain has no lock, but `SecItemAdd` of an item that exists fails atomically (`errSecDuplicateItem`), and a
/// query that names a searchable attribute (`kSecAttrLabel`) matches only the item that still carries it. So:
///
/// - **Take**: add a lease item next to the session's (account `<key>#refresh-lease`) labelled with a fresh holder id;
///   its data says until when it holds. Added: held.
/// - **Wait**: another holder's lease that has not expired is waited for (polled; the Keychain notifies nobody). How
///   long is decided by the lease's expiry on the device's clock alone.
/// - **Take over**: an expired lease — its holder crashed or was killed mid-refresh — is deleted by a query naming its
///   holder's label, a compare-and-swap: if a third process took it over first, the label no longer matches and
///   nothing is deleted. Then the add is tried again.
/// - **Release**: delete by our own label (nothing happens when ours expired and was taken over).
///
/// A lease lasts `leaseSeconds` (20 s), shorter than the server's refresh-token reuse interval (60 s by default): a
/// holder killed after the server rotated but before it stored the answer leaves a spent token in the Keychain, and
/// the next holder presents it within the interval, so the server hands it the same successor instead of taking it for
/// a replay.
extension KeychainStorageAdapter {
    /// How long a lease holds without being released.
    static let leaseSeconds: TimeInterval = 20

    public func withExclusiveAccess<T: Sendable>(to key: String, _ body: @Sendable () async throws -> T) async throws -> T {
        let holder = UUID().uuidString
        try await takeLease(of: key, holder: holder)
        defer { releaseLease(of: key, holder: holder) }
        return try await body()
    }

    /// What a lease item holds.
    struct Lease: Codable {
        var holder: String
        var expiresAt: Date
    }

    /// The query of the session's lease item (`holder` nil: whoever holds it).
    nonisolated func leaseQuery(_ key: String, holder: String?) -> [String: Any] {
        var query = itemQuery(key + "#refresh-lease")
        if let holder { query[kSecAttrLabel as String] = holder }
        return query
    }

    private func takeLease(of key: String, holder: String) async throws {
        while true {
            let lease = Lease(holder: holder, expiresAt: now().addingTimeInterval(Self.leaseSeconds))
            var item = leaseQuery(key, holder: holder)
            item[kSecValueData as String] = try JSONEncoder().encode(lease)
            item[kSecAttrAccessible as String] = accessibility.attribute
            let added = SecItemAdd(item as CFDictionary, nil)
            if added == errSecSuccess { return }
            guard added == errSecDuplicateItem else { throw failure(added, "take the refresh lease of") }
            switch try currentLease(of: key) {
            case .gone:
                continue  // released between our add and our read: try again at once
            case .held(let other) where other.expiresAt <= now() || other.expiresAt > now().addingTimeInterval(Self.leaseSeconds):
                // Expired — or dated further ahead than a lease can be, by a clock that was set back since: waiting
                // for it would wait for as long as the clock was off. Only the lease we read is deleted: a newer
                // holder's carries another label and is left alone.
                _ = SecItemDelete(leaseQuery(key, holder: other.holder) as CFDictionary)
                continue
            case .unreadable:
                // Not written by this SDK's lease code: nothing can hold it, so it goes.
                _ = SecItemDelete(leaseQuery(key, holder: nil) as CFDictionary)
                continue
            case .held:
                // Released or expired by the device's clock, never by a wall-clock budget of our own: a busy device
                // makes a holder slow, not dead. (Polled: the Keychain notifies nobody.)
                try await Task.sleep(for: .milliseconds(25))
            }
        }
    }

    private enum LeaseState {
        case gone
        case held(Lease)
        case unreadable
    }

    private func currentLease(of key: String) throws -> LeaseState {
        var query = leaseQuery(key, holder: nil)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return .gone }
        try check(status, "read the refresh lease of")
        guard let data = result as? Data, let lease = try? JSONDecoder().decode(Lease.self, from: data) else { return .unreadable }
        return .held(lease)
    }

    private func releaseLease(of key: String, holder: String) {
        _ = SecItemDelete(leaseQuery(key, holder: holder) as CFDictionary)
    }
}
