import Foundation
@testable import LatchkeyServer
import Testing

private typealias Make = StoreFixture
private let t0 = StoreFixture.t0
private func at(_ seconds: TimeInterval) -> Date { StoreFixture.at(seconds) }

/// The delivery queue (`DeliveryStore`), on every store, with audit webhooks' rows (the mail queue's are in
/// `StoreContractTests`).
extension StoreContractTests {
    private static func delivery(
        _ webhook: String = "siem", nextAttemptAt: Date = t0, createdAt: Date = t0, body: String = #"{"id":"e1"}"#
    ) -> QueuedDelivery {
        QueuedDelivery(
            id: Make.unique("delivery"), kind: .auditWebhook, destination: webhook, eventId: Make.unique("event"), eventType: "signin.failed",
            body: body, nextAttemptAt: nextAttemptAt, createdAt: createdAt)
    }

    @Test(arguments: StoreKind.available)
    func enqueueWebhookDeliveryRefusesWhenThatWebhooksQueueIsFull(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            #expect(try await store.enqueueDelivery(Self.delivery("siem"), limit: 2))
            #expect(try await store.enqueueDelivery(Self.delivery("siem"), limit: 2))
            #expect(try await store.enqueueDelivery(Self.delivery("siem"), limit: 2) == false)
            #expect(try await store.enqueueDelivery(Self.delivery("other"), limit: 2), "the limit is per webhook")
            #expect(try await store.deliveryQueueDepths(kind: .auditWebhook) == ["siem": 2, "other": 1])
            var notice = Self.delivery("siem")
            notice.kind = .backchannelLogout
            #expect(try await store.enqueueDelivery(notice, limit: 2), "and per kind: another kind's queue named alike is its own")
            #expect(try await store.deliveryQueueDepths(kind: .backchannelLogout) == ["siem": 1])
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: t0, leaseUntil: at(60), limit: 10).count == 2,
                "a claim takes its own kind's rows only")
        }
    }

    @Test(arguments: StoreKind.available)
    func claimDueWebhookDeliveriesTakesOneWebhooksDueRowsInOrderAndLeasesThem(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let first = Self.delivery(nextAttemptAt: t0, createdAt: t0, body: #"{"id":"first","at":"é"}"#)
            let second = Self.delivery(nextAttemptAt: at(10), createdAt: at(1))
            let later = Self.delivery(nextAttemptAt: at(100))
            let others = Self.delivery("other")
            for delivery in [second, later, first, others] { #expect(try await store.enqueueDelivery(delivery, limit: 10)) }
            let claimed = try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(20), leaseUntil: at(80), limit: 10)
            #expect(claimed.map(\.id) == [first.id, second.id], "only this webhook's rows due by now, the earliest due first")
            #expect(claimed.first == first, "every field as queued")
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(20), leaseUntil: at(80), limit: 10).isEmpty,
                "leased until at(80)")
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(81), leaseUntil: at(140), limit: 10).map(\.id)
                    == [first.id, second.id], "due again once the lease ended (the instance that claimed them died)")
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(200), leaseUntil: at(300), limit: 2).count == 2,
                "at most limit")
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "other", now: at(1), leaseUntil: at(60), limit: 10) == [others])
        }
    }

    @Test(arguments: StoreKind.available)
    func rescheduleAndDeleteWebhookDelivery(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let delivery = Self.delivery()
            #expect(try await store.enqueueDelivery(delivery, limit: 10))
            #expect(try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: t0, leaseUntil: at(60), limit: 10).count == 1)
            try await store.rescheduleDelivery(id: delivery.id, attempts: 1, nextAttemptAt: at(30))
            #expect(try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(29), leaseUntil: at(90), limit: 10).isEmpty)
            let retried = try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(31), leaseUntil: at(90), limit: 10)
            #expect(retried.map(\.id) == [delivery.id] && retried.first?.attempts == 1)
            try await store.deleteDelivery(id: delivery.id)
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(10_000), leaseUntil: at(10_060), limit: 10)
                    .isEmpty)
            #expect(try await store.deliveryQueueDepths(kind: .auditWebhook).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentClaimsFromInstancesSharingTheStoreNeverTakeOneRowTwice(_ kind: StoreKind) async throws {
        try await kind.withStores(2) { stores async throws in
            var queued: Set<String> = []
            for _ in 0..<30 {
                let delivery = Self.delivery()
                #expect(try await stores[0].enqueueDelivery(delivery, limit: 100))
                queued.insert(delivery.id)
            }
            let claims = try await Make.concurrently(8) { index in
                try await stores[index % 2].claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: at(5), leaseUntil: at(300), limit: 5)
                    .map(\.id)
            }
            let all = claims.flatMap { $0 }
            #expect(all.count == Set(all).count, "no row claimed twice: \(claims)")
            #expect(Set(all).isSubset(of: queued))
            #expect(all.count == 30, "eight claims of five take all thirty")
        }
    }

    @Test(arguments: StoreKind.available)
    func pruneExpiredDeletesOnlyWebhookDeliveriesPastTheRetention(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let old = Self.delivery(createdAt: t0), recent = Self.delivery(createdAt: at(86_400))
            for delivery in [old, recent] { #expect(try await store.enqueueDelivery(delivery, limit: 10)) }
            let now = at(DeliveryRetention.pruneAfterSeconds + 1)
            #expect(try await store.pruneExpired(now: now, outboxBefore: t0) >= 1)
            #expect(try await store.deliveryQueueDepths(kind: .auditWebhook) == ["siem": 1])
            #expect(
                try await store.claimDueDeliveries(kind: .auditWebhook, destination: "siem", now: now, leaseUntil: now, limit: 10).map(\.id) == [
                    recent.id
                ])
        }
    }
}
