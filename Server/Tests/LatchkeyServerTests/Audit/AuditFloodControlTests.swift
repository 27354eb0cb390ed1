import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The parts of R3-4's fix on their own (the attack itself is `AuditFloodTests`): the per-address audit budget and its
/// memory bound, the store's share of a webhook's queue, and the configuration values.
@Suite("Audit flood control: the audit budget, the low-priority share, their configuration")
struct AuditFloodControlTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("the budget: the first refusals recorded, the rest counted; one summary per address once its window closes")
    func budgetRecordsThenCounts() async {
        let budget = AddressAuditBudget(limit: 3, window: 60, capacity: 100)
        var recorded = 0
        for second in 0..<10 {
            let (record, closed) = await budget.admit(address: "192.0.2.1", now: Self.t0.addingTimeInterval(TimeInterval(second)))
            if record { recorded += 1 }
            #expect(closed.isEmpty)
        }
        #expect(recorded == 3)
        // Another address has its own budget; an IPv6 address counts by its /64.
        #expect(await budget.admit(address: "2001:db8::1", now: Self.t0.addingTimeInterval(30)).record)
        #expect(await budget.admit(address: "2001:db8::2", now: Self.t0.addingTimeInterval(31)).record)
        #expect(await budget.admit(address: "2001:db8::3", now: Self.t0.addingTimeInterval(32)).record)
        #expect(await budget.admit(address: "2001:db8::4", now: Self.t0.addingTimeInterval(33)).record == false)
        #expect(await budget.close(now: Self.t0.addingTimeInterval(59)).isEmpty, "the first window is still open")
        let closed = await budget.close(now: Self.t0.addingTimeInterval(60))
        #expect(closed == [AddressAuditBudget.Summary(address: "192.0.2.1", windowStart: Self.t0, count: 7)])
        #expect(await budget.close(now: Self.t0.addingTimeInterval(60)).isEmpty, "one summary per window")
        let ipv6 = await budget.close(now: Self.t0.addingTimeInterval(200))
        #expect(ipv6.count == 1 && ipv6.first?.count == 1 && ipv6.first?.address != "2001:db8::1", "keyed by /64: \(ipv6)")
        #expect(await budget.trackedCount == 0)
        // A window within its budget closes with no summary; a new window has a new budget.
        #expect(await budget.admit(address: "192.0.2.1", now: Self.t0.addingTimeInterval(300)).record)
        #expect(await budget.close(now: Self.t0.addingTimeInterval(400)).isEmpty)
    }

    @Test("memory is bounded: past the capacity the oldest window closes early, with its summary")
    func budgetIsBoundedInMemory() async {
        let budget = AddressAuditBudget(limit: 1, window: 3600, capacity: 100)
        for index in 0..<5000 {
            let address = "10.\(index / 65536).\((index / 256) % 256).\(index % 256)"
            let now = Self.t0.addingTimeInterval(TimeInterval(index) / 100)
            _ = await budget.admit(address: address, now: now)
            _ = await budget.admit(address: address, now: now)
        }
        #expect(await budget.trackedCount == 100)
        let (_, closed) = await budget.admit(address: "192.0.2.200", now: Self.t0.addingTimeInterval(60))
        #expect(closed.count == 1 && closed.first?.count == 1, "the evicted window's refusal past the budget is summed up: \(closed)")
        #expect(await budget.trackedCount == 100)
    }

    @Test("the webhook's configuration: low_priority_queue_limit read, defaulting to a tenth of queue_limit, at most queue_limit")
    func lowPriorityQueueLimitIsConfigured() throws {
        let file = try AuditWebhookConfigurationTests.secretFile()
        let c = try AuditWebhookConfigurationTests.apply(
            #"""
            { "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(file)", "queue_limit": 500,
              "low_priority_queue_limit": 20 },
            { "id": "other", "url": "https://siem.example.com/other", "secret_file": "\#(file)" }
            """#)
        #expect(c.auditWebhooks[0].lowPriorityLimit == 20)
        #expect(c.auditWebhooks[1].lowPriorityQueueLimit == nil && c.auditWebhooks[1].lowPriorityLimit == 1000, "a tenth of 10000")
        let refused = AuditWebhookConfigurationTests.refusal(
            #"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(file)", "queue_limit": 50, "low_priority_queue_limit": 51 }"#
        )
        #expect(refused.contains("low_priority_queue_limit"), "\(refused)")
    }

    @Test("login_policy.max_audited_client_auth_failures_per_address is read and must be at least 1")
    func auditBudgetIsConfigured() throws {
        func apply(_ value: Int) throws -> ServerConfiguration {
            let path = try AuditWebhookConfigurationTests.write(#"{ "login_policy": { "max_audited_client_auth_failures_per_address": \#(value) } }"#)
            var configuration = DevelopmentDefaults.configuration()
            try ConfigurationFile.load(path: path).apply(to: &configuration)
            try configuration.validate()
            return configuration
        }
        #expect(try apply(7).loginPolicy.maxAuditedClientAuthFailuresPerAddress == 7)
        #expect(DevelopmentDefaults.configuration().loginPolicy.maxAuditedClientAuthFailuresPerAddress == 20)
        #expect(throws: ConfigurationError.self) { try apply(0) }
    }
}

extension StoreContractTests {
    @Test(arguments: StoreKind.available)
    func enqueueWebhookDeliveryKeepsASharedLimitForSomeEventTypes(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            func delivery(_ type: String, webhook: String = "siem") -> QueuedDelivery {
                QueuedDelivery(
                    id: StoreFixture.unique("delivery"), kind: .auditWebhook, destination: webhook, eventId: StoreFixture.unique("event"),
                    eventType: type, body: "{}", nextAttemptAt: StoreFixture.t0, createdAt: StoreFixture.t0)
            }
            let share = DeliveryQueueShare(eventTypes: ["client.authentication_failed", "client.authentication_failed_aggregated"], limit: 2)
            #expect(try await store.enqueueDelivery(delivery("client.authentication_failed"), limit: 4, share: share))
            #expect(try await store.enqueueDelivery(delivery("client.authentication_failed_aggregated"), limit: 4, share: share))
            #expect(try await store.enqueueDelivery(delivery("client.authentication_failed"), limit: 4, share: share) == false, "share full")
            #expect(try await store.enqueueDelivery(delivery("client.authentication_failed", webhook: "other"), limit: 4, share: share))
            #expect(try await store.enqueueDelivery(delivery("user.created"), limit: 4, share: share), "the rest is kept for others")
            #expect(try await store.enqueueDelivery(delivery("account.locked"), limit: 4, share: nil))
            #expect(try await store.enqueueDelivery(delivery("signin.failed"), limit: 4, share: nil) == false, "the whole queue is full")
            #expect(try await store.deliveryQueueDepths(kind: .auditWebhook) == ["siem": 4, "other": 1])
        }
    }
}
