import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// The account lockout and the per-address throttle hold against a burst of parallel password guesses. Each
/// attempt is counted before its (slow) hash, so the burst gets no more real hashes than the limits allow, and a
/// right password in or after the burst does not get past (or lift) the lock.
@Suite("Lockout and throttles under concurrent guesses")
struct ConcurrentGuessLockoutTests {
    static let right = "correct horse battery staple"

    @Test("a burst of 20 wrong guesses runs at most max_failures real hashes; the right password after it is refused")
    func burstDoesNotGetPastTheLockout() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAddress = 1000  // this test is about the account's limit
            $0.loginPolicy.maxConcurrentHashes = 64  // held hashes must not fill the gate
        }
        defer { Task { await server.stop() } }
        let hold = HashHold.install(on: server, holding: [.verify])
        defer { Task { await hold.release() } }  // never leave requests held if an expectation fails
        let collected = Collected()
        let burst = (0..<20).map { i in
            Task {
                let r = try await server.passwordLogin("demo@example.com", "wrong \(i)"); await collected.add(r); return r
            }
        }
        // Five guesses hold their real hash; the fifteen others were refused before hashing (a decoy hash, not held).
        // Waited for, not timed: on the PostgreSQL pass twenty requests share three pooled connections, and the pool's
        // stall after a slow connect (issue 38) can hold them for tens of seconds.
        try await eventually("5 real hashes held, 15 refused", within: .seconds(300)) {
            let (held, answered) = (await hold.count(.verify), await collected.count)
            return held == 5 && answered == 15
        }
        for refused in await collected.results {
            #expect(refused.status == 401 && refused.messageKey == "login.invalid_credentials", "\(refused.status): \(refused.text)")
        }
        // The right password while every allowed attempt is in flight: refused, without a real hash.
        let during = try await server.passwordLogin("demo@example.com", Self.right)
        #expect(during.status == 401 && during.messageKey == "login.invalid_credentials")
        #expect(await hold.count(.verify) == 5)

        await hold.release()
        for task in burst {
            let result = try await task.value
            #expect(result.status == 401 && result.messageKey == "login.invalid_credentials", "\(result.status): \(result.text)")
        }
        let after = try await server.passwordLogin("demo@example.com", Self.right)
        #expect(after.status == 401 && after.messageKey == "login.invalid_credentials", "the right password is refused while locked")
        #expect(await hold.count(.verify) == 5, "no hash beyond max_failures_per_account ran")

        server.advanceClock(15 * 60 + 1)
        let unlocked = try await server.passwordLogin("demo@example.com", Self.right)
        #expect(unlocked.status == 200, "the lock ends after lockout_seconds: \(unlocked.text)")
    }

    @Test("a burst from one address runs at most max_failures_per_address hashes; the rest get 429 at once")
    func burstDoesNotGetPastTheAddressThrottle() async throws {
        let server = try await TestServer.start {
            $0.loginPolicy.maxFailuresPerAddress = 3
            $0.loginPolicy.maxConcurrentHashes = 64
        }
        defer { Task { await server.stop() } }
        let hold = HashHold.install(on: server, holding: [.verify, .decoy])
        defer { Task { await hold.release() } }
        let collected = Collected()
        let burst = (0..<10).map { i in
            Task {
                let r = try await server.passwordLogin("ghost\(i)@example.com", "guess"); await collected.add(r); return r
            }
        }
        try await eventually("3 hashes held and 7 throttled") {
            let (held, answered) = (await hold.count(.decoy), await collected.count)
            return held == 3 && answered == 7
        }
        for throttled in await collected.results {
            #expect(throttled.status == 429 && throttled.messageKey == "login.throttled")
        }
        await hold.release()
        var statuses: [Int] = []
        for task in burst { statuses.append(try await task.value.status) }
        #expect(statuses.sorted() == [401, 401, 401] + Array(repeating: 429, count: 7))
        let hashed = await hold.count(.decoy) + (await hold.count(.verify))
        #expect(hashed == 3)
    }

    @Test("a right password that passes the hash after concurrent failures locked the account does not lift the lock")
    func successDoesNotClearAnActiveLock() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let store = server.server.store
        let user = try #require(try await store.user(username: "demo@example.com"))
        let now = Date()
        let limits = LoginLimits(perAddress: 2, perAccount: 50, lockFor: 900)
        // Two attempts reserved (the right one and a wrong one), the wrong one settles first and locks.
        #expect(try await store.reserveLoginAttempt(userId: user.id, address: "a", now: now, limits: limits) == .reserved)
        #expect(try await store.reserveLoginAttempt(userId: user.id, address: "a", now: now, limits: limits) == .reserved)
        #expect(
            try await store.reserveLoginAttempt(userId: user.id, address: "a", now: now, limits: limits) == .refused(lockedUntil: nil),
            "a third attempt while two are in flight is refused")
        let lockedUntil = try #require(try await store.settleLoginFailure(userId: user.id, address: "a", now: now, limits: limits))
        #expect(try await store.settleLoginSuccess(userId: user.id, address: "a", now: now) == false)
        #expect(
            try await store.reserveLoginAttempt(userId: user.id, address: "a", now: now, limits: limits) == .refused(lockedUntil: lockedUntil),
            "the lock stays")
        // Another address is not locked out by this one's failures.
        #expect(try await store.reserveLoginAttempt(userId: user.id, address: "b", now: now, limits: limits) == .reserved)
        #expect(try await store.settleLoginSuccess(userId: user.id, address: "b", now: now))
        // After the lock: attempts are counted again from zero, and a success clears them.
        let later = lockedUntil.addingTimeInterval(1)
        #expect(try await store.reserveLoginAttempt(userId: user.id, address: "a", now: later, limits: limits) == .reserved)
        #expect(try await store.settleLoginSuccess(userId: user.id, address: "a", now: later))
        #expect(try await store.user(id: user.id)?.failedLogins == 0)
    }
}
