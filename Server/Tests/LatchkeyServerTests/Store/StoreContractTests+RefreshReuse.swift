import Foundation
@testable import LatchkeyServer
import Testing

private typealias Make = StoreFixture
private func at(_ seconds: TimeInterval) -> Date { StoreFixture.at(seconds) }

/// The reuse interval of rotated refresh tokens (`RefreshReuse`), on every store: a token presented again soon after
/// its rotation gets the one successor back, never a second live token; anything else is a replay as before.
extension StoreContractTests {
    /// A new user's family with one live, unused refresh token.
    private static func familyWithToken(_ store: any Store) async throws -> (TokenFamilyRecord, RefreshTokenRecord) {
        let user = try await Make.insertUser(store)
        let family = Make.family(userId: user.id)
        try await store.insertFamily(family)
        let token = Make.refreshToken(family)
        try await store.insertRefreshToken(token)
        return (family, token)
    }

    /// A family with one live token, rotated at `at(10)` keeping the successor sealed for reuse since `at(0)`.
    private static func rotatedWithReuse(_ store: any Store) async throws -> (TokenFamilyRecord, RefreshTokenRecord, RefreshTokenRecord) {
        let (family, token) = try await familyWithToken(store)
        let next = Make.refreshToken(family, createdAt: at(10), expiresAt: at(7200))
        let reuse = RefreshReuse(sealedSuccessor: "sealed-successor", rotatedSince: at(0))
        #expect(try await store.rotateRefreshToken(presented: token.tokenHash, next: next, reuse: reuse, now: at(10)) == .rotated(previous: token))
        return (family, try #require(try await store.refreshToken(hash: token.tokenHash)), next)
    }

    @Test(arguments: StoreKind.available)
    func aRotatedTokenPresentedAgainWithinTheIntervalIsHandedItsSuccessor(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let (family, rotated, successor) = try await Self.rotatedWithReuse(store)
            let retry = Make.refreshToken(family, createdAt: at(20))
            let window = RefreshReuse(sealedSuccessor: "unused", rotatedSince: at(5))
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: retry, reuse: window, now: at(20))
                    == .reissued(previous: rotated, sealedSuccessor: "sealed-successor", sealedOn: rotated.tokenHash))
            #expect(try await store.refreshToken(hash: retry.tokenHash) == nil, "a reissue writes no second token")
            #expect(try await store.family(id: family.id)?.revokedAt == nil)
            // Again, and again: the same successor each time while it is unused.
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: retry, reuse: window, now: at(21))
                    == .reissued(previous: rotated, sealedSuccessor: "sealed-successor", sealedOn: rotated.tokenHash))
            // The successor is the family's live token and rotates as usual.
            let third = Make.refreshToken(family, createdAt: at(22))
            #expect(
                try await store.rotateRefreshToken(presented: successor.tokenHash, next: third, reuse: window, now: at(22))
                    == .rotated(previous: successor))
        }
    }

    /// A killed process's request that arrives after the family rotated on (here twice): within the interval of its
    /// own token's rotation it gets the family's live token, sealed on that token's predecessor's row, not a revocation.
    @Test(arguments: StoreKind.available)
    func aRotatedTokenPresentedAfterTheFamilyRotatedOnIsHandedTheLiveToken(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let (family, rotated, successor) = try await Self.rotatedWithReuse(store)
            let window = RefreshReuse(sealedSuccessor: "unused", rotatedSince: at(5))
            let third = Make.refreshToken(family, createdAt: at(12))
            #expect(
                try await store.rotateRefreshToken(
                    presented: successor.tokenHash, next: third, reuse: RefreshReuse(sealedSuccessor: "sealed-third", rotatedSince: at(0)),
                    now: at(12)) == .rotated(previous: successor))
            let spentSuccessor = try #require(try await store.refreshToken(hash: successor.tokenHash))
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: Make.refreshToken(family), reuse: window, now: at(13))
                    == .reissued(previous: rotated, sealedSuccessor: "sealed-third", sealedOn: successor.tokenHash))
            #expect(
                try await store.rotateRefreshToken(presented: successor.tokenHash, next: Make.refreshToken(family), reuse: window, now: at(13))
                    == .reissued(previous: spentSuccessor, sealedSuccessor: "sealed-third", sealedOn: successor.tokenHash))
            #expect(try await store.family(id: family.id)?.revokedAt == nil)
            // The live token rotated without the interval keeps no sealed copy: the same late request is now a replay.
            #expect(
                try await store.rotateRefreshToken(presented: third.tokenHash, next: Make.refreshToken(family), now: at(14))
                    == .rotated(previous: third))
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: Make.refreshToken(family), reuse: window, now: at(15))
                    == .replayed(familyId: family.id))
            #expect(try await store.family(id: family.id)?.revokedAt != nil, "the family is revoked, the newest token with it")
        }
    }

    @Test(arguments: StoreKind.available)
    func afterTheIntervalOrWithoutOneTheRotatedTokenIsAReplay(_ kind: StoreKind) async throws {
        // Rotated at 10; the interval now starts after it.
        try await kind.withStore { store async throws in
            let (family, rotated, _) = try await Self.rotatedWithReuse(store)
            let late = RefreshReuse(sealedSuccessor: "s", rotatedSince: at(11))
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: Make.refreshToken(family), reuse: late, now: at(41))
                    == .replayed(familyId: family.id))
        }
        // A server without the interval (nil) treats every reuse as a replay, even of a token rotated with one.
        try await kind.withStore { store async throws in
            let (family, rotated, _) = try await Self.rotatedWithReuse(store)
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: Make.refreshToken(family), reuse: nil, now: at(11))
                    == .replayed(familyId: family.id))
        }
        // A token rotated without the interval kept no successor: presented again, a replay even with one now.
        try await kind.withStore { store async throws in
            let (family, token) = try await Self.familyWithToken(store)
            #expect(
                try await store.rotateRefreshToken(presented: token.tokenHash, next: Make.refreshToken(family), now: at(10))
                    == .rotated(previous: token))
            let window = RefreshReuse(sealedSuccessor: "s", rotatedSince: at(0))
            #expect(
                try await store.rotateRefreshToken(presented: token.tokenHash, next: Make.refreshToken(family), reuse: window, now: at(11))
                    == .replayed(familyId: family.id))
        }
    }

    @Test(arguments: StoreKind.available)
    func aRevokedFamilyOrAnExpiredSuccessorIsNotReissued(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let (family, rotated, _) = try await Self.rotatedWithReuse(store)
            try await store.revokeFamily(id: family.id, reason: "signed out", now: at(11))
            let window = RefreshReuse(sealedSuccessor: "s", rotatedSince: at(5))
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: Make.refreshToken(family), reuse: window, now: at(12))
                    == .revoked)
        }
        try await kind.withStore { store async throws in
            let (family, rotated, _) = try await Self.rotatedWithReuse(store)
            // The successor expires at 7200; a window reaching back past the rotation still does not hand out a dead token.
            let window = RefreshReuse(sealedSuccessor: "s", rotatedSince: at(0))
            #expect(
                try await store.rotateRefreshToken(presented: rotated.tokenHash, next: Make.refreshToken(family), reuse: window, now: at(7200))
                    == .replayed(familyId: family.id))
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentPresentationsOfOneTokenRotateItOnceAndAllGetTheSameSuccessor(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let (family, token) = try await Self.familyWithToken(store)
            let results = try await withThrowingTaskGroup(of: RefreshRotation.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        let next = Make.refreshToken(family, createdAt: at(10))
                        let reuse = RefreshReuse(sealedSuccessor: "successor-\(index)", rotatedSince: at(0))
                        return try await store.rotateRefreshToken(presented: token.tokenHash, next: next, reuse: reuse, now: at(10))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let rotated = results.filter { if case .rotated = $0 { true } else { false } }
            let handedOut = Set(results.compactMap { if case .reissued(_, let sealed, _) = $0 { sealed } else { nil } })
            #expect(rotated.count == 1, "one rotation")
            #expect(handedOut.count == 1 && results.count == 12, "every other presentation got the one successor: \(results)")
            #expect(try await store.family(id: family.id)?.revokedAt == nil)
        }
    }
}
