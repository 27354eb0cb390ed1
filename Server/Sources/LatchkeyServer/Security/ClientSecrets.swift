import _CryptoExtras
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOPosix

/// Client secrets at rest: salted PBKDF2-HMAC-SHA256 rather than a bare SHA-256, so a leaked database does not
/// allow a fast offline guess of operator-chosen secrets.
///
/// Stored form: `0x01 ‖ rounds (UInt32, big endian) ‖ salt (16 bytes) ‖ derived key (32 bytes)`. A 32-byte value is
/// the former bare SHA-256 and still verifies. Clients are seeded from the configuration at every start, so stored
/// values are rewritten in the new form then.
///
/// PBKDF2 is slow on purpose, so a verified secret is remembered in memory (by the stored value, as its SHA-256):
/// later authentications of a client cost one SHA-256, and a wrong secret is refused at that cost too. Only the
/// first verification after a start runs PBKDF2, on the thread pool behind a small bounded queue (503 when full).
enum ClientSecrets {
    static let rounds = 210_000
    private static let version: UInt8 = 1
    private static let saltLength = 16
    private static let keyLength = 32

    static func hash(_ secret: String, rounds: Int = rounds) throws -> Data {
        var salt = [UInt8](repeating: 0, count: saltLength)
        var generator = SystemRandomNumberGenerator()
        for i in salt.indices { salt[i] = UInt8.random(in: .min ... .max, using: &generator) }
        let key = try derive(secret, salt: salt, rounds: rounds)
        var stored = Data([version])
        withUnsafeBytes(of: UInt32(rounds).bigEndian) { stored.append(contentsOf: $0) }
        stored.append(contentsOf: salt)
        stored.append(key)
        return stored
    }

    /// Constant-time in the secret's content whichever path is taken.
    static func verify(_ secret: String, against stored: Data) async throws -> Bool {
        let presented = Secrets.digest(secret)
        if stored.count == 32 { return Secrets.constantTimeEquals(presented, stored) }  // the former bare SHA-256
        if let known = verified.withLockedValue({ $0[stored] }) { return Secrets.constantTimeEquals(presented, known) }
        let bytes = [UInt8](stored)
        guard bytes.count == 1 + 4 + saltLength + keyLength, bytes[0] == version else { return false }
        let rounds = Int(bytes[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard (1...10_000_000).contains(rounds) else { return false }
        let salt = Array(bytes[5..<(5 + saltLength)])
        let expected = Data(bytes[(5 + saltLength)...])
        try await gate.enter()
        let derived: Data
        do {
            derived = try await NIOThreadPool.singleton.runIfActive { try derive(secret, salt: salt, rounds: rounds) }
            await gate.leave()
        } catch {
            await gate.leave()
            throw error
        }
        let ok = Secrets.constantTimeEquals(derived, expected)
        if ok {
            verified.withLockedValue { cache in
                if cache.count >= cacheCapacity { cache.removeAll() }  // bounded; a flush only costs a PBKDF2 per client
                cache[stored] = presented
            }
        }
        return ok
    }

    /// Whether `stored` verifies at the cost of one SHA-256: the secret that matches it is remembered (or it is the
    /// former bare SHA-256). Only the other stored values cost a key derivation, and only those are throttled.
    static func isCheap(_ stored: Data) -> Bool {
        stored.count == 32 || verified.withLockedValue { $0[stored] != nil }
    }

    /// Remembers `secret` as the one `stored` was derived from (a value this process just made with `hash`), so that
    /// no request after a start pays for, or can queue, a key derivation for it.
    static func remember(_ secret: String, for stored: Data) {
        verified.withLockedValue { cache in
            if cache.count >= cacheCapacity { cache.removeAll() }
            cache[stored] = Secrets.digest(secret)
        }
    }

    /// Whether `stored` is in the current form with `rounds` rounds (a start rewrites anything else).
    static func isCurrentForm(_ stored: Data, rounds: Int) -> Bool {
        let bytes = [UInt8](stored)
        guard bytes.count == 1 + 4 + saltLength + keyLength, bytes[0] == version else { return false }
        return Int(bytes[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) == rounds
    }

    private static func derive(_ secret: String, salt: [UInt8], rounds: Int) throws -> Data {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Data(secret.utf8), salt: salt, using: .sha256, outputByteCount: keyLength,
            unsafeUncheckedRounds: rounds)
        return key.withUnsafeBytes { Data($0) }
    }

    /// How many verified secrets are remembered before the memory starts over. Far more than the confidential
    /// clients of any deployment (registered applications' secrets are SHA-256 and never need it); large because one
    /// process may run many servers (the test suites start hundreds at once), and a flush there made a remembered
    /// client pay a key derivation again, throttled as if it had failed (429) under a flood.
    private static let cacheCapacity = 16_384

    /// Stored value → SHA-256 of the secret that verified against it.
    private static let verified = NIOLockedValueBox<[Data: Data]>([:])
    private static let gate = HashingGate(maxRunning: max(1, ProcessInfo.processInfo.activeProcessorCount), maxWaiting: 16)
}
