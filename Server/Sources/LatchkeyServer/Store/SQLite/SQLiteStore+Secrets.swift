import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store that seals signing keys and TOTP secrets at rest (`SecretSealer`): both stores, one implementation.
protocol SealsSecretsAtRest {
    var sealer: SecretSealer? { get }
}

extension SealsSecretsAtRest {
    /// Seals a secret for `context`; the plaintext when the store has no sealer (tools and tests on a bare store).
    func sealed(_ secret: String, context: String) throws -> String {
        guard let sealer, !secret.isEmpty else { return secret }
        return try sealer.seal(secret, context: context)
    }

    func opened(_ stored: String, context: String) throws -> String {
        guard let sealer, !stored.isEmpty else { return stored }
        return try sealer.open(stored, context: context)
    }
}

extension SQLiteStore: SealsSecretsAtRest {}
extension PostgresStore: SealsSecretsAtRest {}

/// Secrets at rest: sealing of signing keys and TOTP secrets (`SecretSealer`), and the database files' permissions.
extension SQLiteStore {
    /// The database directory, when it has to be created, is 0700; the database, WAL and shared-memory files are
    /// 0600 (also when an older version created them with the default 0644).
    static func createPrivateDirectory(for path: String) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        guard !FileManager.default.fileExists(atPath: directory.path) else { return }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    static func restrictFiles(of path: String) {
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            _ = chmod(file, 0o600)
        }
    }

    static func signingKeyContext(_ kid: String) -> String { "signing key \(kid)" }
    static func factorContext(userId: String, kind: String) -> String { "\(kind) factor of user \(userId)" }

    /// At start: encrypts the rows an older version stored in clear, and checks that every sealed row opens with the
    /// configured key (a wrong key is a start-up error, not a failure at the first sign-in). Freed pages are zeroed
    /// (`secure_delete`) and the WAL is truncated, so the plaintext does not linger in the file.
    func sealSecretsAtRest() throws {
        guard let sealer else { return }
        try pool.write { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            for row in try Row.fetchAll(db, sql: "SELECT kid, pem FROM signing_keys") {
                let kid: String = row["kid"], pem: String = row["pem"]
                let context = Self.signingKeyContext(kid)
                if SecretSealer.isSealed(pem) {
                    _ = try sealer.open(pem, context: context)
                } else {
                    try db.execute(sql: "UPDATE signing_keys SET pem = ? WHERE kid = ?", arguments: [try sealer.seal(pem, context: context), kid])
                }
            }
            for row in try Row.fetchAll(db, sql: "SELECT user_id, kind, secret FROM user_factors WHERE secret <> ''") {
                let userId: String = row["user_id"], kind: String = row["kind"], secret: String = row["secret"]
                let context = Self.factorContext(userId: userId, kind: kind)
                if SecretSealer.isSealed(secret) {
                    _ = try sealer.open(secret, context: context)
                } else {
                    try db.execute(
                        sql: "UPDATE user_factors SET secret = ? WHERE user_id = ? AND kind = ?",
                        arguments: [try sealer.seal(secret, context: context), userId, kind])
                }
            }
        }
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    }
}
