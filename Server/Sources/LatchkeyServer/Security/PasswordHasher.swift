import Crypto
import Foundation
import HummingbirdBcrypt
import NIOConcurrencyHelpers
import NIOPosix

/// bcrypt off the cooperative thread pool: a cost-12 hash takes ~250 ms of CPU and must not stall other requests.
///
/// Every hash and verification passes a `HashingGate`: at most `maxConcurrent` run at once and `maxQueued` wait;
/// past that the request is refused at once (503 `server.busy`) instead of joining an unbounded queue that would
/// stall every sign-in behind a flood.
///
/// New hashes are of the password's SHA-256 in base64 (44 bytes), marked `$lk-sha256$`, because bcrypt ignores
/// everything after the 72nd byte and the password policy allows longer passwords. Plain bcrypt hashes stored
/// before still verify against the password as is.
struct PasswordHasher: Sendable {
    let cost: UInt8

    /// A real hash of a random password, verified against when the user does not exist so that unknown and known
    /// usernames take the same time to reject.
    let decoyHash: String

    let gate: HashingGate

    /// Test hook: runs inside the gate before each bcrypt call, told what kind of work it is (holds the hash so a
    /// test can queue a burst deterministically, and counts real verifications).
    let probe = HashProbe()

    init(cost: UInt8, maxConcurrent: Int = ProcessInfo.processInfo.activeProcessorCount, maxQueued: Int = 64) {
        self.cost = cost
        self.decoyHash = Self.prehashedPrefix + Bcrypt.hash(Self.prehash(Secrets.token()), cost: cost)
        self.gate = HashingGate(maxRunning: maxConcurrent, maxWaiting: maxQueued)
    }

    /// Marks hashes of `prehash(password)`.
    static let prehashedPrefix = "$lk-sha256$"

    /// SHA-256 then base64: 44 ASCII bytes whatever the password's length, with no NUL byte for bcrypt to stop at.
    static func prehash(_ password: String) -> String {
        Data(SHA256.hash(data: Data(password.utf8))).base64EncodedString()
    }

    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        let input = Self.prehash(password)
        return try await run(.hash) { Self.prehashedPrefix + Bcrypt.hash(input, cost: cost) }
    }

    /// Stored for accounts that have no password (passkey or Sign in with Apple only): never a bcrypt hash, so no
    /// password matches it.
    static let noPassword = "!"

    func verify(_ password: String, hash: String?) async throws -> Bool {
        // Accounts without a password are checked against the decoy, so they cost the same time and always fail.
        let usable = hash.flatMap { $0.hasPrefix("$2") || $0.hasPrefix(Self.prehashedPrefix) ? $0 : nil }
        let target = usable ?? decoyHash
        let (input, stored) =
            target.hasPrefix(Self.prehashedPrefix)
            ? (Self.prehash(password), String(target.dropFirst(Self.prehashedPrefix.count)))
            : (password, target)
        let ok = try await run(usable == nil ? .decoy : .verify) { Bcrypt.verify(input, hash: stored) }
        return ok && usable != nil
    }

    private func run<T: Sendable>(_ kind: HashProbe.Kind, _ work: @escaping @Sendable () -> T) async throws -> T {
        try await gate.enter()
        do {
            await probe.observe(kind)
            let result = try await NIOThreadPool.singleton.runIfActive(work)
            await gate.leave()
            return result
        } catch {
            await gate.leave()
            throw error
        }
    }
}

/// A bounded queue in front of the thread pool (see `PasswordHasher`).
actor HashingGate {
    let maxRunning: Int
    let maxWaiting: Int
    private(set) var running = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(maxRunning: Int, maxWaiting: Int) {
        self.maxRunning = max(1, maxRunning)
        self.maxWaiting = max(0, maxWaiting)
    }

    var waiting: Int { waiters.count }

    /// Takes a slot, waits for one, or throws 503 `server.busy` at once when the queue is full.
    func enter() async throws {
        if running < maxRunning {
            running += 1
            return
        }
        guard waiters.count < maxWaiting else { throw Self.busy }
        // The slot is handed over by `leave` (running stays the same), so no one can overtake a waiter.
        await withCheckedContinuation { waiters.append($0) }
    }

    func leave() {
        if waiters.isEmpty { running -= 1 } else { waiters.removeFirst().resume() }
    }

    static let busy = APIError(
        status: .serviceUnavailable, code: "SRV-503", error: "temporarily_unavailable", messageKey: "server.busy",
        userMessage: "The service is busy. Please try again in a moment.",
        technical: "too many password hashes queued; refused without waiting")
}

/// See `PasswordHasher.probe`. Nothing is installed outside tests.
final class HashProbe: Sendable {
    enum Kind: Sendable { case hash, verify, decoy }
    private let hook = NIOLockedValueBox<(@Sendable (Kind) async -> Void)?>(nil)

    func install(_ body: (@Sendable (Kind) async -> Void)?) { hook.withLockedValue { $0 = body } }

    func observe(_ kind: Kind) async {
        if let body = hook.withLockedValue({ $0 }) { await body(kind) }
    }
}
