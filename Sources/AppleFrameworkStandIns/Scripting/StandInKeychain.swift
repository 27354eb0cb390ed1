#if !canImport(AuthenticationServices)
import Foundation

/// The simulated device's keychain: generic-password items in memory, with Apple's data-protection rules.
///
/// - Items are keyed by class, service, account, access group and synchronizable; adding an existing one is
///   `errSecDuplicateItem`; updating or deleting a missing one is `errSecItemNotFound`.
/// - Accessibility (`kSecAttrAccessible`, default `WhenUnlocked`): `WhenUnlocked…`/`WhenPasscodeSet…` items can be
///   read and written only while the device is unlocked; `AfterFirstUnlock…` items also while it is locked, but not
///   before the first unlock after a restart (where apps are prewarmed). Otherwise: `errSecInteractionNotAllowed`.
/// - A query without `kSecAttrSynchronizable` matches only items that are not synchronizable; one with `kSecAttrLabel`
///   only items of that label.
/// - An access group outside `entitledAccessGroups` is `errSecMissingEntitlement`; without one, items go to the
///   first entitled group, as the app's default group.
/// - An item added with `kSecAttrAccessControl` (user presence or biometry) gives its data, or takes new data, only
///   under an `LAContext` (`kSecUseAuthenticationContext`) that was evaluated on this device; otherwise the system
///   prompts (the device's `userVerification` script): a cancel is `errSecUserCanceled`, a failure `errSecAuthFailed`,
///   and a context with `interactionNotAllowed` gets `errSecInteractionNotAllowed` without a prompt. Finding or
///   deleting the item needs no authentication, as on Apple.
public final class StandInKeychain: @unchecked Sendable {
    /// The device's lock state.
    public enum LockState: Sendable {
        case unlocked
        /// Locked after having been unlocked once since the restart.
        case locked
        /// Restarted and never unlocked since (prewarmed apps run here).
        case beforeFirstUnlock
    }

    /// An item as the keychain holds it.
    public struct Item: Sendable, Equatable {
        public var itemClass: String
        public var service: String?
        public var account: String?
        public var accessGroup: String
        public var synchronizable: Bool
        public var accessible: String
        public var data: Data?
        /// `kSecAttrLabel`: searchable, so a query that names it matches only the item that still carries it.
        public var label: String? = nil
        /// What reading the item requires of the person (`kSecAttrAccessControl`'s flags); nil: nothing.
        public var userVerification: SecAccessControlCreateFlags? = nil
    }

    private let lock = NSLock()
    private var _items: [Item] = []
    private var _lockState = LockState.unlocked
    private var _entitledAccessGroups = ["TEAMID.io.latchkey.app"]
    private var _failures: [String: [OSStatus]] = [:]
    private var _operations: [(operation: String, query: [String: String])] = []

    init() {}

    /// The device's lock state (unlocked by default).
    public var lockState: LockState {
        get { lock.withLock { _lockState } }
        set { lock.withLock { _lockState = newValue } }
    }

    /// The app's keychain access groups; the first is its default.
    public var entitledAccessGroups: [String] {
        get { lock.withLock { _entitledAccessGroups } }
        set { lock.withLock { _entitledAccessGroups = newValue } }
    }

    /// Everything stored.
    public var items: [Item] { lock.withLock { _items } }

    /// Every call so far: `add`, `copyMatching`, `update`, `delete`, with the query's string-valued attributes.
    public var operations: [(operation: String, query: [String: String])] { lock.withLock { _operations } }

    /// Makes the next `operation` (`add`, `copyMatching`, `update`, `delete`) fail with `status`.
    public func failNext(_ operation: String, with status: OSStatus) {
        lock.withLock { _failures[operation, default: []].append(status) }
    }

    // MARK: Operations

    func add(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        finish("add", attributes) {
            let query = Query(attributes)
            guard let itemClass = query.itemClass else { return errSecParam }
            guard let group = query.resolvedGroup(entitled: _entitledAccessGroups) else { return errSecMissingEntitlement }
            let item = Item(
                itemClass: itemClass, service: query.service, account: query.account, accessGroup: group,
                synchronizable: query.synchronizable == true, accessible: query.accessControl?.protection ?? query.accessible ?? "ak",
                data: query.data, label: query.label, userVerification: query.accessControl?.flags)
            guard isAvailable(item.accessible) else { return errSecInteractionNotAllowed }
            guard
                !_items.contains(where: {
                    $0.itemClass == item.itemClass && $0.service == item.service && $0.account == item.account
                        && $0.accessGroup == item.accessGroup && $0.synchronizable == item.synchronizable
                })
            else { return errSecDuplicateItem }
            _items.append(item)
            return errSecSuccess
        }
    }

    func copyMatching(_ queryDictionary: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        finish("copyMatching", queryDictionary) {
            let query = Query(queryDictionary)
            guard query.itemClass != nil else { return errSecParam }
            guard query.accessGroup.map(_entitledAccessGroups.contains) ?? true else { return errSecMissingEntitlement }
            let found = matches(query)
            guard let first = found.first else { return errSecItemNotFound }
            guard isAvailable(_items[first].accessible) else { return errSecInteractionNotAllowed }
            if query.returnData {
                let status = authorize(_items[first], query.context)
                guard status == errSecSuccess else { return status }
            }
            if query.returnData, let data = _items[first].data { result?.pointee = data as AnyObject }
            return errSecSuccess
        }
    }

    func update(_ queryDictionary: CFDictionary, _ changes: CFDictionary) -> OSStatus {
        finish("update", queryDictionary) {
            let query = Query(queryDictionary)
            let change = Query(changes)
            guard query.itemClass != nil, change.itemClass == nil else { return errSecParam }
            guard query.accessGroup.map(_entitledAccessGroups.contains) ?? true else { return errSecMissingEntitlement }
            let found = matches(query)
            guard !found.isEmpty else { return errSecItemNotFound }
            for index in found {
                let accessible = change.accessControl?.protection ?? change.accessible ?? _items[index].accessible
                guard isAvailable(_items[index].accessible), isAvailable(accessible) else {
                    return errSecInteractionNotAllowed
                }
                if change.data != nil || change.accessControl != nil {
                    let status = authorize(_items[index], query.context)
                    guard status == errSecSuccess else { return status }
                }
            }
            for index in found {
                if let data = change.data { _items[index].data = data }
                if let accessible = change.accessible { _items[index].accessible = accessible }
                if let control = change.accessControl {
                    _items[index].accessible = control.protection
                    _items[index].userVerification = control.flags
                }
                if let label = change.label { _items[index].label = label }
            }
            return errSecSuccess
        }
    }

    func delete(_ queryDictionary: CFDictionary) -> OSStatus {
        finish("delete", queryDictionary) {
            let query = Query(queryDictionary)
            guard query.itemClass != nil else { return errSecParam }
            let found = matches(query)
            guard !found.isEmpty else { return errSecItemNotFound }
            for index in found.reversed() { _items.remove(at: index) }
            return errSecSuccess
        }
    }

    // MARK: Rules

    private func finish(_ operation: String, _ dictionary: CFDictionary, _ body: () -> OSStatus) -> OSStatus {
        lock.withLock {
            var strings: [String: String] = [:]
            for (key, value) in dictionary {
                if let key = key as? String { strings[key] = (value as? String) ?? (value as? Bool).map { $0 ? "true" : "false" } }
            }
            _operations.append((operation, strings))
            if var queued = _failures[operation], !queued.isEmpty {
                let status = queued.removeFirst()
                _failures[operation] = queued
                return status
            }
            return body()
        }
    }

    /// Whether the person has confirmed for a protected item: under an evaluated context, or at a prompt now.
    private func authorize(_ item: Item, _ context: LAContext?) -> OSStatus {
        guard let flags = item.userVerification, !flags.subtracting(.privateKeyUsage).isEmpty else { return errSecSuccess }
        let device = StandInSystem.device
        if context?.isAuthenticated(on: device) == true { return errSecSuccess }
        if context?.interactionNotAllowed == true { return errSecInteractionNotAllowed }
        let biometricOnly = !flags.isDisjoint(with: [.biometryAny, .biometryCurrentSet])
        let failure = device.verifyUser(
            policy: biometricOnly ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication,
            reason: context?.localizedReason ?? "", cancelTitle: context?.localizedCancelTitle)
        switch failure?.code {
        case nil: return errSecSuccess
        case .userCancel?: return errSecUserCanceled
        default: return errSecAuthFailed
        }
    }

    private func isAvailable(_ accessible: String) -> Bool {
        switch _lockState {
        case .unlocked: true
        case .locked: accessible == "ck" || accessible == "cku" || accessible == "dk" || accessible == "dku"
        case .beforeFirstUnlock: accessible == "dk" || accessible == "dku"
        }
    }

    private func matches(_ query: Query) -> [Int] {
        _items.indices.filter { i in
            let item = _items[i]
            guard item.itemClass == query.itemClass else { return false }
            if let service = query.service, item.service != service { return false }
            if let account = query.account, item.account != account { return false }
            if let group = query.accessGroup, item.accessGroup != group { return false }
            if let label = query.label, item.label != label { return false }
            if !query.synchronizableAny, item.synchronizable != (query.synchronizable == true) { return false }
            return true
        }
    }

    /// The attributes of a query or attribute dictionary that the keychain understands.
    private struct Query {
        var itemClass, service, account, accessGroup, accessible, label: String?
        var synchronizable: Bool?
        var synchronizableAny = false
        var data: Data?
        var returnData = false
        var accessControl: SecAccessControl?
        var context: LAContext?

        init(_ d: CFDictionary) {
            itemClass = d[kSecClass as String] as? String
            service = d[kSecAttrService as String] as? String
            account = d[kSecAttrAccount as String] as? String
            accessGroup = d[kSecAttrAccessGroup as String] as? String
            accessible = d[kSecAttrAccessible as String] as? String
            label = d[kSecAttrLabel as String] as? String
            if (d[kSecAttrSynchronizable as String] as? String) == (kSecAttrSynchronizableAny as String) {
                synchronizableAny = true
            } else {
                synchronizable = d[kSecAttrSynchronizable as String] as? Bool
            }
            data = d[kSecValueData as String] as? Data
            returnData = d[kSecReturnData as String] as? Bool ?? false
            accessControl = d[kSecAttrAccessControl as String] as? SecAccessControl
            context = d[kSecUseAuthenticationContext as String] as? LAContext
        }

        func resolvedGroup(entitled: [String]) -> String? {
            guard let accessGroup else { return entitled.first }
            return entitled.contains(accessGroup) ? accessGroup : nil
        }
    }
}
#endif
