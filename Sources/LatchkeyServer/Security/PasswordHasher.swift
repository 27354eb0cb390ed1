import Foundation
import HummingbirdBcrypt
import NIOPosix

/// bcrypt off the cooperative thread pool: a cost-12 hash takes ~250 ms of CPU and must not stall other requests.
struct PasswordHasher: Sendable {
    let cost: UInt8

    /// A real hash of a random password, verified against when the user does not exist so that unknown and known
    /// usernames take the same time to reject.
    let decoyHash: String

    init(cost: UInt8) {
        self.cost = cost
        self.decoyHash = Bcrypt.hash(Secrets.token(), cost: cost)
    }

    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    /// Stored for accounts that have no password (passkey or Sign in with Apple only): never a bcrypt hash, so no
    /// password matches it.
    static let noPassword = "!"

    func verify(_ password: String, hash: String?) async throws -> Bool {
        // Accounts without a password are checked against the decoy, so they cost the same time and always fail.
        let usable = hash.flatMap { $0.hasPrefix("$2") ? $0 : nil }
        let target = usable ?? decoyHash
        let ok = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: target) }
        return ok && usable != nil
    }
}
