import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import Testing

/// `RemoteKeySet`, the one remote key set of the SDK and the server: its rules, driven by the caller's clock alone.
@Suite("A remote key set: shared fetches, lifetime, rate-limited rotation, remembered failures")
struct RemoteKeySetTests {
    let known = try! SigningKey.generate(.es256)
    let rotated = try! SigningKey.generate(.es256)
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A fetch that answers what the test publishes and counts its calls.
    final class Publisher: Sendable {
        private let state = Locked<(set: JWKSet?, calls: Int)>((nil, 0))
        func publish(_ set: JWKSet?) { state.withLock { $0.set = set } }
        var calls: Int { state.withLock { $0.calls } }
        struct Unreachable: Error, Equatable {}
        func fetch() throws -> JWKSet {
            try state.withLock { state in
                state.calls += 1
                guard let set = state.set else { throw Unreachable() }
                return set
            }
        }
    }

    func token(_ key: SigningKey) throws -> CompactJWS {
        try CompactJWS(parsing: try key.sign(claims: ["sub": "s"]))
    }

    func keySet(_ policy: RemoteKeySet.Policy, _ publisher: Publisher) -> RemoteKeySet {
        RemoteKeySet(policy: policy) { try publisher.fetch() }
    }

    @Test func keysAreKeptForTheirLifetimeThenFetchedAgain() async throws {
        let publisher = Publisher()
        publisher.publish(JWKSet(keys: [try known.publicJWK()]))
        let keys = keySet(.init(lifetime: 100, refetchInterval: 60), publisher)
        try await keys.verify(try token(known), now: start)
        try await keys.verify(try token(known), now: start.addingTimeInterval(99))
        #expect(publisher.calls == 1)
        try await keys.verify(try token(known), now: start.addingTimeInterval(100))
        #expect(publisher.calls == 2)
    }

    @Test func aRotatedKeyIsFetchedOnceAndMadeUpKidsAreRateLimited() async throws {
        let publisher = Publisher()
        publisher.publish(JWKSet(keys: [try known.publicJWK()]))
        let keys = keySet(.init(lifetime: nil, refetchInterval: 60), publisher)
        try await keys.verify(try token(known), now: start)

        // The provider rotated: the first token with the new key fetches once and verifies.
        publisher.publish(JWKSet(keys: [try known.publicJWK(), try rotated.publicJWK()]))
        try await keys.verify(try token(rotated), now: start.addingTimeInterval(1))
        #expect(publisher.calls == 2)

        // A key nobody published: refused, and within the interval without another request.
        let stranger = try SigningKey.generate(.es256)
        await #expect(throws: JOSEError.self) { try await keys.verify(try token(stranger), now: start.addingTimeInterval(2)) }
        #expect(publisher.calls == 2)
        for second in [3.0, 30, 61] {
            await #expect(throws: JOSEError.self) { try await keys.verify(try token(stranger), now: start.addingTimeInterval(second)) }
        }
        #expect(publisher.calls == 3, "one more fetch once the interval since the last forced one has passed")
        // Known keys still verify, without a request.
        try await keys.verify(try token(known), now: start.addingTimeInterval(62))
        #expect(publisher.calls == 3)
    }

    @Test func aRememberedFailureIsThrownWithoutARequestUntilItsTimeIsOver() async throws {
        let publisher = Publisher()
        let keys = keySet(.init(lifetime: 300, refetchInterval: 30, retryAfterFailure: 30), publisher)
        await #expect(throws: Publisher.Unreachable()) { try await keys.verify(try token(known), now: start) }
        publisher.publish(JWKSet(keys: [try known.publicJWK()]))
        await #expect(throws: Publisher.Unreachable()) { try await keys.verify(try token(known), now: start.addingTimeInterval(29)) }
        #expect(publisher.calls == 1)
        try await keys.verify(try token(known), now: start.addingTimeInterval(30))
        #expect(publisher.calls == 2)
    }

    @Test func withoutAFailureMemoryTheNextCallTriesAgain() async throws {
        let publisher = Publisher()
        let keys = keySet(.init(lifetime: nil, refetchInterval: 60), publisher)
        await #expect(throws: Publisher.Unreachable()) { try await keys.verify(try token(known), now: start) }
        publisher.publish(JWKSet(keys: [try known.publicJWK()]))
        try await keys.verify(try token(known), now: start)
        #expect(publisher.calls == 2)
    }

    @Test func concurrentCallersShareOneFetch() async throws {
        let publisher = Publisher()
        publisher.publish(JWKSet(keys: [try known.publicJWK()]))
        // The fetch waits until the test lets it answer, so the callers that arrive meanwhile find it in flight.
        let gate = Gate()
        let keys = RemoteKeySet(policy: .init(lifetime: nil, refetchInterval: 60)) {
            await gate.wait()
            return try publisher.fetch()
        }
        let jws = try token(known)
        let now = start
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { try await keys.verify(jws, now: now) } }
            await gate.open()
            try await group.waitForAll()
        }
        #expect(publisher.calls == 1)
    }

    /// Holds its waiters until opened; once open, lets everyone through.
    actor Gate {
        private var isOpen = false
        private var waiters: [CheckedContinuation<Void, Never>] = []
        func wait() async {
            if isOpen { return }
            await withCheckedContinuation { waiters.append($0) }
        }
        func open() {
            isOpen = true
            for waiter in waiters { waiter.resume() }
            waiters = []
        }
    }
}
