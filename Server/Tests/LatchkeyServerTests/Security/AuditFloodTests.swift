import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Third review, R3-4: unauthenticated token requests with made-up client ids wrote one `client.authentication_failed`
/// row per request and queued it for every webhook, whose delivery was capped at ten a second: a flood filled the
/// queues, later security events were refused (`queue_full`) and never reached the SIEM, and the audit table grew
/// without bound. Now the refusals are audited one by one only up to a budget per address and window, then summed up in
/// one `client.authentication_failed_aggregated` event; they may fill only a share of each webhook's queue
/// (`low_priority_queue_limit`); delivery sends every due row, several at once; and a webhook that lost events is sent a
/// `webhook.gap` first when its queue has room again.
@Suite("R3-4: a flood of failed client authentications cannot shut the audit webhooks")
struct AuditFloodTests {
    /// `count` token requests with unknown client ids, `parallel` at a time; `address(i)` is the X-Forwarded-For of the
    /// i-th (nil: the test's own loopback address). Returns the statuses seen.
    static func flood(
        _ server: TestServer, _ count: Int, parallel: Int = 8, address: @escaping @Sendable (Int) -> String? = { _ in nil }
    ) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: [Int: Int].self) { group in
            for worker in 0..<parallel {
                group.addTask {
                    var statuses: [Int: Int] = [:]
                    let browser = TestBrowser()
                    for index in stride(from: worker, to: count, by: parallel) {
                        let headers = address(index).map { ["X-Forwarded-For": $0] } ?? [:]
                        let answer = try await browser.postForm(
                            server.base + "/oauth2/token",
                            ["grant_type": "client_credentials", "client_id": "no-such-client-\(index)", "client_secret": "x"],
                            headers: headers)
                        statuses[answer.status, default: 0] += 1
                    }
                    return statuses
                }
            }
            var all: [Int: Int] = [:]
            for try await statuses in group { all.merge(statuses, uniquingKeysWith: +) }
            return all
        }
    }

    static func startServer(_ webhook: AuditWebhook, loop: Bool, configure: @escaping (inout ServerConfiguration) -> Void = { _ in })
        async throws -> TestServer
    {
        try await TestServer.start {
            $0.auditWebhooks = [webhook]
            $0.runsDeliveryLoops = loop
            for index in $0.clients.indices where $0.clients[index].clientId == "backend" { $0.clients[index].scopes.append("scim.admin") }
            configure(&$0)
        }
    }

    /// An administrator creates an account through SCIM: a `user.created`, the kind of event the SIEM must not miss.
    static func createUser(_ server: TestServer, _ name: String) async throws {
        let admin = try await server.clientToken(scope: "scim.admin")
        let created = try await server.call("POST", "/scim2/Users", token: admin, json: SCIMAdministrationTests.newUser(name))
        #expect(created.status == 201, "\(created.text)")
    }

    static func metric(_ webhook: String, _ result: String) -> String {
        "latchkey_webhook_deliveries_total{webhook=\"\(webhook)\",result=\"\(result)\"}"
    }

    static func auditRows(_ server: TestServer, type: String) async throws -> [AuditEvent] {
        try await server.server.store.auditEvents(AuditQuery(limit: 100_000)).filter { $0.type.rawValue == type }
    }

    /// The review sent 20 000; the suite sends 3 000 (enough to exceed every budget), and
    /// `LATCHKEY_AUDIT_FLOOD_REQUESTS=20000 swift test --filter AuditFloodTests` runs the review's full count.
    static let floodSize = ProcessInfo.processInfo.environment["LATCHKEY_AUDIT_FLOOD_REQUESTS"].flatMap(Int.init) ?? 3000

    @Test("the review's attack: unknown-client token requests from one address, a webhook at the default queue_limit")
    func floodFromOneAddress() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let webhook = try AuditWebhookTests.webhook("siem", receiver)
        #expect(webhook.queueLimit == 10_000, "the default queue_limit")
        let server = try await Self.startServer(webhook, loop: true)
        defer { Task { await server.stop() } }
        let before = try await server.rowCount("audit_events")

        let started = ContinuousClock.now
        let statuses = try await Self.flood(server, Self.floodSize)
        let took = ContinuousClock.now - started
        #expect(statuses[401] == Self.floodSize, "each refused as always: \(statuses)")
        let gained = try await server.rowCount("audit_events") - before
        print("R3-4 flood: \(Self.floodSize) requests in \(took), audit_events +\(gained) rows")
        #expect(gained <= 21, "a bounded number of rows: the per-address budget (20) and at most one summary, not \(gained)")

        // A high-severity event made right after reaches the receiver (wait for it, not for time).
        let created = ContinuousClock.now
        try await Self.createUser(server, "after-the-flood")
        try await eventually("user.created reaches the receiver") {
            receiver.received.contains { $0.json["type"] as? String == "user.created" }
        }
        print("R3-4 flood: user.created received \(ContinuousClock.now - created) after it was made; \(receiver.received.count) events received")
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric("siem", "queue_full") + " 0"), "no high-severity event refused: \(exposition)")
        #expect(exposition.contains(Self.metric("siem", "not_queued") + " 0"))
    }

    @Test("2 000 addresses (behind a trusted proxy), one refusal each: only a share of the queue, user.created queued, a gap first")
    func floodFromManyAddressesCannotCrowdOutTheRest() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let webhook = try AuditWebhookTests.webhook("siem", receiver) { $0.queueLimit = 300 }
        let proxies = try TrustedProxies(["127.0.0.1", "::1"])
        let server = try await Self.startServer(webhook, loop: false) { $0.trustedProxies = proxies }
        defer { Task { await server.stop() } }

        let statuses = try await Self.flood(server, 2000) { index in "10.7.\(index / 250).\(index % 250 + 1)" }
        #expect(statuses[401] == 2000, "\(statuses)")
        try await Self.createUser(server, "during-the-flood")
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric("siem", "queue_full") + " 0"), "user.created was queued: \(exposition)")

        await server.server.deliverAuditWebhooks()
        let types = receiver.received.compactMap { $0.json["type"] as? String }
        #expect(types.contains("user.created"), "delivered in the same pass: \(types.count) events")
        #expect(types.first == "webhook.gap", "the gap comes first: \(types.prefix(3))")
        let gap = try #require(receiver.received.first { $0.json["type"] as? String == "webhook.gap" }?.json)
        let details = try #require(gap["details"] as? [String: String])
        let failed = types.filter { $0 == "client.authentication_failed" }.count
        #expect(details["dropped"] == String(2000 - failed), "the gap counts what was not queued: \(details)")
        #expect(failed < 300, "failed client authentications used only a share of the queue: \(failed)")
        #expect(try await server.rowCount("deliveries") == 0, "every due row delivered in one pass")
    }

    @Test("past the per-address budget nothing is written; one summary per address and window, with the count")
    func refusalsPastTheBudgetAreSummedUp() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.startServer(try AuditWebhookTests.webhook("siem", receiver), loop: false)
        defer { Task { await server.stop() } }
        let budget = server.server.configuration.loginPolicy.maxAuditedClientAuthFailuresPerAddress
        #expect(budget == 20, "the default")
        _ = try await Self.flood(server, budget + 30, parallel: 1)
        #expect(try await Self.auditRows(server, type: "client.authentication_failed").count == budget)
        #expect(try await Self.auditRows(server, type: "client.authentication_failed_aggregated").isEmpty, "the window is still open")

        // The window closes (the server's clock, not a sleep); the next client authentication writes the summary.
        server.advanceClock(TimeInterval(server.server.configuration.loginPolicy.addressWindowSeconds + 1))
        _ = try await Self.flood(server, 1, parallel: 1)
        let summaries = try await Self.auditRows(server, type: "client.authentication_failed_aggregated")
        #expect(summaries.count == 1)
        let summary = try #require(summaries.first)
        #expect(summary.clientAddress == "127.0.0.1" && summary.outcome == .failure && summary.actor == AuditEvent.anonymous)
        #expect(summary.details["count"] == "30", "\(summary.details)")
        #expect(try await Self.auditRows(server, type: "client.authentication_failed").count == budget + 1, "a new window, a new budget")
    }
}
