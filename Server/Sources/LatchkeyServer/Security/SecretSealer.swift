import Crypto
import Foundation
import LatchkeyJOSE
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Encrypts the secrets the database must keep usable (signing private keys, TOTP shared secrets) with a
/// key-encryption key (KEK) that lives outside the database, so that a copy of the database file (a backup, a stray
/// copy, a read-only leak) yields neither token-forging keys nor second factors.
///
/// AES-256-GCM with keys derived from the KEK by HKDF-SHA256 (one per use); the row's identity (`context`, such as the
/// key id) is authenticated data, so a sealed value cannot be moved to another row. The same KEK keys the digests of
/// short one-time codes (HMAC), which a bare hash would not protect: six digits are a million guesses.
public struct SecretSealer: Sendable {
    static let prefix = "lk-sealed-v1:"
    // Key bytes rather than `SymmetricKey`, which is not `Sendable` in this swift-crypto version.
    private let sealingKey: Data
    /// The HMAC key of one-time code digests.
    private let codeDigestKey: Data
    /// The HMAC key of DPoP nonces: every instance sharing the key-encryption key issues and accepts the same ones.
    private let dpopNonceKey: Data
    /// The HMAC key of native sign-in nonces (`NativeSignInNonces`): any instance accepts another's.
    private let nativeSignInNonceKey: Data
    /// The HMAC key of pairwise subject identifiers (`SubjectIdentifiers`): the same on every instance, and as lasting
    /// as the key-encryption key itself, which cannot change without making the sealed secrets unreadable.
    private let pairwiseSubjectKey: Data

    /// `keyEncryptionKey` must be 32 bytes.
    public init(keyEncryptionKey: Data) throws {
        guard keyEncryptionKey.count == 32 else {
            throw ConfigurationError.invalid("the key-encryption key must be 32 bytes (base64 of 32 random bytes)")
        }
        let master = SymmetricKey(data: keyEncryptionKey)
        func derive(_ info: String) -> Data {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: master, info: Data(info.utf8), outputByteCount: 32).withUnsafeBytes { Data($0) }
        }
        sealingKey = derive("latchkey secrets at rest v1")
        codeDigestKey = derive("latchkey one-time code digest v1")
        dpopNonceKey = derive("latchkey dpop nonce v1")
        nativeSignInNonceKey = derive("latchkey native sign-in nonce v1")
        pairwiseSubjectKey = derive("latchkey pairwise subject v1")
    }

    static func isSealed(_ stored: String) -> Bool { stored.hasPrefix(prefix) }

    func seal(_ secret: String, context: String) throws -> String {
        let box = try AES.GCM.seal(Data(secret.utf8), using: SymmetricKey(data: sealingKey), authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw SecretSealerError.cannotSeal }
        return Self.prefix + combined.base64EncodedString()
    }

    /// The secret of a sealed value; throws (never returns garbage) when the value is not sealed, was sealed with
    /// another key, belongs to another row, or was altered.
    func open(_ stored: String, context: String) throws -> String {
        guard Self.isSealed(stored), let combined = Data(base64Encoded: String(stored.dropFirst(Self.prefix.count))),
            let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? AES.GCM.open(box, using: SymmetricKey(data: sealingKey), authenticating: Data(context.utf8)),
            let text = String(data: plain, encoding: .utf8)
        else {
            throw SecretSealerError.cannotOpen(context: context)
        }
        return text
    }

    /// The DPoP nonce of time window `window` (RFC 9449 §8): unguessable without the key, the same on every instance.
    func dpopNonce(window: Int64) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data("dpop-nonce:\(window)".utf8), using: SymmetricKey(data: dpopNonceKey))))
    }

    /// HMAC-SHA256 of a native sign-in nonce's fields (`NativeSignInNonces`): unforgeable without the key.
    func nativeSignInNonceMAC(_ fields: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(fields.utf8), using: SymmetricKey(data: nativeSignInNonceKey)))
    }

    /// The pairwise subject of `accountId` in `sector` (OpenID Connect Core §8.1): base64url of HMAC-SHA256 over the
    /// sector and the account id, 43 characters. Not reversible without the key, and the same for every application of
    /// the sector; the server maps it back only through its own records (an access token's row).
    func pairwiseSubject(sector: String, accountId: String) -> String {
        let message = Data("\(sector.utf8.count):\(sector)\(accountId)".utf8)
        return Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: pairwiseSubjectKey))))
    }

    /// HMAC-SHA256 of a short code under the server's key: not reversible from the database alone.
    func codeDigest(_ code: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(code.utf8), using: SymmetricKey(data: codeDigestKey)))
    }
}

enum SecretSealerError: Error, CustomStringConvertible {
    case cannotSeal
    case cannotOpen(context: String)

    var description: String {
        switch self {
        case .cannotSeal: "a secret could not be encrypted"
        // The context names the row (a key id, a user id and factor kind), never the secret.
        case .cannotOpen(let context):
            "cannot decrypt \(context) with the configured key-encryption key: the key is wrong (not the one the database was "
                + "encrypted with) or the value was altered"
        }
    }
}

/// Where the key-encryption key comes from, in order: the configuration (embedding), the
/// `LATCHKEY_KEY_ENCRYPTION_KEY` environment variable (base64 of 32 bytes), the `key_encryption_key_file` (base64 of
/// 32 bytes; readable by its owner only), and in development a key file generated next to the database.
enum KeyEncryptionKeySource {
    static let environmentVariable = "LATCHKEY_KEY_ENCRYPTION_KEY"

    /// Files the server creates from now on (database, WAL, shared memory, key file) are private to its user: the
    /// process umask becomes 077 (SQLite would otherwise create them 0644, readable by every local user).
    static func restrictFileCreation() {
        umask(0o077)
    }

    static func resolve(
        _ configuration: ServerConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger
    ) throws -> Data {
        if let key = configuration.keyEncryptionKey { return key }
        if let text = environment[environmentVariable], !text.isEmpty {
            guard let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32 else {
                throw ConfigurationError.invalid("\(environmentVariable) must be the base64 of 32 bytes (for example: openssl rand -base64 32)")
            }
            return key
        }
        if let path = configuration.keyEncryptionKeyFile { return try read(path, setting: "key_encryption_key_file") }
        guard configuration.development else {
            throw ConfigurationError.invalid(
                "signing keys and TOTP secrets are encrypted at rest: set \(environmentVariable) (base64 of 32 bytes, e.g. openssl rand -base64 32) "
                    + "or key_encryption_key_file (a file with that value, mode 0600)")
        }
        if case .postgres = try configuration.databaseLocation {
            // Every instance must seal and open with the same key: one made up here would be this instance's alone.
            throw ConfigurationError.invalid(
                "with PostgreSQL every instance needs the same key-encryption key: set \(environmentVariable) (base64 of 32 bytes, e.g. openssl rand -base64 32) or key_encryption_key_file"
            )
        }
        let path = configuration.databasePath + ".kek"
        if FileManager.default.fileExists(atPath: path) { return try read(path, setting: "the development key file") }
        try SQLiteStore.createPrivateDirectory(for: configuration.databasePath)
        try generate(path)
        logger.notice(
            "development mode: generated a key-encryption key at \(path) (mode 0600); production needs \(environmentVariable) or key_encryption_key_file"
        )
        return try read(path, setting: "the development key file")
    }

    private static func read(_ path: String, setting: String) throws -> Data {
        var info = stat()
        guard stat(path, &info) == 0 else { throw ConfigurationError.invalid("\(setting) \(path) cannot be read") }
        guard info.st_mode & 0o077 == 0 else {
            throw ConfigurationError.invalid("\(setting) \(path) must be readable by its owner only (chmod 600)")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
        else {
            throw ConfigurationError.invalid("\(setting) \(path) must hold the base64 of 32 bytes (for example: openssl rand -base64 32)")
        }
        return key
    }

    /// Creates the file with mode 0600 from the start (`O_EXCL`: never through an existing file or link).
    private static func generate(_ path: String) throws {
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw ConfigurationError.invalid("cannot create the development key file \(path)") }
        defer { close(fd) }
        let text = Array((key.base64EncodedString() + "\n").utf8)
        guard write(fd, text, text.count) == text.count else { throw ConfigurationError.invalid("cannot write the development key file \(path)") }
    }
}
