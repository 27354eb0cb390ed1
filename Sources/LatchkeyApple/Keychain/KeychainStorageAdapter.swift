import Foundation
import Latchkey
#if canImport(Security)
import Security
#else
import AppleFrameworkStandIns
#endif
#if canImport(LocalAuthentication)
import LocalAuthentication
#endif

/// Token storage in the Keychain (the default storage of the ThunderID-style `initialize(config:storage:)`): one
/// generic-password item per session.
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
/// - With `biometrics` (`BiometricProtection`), the items carry an access control (user presence or current biometry)
///   and are read only after the person confirmed, as often as its `BiometricPolicy` says; finding out whether there
///   is a session at all never asks (a launch without one shows no prompt).
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

    /// Face ID, Touch ID or the passcode in front of the sessions; nil: none.
    public let biometrics: BiometricProtection?

    /// The device's time, for the refresh lease's expiry and how long a confirmation lasts (a test's clock in the tests).
    let now: @Sendable () -> Date

    /// The person's last confirmation (`.session`; with `.always`, the one the last read asked for, which the write
    /// of the same refresh reuses).
    private var confirmation: ConfirmedAuthentication?

    /// Items under `service`.
    public init(service: String, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil) {
        self.init(service: service, accessibility: accessibility, accessGroup: accessGroup, biometrics: nil, now: { Date() })
    }

    /// Items under `service`, read only after the person confirmed with Face ID, Touch ID or the passcode as
    /// `biometrics` says.
    public init(
        service: String, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil,
        biometrics: BiometricProtection
    ) {
        self.init(service: service, accessibility: accessibility, accessGroup: accessGroup, biometrics: biometrics, now: { Date() })
    }

    init(
        service: String, accessibility: Accessibility, accessGroup: String?, biometrics: BiometricProtection? = nil,
        now: @escaping @Sendable () -> Date
    ) {
        self.service = service; self.accessibility = accessibility; self.accessGroup = accessGroup; self.now = now
        self.biometrics = biometrics
    }

    /// Items of `config`'s provider and application; with `biometrics`, read only after the person confirmed.
    public init(
        config: LatchkeyConfig, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil,
        biometrics: BiometricProtection? = nil
    ) {
        self.init(
            service: Self.service(for: config), accessibility: accessibility, accessGroup: accessGroup, biometrics: biometrics,
            now: { Date() })
    }

    /// The default service of `config`: `latchkey:<issuer>#<client id>`.
    public static func service(for config: LatchkeyConfig) -> String { "latchkey:\(config.issuer)#\(config.clientId)" }

    /// The session's item, or nil when there is none.
    /// - Throws: `.storageUnavailable` when the device is locked; `.biometricAuthenticationFailed` when the person did
    ///   not confirm (the item is kept); `.invalidConfiguration` for an access group outside the entitlements;
    ///   `.unknownError` with the system's message otherwise.
    public func get(_ key: String) async throws -> Data? {
        var query = itemQuery(key)
        if let biometrics {
            guard try exists(key) else { return nil }
            query[kSecUseAuthenticationContext as String] = try await confirmed(biometrics, forWriting: false).context
        }
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        try check(status, "read")
        guard let data = result as? Data else { throw LatchkeyError(.unknownError, "the keychain item of \(key) holds no data") }
        return data
    }

    /// Replaces the session's item in place (adds it when there is none). With `biometrics`, replacing a protected
    /// item needs the person's confirmation (the one of the read before it, within a refresh); adding one does not.
    public func set(_ key: String, _ value: Data) async throws {
        var attributes: [String: Any] = [kSecValueData as String: value]
        var updateQuery = itemQuery(key)
        if let biometrics {
            guard let control = SecAccessControlCreateWithFlags(nil, accessibility.attribute, biometrics.requirement.accessControlFlags, nil)
            else {
                throw LatchkeyError(.invalidConfiguration, "the keychain refused the access control for \(biometrics.requirement)")
            }
            attributes[kSecAttrAccessControl as String] = control
            if try exists(key) {
                updateQuery[kSecUseAuthenticationContext as String] = try await confirmed(biometrics, forWriting: true).context
            }
        } else {
            attributes[kSecAttrAccessible as String] = accessibility.attribute
        }
        var status = SecItemUpdate(updateQuery as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(itemQuery(key).merging(attributes) { $1 } as CFDictionary, nil)
            // Another process (an app extension sharing the group) added it meanwhile: update that one.
            if status == errSecDuplicateItem {
                if let biometrics {
                    updateQuery[kSecUseAuthenticationContext as String] = try await confirmed(biometrics, forWriting: true).context
                }
                status = SecItemUpdate(updateQuery as CFDictionary, attributes as CFDictionary)
            }
        }
        try check(status, "write")
    }

    /// Deletes the session's item; a missing one is not an error. Needs no confirmation; with `.session`, the next
    /// session asks again.
    public func remove(_ key: String) throws {
        if case .session = biometrics?.policy { confirmation = nil }
        let status = SecItemDelete(itemQuery(key) as CFDictionary)
        if status == errSecItemNotFound { return }
        try check(status, "delete")
    }

    /// Whether the session's item exists, found without reading it (so without a prompt).
    private func exists(_ key: String) throws -> Bool {
        var query = itemQuery(key)
        let silent = LAContext()
        silent.interactionNotAllowed = true
        query[kSecUseAuthenticationContext as String] = silent
        let status = SecItemCopyMatching(query as CFDictionary, nil)
        if status == errSecItemNotFound { return false }
        // A system that wants the person even to find the item (or a locked device) says so without asking: the item
        // is there, and the read that follows, under a confirmed context, tells which.
        if status == errSecInteractionNotAllowed { return true }
        try check(status, "find")
        return true
    }

    /// A confirmation of the person that `biometrics`' policy still accepts, or a new one (a prompt).
    private func confirmed(_ biometrics: BiometricProtection, forWriting: Bool) async throws -> ConfirmedAuthentication {
        // `.appLifecycle` keeps its confirmation for the process (it outlives a sign-out); the others on this adapter.
        let launchId = biometrics.policy.isPerLaunch ? service + "#" + (accessGroup ?? "") : nil
        let kept = if let launchId { ConfirmedAuthentication.launchConfirmations[launchId] } else { confirmation }
        // A write replaces what the read just before it gave out (a refresh's answer after a slow network): the
        // confirmation of that read is enough, however old.
        if let kept, forWriting || kept.isValid(for: biometrics.policy, at: now()) { return kept }
        let fresh = try await ConfirmedAuthentication.confirm(biometrics, at: now)
        if let launchId { ConfirmedAuthentication.launchConfirmations[launchId] = fresh } else { confirmation = fresh }
        return fresh
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
        case errSecUserCanceled, errSecAuthFailed:
            return LatchkeyError(
                .biometricAuthenticationFailed,
                "the person did not confirm with Face ID, Touch ID or the passcode; the session is kept (\(text))")
        case errSecMissingEntitlement:
            return LatchkeyError(
                .invalidConfiguration, "keychain access group \(accessGroup ?? "(default)") is not in the app's entitlements (\(text))")
        default:
            return LatchkeyError(.unknownError, "keychain \(operation) failed: \(text) (\(status))")
        }
    }
}
