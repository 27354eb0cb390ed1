import Foundation
@testable import LatchkeyServer
import Testing

private typealias Make = StoreFixture
private func at(_ seconds: TimeInterval) -> Date { StoreFixture.at(seconds) }

/// Account queries and deletion (SCIM administration), on every store.
extension StoreContractTests {
    @Test(arguments: StoreKind.available)
    func usersMatchingAQueryComePagedInCreationOrder(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            var inserted: [UserRecord] = []
            // Created in this order, with ids that do not sort the same way.
            for (index, name) in ["zoe", "Ada", "grace", "linus", "ken"].enumerated() {
                var user = Make.user(id: "id-\(9 - index)", username: name, claims: ["email": "\(name)@Example.com"])
                user.createdAt = at(TimeInterval(index * 10))
                user.disabled = name == "linus"
                try await store.insertUser(user)
                inserted.append(user)
            }
            let all = try await store.users(matching: UserQuery(), offset: 0, limit: 100)
            #expect(all.total == 5 && all.users.map(\.username) == ["zoe", "Ada", "grace", "linus", "ken"])
            #expect(all.users.first == inserted.first, "the records read back whole")
            let second = try await store.users(matching: UserQuery(), offset: 2, limit: 2)
            #expect(second.total == 5 && second.users.map(\.username) == ["grace", "linus"])
            let last = try await store.users(matching: UserQuery(), offset: 4, limit: 2)
            #expect(last.total == 5 && last.users.map(\.username) == ["ken"])
            let beyond = try await store.users(matching: UserQuery(), offset: 9, limit: 2)
            #expect(beyond.total == 5 && beyond.users.isEmpty)
            let none = try await store.users(matching: UserQuery(), offset: 0, limit: 0)
            #expect(none.total == 5 && none.users.isEmpty, "a count of 0 still counts")

            // Two accounts created at the same moment keep one order: by id.
            var twinA = Make.user(id: "twin-b", username: "twin-b"), twinB = Make.user(id: "twin-a", username: "twin-a")
            twinA.createdAt = at(100); twinB.createdAt = at(100)
            try await store.insertUser(twinA)
            try await store.insertUser(twinB)
            #expect(try await store.users(matching: UserQuery(), offset: 5, limit: 5).users.map(\.id) == ["twin-a", "twin-b"])

            func names(_ conditions: [UserQuery.Condition]) async throws -> [String] {
                let page = try await store.users(matching: UserQuery(conditions), offset: 0, limit: 100)
                #expect(page.total == page.users.count)
                return page.users.map(\.username)
            }
            #expect(try await names([.username("ADA")]) == ["Ada"], "usernames compare case-insensitively")
            #expect(try await names([.email("GRACE@example.COM")]) == ["grace"], "emails too")
            #expect(try await names([.id("id-7")]) == ["grace"])
            #expect(try await names([.disabled(true)]) == ["linus"])
            #expect(try await names([.disabled(false), .email("linus@example.com")]).isEmpty, "every condition must hold")
            #expect(try await names([.username("nobody")]).isEmpty)
            // A NUL names nobody: SQLite finds nothing, PostgreSQL's text refuses it (as `user(username:)` does).
            do {
                #expect(try await names([.username("ada\u{0}x")]).isEmpty)
            } catch let error as StoreError {
                #expect(error == .invalidInput)
            }

            // The last change is `updatedAt`, else the creation.
            let grace = inserted[2]
            #expect(
                try await store.updateProfile(
                    userId: grace.id, username: grace.username, claims: grace.claims, disabled: nil,
                    expectedVersion: grace.version, updatedAt: at(500)))
            #expect(try await names([.modifiedFrom(at(30))]) == ["grace", "linus", "ken", "twin-a", "twin-b"])
            #expect(try await names([.modifiedFrom(at(31))]) == ["grace", "ken", "twin-a", "twin-b"])
            #expect(try await names([.modifiedFrom(at(101))]) == ["grace"])
            #expect(try await names([.modifiedBefore(at(20))]) == ["zoe", "Ada"])
            #expect(try await names([.modifiedFrom(at(10)), .modifiedBefore(at(40))]) == ["Ada", "linus"])
        }
    }

    @Test(arguments: StoreKind.available)
    func deletingAUserEndsEverythingItHeld(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let user = try await Make.insertUser(store, claims: ["email": "ada@example.com"])
            let stranger = try await Make.insertUser(store)
            let session = Make.session(userId: user.id), foreignSession = Make.session(userId: stranger.id)
            try await store.insertSession(session)
            try await store.insertSession(foreignSession)
            let family = Make.family(userId: user.id, sessionId: session.id), sessionless = Make.family(userId: user.id)
            let foreignFamily = Make.family(userId: stranger.id)
            for family in [family, sessionless, foreignFamily] { try await store.insertFamily(family) }
            let refresh = Make.refreshToken(sessionless)
            try await store.insertRefreshToken(refresh)
            let inFamily = Make.accessToken(familyId: family.id, subject: user.id)
            let loose = Make.accessToken(familyId: nil, subject: user.id)
            for token in [inFamily, loose] { try await store.insertAccessToken(token) }
            try await store.upsertFactor(UserFactorRecord(userId: user.id, kind: .totp, secret: "secret", createdAt: at(0)))
            try await store.insertPasskey(Make.passkey(userId: user.id))
            try await store.linkFederatedIdentity(FederatedIdentityRecord(provider: "corp", subject: "s-1", userId: user.id, createdAt: at(0)))
            let code = Make.code(userId: user.id, sessionId: session.id)
            try await store.insertAuthorizationCode(code)

            #expect(try await store.deleteUser(id: user.id, now: at(5)))
            #expect(try await store.user(id: user.id) == nil)
            #expect(try await store.session(id: session.id)?.endedAt == at(5))
            let revoked = try #require(try await store.family(id: family.id))
            #expect(revoked.revokedAt == at(5) && revoked.revokedReason == "account deleted")
            #expect(try await store.family(id: sessionless.id)?.revokedAt == at(5))
            #expect(try await store.rotateRefreshToken(presented: refresh.tokenHash, next: Make.refreshToken(sessionless), now: at(6)) == .revoked)
            #expect(try await store.accessToken(jti: loose.jti)?.revokedAt == at(5))
            #expect(try await store.factors(userId: user.id).isEmpty)
            #expect(try await store.passkeys(userId: user.id).isEmpty)
            #expect(try await store.federatedIdentities(userId: user.id).isEmpty)
            #expect(try await store.federatedIdentity(provider: "corp", subject: "s-1") == nil)
            #expect(try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: "new-family", now: at(6)) == .notFound)

            // The other account keeps everything; a second delete finds nothing; the name is free again.
            #expect(try await store.session(id: foreignSession.id) == foreignSession)
            #expect(try await store.family(id: foreignFamily.id) == foreignFamily)
            #expect(try await store.deleteUser(id: user.id, now: at(7)) == false)
            #expect(try await store.deleteUser(id: "nobody", now: at(7)) == false)
            try await store.insertUser(Make.user(username: user.username, claims: ["email": "ada@example.com"]))
        }
    }
}
