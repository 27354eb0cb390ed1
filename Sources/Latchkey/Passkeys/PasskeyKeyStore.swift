import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One credential of the software authenticator. It contains the **private key** (raw P-256 scalar): whoever can
/// read a stored passkey can sign in as its user.
public struct StoredPasskey: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The credential ID the relying party stores.
    public var credentialId: Data
    /// The relying party ID the credential is scoped to.
    public var rpId: String
    /// The user handle (`user.id`) the relying party gave at creation; returned in assertions.
    public var userHandle: Data
    /// The account name shown for the credential.
    public var userName: String
    /// The display name shown for the credential.
    public var userDisplayName: String
    /// `P256.Signing.PrivateKey.rawRepresentation` (32 bytes).
    public var privateKey: Data
    /// The signature counter, incremented before every assertion.
    public var signCount: UInt32
    /// Discoverable ("resident") credentials answer requests without an allow list.
    public var discoverable: Bool
    /// When the credential was created.
    public var createdAt: Date

    /// A stored credential.
    public init(
        credentialId: Data, rpId: String, userHandle: Data, userName: String, userDisplayName: String, privateKey: Data,
        signCount: UInt32 = 0, discoverable: Bool = true, createdAt: Date = Date()
    ) {
        self.credentialId = credentialId; self.rpId = rpId; self.userHandle = userHandle; self.userName = userName
        self.userDisplayName = userDisplayName; self.privateKey = privateKey; self.signCount = signCount; self.discoverable = discoverable
        self.createdAt = createdAt
    }

    /// Never prints the private key.
    public var description: String {
        "StoredPasskey(id: \(Base64URL.encode(credentialId)), rpId: \(rpId), user: \(userName), signCount: \(signCount))"
    }

    enum CodingKeys: String, CodingKey {
        case credentialId = "credential_id", rpId = "rp_id", userHandle = "user_handle", userName = "user_name"
        case userDisplayName = "user_display_name", privateKey = "private_key", signCount = "sign_count", discoverable
        case createdAt = "created_at"
    }

    /// Binary members are unpadded base64url strings in the file.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func binary(_ key: CodingKeys) throws -> Data {
            guard let d = Base64URL.decode(try c.decode(String.self, forKey: key)) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not base64url")
            }
            return d
        }
        credentialId = try binary(.credentialId)
        rpId = try c.decode(String.self, forKey: .rpId)
        userHandle = try binary(.userHandle)
        userName = try c.decode(String.self, forKey: .userName)
        userDisplayName = try c.decodeIfPresent(String.self, forKey: .userDisplayName) ?? ""
        privateKey = try binary(.privateKey)
        signCount = try c.decode(UInt32.self, forKey: .signCount)
        discoverable = try c.decodeIfPresent(Bool.self, forKey: .discoverable) ?? true
        createdAt = Date(timeIntervalSince1970: try c.decode(Double.self, forKey: .createdAt))
    }

    /// Writes binary members as unpadded base64url.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Base64URL.encode(credentialId), forKey: .credentialId)
        try c.encode(rpId, forKey: .rpId)
        try c.encode(Base64URL.encode(userHandle), forKey: .userHandle)
        try c.encode(userName, forKey: .userName)
        try c.encode(userDisplayName, forKey: .userDisplayName)
        try c.encode(Base64URL.encode(privateKey), forKey: .privateKey)
        try c.encode(signCount, forKey: .signCount)
        try c.encode(discoverable, forKey: .discoverable)
        try c.encode(createdAt.timeIntervalSince1970.rounded(), forKey: .createdAt)
    }
}

/// Where the software authenticator keeps its credentials.
public protocol PasskeyKeyStore: Sendable {
    /// Every stored credential.
    func all() async throws -> [StoredPasskey]
    /// Inserts the credential, or replaces the one with the same credential ID (sign-count updates).
    func save(_ passkey: StoredPasskey) async throws
    /// Removes a credential; unknown IDs are ignored.
    func remove(credentialId: Data) async throws
}

/// Process memory only.
public actor InMemoryPasskeyKeyStore: PasskeyKeyStore {
    private var items: [StoredPasskey] = []
    /// A store holding `items`.
    public init(_ items: [StoredPasskey] = []) { self.items = items }
    /// Every stored credential.
    public func all() -> [StoredPasskey] { items }
    /// Inserts or replaces by credential ID.
    public func save(_ passkey: StoredPasskey) {
        if let index = items.firstIndex(where: { $0.credentialId == passkey.credentialId }) { items[index] = passkey } else { items.append(passkey) }
    }
    /// Removes a credential; unknown IDs are ignored.
    public func remove(credentialId: Data) { items.removeAll { $0.credentialId == credentialId } }
}

/// A JSON file (`{"version": 1, "passkeys": […]}`), mode 0600, rewritten by atomic rename so a crash never leaves a
/// half-written file.
///
/// **A development and test tool, not a secure enclave**: private keys sit in the file as plain base64url, protected
/// only by the file mode. Use it for the CLI, for testing relying parties and for CI — never for real accounts.
public actor FilePasskeyKeyStore: PasskeyKeyStore {
    private struct File: Codable {
        var version: Int
        var passkeys: [StoredPasskey]
    }

    /// The key store file.
    public let url: URL

    /// A store backed by `url` (created on first save, directory 0700, file 0600).
    public init(url: URL) { self.url = url }

    /// Every stored credential; an absent file is an empty store.
    public func all() throws -> [StoredPasskey] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let data = try Data(contentsOf: url)
        do { return try JSONDecoder().decode(File.self, from: data).passkeys } catch {
            throw LatchkeyError(.passkeyFailed, "the passkey key store \(url.path) is not a valid key store file")
        }
    }

    /// Inserts or replaces by credential ID, rewriting the file atomically.
    public func save(_ passkey: StoredPasskey) throws {
        var items = try all()
        if let index = items.firstIndex(where: { $0.credentialId == passkey.credentialId }) { items[index] = passkey } else { items.append(passkey) }
        try write(items)
    }

    /// Removes a credential, rewriting the file atomically; unknown IDs are ignored.
    public func remove(credentialId: Data) throws {
        let items = try all()
        let remaining = items.filter { $0.credentialId != credentialId }
        if remaining.count != items.count { try write(remaining) }
    }

    private func write(_ items: [StoredPasskey]) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(File(version: 1, passkeys: items))
        // Created 0600 before any byte is written, then renamed over the old file (rename is atomic on POSIX).
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw LatchkeyError(.passkeyFailed, "cannot write the passkey key store in \(directory.path)")
        }
        do {
            if rename(temporary.path, url.path) != 0 { throw LatchkeyError(.passkeyFailed, "cannot replace \(url.path) (errno \(errno))") }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}
