#if !canImport(Security)
import Foundation

// Stand-ins for the Security framework's keychain item API. Types are those of the Swift import on Apple platforms
// (`CFString` constants, `CFDictionary` queries, `OSStatus` results); constants carry Apple's underlying strings.
// Every call acts on the keychain of the calling task's simulated device (`StandInSystem.device.keychain`).

/// `OSStatus`.
public typealias OSStatus = Int32
/// `CFTypeRef`.
public typealias CFTypeRef = AnyObject
/// `CFDictionary` (toll-free bridged with `NSDictionary`, so `[String: Any] as CFDictionary` works as on Apple).
public typealias CFDictionary = NSDictionary
/// `CFString` (toll-free bridged with `NSString`, so `kSecClass as String` works as on Apple). The `kSec…` constants
/// are immutable strings, declared `nonisolated(unsafe)` as the C globals Apple's SDK exports are imported.
public typealias CFString = NSString

public let errSecSuccess: OSStatus = 0
public let errSecUnimplemented: OSStatus = -4
public let errSecParam: OSStatus = -50
public let errSecNotAvailable: OSStatus = -25291
public let errSecAuthFailed: OSStatus = -25293
public let errSecDuplicateItem: OSStatus = -25299
public let errSecItemNotFound: OSStatus = -25300
public let errSecInteractionNotAllowed: OSStatus = -25308
public let errSecMissingEntitlement: OSStatus = -34018
public let errSecUserCanceled: OSStatus = -128

nonisolated(unsafe) public let kSecClass: CFString = "class"
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"

/// `CFAllocator` (only ever passed as nil).
public typealias CFAllocator = NSObject
/// `CFError` (toll-free bridged with `NSError`).
public typealias CFError = NSError

/// `SecAccessControlCreateFlags`: what reading an item (or using a key) requires of the person.
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Face ID, Touch ID or the device passcode.
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// Face ID or Touch ID, any enrolled.
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// Face ID or Touch ID, as enrolled now: adding or removing a face or finger makes the item unreadable.
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The device passcode.
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// A Secure Enclave private key may be used for signing.
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
}

/// `SecAccessControl`: an item's accessibility class together with what reading it requires.
public final class SecAccessControl: @unchecked Sendable {
    /// The accessibility class (`kSecAttrAccessible…`).
    public let protection: String
    /// What a read requires.
    public let flags: SecAccessControlCreateFlags
    init(protection: String, flags: SecAccessControlCreateFlags) { self.protection = protection; self.flags = flags }
}

/// Makes an access control of `protection` (a `kSecAttrAccessible…` class) and `flags`; nil for a protection that is
/// not a class.
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    guard let protection = protection as? String, ["ak", "ck", "aku", "cku", "akpu"].contains(protection) else { return nil }
    return SecAccessControl(protection: protection, flags: flags)
}

/// Adds an item. `errSecDuplicateItem` when one with the same primary key (class, service, account, access group,
/// synchronizable) exists; `errSecInteractionNotAllowed` when the item's accessibility forbids writing now.
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    StandInSystem.device.keychain.add(attributes, result)
}

/// Finds an item; with `kSecReturnData` its data is stored in `result` (as `Data`, i.e. `CFData`).
/// `errSecItemNotFound`, or `errSecInteractionNotAllowed` when the item exists but cannot be read now.
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    StandInSystem.device.keychain.copyMatching(query, result)
}

/// Changes the items `query` matches. `errSecItemNotFound` when there are none (nothing is added).
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    StandInSystem.device.keychain.update(query, attributesToUpdate)
}

/// Deletes the items `query` matches. `errSecItemNotFound` when there are none.
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    StandInSystem.device.keychain.delete(query)
}

/// A readable description of `status`.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    let text: String? =
        switch status {
        case errSecSuccess: "No error."
        case errSecParam: "One or more parameters passed to a function were not valid."
        case errSecNotAvailable: "No keychain is available."
        case errSecAuthFailed: "The user name or passphrase you entered is not correct."
        case errSecDuplicateItem: "The specified item already exists in the keychain."
        case errSecItemNotFound: "The specified item could not be found in the keychain."
        case errSecInteractionNotAllowed: "User interaction is not allowed."
        case errSecMissingEntitlement: "A required entitlement isn't present."
        case errSecUserCanceled: "User canceled the operation."
        default: nil
        }
    return text.map { NSString(string: $0) }
}
#endif
