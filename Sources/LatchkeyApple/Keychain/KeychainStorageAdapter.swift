import Foundation
import Latchkey
#if canImport(Security)
import Security
#else
import AppleFrameworkStandIns
#endif

/// Token storage in the Keychain (seed 003: the default storage): one generic-password item per session.
///
/// - Items: service = `service` (by default `latchkey:` + issuer + `#` + client id, so two providers or apps sharing an
///   access group never collide), account = the SDK's key for the session.
/// - Accessibility `.afterFirstUnlockThisDeviceOnly` by default: readable by background refreshes while the device is
///   locked, never in backups restored to another device, never synchronized through iCloud.
/// - A write is one `SecItemUpdate` (and `SecItemAdd` only when there is no item yet): the stored session is replaced
///   in place, never deleted first, so a crash between two calls cannot leave the user signed out.
/// - Several processes share the items when they share the access group (an app and its widget, share extension,
///   notification service): a refresh holds the session's lease item (`withExclusiveAccess(to:_:)`), re-reads the
///   stored tokens under it and adopts another process's rotation instead of presenting a spent refresh token.
/// - A read the system refuses because the device is locked (`errSecInteractionNotAllowed` — before the first unlock,
///   where prewarmed apps start) throws `.storageUnavailable` and leaves the item alone. Peer SDKs treat that answer as
///   "no session" and overwrite or delete it; that is how their users get signed out at random.
public actor KeychainStorageAdapter: SharedStorageAdapter {
    /// When the item can be read (`kSecAttrAccessible…`). Only device-bound classes: tokens must not leave the device.
    public enum Accessibility: Sendable, CaseIterable {
        /// After the first unlock since restart (background refresh works while locked). The default.
        case afterFirstUnlockThisDeviceOnly
        /// Only while the device is unlocked.
        case whenUnlockedThisDeviceOnly
        /// Only while unlocked and only while a passcode is set (the item is deleted when the passcode is removed).
        case whenPasscodeSetThisDeviceOnly

        var attribute: CFString {
            switch self {
            case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
            }
        }
    }

    /// The items' service.
    public let service: String
    /// When the items can be read.
    public let accessibility: Accessibility
    /// A keychain access group shared with the app's extensions (must be in its entitlements); nil is the app's own.
    public let accessGroup: String?

    /// The device's time, for the refresh lease's expiry (a test's clock in the tests).
    let now: @Sendable () -> Date

    /// Items under `service`.
    public init(service: String, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil) {
        self.init(service: service, accessibility: accessibility, accessGroup: accessGroup, now: { Date() })
    }

    init(service: String, accessibility: Accessibility, accessGroup: String?, now: @escaping @Sendable () -> Date) {
        self.service = service; self.accessibility = accessibility; self.accessGroup = accessGroup; self.now = now
    }

    /// Items of `config`'s provider and application.
    public init(config: LatchkeyConfig, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil) {
        self.init(service: Self.service(for: config), accessibility: accessibility, accessGroup: accessGroup)
    }

    /// The default service of `config`: `latchkey:<issuer>#<client id>`.
    public static func service(for config: LatchkeyConfig) -> String { "latchkey:\(config.issuer)#\(config.clientId)" }

    /// The session's item, or nil when there is none.
    /// - Throws: `.storageUnavailable` when the device is locked; `.invalidConfiguration` for an access group outside
    ///   the entitlements; `.unknownError` with the system's message otherwise.
    public func get(_ key: String) throws -> Data? {
        var query = itemQuery(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        try check(status, "read")
        guard let data = result as? Data else { throw LatchkeyError(.unknownError, "the keychain item of \(key) holds no data") }
        return data
    }

    /// Replaces the session's item in place (adds it when there is none).
    public func set(_ key: String, _ value: Data) throws {
        let attributes: [String: Any] = [kSecValueData as String: value, kSecAttrAccessible as String: accessibility.attribute]
        var status = SecItemUpdate(itemQuery(key) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(itemQuery(key).merging(attributes) { $1 } as CFDictionary, nil)
            // Another process (an app extension sharing the group) added it meanwhile: update that one.
            if status == errSecDuplicateItem { status = SecItemUpdate(itemQuery(key) as CFDictionary, attributes as CFDictionary) }
        }
        try check(status, "write")
    }

    /// Deletes the session's item; a missing one is not an error.
    public func remove(_ key: String) throws {
        let status = SecItemDelete(itemQuery(key) as CFDictionary)
        if status == errSecItemNotFound { return }
        try check(status, "delete")
    }

    /// The primary key of an item: class, service, account, access group, and never synchronizable.
    nonisolated func itemQuery(_ key: String) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: key,
            kSecAttrSynchronizable as String: false
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        #if os(macOS)
        query[kSecUseDataProtectionKeychain as String] = true  // the iOS-style keychain, with access groups and classes
        #endif
        return query
    }

    func check(_ status: OSStatus, _ operation: String) throws {
        guard status != errSecSuccess else { return }
        throw failure(status, operation)
    }

    /// The SDK's error for a status other than success.
    nonisolated func failure(_ status: OSStatus, _ operation: String) -> LatchkeyError {
        let text = SecCopyErrorMessageString(status, nil).map { $0 as String } ?? "OSStatus \(status)"
        switch status {
        case errSecInteractionNotAllowed:
            return LatchkeyError(
                .storageUnavailable,
                "the keychain cannot \(operation) the session while the device is locked; it is kept, retry after unlock (\(text))")
        case errSecMissingEntitlement:
            return LatchkeyError(
                .invalidConfiguration, "keychain access group \(accessGroup ?? "(default)") is not in the app's entitlements (\(text))")
        default:
            return LatchkeyError(.unknownError, "keychain \(operation) failed: \(text) (\(status))")
        }
    }
}
