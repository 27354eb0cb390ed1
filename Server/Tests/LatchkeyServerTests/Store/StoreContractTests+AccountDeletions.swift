import Foundation
@testable import LatchkeyServer
import Testing

private typealias Make = StoreFixture
private func at(_ seconds: TimeInterval) -> Date { StoreFixture.at(seconds) }

/// Scheduled account deletions (`AccountDeletionStore`), on every store: scheduling ends the sessions, only a due and
/// still scheduled deletion deletes, a restore that wins the race keeps the account, and instances deleting one
/// account at once delete it once.
extension StoreContractTests {
    @Test(arguments: StoreKind.available)
    func scheduledDeletionsDeleteOnlyWhenDueAndStillScheduled(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let ada = try await Make.insertUser(store)
            let bob = try await Make.insertUser(store)
            let session = Make.session(userId: ada.id)
            try await store.insertSession(session)
            let code = Make.code(userId: ada.id, sessionId: session.id)
            try await store.insertAuthorizationCode(code)

            let deletion = AccountDeletionRecord(userId: ada.id, requestedAt: at(10), dueAt: at(1000))
            try await store.scheduleAccountDeletion(deletion, now: at(10))
            #expect(try await store.accountDeletion(userId: ada.id) == deletion)
            #expect(try await store.session(id: session.id)?.endedAt == at(10), "scheduling ends the account's sessions")
            #expect(
                try await store.redeemAuthorizationCode(hash: code.codeHash, familyId: "f", now: at(11)) == .notFound,
                "a code issued before the request cannot become tokens after it")
            #expect(try await store.dueAccountDeletions(now: at(999), limit: 10).isEmpty)
            #expect(!(try await store.deleteScheduledUser(id: ada.id, now: at(999))), "not before it is due")
            #expect(!(try await store.deleteScheduledUser(id: bob.id, now: at(5000))), "never an account without a scheduled deletion")
            #expect(try await store.user(id: bob.id) != nil)

            // Listed as due, then restored before the deletion ran: the account stays.
            #expect(try await store.dueAccountDeletions(now: at(1000), limit: 10) == [deletion])
            #expect(try await store.cancelAccountDeletion(userId: ada.id))
            #expect(!(try await store.cancelAccountDeletion(userId: ada.id)), "once")
            #expect(!(try await store.deleteScheduledUser(id: ada.id, now: at(1000))))
            #expect(try await store.user(id: ada.id) != nil)

            // Scheduled again (a later request replaces an earlier one), then deleted once by racing callers.
            try await store.scheduleAccountDeletion(AccountDeletionRecord(userId: ada.id, requestedAt: at(20), dueAt: at(500)), now: at(20))
            try await store.scheduleAccountDeletion(AccountDeletionRecord(userId: ada.id, requestedAt: at(30), dueAt: at(600)), now: at(30))
            #expect(try await store.accountDeletion(userId: ada.id)?.dueAt == at(600))
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<6 { group.addTask { try await store.deleteScheduledUser(id: ada.id, now: at(600)) } }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1, "\(results)")
            #expect(try await store.user(id: ada.id) == nil)
            #expect(try await store.accountDeletion(userId: ada.id) == nil, "the schedule goes with the account")
            #expect(try await store.dueAccountDeletions(now: at(10_000), limit: 10).isEmpty)
        }
    }
}
