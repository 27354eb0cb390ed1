import Foundation
@testable import LatchkeyServer
import Testing

private typealias Make = StoreFixture
private let t0 = StoreFixture.t0
private func at(_ seconds: TimeInterval) -> Date { StoreFixture.at(seconds) }

/// The `Store` protocol's contract, run against every store implementation (`StoreKind.available`): SQLite always,
/// PostgreSQL when `LATCHKEY_TEST_POSTGRES_URL` is set. Each test gets a fresh, empty store. Every time is `t0` plus
/// whole seconds (exact in both stores' `DOUBLE` seconds), passed in explicitly, so the tests never depend on the clock.
@Suite("Store contract (SQLite and PostgreSQL)")
struct StoreContractTests {
    // MARK: Users

    @Test(arguments: StoreKind.available)
    func insertedUserReadsBackByIdAndByUsernameInAnyCase(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = Make.user(username: "Ada.Lovelace", claims: ["email": "ada@example.com", "name": "Ada"])
            try await store.insertUser(user)
            #expect(try await store.user(id: user.id) == user)
            #expect(try await store.user(username: "Ada.Lovelace") == user)
            #expect(try await store.user(username: "ada.lovelace")?.id == user.id, "usernames are looked up case-insensitively")
            #expect(try await store.user(id: "nobody") == nil)
            #expect(try await store.user(username: "nobody") == nil)

            var locked = Make.user(username: "locked")
            locked.disabled = true
            locked.failedLogins = 2
            locked.lockedUntil = at(600)
            try await store.insertUser(locked)
            #expect(try await store.user(id: locked.id) == locked, "disabled, failed logins and the lock are stored as given")
        }
    }

    @Test(arguments: StoreKind.available)
    func insertUserWithATakenUsernameIsAConflict(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let first = try await Make.insertUser(store, username: "ada")
            await Make.expectConflict("the same username") { try await store.insertUser(Make.user(username: "ada")) }
            await Make.expectConflict("the same username in another case") { try await store.insertUser(Make.user(username: "ADA")) }
            #expect(try await store.user(username: "ada")?.id == first.id)
        }
    }

    @Test(arguments: StoreKind.available)
    func newAccountsKeepUsernamesAndEmailsInOneNamespace(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            try await Make.insertUser(store, username: "ada", claims: ["email": "ada@example.com"])
            let username = await Make.expectConflict("a username that is another account's email") {
                try await store.insertUser(Make.user(username: "ADA@example.com"))
            }
            #expect(username == "username")
            // An email that is another account's username is allowed (Sign in with Apple's `apple.<sub>` accounts).
            try await store.insertUser(Make.user(username: "apple.001", claims: ["email": "Ada"]))
            let withPasskey = await Make.expectConflict("the same rule when the account comes with its first passkey") {
                try await store.insertUser(Make.user(username: "ada@EXAMPLE.com"), withPasskey: Make.passkey(userId: "someone-new"))
            }
            #expect(withPasskey == "username")
            #expect(try await store.user(username: "ada@EXAMPLE.com") == nil, "nothing was created")
        }
    }

    @Test(arguments: StoreKind.available)
    func aValueWithANulCharacterMatchesNothing(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            try await Make.insertUser(store, username: "ada")
            // SQLite finds nothing; PostgreSQL's text cannot hold the character and says so (the server answers 400).
            do {
                #expect(try await store.user(username: "ada\u{0}") == nil)
            } catch let error as StoreError {
                #expect(error == .invalidInput)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func updateUserWritesTheWholeRowAndBumpsTheVersion(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store, username: "ada", claims: ["email": "ada@example.com"])
            var copy = try #require(try await store.user(id: user.id))
            copy.username = "lovelace"
            copy.claims = ["email": "ada@lovelace.example", "name": "Ada"]
            copy.disabled = true
            copy.passwordHash = "hash-v2"
            copy.updatedAt = at(60)
            try await store.updateUser(copy)
            let stored = try #require(try await store.user(id: user.id))
            #expect(stored.username == "lovelace")
            #expect(stored.claims == copy.claims)
            #expect(stored.disabled)
            #expect(stored.passwordHash == "hash-v2")
            #expect(stored.updatedAt == at(60))
            #expect(stored.version == user.version + 1)
            #expect(try await store.user(username: "ada") == nil, "the old username is free")
        }
    }

    @Test(arguments: StoreKind.available)
    func updateUserRefusesAStaleCopyAndATakenUsername(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let ada = try await Make.insertUser(store, username: "ada")
            try await Make.insertUser(store, username: "bob")
            let read = try #require(try await store.user(id: ada.id))
            var first = read
            first.claims = ["name": "first write"]
            first.updatedAt = at(10)
            try await store.updateUser(first)

            var stale = read
            stale.claims = ["name": "stale write"]
            stale.updatedAt = at(20)
            let staleReason = await Make.expectConflict("a copy of an older version") { try await store.updateUser(stale) }
            #expect(staleReason == "version")
            #expect(try await store.user(id: ada.id)?.claims == ["name": "first write"], "the stale copy changed nothing")

            var taken = try #require(try await store.user(id: ada.id))
            taken.username = "bob"
            taken.updatedAt = at(30)
            let takenReason = await Make.expectConflict("a taken username") { try await store.updateUser(taken) }
            #expect(takenReason == "username")
            #expect(try await store.user(id: ada.id)?.username == "ada")
        }
    }

    @Test(arguments: StoreKind.available)
    func usersByClaimMatchTheValueCaseInsensitively(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let ada = try await Make.insertUser(store, username: "ada", claims: ["email": "Ada@Example.com", "name": "Ada Lovelace"])
            let bob = try await Make.insertUser(store, username: "bob", claims: ["email": "bob@example.com", "name": "Bob"])
            try await Make.insertUser(store, username: "carol")
            #expect(try await store.users(claim: "email", equals: "ada@example.com").map(\.id) == [ada.id])
            #expect(try await store.users(claim: "email", equals: "BOB@EXAMPLE.COM").map(\.id) == [bob.id])
            #expect(try await store.users(claim: "name", equals: "ada lovelace").map(\.id) == [ada.id])
            #expect(try await store.users(claim: "email", equals: "nobody@example.com").isEmpty)
            #expect(try await store.users(claim: "phone_number", equals: "Ada@Example.com").isEmpty, "only the named claim is compared")
        }
    }

    @Test(arguments: StoreKind.available)
    func replacePasswordReplacesOnlyTheHashAndBumpsTheVersion(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store, username: "ada", claims: ["email": "ada@example.com"])
            try await store.replacePassword(userId: user.id, passwordHash: "hash-v2", keepingSession: nil, keepingFamily: nil, now: at(30))
            let stored = try #require(try await store.user(id: user.id))
            #expect(stored.passwordHash == "hash-v2")
            #expect(stored.version == user.version + 1)
            #expect(stored.updatedAt == at(30))
            #expect(stored.username == user.username && stored.claims == user.claims && stored.disabled == user.disabled)
        }
    }

    @Test(arguments: StoreKind.available)
    func replacePasswordForgetsFailedAttemptsAndLocksFromEveryAddress(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 1, perAccount: 2, lockFor: 600)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginFailure(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == at(600))
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.2", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginFailure(userId: user.id, address: "192.0.2.2", now: t0, limits: limits) == at(600))
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.3", now: at(1), limits: limits)
                    == .refused(lockedUntil: at(600)), "the account is locked for everyone")

            try await store.replacePassword(userId: user.id, passwordHash: "hash-v2", keepingSession: nil, keepingFamily: nil, now: at(2))
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(3), limits: limits) == .reserved,
                "the address lock is gone")
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.3", now: at(3), limits: limits) == .reserved,
                "the account lock is gone")
        }
    }

    @Test(arguments: StoreKind.available)
    func replacePasswordEndsEverySessionAndFamilyButTheKeptOnes(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let kept = Make.session(userId: user.id), other = Make.session(userId: user.id)
            try await store.insertSession(kept)
            try await store.insertSession(other)
            let keptFamily = Make.family(userId: user.id)
            let otherFamily = Make.family(userId: user.id, sessionId: other.id)
            let looseFamily = Make.family(userId: user.id)
            for family in [keptFamily, otherFamily, looseFamily] { try await store.insertFamily(family) }

            try await store.replacePassword(
                userId: user.id, passwordHash: "hash-v2", keepingSession: kept.id, keepingFamily: keptFamily.id,
                now: at(5))
            #expect(try await store.session(id: kept.id) == kept, "the kept session goes on")
            #expect(try await store.session(id: other.id)?.endedAt == at(5))
            #expect(try await store.family(id: keptFamily.id) == keptFamily)
            #expect(try await store.family(id: otherFamily.id)?.revokedAt == at(5))
            #expect(try await store.family(id: looseFamily.id)?.revokedAt == at(5))
        }
    }

    @Test(arguments: StoreKind.available)
    func updateProfileWritesOnlyAtTheExpectedVersion(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store, username: "ada", claims: ["email": "ada@example.com"])
            #expect(
                try await store.updateProfile(
                    userId: user.id, username: "lovelace", claims: ["email": "ada@lovelace.example"],
                    disabled: nil, expectedVersion: user.version, updatedAt: at(10)))
            let stored = try #require(try await store.user(id: user.id))
            #expect(stored.username == "lovelace" && stored.claims == ["email": "ada@lovelace.example"])
            #expect(stored.version == user.version + 1 && stored.updatedAt == at(10))
            #expect(stored.passwordHash == user.passwordHash, "a profile write never touches the password hash")
            #expect(!stored.disabled, "disabled: nil keeps the flag")

            #expect(
                try await store.updateProfile(
                    userId: user.id, username: "stale", claims: [:], disabled: true,
                    expectedVersion: user.version, updatedAt: at(20)) == false, "a stale copy is refused")
            #expect(try await store.user(id: user.id) == stored, "and changes nothing")

            #expect(
                try await store.updateProfile(
                    userId: user.id, username: "lovelace", claims: stored.claims, disabled: true,
                    expectedVersion: stored.version, updatedAt: at(30)))
            let disabled = try #require(try await store.user(id: user.id))
            #expect(disabled.disabled && disabled.version == stored.version + 1 && disabled.updatedAt == at(30))
        }
    }

    @Test(arguments: StoreKind.available)
    func updateProfileRefusesATakenUsername(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let ada = try await Make.insertUser(store, username: "ada")
            try await Make.insertUser(store, username: "bob")
            await Make.expectConflict("bob is taken") {
                _ = try await store.updateProfile(
                    userId: ada.id, username: "bob", claims: [:], disabled: nil,
                    expectedVersion: ada.version, updatedAt: at(1))
            }
            await Make.expectConflict("BOB is bob") {
                _ = try await store.updateProfile(
                    userId: ada.id, username: "BOB", claims: [:], disabled: nil,
                    expectedVersion: ada.version, updatedAt: at(1))
            }
            let stored = try #require(try await store.user(id: ada.id))
            #expect(stored.username == "ada" && stored.version == ada.version)
        }
    }

    // MARK: Login attempts

    @Test(arguments: StoreKind.available)
    func reserveLoginAttemptCountsAttemptsStillBeingChecked(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 2, perAccount: 10)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits)
                    == .refused(lockedUntil: nil), "every allowed attempt is being checked: refused, but not locked")
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "198.51.100.7", now: t0, limits: limits) == .reserved,
                "another address has its own count")
        }
    }

    @Test(arguments: StoreKind.available)
    func settleLoginFailureLocksTheAddressAtItsLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 2, perAccount: 10, lockFor: 300)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginFailure(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == nil)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(
                try await store.settleLoginFailure(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == at(300),
                "the second failure reaches the limit: locked until now + lockFor")
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(1), limits: limits)
                    == .refused(lockedUntil: at(300)))
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "198.51.100.7", now: at(1), limits: limits) == .reserved,
                "the lock holds for that address only")
        }
    }

    @Test(arguments: StoreKind.available)
    func settleLoginFailureLocksTheAccountForEveryoneAtItsLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 10, perAccount: 3, lockFor: 300)
            var locks: [Date?] = []
            for address in ["192.0.2.1", "192.0.2.2", "192.0.2.3"] {
                #expect(try await store.reserveLoginAttempt(userId: user.id, address: address, now: t0, limits: limits) == .reserved)
                locks.append(try await store.settleLoginFailure(userId: user.id, address: address, now: t0, limits: limits))
            }
            #expect(locks == [nil, nil, at(300)])
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "198.51.100.7", now: at(1), limits: limits)
                    == .refused(lockedUntil: at(300)), "a fresh address is refused too")
        }
    }

    @Test(arguments: StoreKind.available)
    func aLoginLockEndsAfterLockFor(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 1, perAccount: 10, lockFor: 300)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginFailure(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == at(300))
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(299), limits: limits)
                    == .refused(lockedUntil: at(300)))
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(301), limits: limits) == .reserved)
        }
    }

    @Test(arguments: StoreKind.available)
    func settleLoginSuccessClearsTheCounts(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 2, perAccount: 10)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginFailure(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == nil)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginSuccess(userId: user.id, address: "192.0.2.1", now: t0))
            // Both earlier attempts are forgotten: the full allowance is back.
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(1), limits: limits) == .reserved)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(1), limits: limits) == .reserved)
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(1), limits: limits)
                    == .refused(lockedUntil: nil))
        }
    }

    @Test(arguments: StoreKind.available)
    func settleLoginSuccessIsRefusedWhenConcurrentFailuresLockedTheAccount(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 2, perAccount: 10, lockFor: 300)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.settleLoginFailure(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == at(300))
            #expect(
                try await store.settleLoginSuccess(userId: user.id, address: "192.0.2.1", now: t0) == false,
                "the right password came too late: the address was locked meanwhile")
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: at(1), limits: limits)
                    == .refused(lockedUntil: at(300)), "and the lock stays")
        }
    }

    @Test(arguments: StoreKind.available)
    func releaseLoginAttemptGivesTheAttemptBack(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 2, perAccount: 2)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved)
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits)
                    == .refused(lockedUntil: nil))
            try await store.releaseLoginAttempt(userId: user.id, address: "192.0.2.1")
            #expect(
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits) == .reserved,
                "an attempt never judged does not count")
        }
    }

    // MARK: Email changes

    @Test(arguments: StoreKind.available)
    func emailChangeIsStoredAndReplacedByANewOne(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            #expect(try await store.emailChange(userId: user.id) == nil)
            let first = Make.emailChange(userId: user.id, email: "first@example.com", code: Make.bytes())
            try await store.replaceEmailChange(first)
            #expect(try await store.emailChange(userId: user.id) == first)
            let second = Make.emailChange(userId: user.id, email: "second@example.com", code: Make.bytes())
            try await store.replaceEmailChange(second)
            #expect(try await store.emailChange(userId: user.id) == second)
            #expect(
                try await store.redeemEmailChange(userId: user.id, codeDigest: first.codeDigest, maxAttempts: 5, now: at(1)) == .wrongCode,
                "a new code voids the old one")
        }
    }

    @Test(arguments: StoreKind.available)
    func redeemEmailChangeCountsWrongCodesAndIsSingleUse(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let change = Make.emailChange(userId: user.id, code: Make.bytes())
            try await store.replaceEmailChange(change)
            #expect(try await store.redeemEmailChange(userId: user.id, codeDigest: Make.bytes(), maxAttempts: 5, now: at(1)) == .wrongCode)
            #expect(try await store.emailChange(userId: user.id)?.attempts == 1, "the wrong code was counted")
            let result = try await store.redeemEmailChange(userId: user.id, codeDigest: change.codeDigest, maxAttempts: 5, now: at(2))
            guard case .redeemed(let redeemed) = result else {
                Issue.record("the right code: \(result)")
                return
            }
            #expect(redeemed.email == change.email && redeemed.userId == user.id && redeemed.attempts == 1)
            #expect(try await store.emailChange(userId: user.id) == nil, "a redeemed change is removed")
            #expect(try await store.redeemEmailChange(userId: user.id, codeDigest: change.codeDigest, maxAttempts: 5, now: at(3)) == .missing)
        }
    }

    @Test(arguments: StoreKind.available)
    func redeemEmailChangeRemovesTheChangeAtMaxAttempts(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let change = Make.emailChange(userId: user.id, code: Make.bytes())
            try await store.replaceEmailChange(change)
            #expect(try await store.redeemEmailChange(userId: user.id, codeDigest: Make.bytes(), maxAttempts: 2, now: at(1)) == .wrongCode)
            #expect(try await store.redeemEmailChange(userId: user.id, codeDigest: Make.bytes(), maxAttempts: 2, now: at(2)) == .exhausted)
            #expect(try await store.emailChange(userId: user.id) == nil)
            #expect(
                try await store.redeemEmailChange(userId: user.id, codeDigest: change.codeDigest, maxAttempts: 2, now: at(3)) == .missing,
                "the right code comes too late")
        }
    }

    @Test(arguments: StoreKind.available)
    func redeemEmailChangeOfAnExpiredChangeIsMissing(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let change = Make.emailChange(userId: user.id, code: Make.bytes(), expiresAt: at(60))
            try await store.replaceEmailChange(change)
            #expect(try await store.redeemEmailChange(userId: user.id, codeDigest: change.codeDigest, maxAttempts: 5, now: at(61)) == .missing)
            #expect(try await store.redeemEmailChange(userId: "nobody", codeDigest: change.codeDigest, maxAttempts: 5, now: at(1)) == .missing)
        }
    }

    // MARK: Second factors

    @Test(arguments: StoreKind.available)
    func factorsAreUpsertedAndDeleted(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let other = try await Make.insertUser(store)
            #expect(try await store.factors(userId: user.id).isEmpty)
            let totp = UserFactorRecord(userId: user.id, kind: .totp, secret: "JBSWY3DPEHPK3PXP", createdAt: t0)
            let email = UserFactorRecord(userId: user.id, kind: .emailOTP, secret: "", createdAt: t0)
            try await store.upsertFactor(totp)
            try await store.upsertFactor(email)
            try await store.upsertFactor(UserFactorRecord(userId: other.id, kind: .totp, secret: "OTHERSECRET", createdAt: t0))
            func sorted(_ factors: [UserFactorRecord]) -> [UserFactorRecord] { factors.sorted { $0.kind.rawValue < $1.kind.rawValue } }
            #expect(sorted(try await store.factors(userId: user.id)) == [email, totp])

            let replaced = UserFactorRecord(userId: user.id, kind: .totp, secret: "NEWSECRETNEWSECR", createdAt: at(10))
            try await store.upsertFactor(replaced)
            #expect(sorted(try await store.factors(userId: user.id)) == [email, replaced], "an upsert replaces the factor of that kind")

            try await store.deleteFactor(userId: user.id, kind: .emailOTP)
            #expect(try await store.factors(userId: user.id) == [replaced])
            #expect(try await store.factors(userId: other.id).map(\.secret) == ["OTHERSECRET"], "another user's factors are untouched")
        }
    }

    @Test(arguments: StoreKind.available)
    func acceptTOTPStepOnlyMovesForward(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            try await store.upsertFactor(UserFactorRecord(userId: user.id, kind: .totp, secret: "JBSWY3DPEHPK3PXP", createdAt: t0))
            #expect(try await store.acceptTOTPStep(userId: user.id, step: 100))
            #expect(try await store.acceptTOTPStep(userId: user.id, step: 100) == false, "the same step again is a replay")
            #expect(try await store.acceptTOTPStep(userId: user.id, step: 99) == false, "an earlier step is a replay")
            #expect(try await store.acceptTOTPStep(userId: user.id, step: 101))
        }
    }

    // MARK: Account event budgets

    @Test(arguments: StoreKind.available)
    func admitAccountEventAdmitsUpToTheLimitWithinTheWindow(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let key = "wrong-code:user-1"
            let first = try await store.admitAccountEvent(key: key, now: t0, window: 60, limit: 3)
            #expect(first.admitted && first.events == AccountEventCount(count: 1, oldest: t0))
            let second = try await store.admitAccountEvent(key: key, now: at(10), window: 60, limit: 3)
            #expect(second.admitted && second.events == AccountEventCount(count: 2, oldest: t0))
            let third = try await store.admitAccountEvent(key: key, now: at(20), window: 60, limit: 3)
            #expect(third.admitted && third.events == AccountEventCount(count: 3, oldest: t0))
            let refused = try await store.admitAccountEvent(key: key, now: at(30), window: 60, limit: 3)
            #expect(!refused.admitted && refused.events == AccountEventCount(count: 3, oldest: t0))
            let later = try await store.admitAccountEvent(key: key, now: at(65), window: 60, limit: 3)
            #expect(later.admitted, "t0 left the window (and the refused event was never recorded)")
            #expect(later.events == AccountEventCount(count: 3, oldest: at(10)))
            #expect(
                try await store.admitAccountEvent(key: "wrong-code:user-2", now: at(30), window: 60, limit: 3).admitted,
                "keys have their own budgets")
        }
    }

    @Test(arguments: StoreKind.available)
    func accountEventsCountsTheWindowAndClearForgetsOneKey(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            _ = try await store.admitAccountEvent(key: "k", now: t0, window: 60, limit: 10)
            _ = try await store.admitAccountEvent(key: "k", now: at(10), window: 60, limit: 10)
            _ = try await store.admitAccountEvent(key: "j", now: at(10), window: 60, limit: 10)
            #expect(try await store.accountEvents(key: "k", now: at(20), window: 60) == AccountEventCount(count: 2, oldest: t0))
            #expect(try await store.accountEvents(key: "k", now: at(65), window: 60) == AccountEventCount(count: 1, oldest: at(10)))
            #expect(try await store.accountEvents(key: "unknown", now: at(20), window: 60) == AccountEventCount(count: 0, oldest: nil))
            try await store.clearAccountEvents(key: "k")
            #expect(try await store.accountEvents(key: "k", now: at(20), window: 60) == AccountEventCount(count: 0, oldest: nil))
            #expect(
                try await store.accountEvents(key: "j", now: at(20), window: 60) == AccountEventCount(count: 1, oldest: at(10)),
                "other keys are kept")
        }
    }

    // MARK: Address events

    @Test(arguments: StoreKind.available)
    func reserveAddressEventAdmitsUpToTheLimitThenSaysHowLongToWait(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            func reserve(_ seconds: TimeInterval, address: String = "192.0.2.1", limit: Int = 2) async throws -> Int? {
                try await store.reserveAddressEvent(bucket: "starts", address: address, now: at(seconds), window: 60, limit: limit)
            }
            do { let waited = try await reserve(0); #expect(waited == nil) }
            do { let waited = try await reserve(10); #expect(waited == nil) }
            do { let waited = try await reserve(20); #expect(waited == 40, "the oldest event (t0) leaves the window at t0 + 60") }
            do { let waited = try await reserve(30); #expect(waited == 30, "the refused reservation was not counted") }
            do { let waited = try await reserve(65); #expect(waited == nil, "t0 left the window, and the refusals never counted") }
            do { let waited = try await reserve(66); #expect(waited == 4, "now at(10) is the oldest event") }
            // Never less than one second, also when the oldest event leaves within a fraction of one.
            do { let waited = try await reserve(0, address: "192.0.2.2", limit: 1); #expect(waited == nil) }
            do { let waited = try await reserve(59.5, address: "192.0.2.2", limit: 1); #expect(waited == 1) }
        }
    }

    @Test(arguments: StoreKind.available)
    func releaseAddressEventTakesBackOneEventRecordedAtThatTime(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            func reserve(_ seconds: TimeInterval) async throws -> Int? {
                try await store.reserveAddressEvent(bucket: "passwords", address: "192.0.2.1", now: at(seconds), window: 60, limit: 2)
            }
            do { let waited = try await reserve(0); #expect(waited == nil) }
            do { let waited = try await reserve(0); #expect(waited == nil) }
            do { let waited = try await reserve(1); #expect(waited == 59) }
            try await store.releaseAddressEvent(bucket: "passwords", address: "192.0.2.1", at: t0)
            #expect(try await reserve(2) == nil, "one event of t0 was taken back")
            #expect(try await reserve(3) == 57, "only one: the other event of t0 still counts")
            try await store.releaseAddressEvent(bucket: "passwords", address: "192.0.2.1", at: at(30))
            #expect(try await reserve(4) == 56, "nothing was recorded at(30): nothing to take back")
            try await store.releaseAddressEvent(bucket: "other", address: "192.0.2.1", at: at(2))
            #expect(try await reserve(5) == 55, "another bucket's release takes nothing from this one")
        }
    }

    @Test(arguments: StoreKind.available)
    func addressEventBucketsAndAddressesAreIndependent(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            do {
                let waited = try await store.reserveAddressEvent(bucket: "starts", address: "192.0.2.1", now: t0, window: 60, limit: 1);
                #expect(waited == nil)
            }
            do {
                let waited = try await store.reserveAddressEvent(bucket: "starts", address: "192.0.2.1", now: at(1), window: 60, limit: 1);
                #expect(waited == 59)
            }
            do {
                let waited = try await store.reserveAddressEvent(bucket: "registrations", address: "192.0.2.1", now: at(1), window: 60, limit: 1);
                #expect(waited == nil)
            }
            do {
                let waited = try await store.reserveAddressEvent(bucket: "starts", address: "192.0.2.2", now: at(1), window: 60, limit: 1);
                #expect(waited == nil)
            }
        }
    }

    // MARK: Flow executions

    @Test(arguments: StoreKind.available)
    func flowExecutionIsReadUntilItExpires(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let flow = Make.flowExecution(expiresAt: at(600))
            try await store.insertFlowExecution(flow)
            #expect(try await store.flowExecution(id: flow.id, now: at(10)) == flow)
            #expect(try await store.flowExecution(id: flow.id, now: at(601)) == nil)
            #expect(try await store.flowExecution(id: "unknown", now: at(10)) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func swapFlowChallengeNeedsTheCurrentDigest(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let flow = Make.flowExecution()
            try await store.insertFlowExecution(flow)
            let next = Make.bytes(), later = Make.bytes()
            #expect(try await store.swapFlowChallenge(id: flow.id, presented: flow.challengeHash, next: next))
            #expect(
                try await store.swapFlowChallenge(id: flow.id, presented: flow.challengeHash, next: later) == false,
                "the old challenge is spent")
            #expect(try await store.flowExecution(id: flow.id, now: at(1))?.challengeHash == next)
            #expect(try await store.swapFlowChallenge(id: flow.id, presented: next, next: later))
            #expect(try await store.swapFlowChallenge(id: "unknown", presented: later, next: next) == false)
        }
    }

    @Test(arguments: StoreKind.available)
    func updateAndDeleteFlowExecution(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let flow = Make.flowExecution(expiresAt: at(600))
            try await store.insertFlowExecution(flow)
            let state = Data(#"{"node":"password"}"#.utf8)
            try await store.updateFlowExecution(id: flow.id, state: state, expiresAt: at(1200))
            let updated = try #require(try await store.flowExecution(id: flow.id, now: at(900)), "the expiry moved to at(1200)")
            #expect(updated.state == state && updated.expiresAt == at(1200))
            #expect(updated.challengeHash == flow.challengeHash && updated.createdAt == flow.createdAt)
            try await store.deleteFlowExecution(id: flow.id)
            #expect(try await store.flowExecution(id: flow.id, now: at(10)) == nil)
        }
    }

    // MARK: Outbox and the mail queue (the delivery queue, kind mail)

    @Test(arguments: StoreKind.available)
    func outboxMessagesAreTheRecipientsNewestFirstUpToTheLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let first = Make.outboxMessage(createdAt: t0), second = Make.outboxMessage(createdAt: at(1))
            let third = Make.outboxMessage(createdAt: at(2)), elsewhere = Make.outboxMessage(recipient: "bob@example.com", createdAt: at(3))
            for message in [first, second, third, elsewhere] { try await store.insertOutboxMessage(message) }
            #expect(try await store.outboxMessages(recipient: "ada@example.com", limit: 2) == [third, second])
            #expect(try await store.outboxMessages(recipient: "ada@example.com", limit: 10) == [third, second, first])
            #expect(try await store.outboxMessages(recipient: "nobody@example.com", limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func outboxRecipientMatchesCaseInsensitively(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let message = Make.outboxMessage(recipient: "Ada@Example.com")
            try await store.insertOutboxMessage(message)
            #expect(try await store.outboxMessages(recipient: "ada@example.com", limit: 10) == [message])
        }
    }

    @Test(arguments: StoreKind.available)
    func enqueueMailRefusesWhenTheQueueIsFull(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            #expect(try await store.enqueueDelivery(Make.mail(), limit: 2))
            #expect(try await store.enqueueDelivery(Make.mail(), limit: 2))
            #expect(try await store.enqueueDelivery(Make.mail(), limit: 2) == false)
            var hook = Make.mail()
            hook.kind = .auditWebhook
            #expect(try await store.enqueueDelivery(hook, limit: 2), "the limit is per kind and destination")
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(10), leaseUntil: at(70), limit: 10).count
                    == 2, "the refused mail was not queued")
        }
    }

    @Test(arguments: StoreKind.available)
    func claimDueMailTakesDueMailAndLeasesIt(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let first = Make.mail(nextAttemptAt: t0), second = Make.mail(nextAttemptAt: at(10)), later = Make.mail(nextAttemptAt: at(100))
            for mail in [first, second, later] { #expect(try await store.enqueueDelivery(mail, limit: 10)) }
            let claimed = try await store.claimDueDeliveries(
                kind: .mail, destination: MailDeliverer.relay, now: at(20), leaseUntil: at(80), limit: 10)
            #expect(Set(claimed.map(\.id)) == [first.id, second.id], "only mail due by now")
            let copy = try #require(claimed.first(where: { $0.id == first.id }))
            #expect(copy.body == first.body && copy.eventId == first.eventId && copy.kind == .mail && copy.destination == MailDeliverer.relay)
            #expect(copy.attempts == 0 && copy.createdAt == first.createdAt)
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(20), leaseUntil: at(80), limit: 10).isEmpty,
                "leased until at(80)")
            #expect(
                Set(
                    try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(81), leaseUntil: at(140), limit: 10)
                        .map(\.id)) == [first.id, second.id],
                "due again once the lease ended (a server that claimed it died)")
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(200), leaseUntil: at(300), limit: 2).count
                    == 2, "at most limit")
        }
    }

    @Test(arguments: StoreKind.available)
    func rescheduleMailAndDeleteMail(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let mail = Make.mail(nextAttemptAt: t0)
            #expect(try await store.enqueueDelivery(mail, limit: 10))
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: t0, leaseUntil: at(60), limit: 10).map(\.id)
                    == [mail.id])
            try await store.rescheduleDelivery(id: mail.id, attempts: 1, nextAttemptAt: at(30))
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(29), leaseUntil: at(90), limit: 10).isEmpty)
            let retried = try await store.claimDueDeliveries(
                kind: .mail, destination: MailDeliverer.relay, now: at(31), leaseUntil: at(90), limit: 10)
            #expect(retried.map(\.id) == [mail.id] && retried.first?.attempts == 1)
            try await store.deleteDelivery(id: mail.id)
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(10_000), leaseUntil: at(10_060), limit: 10)
                    .isEmpty)
        }
    }

    // MARK: Invitations and single-use token ids

    @Test(arguments: StoreKind.available)
    func invitationIsUsedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let invitation = Make.invitation()
            try await store.insertInvitation(invitation)
            #expect(try await store.invitation(codeHash: invitation.codeHash) == invitation)
            #expect(try await store.invitation(codeHash: Make.bytes()) == nil)
            #expect(try await store.useInvitation(codeHash: invitation.codeHash, now: at(5)))
            #expect(try await store.useInvitation(codeHash: invitation.codeHash, now: at(6)) == false)
            #expect(try await store.invitation(codeHash: invitation.codeHash)?.usedAt == at(5))
        }
    }

    @Test(arguments: StoreKind.available)
    func consumeTokenIdIsSingleUse(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            #expect(try await store.consumeTokenId("jti-1", expiresAt: at(600)))
            #expect(try await store.consumeTokenId("jti-1", expiresAt: at(600)) == false)
            #expect(try await store.consumeTokenId("jti-2", expiresAt: at(600)))
        }
    }

    @Test(
        "an id one instance consumed stays consumed for another whose clock runs minutes behind, whatever the one ahead prunes",
        arguments: StoreKind.available)
    func consumedIdsOutliveTheClocksOfInstances(_ kind: StoreKind) async throws {
        try await kind.withStores(2) { stores async throws in
            let (ahead, behind) = (stores[0], stores[1])
            let real = Date()
            // The proof was made now; `behind` (4 min slow) accepts it for its whole 5-minute life by its own clock.
            let proofExpiry = real.addingTimeInterval(-240 + 300)
            #expect(try await behind.consumeTokenId("dpop:k:j", expiresAt: proofExpiry))
            // `ahead` (4 min fast) prunes and records ids of its own: by its clock the proof expired long ago.
            _ = try await ahead.pruneExpired(now: real.addingTimeInterval(240 + 600), outboxBefore: real)
            #expect(try await ahead.consumeTokenId("dpop:k:other", expiresAt: real.addingTimeInterval(240 + 300)))
            #expect(try await behind.consumeTokenId("dpop:k:j", expiresAt: proofExpiry) == false, "the replay on the slow instance is refused")
            #expect(try await ahead.consumeTokenId("dpop:k:j", expiresAt: proofExpiry) == false)

            // What the database's clock says is past acceptance and the margin is pruned, by either instance.
            #expect(try await behind.consumeTokenId("dpop:k:old", expiresAt: real.addingTimeInterval(-SingleUseRetention.skewMargin - 60)))
            #expect(try await behind.pruneExpired(now: real.addingTimeInterval(-240), outboxBefore: .distantPast) == 1)
            #expect(try await ahead.consumeTokenId("dpop:k:old", expiresAt: real.addingTimeInterval(-SingleUseRetention.skewMargin - 60)))
        }
    }

    // MARK: Device authorization

    @Test(arguments: StoreKind.available)
    func pendingDeviceAuthorizationIsFoundUntilDecidedOrExpired(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization(expiresAt: at(600))
            try await store.insertDeviceAuthorization(device)
            #expect(try await store.pendingDeviceAuthorization(userCodeDigest: device.userCodeDigest, now: at(1)) == device)
            #expect(try await store.pendingDeviceAuthorization(userCodeDigest: device.userCodeDigest, now: at(601)) == nil, "expired")
            #expect(try await store.pendingDeviceAuthorization(userCodeDigest: Make.bytes(), now: at(1)) == nil)
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: device.userCodeDigest, approve: true, userId: "user-1",
                    sessionId: "sid-1", authTime: t0, amr: ["pwd"], now: at(2)))
            #expect(try await store.pendingDeviceAuthorization(userCodeDigest: device.userCodeDigest, now: at(3)) == nil, "decided")
        }
    }

    @Test(arguments: StoreKind.available)
    func decideDeviceAuthorizationOnlyWhilePending(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization()
            try await store.insertDeviceAuthorization(device)
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: device.userCodeDigest, approve: false, userId: "user-1",
                    sessionId: "sid-1", authTime: t0, amr: ["pwd"], now: at(1)))
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: device.userCodeDigest, approve: true, userId: "user-2",
                    sessionId: "sid-2", authTime: t0, amr: ["pwd"], now: at(2)) == false,
                "a denial is final")
            let expired = Make.deviceAuthorization(expiresAt: at(60))
            try await store.insertDeviceAuthorization(expired)
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: expired.userCodeDigest, approve: true, userId: "user-1",
                    sessionId: "sid-1", authTime: t0, amr: ["pwd"], now: at(61)) == false)
        }
    }

    @Test(arguments: StoreKind.available)
    func pollEnforcesTheIntervalAndRaisesItOnSlowDown(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization(interval: 5)
            try await store.insertDeviceAuthorization(device)
            func poll(_ seconds: TimeInterval) async throws -> DevicePoll {
                try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: device.clientId, now: at(seconds))
            }
            #expect(try await poll(0) == .pending)
            #expect(try await poll(2) == .slowDown(interval: 10), "2 s after the last poll, with an interval of 5: 5 more seconds")
            #expect(try await poll(5) == .slowDown(interval: 15), "3 s after the last (slowed) poll, with an interval of 10")
            #expect(try await poll(21) == .pending, "16 s after the last poll keeps the interval of 15")
        }
    }

    @Test(arguments: StoreKind.available)
    func pollHandsOutAnApprovalOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization()
            try await store.insertDeviceAuthorization(device)
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: device.userCodeDigest, approve: true, userId: "user-1",
                    sessionId: "sid-1", authTime: at(1), amr: ["pwd", "otp"], now: at(1)))
            let poll = try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: device.clientId, now: at(2))
            guard case .approved(let approved) = poll else {
                Issue.record("an approved authorization: \(poll)")
                return
            }
            #expect(approved.deviceCodeHash == device.deviceCodeHash && approved.clientId == device.clientId && approved.scope == device.scope)
            #expect(approved.userId == "user-1" && approved.sessionId == "sid-1")
            #expect(approved.authTime == at(1) && approved.amr == ["pwd", "otp"])
            #expect(
                try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: device.clientId, now: at(100))
                    == .notFound, "an approval is handed out once")
        }
    }

    @Test(arguments: StoreKind.available)
    func pollReportsDeniedExpiredAndUnknown(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let denied = Make.deviceAuthorization(), expired = Make.deviceAuthorization(expiresAt: at(60))
            try await store.insertDeviceAuthorization(denied)
            try await store.insertDeviceAuthorization(expired)
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: denied.userCodeDigest, approve: false, userId: "user-1",
                    sessionId: "sid-1", authTime: t0, amr: ["pwd"], now: at(1)))
            #expect(
                try await store.pollDeviceAuthorization(deviceCodeHash: denied.deviceCodeHash, clientId: denied.clientId, now: at(2))
                    == .denied)
            #expect(
                try await store.pollDeviceAuthorization(deviceCodeHash: expired.deviceCodeHash, clientId: expired.clientId, now: at(61))
                    == .expired)
            #expect(try await store.pollDeviceAuthorization(deviceCodeHash: Make.bytes(), clientId: "tv", now: at(2)) == .notFound)
        }
    }

    @Test(arguments: StoreKind.available)
    func pollByAnotherClientIsNotFoundAndLeavesTheAuthorizationUntouched(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization(clientId: "tv", interval: 5)
            try await store.insertDeviceAuthorization(device)
            #expect(try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: "other", now: t0) == .notFound)
            #expect(
                try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: "tv", now: at(1)) == .pending,
                "the foreign poll did not count as a poll (no slow_down)")
        }
    }

    // MARK: Pushed authorization requests

    @Test(arguments: StoreKind.available)
    func pushedRequestIsTakenOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let request = Make.pushedRequest(expiresAt: at(60))
            try await store.insertPushedRequest(request)
            #expect(
                try await store.takePushedRequest(uriHash: request.uriHash, clientId: request.clientId + "-other", now: at(1)) == nil,
                "another client's take finds nothing, and leaves the request in place")
            #expect(try await store.takePushedRequest(uriHash: request.uriHash, clientId: request.clientId, now: at(1)) == request)
            #expect(
                try await store.takePushedRequest(uriHash: request.uriHash, clientId: request.clientId, now: at(2)) == nil,
                "a request_uri is used once")
            #expect(try await store.takePushedRequest(uriHash: Make.bytes(), clientId: request.clientId, now: at(2)) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func expiredPushedRequestIsNotHandedOut(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let request = Make.pushedRequest(expiresAt: at(60))
            try await store.insertPushedRequest(request)
            #expect(try await store.takePushedRequest(uriHash: request.uriHash, clientId: request.clientId, now: at(61)) == nil)
            #expect(try await store.takePushedRequest(uriHash: request.uriHash, clientId: request.clientId, now: at(62)) == nil)
        }
    }

    // MARK: Passkeys

    @Test(arguments: StoreKind.available)
    func passkeysReadBackWithTheirFullSignCount(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let other = try await Make.insertUser(store)
            let first = Make.passkey(userId: user.id, signCount: 4_000_000_000)
            let second = Make.passkey(userId: user.id, createdAt: at(1))
            try await store.insertPasskey(first)
            try await store.insertPasskey(second)
            #expect(try await store.passkey(id: first.id) == first, "a counter above Int32.max survives")
            #expect(try await store.passkey(id: "unknown") == nil)
            #expect(Set(try await store.passkeys(userId: user.id).map(\.id)) == [first.id, second.id])
            #expect(try await store.passkeys(userId: user.id).first(where: { $0.id == second.id }) == second)
            #expect(try await store.passkeys(userId: other.id).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func insertPasskeyWithATakenCredentialIdIsAConflict(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let owner = try await Make.insertUser(store)
            let intruder = try await Make.insertUser(store)
            let passkey = Make.passkey(userId: owner.id)
            try await store.insertPasskey(passkey)
            await Make.expectConflict("one credential can never belong to two accounts") {
                try await store.insertPasskey(Make.passkey(userId: intruder.id, id: passkey.id))
            }
            #expect(try await store.passkey(id: passkey.id) == passkey)
        }
    }

    @Test(arguments: StoreKind.available)
    func insertUserWithPasskeyCreatesBothOrNeither(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = Make.user(username: "ada")
            let passkey = Make.passkey(userId: user.id)
            try await store.insertUser(user, withPasskey: passkey)
            #expect(try await store.user(id: user.id) == user)
            #expect(try await store.passkey(id: passkey.id) == passkey)

            let sameName = Make.user(username: "ada")
            let freshKey = Make.passkey(userId: sameName.id)
            await Make.expectConflict("the username exists") { try await store.insertUser(sameName, withPasskey: freshKey) }
            #expect(try await store.passkey(id: freshKey.id) == nil, "no passkey without its account")
            #expect(try await store.user(id: sameName.id) == nil)

            let newUser = Make.user(username: "bob")
            await Make.expectConflict("the credential exists") {
                try await store.insertUser(newUser, withPasskey: Make.passkey(userId: newUser.id, id: passkey.id))
            }
            #expect(try await store.user(id: newUser.id) == nil, "no account without its passkey")
            #expect(try await store.user(username: "bob") == nil)
            #expect(try await store.passkey(id: passkey.id)?.userId == user.id)
        }
    }

    @Test(arguments: StoreKind.available)
    func recordPasskeyUseIsACompareAndSwapOnTheCounter(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let passkey = Make.passkey(userId: user.id, signCount: 10)
            try await store.insertPasskey(passkey)
            #expect(try await store.recordPasskeyUse(id: passkey.id, previousSignCount: 10, signCount: 11, backedUp: true, now: at(5)))
            let used = try #require(try await store.passkey(id: passkey.id))
            #expect(used.signCount == 11 && used.backedUp && used.lastUsedAt == at(5))
            #expect(
                try await store.recordPasskeyUse(id: passkey.id, previousSignCount: 10, signCount: 12, backedUp: false, now: at(6)) == false,
                "another sign-in won with counter 10")
            #expect(try await store.passkey(id: passkey.id) == used)
        }
    }

    @Test(arguments: StoreKind.available)
    func renameAndDeletePasskeyOnlyForItsOwner(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let owner = try await Make.insertUser(store)
            let stranger = try await Make.insertUser(store)
            let passkey = Make.passkey(userId: owner.id)
            try await store.insertPasskey(passkey)
            #expect(try await store.renamePasskey(id: passkey.id, userId: stranger.id, friendlyName: "Mine now") == false)
            #expect(try await store.renamePasskey(id: passkey.id, userId: owner.id, friendlyName: "Work laptop"))
            #expect(try await store.passkey(id: passkey.id)?.friendlyName == "Work laptop")
            #expect(try await store.deletePasskey(id: passkey.id, userId: stranger.id) == false)
            #expect(try await store.passkey(id: passkey.id) != nil)
            #expect(try await store.deletePasskey(id: passkey.id, userId: owner.id))
            #expect(try await store.passkey(id: passkey.id) == nil)
            #expect(try await store.deletePasskey(id: passkey.id, userId: owner.id) == false)
        }
    }

    @Test(arguments: StoreKind.available)
    func passkeyChallengeIsTakenOnceExpiredOrNot(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let challenge = Make.passkeyChallenge(expiresAt: at(300))
            try await store.insertPasskeyChallenge(challenge)
            #expect(try await store.takePasskeyChallenge(hash: challenge.challengeHash, now: at(1)) == challenge)
            #expect(try await store.takePasskeyChallenge(hash: challenge.challengeHash, now: at(2)) == nil)

            let expired = Make.passkeyChallenge(userId: nil, expiresAt: at(10))
            try await store.insertPasskeyChallenge(expired)
            #expect(
                try await store.takePasskeyChallenge(hash: expired.challengeHash, now: at(20)) == expired,
                "an expired ceremony is still consumed (and returned, for the caller to refuse)")
            #expect(try await store.takePasskeyChallenge(hash: expired.challengeHash, now: at(21)) == nil)
        }
    }

    // MARK: Step-up challenges

    @Test(arguments: StoreKind.available)
    func stepUpChallengeReadsBack(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let challenge = Make.stepUpChallenge()
            #expect(try await store.insertStepUpChallenge(challenge, now: t0) == 0)
            #expect(try await store.stepUpChallenge(id: challenge.id) == challenge)
            #expect(try await store.stepUpChallenge(id: "unknown") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func reserveStepUpAttemptStopsAtMaxAttemptsAndTheChallengeStays(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let challenge = Make.stepUpChallenge()
            try await store.insertStepUpChallenge(challenge, now: t0)
            #expect(try await store.reserveStepUpAttempt(id: challenge.id, maxAttempts: 3) == 1)
            #expect(try await store.reserveStepUpAttempt(id: challenge.id, maxAttempts: 3) == 2)
            #expect(try await store.reserveStepUpAttempt(id: challenge.id, maxAttempts: 3) == 3)
            #expect(try await store.reserveStepUpAttempt(id: challenge.id, maxAttempts: 3) == nil)
            #expect(try await store.stepUpChallenge(id: challenge.id)?.attempts == 3, "an exhausted challenge stays until it expires")
            #expect(try await store.reserveStepUpAttempt(id: "unknown", maxAttempts: 3) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aNewStepUpStartReplacesTheChallengeAndKeepsItsAttempts(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let first = Make.stepUpChallenge()
            try await store.insertStepUpChallenge(first, now: t0)
            _ = try await store.reserveStepUpAttempt(id: first.id, maxAttempts: 3)
            _ = try await store.reserveStepUpAttempt(id: first.id, maxAttempts: 3)
            let second = Make.stepUpChallenge(stepUpHash: first.stepUpHash)
            #expect(try await store.insertStepUpChallenge(second, now: at(10)) == 2, "the wrong-code count carries over")
            #expect(try await store.stepUpChallenge(id: first.id) == nil, "one active challenge per step-up token")
            let stored = try #require(try await store.stepUpChallenge(id: second.id))
            #expect(stored.codeDigest == second.codeDigest && stored.attempts == 2)
            #expect(try await store.reserveStepUpAttempt(id: second.id, maxAttempts: 3) == 3)
            #expect(try await store.reserveStepUpAttempt(id: second.id, maxAttempts: 3) == nil, "a new start gives no fresh attempts")
        }
    }

    @Test(arguments: StoreKind.available)
    func takeStepUpChallengeOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let challenge = Make.stepUpChallenge()
            try await store.insertStepUpChallenge(challenge, now: t0)
            #expect(try await store.takeStepUpChallenge(id: challenge.id))
            #expect(try await store.takeStepUpChallenge(id: challenge.id) == false)
            #expect(try await store.stepUpChallenge(id: challenge.id) == nil)
        }
    }

    // MARK: Federated identities

    @Test(arguments: StoreKind.available)
    func federatedIdentityLinksAnAccount(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let link = FederatedIdentityRecord(provider: "apple", subject: "000123.abc", userId: user.id, createdAt: t0)
            try await store.linkFederatedIdentity(link)
            #expect(try await store.federatedIdentity(provider: "apple", subject: "000123.abc") == link)
            #expect(try await store.federatedIdentity(provider: "apple", subject: "000999.xyz") == nil)
            #expect(try await store.federatedIdentity(provider: "google", subject: "000123.abc") == nil, "subjects are per provider")
        }
    }

    @Test(arguments: StoreKind.available)
    func aLinkKeepsTheProvidersNewestRefreshTokenAndLosesItWithTheAccount(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            try await store.linkFederatedIdentity(FederatedIdentityRecord(provider: "apple", subject: "000123.abc", userId: user.id, createdAt: t0))
            try await store.keepFederatedRefreshToken(provider: "apple", subject: "000123.abc", sealed: "lk-sealed-v1:first")
            try await store.keepFederatedRefreshToken(provider: "apple", subject: "000123.abc", sealed: "lk-sealed-v1:second")
            try await store.keepFederatedRefreshToken(provider: "apple", subject: "000999.xyz", sealed: "lk-sealed-v1:nobody")
            #expect(try await store.federatedIdentity(provider: "apple", subject: "000123.abc")?.sealedRefreshToken == "lk-sealed-v1:second")
            #expect(try await store.federatedIdentities(userId: user.id).map(\.sealedRefreshToken) == ["lk-sealed-v1:second"])
            #expect(try await store.federatedIdentity(provider: "apple", subject: "000999.xyz") == nil, "no link is made by keeping a token")
            #expect(try await store.deleteUser(id: user.id, now: t0))
            #expect(try await store.federatedIdentity(provider: "apple", subject: "000123.abc") == nil, "the token goes with the link")
        }
    }

    // MARK: Clients

    @Test(arguments: StoreKind.available)
    func upsertClientKeepsOnlyTheSecretHash(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            var configuration = ClientConfiguration(
                clientId: "shop", name: "Shop", clientSecret: "a-secret-of-sixteen-characters",
                redirectUris: ["https://shop.example/callback"])
            configuration.requireDPoP = true
            let secretHash = Make.bytes()
            try await store.upsertClient(ClientRecord(configuration: configuration, secretHash: secretHash))
            let stored = try #require(try await store.client(id: "shop"))
            var expected = configuration
            expected.clientSecret = nil
            #expect(stored.configuration == expected, "the plain secret is never stored")
            #expect(stored.secretHash == secretHash)

            var renamed = configuration
            renamed.name = "Shop 2"
            try await store.upsertClient(ClientRecord(configuration: renamed, secretHash: nil))
            let updated = try #require(try await store.client(id: "shop"))
            #expect(updated.configuration.name == "Shop 2" && updated.secretHash == nil && updated.configuration.clientSecret == nil)
            // Back to a configuration read before (the SQLite store remembers decodings by their text): still exact.
            try await store.upsertClient(ClientRecord(configuration: configuration, secretHash: secretHash))
            #expect(try await store.client(id: "shop")?.configuration == expected)
            #expect(try await store.client(id: "shop")?.configuration.name == "Shop", "a repeated read answers the same")
            #expect(try await store.client(id: "unknown") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func registeredClientsAreInsertedUpdatedListedAndDeletedWithTheirTokens(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let configuration = ClientConfiguration(clientId: "app", name: "App", redirectUris: ["https://app.example/callback"])
            let record = ClientRecord(
                configuration: configuration, secretHash: Make.bytes(), origin: .registration, registrationTokenHash: Make.bytes(),
                previousSecretHash: Make.bytes(), previousSecretExpiresAt: at(600), issuedAt: at(1), registeredBy: "client:automation")
            try await store.insertClient(record)
            #expect(try await store.client(id: "app") == record, "every column reads back")
            #expect(try await store.client(id: "app")?.registeredBy == "client:automation", "who registered it (review 3, R3-6)")
            await Make.expectConflict("the id is taken") { try await store.insertClient(record) }
            #expect(record.previousSecretHash(at: at(599)) == record.previousSecretHash)
            #expect(record.previousSecretHash(at: at(600)) == nil, "the grace period ends")

            var renamed = record
            renamed.configuration.name = "App 2"
            renamed.previousSecretHash = nil
            renamed.previousSecretExpiresAt = nil
            #expect(try await store.updateClient(renamed))
            #expect(try await store.client(id: "app") == renamed)
            var missing = renamed
            missing.configuration.clientId = "nobody"
            #expect(try await store.updateClient(missing) == false, "an update never creates")
            #expect(try await store.client(id: "nobody") == nil)
            try await store.upsertClient(ClientRecord(configuration: ClientConfiguration(clientId: "another"), secretHash: nil))
            #expect(try await store.clients().map(\.configuration.clientId) == ["another", "app"])
            #expect(try await store.clients().last?.origin == .registration)

            // What the application holds ends with it; another application's tokens are untouched.
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id)
            try await store.insertFamily(family)
            let access = Make.accessToken(familyId: family.id, subject: user.id)
            try await store.insertAccessToken(access)
            let code = Make.code(userId: user.id)
            try await store.insertAuthorizationCode(code)
            let otherFamily = Make.family(userId: user.id, clientId: "another")
            try await store.insertFamily(otherFamily)
            #expect(try await store.deleteClient(id: "app", now: at(30)))
            #expect(try await store.client(id: "app") == nil)
            #expect(try await store.family(id: family.id)?.revokedAt == at(30))
            #expect(try await store.family(id: family.id)?.revokedReason == "client_deleted")
            #expect(try await store.accessToken(jti: access.jti)?.revokedAt == at(30))
            #expect(try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: "f-late", now: at(31)) == .notFound)
            #expect(try await store.family(id: otherFamily.id)?.revokedAt == nil)
            #expect(try await store.deleteClient(id: "app", now: at(40)) == false)
        }
    }

    // MARK: Pending logins

    @Test(arguments: StoreKind.available)
    func loginRequestIsReadUntilItExpiresOrIsDeleted(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let request = Make.loginRequest(expiresAt: at(600))
            try await store.insertLoginRequest(request)
            #expect(try await store.loginRequest(id: request.id, now: at(1)) == request)
            #expect(try await store.loginRequest(id: request.id, now: at(601)) == nil)
            try await store.deleteLoginRequest(id: request.id)
            #expect(try await store.loginRequest(id: request.id, now: at(1)) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func loginSecondFactorIsNeverReplaced(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let pending = Make.loginSecondFactor(userId: user.id)
            #expect(try await store.insertLoginSecondFactor(pending, now: t0))
            #expect(try await store.loginSecondFactor(requestId: pending.requestId) == pending)
            let again = Make.loginSecondFactor(userId: user.id, requestId: pending.requestId)
            #expect(try await store.insertLoginSecondFactor(again, now: at(1)) == false, "sending the password again resets nothing")
            #expect(try await store.loginSecondFactor(requestId: pending.requestId) == pending)
            #expect(try await store.loginSecondFactor(requestId: "unknown") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func failLoginSecondFactorDeletesItWhenAttemptsRunOut(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let pending = Make.loginSecondFactor(userId: user.id)
            #expect(try await store.insertLoginSecondFactor(pending, now: t0))
            #expect(try await store.failLoginSecondFactor(requestId: pending.requestId, maxAttempts: 3))
            #expect(try await store.loginSecondFactor(requestId: pending.requestId)?.attempts == 1)
            #expect(try await store.failLoginSecondFactor(requestId: pending.requestId, maxAttempts: 3))
            #expect(try await store.failLoginSecondFactor(requestId: pending.requestId, maxAttempts: 3) == false, "the third wrong code is the last")
            #expect(try await store.loginSecondFactor(requestId: pending.requestId) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func resendLoginSecondFactorReplacesTheCodeUpToMaxSends(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let pending = Make.loginSecondFactor(userId: user.id, kind: "email", sends: 1)
            #expect(try await store.insertLoginSecondFactor(pending, now: t0))
            #expect(try await store.failLoginSecondFactor(requestId: pending.requestId, maxAttempts: 5))
            let code = Make.bytes()
            #expect(try await store.resendLoginSecondFactor(requestId: pending.requestId, codeDigest: code, expiresAt: at(900), maxSends: 2))
            let resent = try #require(try await store.loginSecondFactor(requestId: pending.requestId))
            #expect(resent.codeDigest == code && resent.expiresAt == at(900) && resent.sends == 2)
            #expect(resent.attempts == 1, "attempts are not reset")
            #expect(
                try await store.resendLoginSecondFactor(
                    requestId: pending.requestId, codeDigest: Make.bytes(), expiresAt: at(1000),
                    maxSends: 2) == false)
            #expect(try await store.loginSecondFactor(requestId: pending.requestId)?.codeDigest == code)
        }
    }

    @Test(arguments: StoreKind.available)
    func takeLoginSecondFactorOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let pending = Make.loginSecondFactor(userId: user.id)
            #expect(try await store.insertLoginSecondFactor(pending, now: t0))
            #expect(try await store.takeLoginSecondFactor(requestId: pending.requestId))
            #expect(try await store.takeLoginSecondFactor(requestId: pending.requestId) == false)
            #expect(try await store.loginSecondFactor(requestId: pending.requestId) == nil)
        }
    }

    // MARK: Authorization codes

    @Test(arguments: StoreKind.available)
    func redeemMarksTheCodeUsedAndCreatesItsFamily(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let code = Make.code(userId: user.id, sessionId: "sid-1")
            try await store.insertAuthorizationCode(code)
            var expected = code
            expected.usedAt = at(5)
            expected.familyId = "family-1"
            #expect(try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: "family-1", now: at(5)) == .redeemed(expected))
            let family = try #require(try await store.family(id: "family-1"), "the family is created in the same transaction")
            #expect(family.clientId == code.clientId && family.userId == user.id && family.sessionId == "sid-1")
            #expect(family.createdAt == at(5) && family.revokedAt == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aReplayedCodeRevokesTheFamilyOfTheFirstRedemption(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let code = Make.code(userId: user.id)
            try await store.insertAuthorizationCode(code)
            let first = try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: "family-1", now: at(5))
            guard case .redeemed = first else {
                Issue.record("the first redemption: \(first)")
                return
            }
            #expect(try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: "family-2", now: at(6)) == .replayed(familyId: "family-1"))
            #expect(try await store.family(id: "family-1")?.revokedAt != nil)
            #expect(try await store.family(id: "family-2") == nil, "a replay creates no family")
            #expect(try await store.redeemAuthorizationCode(hash: Make.bytes(), familyId: "family-3", now: at(6)) == .notFound)
        }
    }

    // MARK: Token families, refresh and access tokens

    @Test(arguments: StoreKind.available)
    func revokeFamilyKeepsTheFirstRevocation(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id, sessionId: "sid-1")
            try await store.insertFamily(family)
            #expect(try await store.family(id: family.id) == family)
            #expect(try await store.family(id: "unknown") == nil)
            try await store.revokeFamily(id: family.id, reason: "signed out", now: at(5))
            let revoked = try #require(try await store.family(id: family.id))
            #expect(revoked.revokedAt == at(5) && revoked.revokedReason == "signed out")
            try await store.revokeFamily(id: family.id, reason: "later", now: at(6))
            #expect(try await store.family(id: family.id) == revoked, "when and why it was revoked first is kept")
        }
    }

    @Test(arguments: StoreKind.available)
    func refreshTokenReadsBack(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id)
            try await store.insertFamily(family)
            let token = Make.refreshToken(family, sessionId: "sid-1")
            try await store.insertRefreshToken(token)
            #expect(try await store.refreshToken(hash: token.tokenHash) == token, "scope, amr and the DPoP binding survive")
            #expect(try await store.refreshToken(hash: Make.bytes()) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func rotateReplacesTheTokenWithinItsFamily(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id)
            try await store.insertFamily(family)
            let token = Make.refreshToken(family)
            try await store.insertRefreshToken(token)
            let next = Make.refreshToken(family, createdAt: at(10), expiresAt: at(7200))
            #expect(try await store.rotateRefreshToken(presented: token.tokenHash, next: next, now: at(10)) == .rotated(previous: token))
            #expect(try await store.refreshToken(hash: token.tokenHash)?.usedAt == at(10))
            #expect(try await store.refreshToken(hash: next.tokenHash) == next)
        }
    }

    @Test(arguments: StoreKind.available)
    func presentingARotatedTokenRevokesTheWholeFamily(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id)
            try await store.insertFamily(family)
            let token = Make.refreshToken(family)
            try await store.insertRefreshToken(token)
            let next = Make.refreshToken(family, createdAt: at(10))
            #expect(try await store.rotateRefreshToken(presented: token.tokenHash, next: next, now: at(10)) == .rotated(previous: token))
            let stolen = Make.refreshToken(family, createdAt: at(20))
            #expect(try await store.rotateRefreshToken(presented: token.tokenHash, next: stolen, now: at(20)) == .replayed(familyId: family.id))
            #expect(try await store.family(id: family.id)?.revokedAt != nil)
            #expect(try await store.refreshToken(hash: stolen.tokenHash) == nil, "a replay issues nothing")
            #expect(
                try await store.rotateRefreshToken(presented: next.tokenHash, next: Make.refreshToken(family), now: at(21)) == .revoked,
                "the legitimate newest token dies with its family")
        }
    }

    @Test(arguments: StoreKind.available)
    func rotateReportsExpiredRevokedAndUnknownTokens(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id), revokedFamily = Make.family(userId: user.id)
            try await store.insertFamily(family)
            try await store.insertFamily(revokedFamily)
            let expiring = Make.refreshToken(family, expiresAt: at(60))
            let ofRevoked = Make.refreshToken(revokedFamily)
            try await store.insertRefreshToken(expiring)
            try await store.insertRefreshToken(ofRevoked)
            try await store.revokeFamily(id: revokedFamily.id, reason: "signed out", now: at(1))
            #expect(try await store.rotateRefreshToken(presented: expiring.tokenHash, next: Make.refreshToken(family), now: at(61)) == .expired)
            #expect(
                try await store.rotateRefreshToken(presented: ofRevoked.tokenHash, next: Make.refreshToken(revokedFamily), now: at(2))
                    == .revoked)
            #expect(try await store.rotateRefreshToken(presented: Make.bytes(), next: Make.refreshToken(family), now: at(2)) == .notFound)
        }
    }

    @Test(arguments: StoreKind.available)
    func accessTokenRevocationKeepsTheFirstTime(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id)
            try await store.insertFamily(family)
            let token = Make.accessToken(familyId: family.id, subject: user.id)
            let loose = Make.accessToken(familyId: nil, subject: user.id)
            try await store.insertAccessToken(token)
            try await store.insertAccessToken(loose)
            #expect(try await store.accessToken(jti: token.jti) == token)
            #expect(try await store.accessToken(jti: loose.jti) == loose)
            #expect(try await store.accessToken(jti: "unknown") == nil)
            try await store.revokeAccessToken(jti: token.jti, now: at(5))
            #expect(try await store.accessToken(jti: token.jti)?.revokedAt == at(5))
            try await store.revokeAccessToken(jti: token.jti, now: at(6))
            #expect(try await store.accessToken(jti: token.jti)?.revokedAt == at(5))
            #expect(try await store.accessToken(jti: loose.jti) == loose, "other tokens are untouched")
        }
    }

    // MARK: Sessions

    @Test(arguments: StoreKind.available)
    func sessionReadsBackByIdAndBySecret(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let session = Make.session(userId: user.id)
            try await store.insertSession(session)
            #expect(try await store.session(id: session.id) == session)
            #expect(try await store.session(secretHash: session.secretHash) == session)
            #expect(try await store.session(id: "unknown") == nil)
            #expect(try await store.session(secretHash: Make.bytes()) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func endSessionRevokesEveryFamilyOfTheSession(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let session = Make.session(userId: user.id), other = Make.session(userId: user.id)
            try await store.insertSession(session)
            try await store.insertSession(other)
            let created = Make.family(userId: user.id, sessionId: session.id)  // created for the session
            let named = Make.family(userId: user.id)  // only its refresh token names the session
            let elsewhere = Make.family(userId: user.id, sessionId: other.id)
            for family in [created, named, elsewhere] { try await store.insertFamily(family) }
            try await store.insertRefreshToken(Make.refreshToken(named, sessionId: session.id))

            try await store.endSession(id: session.id, now: at(5))
            #expect(try await store.session(id: session.id)?.endedAt == at(5))
            #expect(try await store.family(id: created.id)?.revokedAt == at(5))
            #expect(try await store.family(id: named.id)?.revokedAt == at(5))
            #expect(try await store.family(id: elsewhere.id) == elsewhere)
            #expect(try await store.session(id: other.id) == other)
        }
    }

    @Test(arguments: StoreKind.available)
    func revokeUserSessionsSparesTheKeptSessionAndFamilyAndOtherUsers(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let stranger = try await Make.insertUser(store)
            let first = Make.session(userId: user.id), second = Make.session(userId: user.id), kept = Make.session(userId: user.id)
            let foreign = Make.session(userId: stranger.id)
            for session in [first, second, kept, foreign] { try await store.insertSession(session) }
            let ofFirst = Make.family(userId: user.id, sessionId: first.id)
            let sessionless = Make.family(userId: user.id)
            let keptFamily = Make.family(userId: user.id)
            let ofKept = Make.family(userId: user.id, sessionId: kept.id)
            let foreignFamily = Make.family(userId: stranger.id, sessionId: foreign.id)
            for family in [ofFirst, sessionless, keptFamily, ofKept, foreignFamily] { try await store.insertFamily(family) }

            try await store.revokeUserSessions(
                userId: user.id, keepingSession: kept.id, keepingFamily: keptFamily.id,
                reason: "signed out everywhere", now: at(5))
            #expect(try await store.session(id: first.id)?.endedAt == at(5))
            #expect(try await store.session(id: second.id)?.endedAt == at(5))
            #expect(try await store.session(id: kept.id) == kept, "the kept session goes on")
            #expect(try await store.session(id: foreign.id) == foreign)
            let revoked = try #require(try await store.family(id: ofFirst.id))
            #expect(revoked.revokedAt == at(5) && revoked.revokedReason == "signed out everywhere")
            #expect(try await store.family(id: sessionless.id)?.revokedAt == at(5))
            #expect(try await store.family(id: keptFamily.id) == keptFamily)
            #expect(try await store.family(id: ofKept.id) == ofKept, "the kept session keeps its grants")
            #expect(try await store.family(id: foreignFamily.id) == foreignFamily)
        }
    }

    @Test(arguments: StoreKind.available)
    func userSessionsListsTheOpenSessionsAndLiveGrantsOfOneUser(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let stranger = try await Make.insertUser(store)
            var older = Make.session(userId: user.id)
            older.createdAt = at(-60)
            let newest = Make.session(userId: user.id)
            let ended = Make.session(userId: user.id)
            let expired = Make.session(userId: user.id, expiresAt: at(10))  // nothing holds it: gone from the list
            let expiredHeld = Make.session(userId: user.id, expiresAt: at(10))  // an offline grant still holds it
            let foreign = Make.session(userId: stranger.id)
            for session in [older, newest, ended, expired, expiredHeld, foreign] { try await store.insertSession(session) }

            // A grant of `newest` refreshed once: the used token says when, the unused one how long it lives.
            let refreshed = Make.family(userId: user.id, sessionId: newest.id)
            // A grant only its refresh token ties to `older` (a family from before families remembered their session).
            let named = Make.family(userId: user.id)
            let held = Make.family(userId: user.id, sessionId: expiredHeld.id)
            let accessOnly = Make.family(userId: user.id)  // no refresh token; its access token still lives
            let unbound = Make.family(userId: user.id)
            let run = Make.family(userId: user.id)  // every token expired
            let revoked = Make.family(userId: user.id, sessionId: newest.id)
            let ofEnded = Make.family(userId: user.id, sessionId: ended.id)
            let foreignFamily = Make.family(userId: stranger.id, sessionId: foreign.id)
            for family in [refreshed, named, held, accessOnly, unbound, run, revoked, ofEnded, foreignFamily] {
                try await store.insertFamily(family)
            }
            let first = Make.refreshToken(refreshed, createdAt: t0, expiresAt: at(3600))
            try await store.insertRefreshToken(first)
            let rotation = try await store.rotateRefreshToken(
                presented: first.tokenHash, next: Make.refreshToken(refreshed, createdAt: at(5), expiresAt: at(3605)), now: at(5))
            #expect(rotation == .rotated(previous: first))
            try await store.insertRefreshToken(Make.refreshToken(named, sessionId: older.id))
            try await store.insertRefreshToken(Make.refreshToken(held, expiresAt: at(7200)))
            try await store.insertAccessToken(Make.accessToken(familyId: accessOnly.id, subject: user.id, expiresAt: at(300)))
            try await store.insertRefreshToken(Make.refreshToken(unbound))
            try await store.insertRefreshToken(Make.refreshToken(run, expiresAt: at(15)))
            try await store.insertAccessToken(Make.accessToken(familyId: run.id, subject: user.id, expiresAt: at(15)))
            for family in [revoked, ofEnded, foreignFamily] { try await store.insertRefreshToken(Make.refreshToken(family)) }
            try await store.revokeFamily(id: revoked.id, reason: "signed out", now: at(1))
            try await store.endSession(id: ended.id, now: at(1))

            let listing = try await store.userSessions(userId: user.id, now: at(20))
            // Newest first (sessions created at the same time by id, from the last).
            #expect(listing.sessions.map(\.id) == [newest.id, expiredHeld.id].sorted(by: >) + [older.id])
            #expect(listing.sessions.first { $0.id == newest.id } == newest, "the session as stored")
            let grants = Dictionary(uniqueKeysWithValues: listing.grants.map { ($0.family.id, $0) })
            #expect(Set(grants.keys) == [refreshed.id, named.id, held.id, accessOnly.id, unbound.id])
            #expect(grants[refreshed.id] == LiveGrant(family: refreshed, sessionId: newest.id, lastRefreshedAt: at(5), expiresAt: at(3605)))
            #expect(grants[named.id]?.sessionId == older.id, "the session its refresh token names")
            #expect(grants[named.id]?.lastRefreshedAt == nil)
            #expect(grants[held.id]?.expiresAt == at(7200))
            #expect(grants[accessOnly.id] == LiveGrant(family: accessOnly, sessionId: nil, lastRefreshedAt: nil, expiresAt: at(300)))
            #expect(grants[unbound.id]?.sessionId == nil)
            #expect(try await store.userSessions(userId: "nobody", now: at(20)) == UserSessionListing(sessions: [], grants: []))
        }
    }

    @Test(arguments: StoreKind.available)
    func revokeUserSessionsKeepingNothingEndsEverything(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let session = Make.session(userId: user.id)
            try await store.insertSession(session)
            let ofSession = Make.family(userId: user.id, sessionId: session.id), sessionless = Make.family(userId: user.id)
            try await store.insertFamily(ofSession)
            try await store.insertFamily(sessionless)
            try await store.revokeUserSessions(userId: user.id, keepingSession: nil, keepingFamily: nil, reason: "disabled", now: at(5))
            #expect(try await store.session(id: session.id)?.endedAt == at(5))
            #expect(try await store.family(id: ofSession.id)?.revokedAt == at(5))
            #expect(try await store.family(id: sessionless.id)?.revokedAt == at(5))
        }
    }

    // MARK: Signing keys

    @Test(arguments: StoreKind.available)
    func signingKeysAreStoredAndRetiredByAge(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            #expect(try await store.signingKeys().isEmpty)
            let old = Make.signingKey(kid: "kid-a", createdAt: t0), young = Make.signingKey(kid: "kid-b", createdAt: at(100))
            try await store.insertSigningKey(old)
            try await store.insertSigningKey(young)
            func keys() async throws -> [SigningKeyRecord] { try await store.signingKeys().sorted { $0.kid < $1.kid } }
            #expect(try await keys() == [old, young])

            try await store.retireSigningKeys(before: at(50), now: at(200))
            var retired = try await keys()
            #expect(retired.map(\.retiredAt) == [at(200), nil], "only keys created before the cut-off")
            #expect(retired.map(\.pem) == [old.pem, young.pem])

            try await store.retireSigningKeys(before: at(1000), now: at(300))
            retired = try await keys()
            #expect(retired.map(\.retiredAt) == [at(200), at(300)], "a retired key keeps its first retirement")
        }
    }

    // MARK: Logout announcements

    @Test(arguments: StoreKind.available)
    func endedSessionsAreClaimedUnderALeaseUntilAnnounced(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let live = Make.session(userId: user.id), first = Make.session(userId: user.id), second = Make.session(userId: user.id)
            for session in [live, first, second] { try await store.insertSession(session) }
            try await store.endSession(id: first.id, now: at(-20))
            try await store.endSession(id: second.id, now: at(-10))
            let family = Make.family(userId: user.id, sessionId: first.id)
            try await store.insertFamily(family)
            #expect(try await store.sessionClientIds(sessionId: first.id) == [family.clientId])
            #expect(try await store.sessionClientIds(sessionId: second.id).isEmpty)

            let claimed = try await store.claimEndedSessions(now: t0, leaseUntil: at(60), limit: 1)
            #expect(claimed.map(\.id) == [first.id], "the oldest end first, the live session never")
            #expect(try await store.claimEndedSessions(now: t0, leaseUntil: at(60), limit: 10).map(\.id) == [second.id], "leased rows skipped")
            #expect(try await store.claimEndedSessions(now: at(30), leaseUntil: at(90), limit: 10).isEmpty)
            try await store.markSessionEndAnnounced(id: first.id)
            #expect(
                try await store.claimEndedSessions(now: at(61), leaseUntil: at(120), limit: 10).map(\.id) == [second.id],
                "an announced end is never claimed again; an unannounced one is, after its lease")
        }
    }

    // MARK: Maintenance

    @Test(arguments: StoreKind.available)
    func pruneExpiredDeletesExactlyTheRowsThatCanNoLongerBeUsed(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let other = try await Make.insertUser(store)
            // Each live row is stored before its expired twin: some inserts drop rows already expired at their own time.
            let liveRequest = Make.loginRequest(), oldRequest = Make.loginRequest(createdAt: at(-600), expiresAt: at(-10))
            try await store.insertLoginRequest(liveRequest)
            try await store.insertLoginRequest(oldRequest)
            let liveFlow = Make.flowExecution(), oldFlow = Make.flowExecution(createdAt: at(-600), expiresAt: at(-10))
            try await store.insertFlowExecution(liveFlow)
            try await store.insertFlowExecution(oldFlow)
            // Codes: expired a minute ago (kept a day, so a late replay still revokes), live, and expired two days ago.
            let recentCode = Make.code(userId: user.id, expiresAt: at(-60)), liveCode = Make.code(userId: user.id)
            let oldCode = Make.code(userId: user.id, expiresAt: at(-2 * 86_400))
            for code in [recentCode, liveCode, oldCode] { try await store.insertAuthorizationCode(code) }
            let family = Make.family(userId: user.id), revokedFamily = Make.family(userId: user.id)
            try await store.insertFamily(family)
            try await store.insertFamily(revokedFamily)
            let liveRefresh = Make.refreshToken(family), oldRefresh = Make.refreshToken(family, createdAt: at(-7200), expiresAt: at(-10))
            let revokedRefresh = Make.refreshToken(revokedFamily)
            for token in [liveRefresh, oldRefresh, revokedRefresh] { try await store.insertRefreshToken(token) }
            try await store.revokeFamily(id: revokedFamily.id, reason: "signed out", now: at(-5))
            let liveAccess = Make.accessToken(familyId: family.id, subject: user.id)
            let oldAccess = Make.accessToken(familyId: family.id, subject: user.id, expiresAt: at(-10))
            try await store.insertAccessToken(liveAccess)
            try await store.insertAccessToken(oldAccess)
            let liveSession = Make.session(userId: user.id), oldSession = Make.session(userId: user.id, expiresAt: at(-10))
            let endedSession = Make.session(userId: user.id), unannounced = Make.session(userId: user.id, expiresAt: at(-10))
            for session in [liveSession, oldSession, endedSession, unannounced] { try await store.insertSession(session) }
            try await store.endSession(id: endedSession.id, now: at(-5))
            try await store.endSession(id: unannounced.id, now: at(-5))
            // An ended session stays until its end is announced (back-channel logout), even past its expiry.
            try await store.markSessionEndAnnounced(id: endedSession.id)
            // Consumed ids are pruned by the database's clock (real time) with a margin, whatever `now` says.
            #expect(try await store.consumeTokenId("live-jti", expiresAt: at(600)))
            #expect(try await store.consumeTokenId("old-jti", expiresAt: Date().addingTimeInterval(-SingleUseRetention.skewMargin - 60)))
            let livePushed = Make.pushedRequest(), oldPushed = Make.pushedRequest(expiresAt: at(-10))
            try await store.insertPushedRequest(livePushed)
            try await store.insertPushedRequest(oldPushed)
            let liveDevice = Make.deviceAuthorization(), oldDevice = Make.deviceAuthorization(expiresAt: at(-10))
            try await store.insertDeviceAuthorization(liveDevice)
            try await store.insertDeviceAuthorization(oldDevice)
            let liveCeremony = Make.passkeyChallenge(), oldCeremony = Make.passkeyChallenge(createdAt: at(-600), expiresAt: at(-10))
            try await store.insertPasskeyChallenge(liveCeremony)
            try await store.insertPasskeyChallenge(oldCeremony)
            let liveStepUp = Make.stepUpChallenge(), oldStepUp = Make.stepUpChallenge(expiresAt: at(-10))
            try await store.insertStepUpChallenge(liveStepUp, now: t0)
            try await store.insertStepUpChallenge(oldStepUp, now: at(-100))
            let liveSecond = Make.loginSecondFactor(userId: user.id), oldSecond = Make.loginSecondFactor(userId: user.id, expiresAt: at(-10))
            #expect(try await store.insertLoginSecondFactor(liveSecond, now: t0))
            #expect(try await store.insertLoginSecondFactor(oldSecond, now: at(-100)))
            try await store.replaceEmailChange(Make.emailChange(userId: user.id, code: Make.bytes()))
            try await store.replaceEmailChange(Make.emailChange(userId: other.id, code: Make.bytes(), expiresAt: at(-10)))
            let oldMessage = Make.outboxMessage(createdAt: at(-7200)), liveMessage = Make.outboxMessage(createdAt: t0)
            try await store.insertOutboxMessage(oldMessage)
            try await store.insertOutboxMessage(liveMessage)

            // One of each: login request, flow, code (two days old), access token, refresh token (expired), refresh token
            // (revoked family), session (expired), session (ended), token id, pushed request, device authorization,
            // passkey ceremony, step-up challenge, second factor, email change, outbox message.
            #expect(try await store.pruneExpired(now: t0, outboxBefore: at(-3600)) == 16)
            #expect(try await store.pruneExpired(now: t0, outboxBefore: at(-3600)) == 0, "nothing left to prune")

            // Gone: each is looked up at a time when it was still valid, so only its deletion explains nil.
            #expect(try await store.loginRequest(id: oldRequest.id, now: at(-100)) == nil)
            #expect(try await store.flowExecution(id: oldFlow.id, now: at(-100)) == nil)
            #expect(try await store.redeemAuthorizationCode(hash: oldCode.codeHash, familyId: "family-old", now: t0) == .notFound)
            #expect(try await store.accessToken(jti: oldAccess.jti) == nil)
            #expect(try await store.refreshToken(hash: oldRefresh.tokenHash) == nil)
            #expect(try await store.refreshToken(hash: revokedRefresh.tokenHash) == nil)
            #expect(try await store.session(id: oldSession.id) == nil)
            #expect(try await store.session(id: endedSession.id) == nil)
            #expect(try await store.session(id: unannounced.id)?.endedAt == at(-5), "kept until announced")
            #expect(try await store.takePushedRequest(uriHash: oldPushed.uriHash, clientId: oldPushed.clientId, now: at(-100)) == nil)
            #expect(try await store.pendingDeviceAuthorization(userCodeDigest: oldDevice.userCodeDigest, now: at(-100)) == nil)
            #expect(try await store.takePasskeyChallenge(hash: oldCeremony.challengeHash, now: t0) == nil)
            #expect(try await store.stepUpChallenge(id: oldStepUp.id) == nil)
            #expect(try await store.loginSecondFactor(requestId: oldSecond.requestId) == nil)
            #expect(try await store.emailChange(userId: other.id) == nil)
            #expect(try await store.outboxMessages(recipient: "ada@example.com", limit: 10) == [liveMessage])
            // Kept.
            #expect(try await store.loginRequest(id: liveRequest.id, now: t0) == liveRequest)
            #expect(try await store.flowExecution(id: liveFlow.id, now: t0) == liveFlow)
            #expect(
                try await store.redeemAuthorizationCode(hash: recentCode.codeHash, familyId: "family-recent", now: t0) != .notFound,
                "a used or expired code is kept a day, so a late replay is still recognised")
            #expect(try await store.accessToken(jti: liveAccess.jti) == liveAccess)
            #expect(try await store.refreshToken(hash: liveRefresh.tokenHash) == liveRefresh)
            #expect(try await store.session(id: liveSession.id) == liveSession)
            #expect(try await store.consumeTokenId("live-jti", expiresAt: at(600)) == false)
            #expect(try await store.takePushedRequest(uriHash: livePushed.uriHash, clientId: livePushed.clientId, now: t0) == livePushed)
            #expect(try await store.pendingDeviceAuthorization(userCodeDigest: liveDevice.userCodeDigest, now: t0) == liveDevice)
            #expect(try await store.takePasskeyChallenge(hash: liveCeremony.challengeHash, now: t0) == liveCeremony)
            #expect(try await store.stepUpChallenge(id: liveStepUp.id) == liveStepUp)
            #expect(try await store.loginSecondFactor(requestId: liveSecond.requestId) == liveSecond)
            #expect(try await store.emailChange(userId: user.id) != nil)
            #expect(try await store.family(id: revokedFamily.id) != nil, "families themselves are kept")
        }
    }

    // MARK: Concurrency: exactly once

    @Test(arguments: StoreKind.available)
    func concurrentRotationsOfOneRefreshTokenRotateItOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let family = Make.family(userId: user.id)
            try await store.insertFamily(family)
            let token = Make.refreshToken(family)
            try await store.insertRefreshToken(token)
            let outcomes = try await Make.concurrently(24) { (_: Int) -> (Data, RefreshRotation) in
                let next = Make.refreshToken(family, createdAt: at(10))
                return (next.tokenHash, try await store.rotateRefreshToken(presented: token.tokenHash, next: next, now: at(10)))
            }
            let rotated = outcomes.filter { $0.1.isRotated }
            #expect(rotated.count == 1, "exactly one rotation: \(outcomes.map { $0.1 })")
            #expect(rotated.first?.1 == .rotated(previous: token))
            let others = outcomes.filter { !$0.1.isRotated }.map { $0.1 }
            #expect(
                others.allSatisfy { $0 == .replayed(familyId: family.id) || $0 == .revoked },
                "every other presentation is a replay (or meets the family it revoked): \(others)")
            #expect(others.contains(.replayed(familyId: family.id)))
            #expect(try await store.family(id: family.id)?.revokedAt != nil, "the family ends revoked")
            var issued = 0
            for (hash, _) in outcomes {
                if try await store.refreshToken(hash: hash) != nil { issued += 1 }
            }
            #expect(issued == 1, "only the winner's successor was stored")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentRedemptionsOfOneCodeRedeemItOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let code = Make.code(userId: user.id)
            try await store.insertAuthorizationCode(code)
            let outcomes = try await Make.concurrently(24) { (index: Int) -> (String, CodeRedemption) in
                let familyId = "family-\(index)"
                return (familyId, try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: familyId, now: at(5)))
            }
            let winners = outcomes.filter { if case .redeemed = $0.1 { return true } else { return false } }
            #expect(winners.count == 1, "exactly one redemption")
            let winner = try #require(winners.first?.0)
            #expect(
                outcomes.filter { $0.0 != winner }.allSatisfy { $0.1 == .replayed(familyId: winner) },
                "every other one is a replay of the winner's family")
            #expect(try await store.family(id: winner)?.revokedAt != nil, "the replays revoked what the code produced")
            for (familyId, _) in outcomes where familyId != winner {
                #expect(try await store.family(id: familyId) == nil, "a replay creates no family")
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentSwapsOfOneFlowChallengeSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let flow = Make.flowExecution()
            try await store.insertFlowExecution(flow)
            let outcomes = try await Make.concurrently(24) { (_: Int) -> (Data, Bool) in
                let next = Make.bytes()
                return (next, try await store.swapFlowChallenge(id: flow.id, presented: flow.challengeHash, next: next))
            }
            let winners = outcomes.filter { $0.1 }
            #expect(winners.count == 1)
            #expect(try await store.flowExecution(id: flow.id, now: at(1))?.challengeHash == winners.first?.0, "the winner's digest is current")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentConsumptionsOfOneTokenIdSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let results = try await Make.concurrently(24) { _ in try await store.consumeTokenId("jti-once", expiresAt: at(600)) }
            #expect(results.filter { $0 }.count == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentTakesOfOnePasskeyChallengeSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let challenge = Make.passkeyChallenge()
            try await store.insertPasskeyChallenge(challenge)
            let results = try await Make.concurrently(24) { _ in try await store.takePasskeyChallenge(hash: challenge.challengeHash, now: at(1)) }
            #expect(results.compactMap { $0 } == [challenge])
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentStepUpReservationsNeverExceedMaxAttempts(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let challenge = Make.stepUpChallenge()
            try await store.insertStepUpChallenge(challenge, now: t0)
            let results = try await Make.concurrently(20) { _ in try await store.reserveStepUpAttempt(id: challenge.id, maxAttempts: 3) }
            #expect(results.compactMap { $0 }.sorted() == [1, 2, 3], "exactly three reservations, each its own attempt number")
            #expect(try await store.stepUpChallenge(id: challenge.id)?.attempts == 3)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentUsesOfOnePasskeyCounterSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let passkey = Make.passkey(userId: user.id, signCount: 10)
            try await store.insertPasskey(passkey)
            let outcomes = try await Make.concurrently(24) { (index: Int) -> (UInt32, Bool) in
                let count = UInt32(11 + index)
                return (
                    count,
                    try await store.recordPasskeyUse(
                        id: passkey.id, previousSignCount: 10, signCount: count, backedUp: false,
                        now: at(5))
                )
            }
            let winners = outcomes.filter { $0.1 }
            #expect(winners.count == 1)
            #expect(try await store.passkey(id: passkey.id)?.signCount == winners.first?.0)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentUsesOfOneInvitationSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let invitation = Make.invitation()
            try await store.insertInvitation(invitation)
            let results = try await Make.concurrently(24) { _ in try await store.useInvitation(codeHash: invitation.codeHash, now: at(5)) }
            #expect(results.filter { $0 }.count == 1)
            #expect(try await store.invitation(codeHash: invitation.codeHash)?.usedAt == at(5))
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentLoginReservationsFromOneAddressNeverExceedItsLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 3, perAccount: 100)
            let results = try await Make.concurrently(24) { _ in
                try await store.reserveLoginAttempt(userId: user.id, address: "192.0.2.1", now: t0, limits: limits)
            }
            #expect(results.filter { $0 == .reserved }.count == 3, "concurrent guesses cannot all pass a check made before any was counted")
            #expect(results.filter { $0 != .reserved }.allSatisfy { $0 == .refused(lockedUntil: nil) })
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentLoginReservationsFromManyAddressesNeverExceedTheAccountLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let limits = Make.limits(perAddress: 100, perAccount: 4)
            let results = try await Make.concurrently(24) { index in
                try await store.reserveLoginAttempt(userId: user.id, address: "10.0.0.\(index)", now: t0, limits: limits)
            }
            #expect(results.filter { $0 == .reserved }.count == 4)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentAccountEventsAdmitExactlyTheLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let results = try await Make.concurrently(24) { _ in
                try await store.admitAccountEvent(key: "recovery:ada", now: t0, window: 60, limit: 5).admitted
            }
            #expect(results.filter { $0 }.count == 5)
            #expect(try await store.accountEvents(key: "recovery:ada", now: t0, window: 60).count == 5)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentAddressEventsAdmitExactlyTheLimit(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let results = try await Make.concurrently(24) { _ in
                try await store.reserveAddressEvent(bucket: "starts", address: "192.0.2.1", now: t0, window: 60, limit: 5)
            }
            #expect(results.filter { $0 == nil }.count == 5)
            #expect(results.compactMap { $0 }.allSatisfy { $0 == 60 }, "the others wait for t0 to leave the window")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentTakesOfOnePushedRequestSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let request = Make.pushedRequest()
            try await store.insertPushedRequest(request)
            let results = try await Make.concurrently(24) { _ in
                try await store.takePushedRequest(uriHash: request.uriHash, clientId: request.clientId, now: at(1))
            }
            #expect(results.compactMap { $0 } == [request])
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentPollsOfAnApprovedAuthorizationHandItOutOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization()
            try await store.insertDeviceAuthorization(device)
            #expect(
                try await store.decideDeviceAuthorization(
                    userCodeDigest: device.userCodeDigest, approve: true, userId: "user-1",
                    sessionId: "sid-1", authTime: t0, amr: ["pwd"], now: at(1)))
            let results = try await Make.concurrently(24) { _ in
                try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: device.clientId, now: at(5))
            }
            let approvals = results.filter { if case .approved = $0 { return true } else { return false } }
            #expect(approvals.count == 1, "\(results)")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentDecisionsOnOneDeviceAuthorizationSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let device = Make.deviceAuthorization()
            try await store.insertDeviceAuthorization(device)
            let outcomes = try await Make.concurrently(16) { (index: Int) -> (Bool, Bool) in
                let approve = index % 2 == 0
                return (
                    approve,
                    try await store.decideDeviceAuthorization(
                        userCodeDigest: device.userCodeDigest, approve: approve,
                        userId: "user-\(index)", sessionId: "sid-\(index)",
                        authTime: t0, amr: ["pwd"], now: at(1))
                )
            }
            let winners = outcomes.filter { $0.1 }
            #expect(winners.count == 1)
            let approved = try #require(winners.first).0
            let poll = try await store.pollDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, clientId: device.clientId, now: at(2))
            if approved {
                guard case .approved = poll else { Issue.record("the winning approval: \(poll)"); return }
            } else {
                #expect(poll == .denied, "the winning denial")
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentMailClaimersTakeEachMailOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            var queued: Set<String> = []
            for index in 0..<20 {
                let mail = Make.mail(nextAttemptAt: at(TimeInterval(index % 5)))
                #expect(try await store.enqueueDelivery(mail, limit: 100))
                queued.insert(mail.id)
            }
            let claims = try await Make.concurrently(8) { _ in
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(10), leaseUntil: at(70), limit: 5).map(\.id)
            }
            let claimed = claims.flatMap { $0 }
            #expect(claimed.count == 20, "every due mail claimed once: \(claims.map(\.count))")
            #expect(Set(claimed) == queued, "and none twice")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentEnqueuesNeverOverfillTheQueue(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let results = try await Make.concurrently(24) { _ in try await store.enqueueDelivery(Make.mail(), limit: 5) }
            #expect(results.filter { $0 }.count == 5)
            #expect(
                try await store.claimDueDeliveries(kind: .mail, destination: MailDeliverer.relay, now: at(10), leaseUntil: at(70), limit: 100).count
                    == 5)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentTakesOfOneSecondFactorSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let pending = Make.loginSecondFactor(userId: user.id)
            #expect(try await store.insertLoginSecondFactor(pending, now: t0))
            let results = try await Make.concurrently(24) { _ in try await store.takeLoginSecondFactor(requestId: pending.requestId) }
            #expect(results.filter { $0 }.count == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentInsertsOfOneSecondFactorStoreOne(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let requestId = Make.unique("request")
            let outcomes = try await Make.concurrently(16) { (_: Int) -> (LoginSecondFactorRecord, Bool) in
                let pending = Make.loginSecondFactor(userId: user.id, requestId: requestId)
                return (pending, try await store.insertLoginSecondFactor(pending, now: t0))
            }
            let winners = outcomes.filter { $0.1 }
            #expect(winners.count == 1)
            #expect(try await store.loginSecondFactor(requestId: requestId) == winners.first?.0)
        }
    }

    @Test(arguments: StoreKind.available)
    func recoveryCodesAreUsedOnceAndReplacedWhole(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let other = try await Make.insertUser(store)
            #expect(try await store.recoveryCodes(userId: user.id) == nil)
            let first = (0..<10).map { Data("first-\($0)".utf8) }
            try await store.replaceRecoveryCodes(userId: user.id, digests: first, createdAt: t0)
            #expect(try await store.recoveryCodes(userId: user.id) == RecoveryCodeSummary(createdAt: t0, remaining: 10, total: 10))
            // Sixteen requests with the same code: exactly one uses it.
            let outcomes = try await Make.concurrently(16) { (_: Int) -> Bool in
                try await store.useRecoveryCode(userId: user.id, digest: first[3], at: t0.addingTimeInterval(1))
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try await store.recoveryCodes(userId: user.id)?.remaining == 9)
            #expect(try await store.useRecoveryCode(userId: other.id, digest: first[4], at: t0) == false, "another account's code")
            // A new set replaces the old one whole: the old codes stop working.
            let later = t0.addingTimeInterval(60)
            try await store.replaceRecoveryCodes(userId: user.id, digests: [Data("second".utf8)], createdAt: later)
            #expect(try await store.useRecoveryCode(userId: user.id, digest: first[4], at: later) == false)
            #expect(try await store.recoveryCodes(userId: user.id) == RecoveryCodeSummary(createdAt: later, remaining: 1, total: 1))
            #expect(try await store.useRecoveryCode(userId: user.id, digest: Data("second".utf8), at: later))
            #expect(try await store.recoveryCodes(userId: user.id) == RecoveryCodeSummary(createdAt: later, remaining: 0, total: 1))
            // Concurrent replacements leave exactly one set, whichever came last.
            _ = try await Make.concurrently(8) { (index: Int) -> Bool in
                try await store.replaceRecoveryCodes(
                    userId: user.id, digests: (0..<10).map { Data("set-\(index)-\($0)".utf8) }, createdAt: later)
                return true
            }
            #expect(try await store.recoveryCodes(userId: user.id)?.total == 10)
            try await store.deleteRecoveryCodes(userId: user.id)
            #expect(try await store.recoveryCodes(userId: user.id) == nil)
            // They go with the account.
            try await store.replaceRecoveryCodes(userId: other.id, digests: first, createdAt: t0)
            #expect(try await store.deleteUser(id: other.id, now: t0))
            #expect(try await store.recoveryCodes(userId: other.id) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentInsertsOfOneUsernameCreateOneAccount(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let outcomes = try await Make.concurrently(16) { (index: Int) -> InsertOutcome in
                let user = Make.user(id: "user-\(index)", username: "ada")
                do {
                    try await store.insertUser(user)
                    return .inserted(user.id)
                } catch let error as StoreError {
                    if case .conflict = error { return .conflict }
                    return .failed("\(error)")
                } catch {
                    return .failed("\(type(of: error)): \(error)")
                }
            }
            let inserted = outcomes.compactMap { (outcome: InsertOutcome) -> String? in
                if case .inserted(let id) = outcome { return id }
                return nil
            }
            #expect(inserted.count == 1)
            #expect(outcomes.filter { $0 == .conflict }.count == 15, "the others are StoreError.conflict: \(outcomes)")
            #expect(try await store.user(username: "ada")?.id == inserted.first)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentProfileWritesAtOneVersionSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store, username: "ada")
            let outcomes = try await Make.concurrently(24) { (index: Int) -> ([String: String], Bool) in
                let claims = ["name": "writer \(index)"]
                return (
                    claims,
                    try await store.updateProfile(
                        userId: user.id, username: "ada", claims: claims, disabled: nil,
                        expectedVersion: user.version, updatedAt: at(1))
                )
            }
            let winners = outcomes.filter { $0.1 }
            #expect(winners.count == 1, "no lost update")
            let stored = try #require(try await store.user(id: user.id))
            #expect(stored.claims == winners.first?.0 && stored.version == user.version + 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentAcceptsOfOneTOTPStepSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            try await store.upsertFactor(UserFactorRecord(userId: user.id, kind: .totp, secret: "JBSWY3DPEHPK3PXP", createdAt: t0))
            let results = try await Make.concurrently(24) { _ in try await store.acceptTOTPStep(userId: user.id, step: 1000) }
            #expect(results.filter { $0 }.count == 1, "one code, one sign-in")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentRedemptionsOfOneEmailChangeSucceedOnce(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store)
            let change = Make.emailChange(userId: user.id, code: Make.bytes())
            try await store.replaceEmailChange(change)
            let results = try await Make.concurrently(16) { _ in
                try await store.redeemEmailChange(userId: user.id, codeDigest: change.codeDigest, maxAttempts: 5, now: at(1))
            }
            let redeemed = results.filter { if case .redeemed = $0 { return true } else { return false } }
            #expect(redeemed.count == 1)
            #expect(results.filter { $0 == .missing }.count == 15, "\(results)")
        }
    }

    // MARK: Audit events

    private static func auditEvent(
        _ id: String, _ seconds: TimeInterval, _ type: AuditEvent.Kind = .signInFailed, outcome: AuditEvent.Outcome = .failure,
        subject: String? = "u1", client: String? = "app"
    ) -> AuditEvent {
        AuditEvent(
            id: id, at: at(seconds), type: type, outcome: outcome, actor: subject ?? AuditEvent.anonymous, subject: subject, clientId: client,
            clientAddress: "192.0.2.1", requestId: "req-\(id)", details: ["method": "password", "reason": "invalid_credentials"])
    }

    @Test(arguments: StoreKind.available)
    func auditEventsReadBackWholeNewestFirst(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let older = Self.auditEvent("a", 1)
            var newer = Self.auditEvent("b", 2, .signInSucceeded, outcome: .success, subject: nil, client: nil)
            newer.details = [:]
            try await store.insertAuditEvent(older)
            try await store.insertAuditEvent(newer)
            #expect(try await store.auditEvents(AuditQuery(limit: 10)) == [newer, older], "every field as written, newest first")
            #expect(try await store.auditEvents(AuditQuery(limit: 1)) == [newer])
        }
    }

    @Test(arguments: StoreKind.available)
    func auditEventsFilterByTimeSubjectTypeOutcomeAndClient(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let events = [
                Self.auditEvent("e1", 10), Self.auditEvent("e2", 20, .signInSucceeded, outcome: .success),
                Self.auditEvent("e3", 30, .accountLocked, subject: "u2"), Self.auditEvent("e4", 40, .tokenRevoked, outcome: .success, client: "other")
            ]
            for event in events { try await store.insertAuditEvent(event) }
            func ids(_ query: AuditQuery) async throws -> [String] { try await store.auditEvents(query).map(\.id) }
            #expect(try await ids(AuditQuery(since: at(20), until: at(40))) == ["e3", "e2"], "since inclusive, until exclusive")
            #expect(try await ids(AuditQuery(subject: "u2")) == ["e3"])
            #expect(try await ids(AuditQuery(types: [.signInFailed, .accountLocked])) == ["e3", "e1"])
            #expect(try await ids(AuditQuery(outcome: .success)) == ["e4", "e2"])
            #expect(try await ids(AuditQuery(clientId: "other")) == ["e4"])
            #expect(try await ids(AuditQuery(subject: "u1", outcome: .failure, clientId: "app")) == ["e1"])
            #expect(try await ids(AuditQuery(subject: "nobody")) == [])
        }
    }

    @Test(arguments: StoreKind.available)
    func auditCursorPagesThroughEqualTimesWithoutGapsOrRepeats(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            // Three events of one instant: the id breaks the tie, so no page boundary loses or repeats one.
            for (id, seconds) in [("a", 5.0), ("b", 5.0), ("c", 5.0), ("d", 6.0), ("e", 1.0)] {
                try await store.insertAuditEvent(Self.auditEvent(id, seconds))
            }
            var seen: [String] = []
            var query = AuditQuery(limit: 2)
            while true {
                let page = try await store.auditEvents(query)
                seen += page.map(\.id)
                guard page.count == query.limit, let last = page.last else { break }
                query.after = AuditCursor(after: last)
                // An event added meanwhile (newer than every page) does not shift the pages.
                if seen.count == 2 { try await store.insertAuditEvent(Self.auditEvent("z", 100)) }
            }
            #expect(seen == ["d", "c", "b", "a", "e"])
            let token = try #require(AuditCursor(token: AuditCursor(at: at(5), id: "b").token))
            #expect(token == AuditCursor(at: at(5), id: "b"), "the cursor's text form round-trips exactly")
        }
    }

    @Test(arguments: StoreKind.available)
    func pruneAuditEventsDeletesOnlyOlderOnes(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            for (id, seconds) in [("old", 1.0), ("edge", 10.0), ("new", 20.0)] { try await store.insertAuditEvent(Self.auditEvent(id, seconds)) }
            #expect(try await store.pruneAuditEvents(before: at(10)) == 1)
            #expect(try await store.auditEvents(AuditQuery(limit: 10)).map(\.id) == ["new", "edge"])
        }
    }
}

/// What one concurrent `insertUser` did.
private enum InsertOutcome: Sendable, Equatable {
    case inserted(String)
    case conflict
    case failed(String)
}

private extension RefreshRotation {
    var isRotated: Bool {
        if case .rotated = self { return true }
        return false
    }
}
