import Crypto
import Foundation
import Hummingbird
@testable import LatchkeyServer
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// A webhook receiver on a loopback port: records every POST (path, headers, body) and answers from a script
/// (200 once the script is spent).
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var path: String
        /// Lower-case header names.
        var headers: [String: String]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    struct Answer: Sendable {
        var status: Int
        var location: String?
        /// Bytes of body in the answer (spaces).
        var bodyBytes = 0
    }

    let port: Int
    private let service: GracefulService
    private let state: NIOLockedValueBox<(received: [Received], script: [Answer])>

    var base: String { "http://127.0.0.1:\(port)" }
    var received: [Received] { state.withLockedValue { $0.received } }
    func received(at path: String) -> [Received] { received.filter { $0.path == path } }

    /// The next requests are answered these statuses, in order.
    func answer(_ statuses: Int...) { state.withLockedValue { $0.script += statuses.map { Answer(status: $0) } } }
    func answer(redirectTo location: String) { state.withLockedValue { $0.script.append(Answer(status: 302, location: location)) } }
    func answer(_ status: Int, bodyBytes: Int) { state.withLockedValue { $0.script.append(Answer(status: status, bodyBytes: bodyBytes)) } }

    private init(port: Int, service: GracefulService, state: NIOLockedValueBox<(received: [Received], script: [Answer])>) {
        self.port = port
        self.service = service
        self.state = state
    }

    static func start() async throws -> WebhookReceiver {
        let state = NIOLockedValueBox<(received: [Received], script: [Answer])>(([], []))
        let router = Router()
        router.post("/hooks/:name") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let answer = state.withLockedValue { state -> Answer in
                state.received.append(
                    Received(path: "/hooks/" + (context.parameters.get("name") ?? ""), headers: headers, body: Data(buffer: body)))
                return state.script.isEmpty ? Answer(status: 200) : state.script.removeFirst()
            }
            var fields = HTTPFields()
            if let location = answer.location { fields[.location] = location }
            guard answer.bodyBytes > 0 else { return Response(status: .init(code: answer.status), headers: fields) }
            return Response(
                status: .init(code: answer.status), headers: fields,
                body: ResponseBody(byteBuffer: ByteBuffer(repeating: 0x20, count: answer.bodyBytes)))
        }
        let (port, service) = try await GracefulService.serve(router, label: "test.webhook-receiver")
        return WebhookReceiver(port: port, service: service, state: state)
    }

    func stop() async { await service.stop() }
}

/// Audit events delivered to webhooks: signed, retried with backoff from the store's queue, filtered, dropped when they
/// cannot be delivered, never failing the request, and never carrying a secret. Each server runs without its delivery
/// loop; the tests run each pass themselves (`deliverAuditWebhooks`) and move the server's clock.
@Suite("Audit webhooks: signed delivery from a queue in the store")
struct AuditWebhookTests {
    static let secret = "whsec-0123456789abcdef0123456789abcdef"
    static let wrongPassword = "a mistyped password 77"

    static func webhook(
        _ id: String, _ receiver: WebhookReceiver, path: String? = nil, secret: String = secret,
        change: (inout AuditWebhook) -> Void = { _ in }
    ) throws -> AuditWebhook {
        try webhook(id, base: receiver.base, path: path, secret: secret, change: change)
    }

    static func webhook(
        _ id: String, base: String, path: String? = nil, secret: String = secret, change: (inout AuditWebhook) -> Void = { _ in }
    ) throws -> AuditWebhook {
        var webhook = AuditWebhook(id: id, url: try #require(URL(string: base + "/hooks/" + (path ?? id))), secret: WebhookSecret(secret))
        change(&webhook)
        return webhook
    }

    static func start(_ webhooks: [AuditWebhook], loop: Bool = false) async throws -> TestServer {
        try await TestServer.start {
            $0.auditWebhooks = webhooks
            $0.runsDeliveryLoops = loop
            // The confidential client may read the audit trail (`clientToken(scope: "scim.admin")`).
            for index in $0.clients.indices where $0.clients[index].clientId == "backend" { $0.clients[index].scopes.append("scim.admin") }
        }
    }

    /// A hosted sign-in with a wrong password: one `signin.failed`.
    static func failSignIn(_ server: TestServer, username: String = "demo@example.com") async throws {
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let refused = try await server.submitLogin(browser, page: page, username: username, password: wrongPassword)
        #expect(refused.status == 401, "the request is answered as always")
    }

    static func metric(_ server: TestServer, _ webhook: String, _ result: String) -> String {
        "latchkey_webhook_deliveries_total{webhook=\"\(webhook)\",result=\"\(result)\"}"
    }

    /// The signature recomputed here, independently of the server's code: HMAC-SHA256 over "<t>.<body>", hex.
    static func expectedSignature(_ header: String, body: Data, secret: String) -> (t: Int, matches: Bool)? {
        let pairs = Dictionary(
            header.split(separator: ",").compactMap { part -> (String, String)? in
                let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                return pair.count == 2 ? (pair[0], pair[1]) : nil
            }, uniquingKeysWith: { first, _ in first })
        guard let t = pairs["t"].flatMap(Int.init), let v1 = pairs["v1"] else { return nil }
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(t).".utf8) + body, using: SymmetricKey(data: Data(secret.utf8)))
        let hex = mac.map { String(format: "%02x", $0) }.joined()
        return (t, hex == v1)
    }

    @Test("the signature scheme's test vector (docs/server.md): HMAC-SHA256 of \"<t>.<body>\", lower-case hex")
    func signatureTestVector() throws {
        let body = Data(#"{"id":"e1"}"#.utf8)
        let header = WebhookSignature.header(body: body, secret: WebhookSecret(Self.secret), at: Date(timeIntervalSince1970: 1_767_225_600.9))
        #expect(header == "t=1767225600,v1=b4d580e2c90b2d7200db650ea5c2f15aa9424eb8b0fde7649d9189bd2a7892cf")
        #expect(WebhookSignature.verify(header, body: body, secret: WebhookSecret(Self.secret)) == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(WebhookSignature.verify("t=1767225600,v1=00,v1=" + header.dropFirst(16), body: body, secret: WebhookSecret(Self.secret)) != nil)
        #expect(WebhookSignature.verify("v1=" + header.dropFirst(16), body: body, secret: WebhookSecret(Self.secret)) == nil, "no t")
    }

    // MARK: Delivery

    @Test("a failed sign-in is POSTed signed: the signature verifies with the secret, the body is the admin API's event, no password")
    func failedSignInIsDeliveredSigned() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([try Self.webhook("siem", receiver)])
        defer { Task { await server.stop() } }
        try await Self.failSignIn(server)
        #expect(try await server.rowCount("deliveries") == 1, "queued in the store, not sent inline")
        #expect(receiver.received.isEmpty)

        await server.server.deliverAuditWebhooks()
        let delivery = try #require(receiver.received.first)
        #expect(receiver.received.count == 1)
        #expect(delivery.path == "/hooks/siem")
        #expect(delivery.headers["content-type"] == "application/json")
        let signature = try #require(delivery.headers["latchkey-signature"])
        let recomputed = try #require(Self.expectedSignature(signature, body: delivery.body, secret: Self.secret))
        #expect(recomputed.matches, "HMAC-SHA256 of \"<t>.<body>\" under the secret: \(signature)")
        #expect(abs(Double(recomputed.t) - server.server.clock.now.timeIntervalSince1970) < 120, "t is the attempt's time")
        #expect(WebhookSignature.verify(signature, body: delivery.body, secret: WebhookSecret(Self.secret)) != nil)
        #expect(
            WebhookSignature.verify(signature, body: delivery.body, secret: WebhookSecret(String(repeating: "x", count: 40))) == nil,
            "another secret does not verify")
        #expect(WebhookSignature.verify(signature, body: delivery.body + Data(" ".utf8), secret: WebhookSecret(Self.secret)) == nil)

        let event = delivery.json
        #expect(event["type"] as? String == "signin.failed" && event["outcome"] as? String == "failure")
        #expect(event["details"] as? [String: String] == ["method": "password", "reason": "invalid_credentials"])
        #expect(event["client_id"] as? String == "latchkey-demo" && event["client_address"] as? String == "127.0.0.1")
        #expect(delivery.headers["latchkey-event-id"] == event["id"] as? String, "the event id, for the receiver's idempotence")
        #expect(delivery.headers["latchkey-event-type"] == "signin.failed")
        #expect(delivery.headers["latchkey-delivery-attempt"] == "1")
        #expect(!delivery.text.contains(Self.wrongPassword) && !delivery.text.contains(Self.secret), "no password, no secret")
        #expect(!delivery.headers.values.contains { $0.contains(Self.secret) })

        // The same JSON as the admin API's event.
        let admin = try await server.clientToken(scope: "scim.admin")
        let listed = try await AuditTrailTests.page(server, "type=signin.failed", token: admin).events
        #expect(listed.count == 1)
        #expect(NSDictionary(dictionary: try #require(listed.first)) == NSDictionary(dictionary: event))

        #expect(try await server.rowCount("deliveries") == 0, "a delivered row is deleted")
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "siem", "delivered") + " 1"), "\(exposition)")
        #expect(exposition.contains(Self.metric(server, "siem", "failed") + " 0"))
        #expect(exposition.contains("latchkey_webhook_queue_depth{webhook=\"siem\"} 0"))
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 1, "delivered once")
    }

    @Test("the receiver answers 500, then 200: retried after the backoff (not before), delivered once, the same event id")
    func retriedWithBackoffThenDeliveredOnce() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([try Self.webhook("siem", receiver) { $0.retrySeconds = 30 }])
        defer { Task { await server.stop() } }
        receiver.answer(500)
        try await Self.failSignIn(server)

        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 1)
        #expect(server.server.metrics.exposition().contains(Self.metric(server, "siem", "failed") + " 1"))
        #expect(server.server.metrics.exposition().contains("latchkey_webhook_queue_depth{webhook=\"siem\"} 1"))
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 1, "not retried before the backoff")
        server.advanceClock(20)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 1, "still about 10 s to wait")
        server.advanceClock(11)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 2, "retried once the backoff passed")
        let (first, second) = (receiver.received[0], receiver.received[1])
        #expect(first.headers["latchkey-event-id"] == second.headers["latchkey-event-id"])
        #expect(first.body == second.body, "the same body")
        #expect(second.headers["latchkey-delivery-attempt"] == "2")
        #expect(first.headers["latchkey-signature"] != second.headers["latchkey-signature"], "signed anew, with the attempt's time")
        #expect(Self.expectedSignature(try #require(second.headers["latchkey-signature"]), body: second.body, secret: Self.secret)?.matches == true)

        server.advanceClock(3600)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 2, "delivered once: nothing left to send")
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "siem", "delivered") + " 1"))
        #expect(exposition.contains("latchkey_webhook_queue_depth{webhook=\"siem\"} 0"))
    }

    @Test("events and outcomes select what each webhook receives")
    func eventFilter() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([
            try Self.webhook("failures", receiver) { $0.events = [.signInFailed] },
            try Self.webhook("successes", receiver) { $0.outcomes = [.success] },
            try Self.webhook("lockouts", receiver) { $0.events = [.accountLocked] }
        ])
        defer { Task { await server.stop() } }
        try await Self.failSignIn(server)
        _ = try await server.signIn(TestBrowser())
        await server.server.deliverAuditWebhooks()

        #expect(receiver.received(at: "/hooks/failures").map { $0.json["type"] as? String } == ["signin.failed"])
        let successes = receiver.received(at: "/hooks/successes").map(\.json)
        #expect(successes.contains { $0["type"] as? String == "signin.succeeded" }, "\(successes)")
        #expect(successes.allSatisfy { $0["outcome"] as? String == "success" })
        #expect(receiver.received(at: "/hooks/lockouts").isEmpty, "no event of its type")
        #expect(server.server.metrics.exposition().contains(Self.metric(server, "lockouts", "delivered") + " 0"))
    }

    @Test("a receiver that keeps failing: dropped after max_attempts, with the queue emptied and the drop counted")
    func droppedAfterMaxAttempts() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([
            try Self.webhook("siem", receiver) {
                $0.maxAttempts = 3
                $0.retrySeconds = 10
            }
        ])
        defer { Task { await server.stop() } }
        receiver.answer(503, 503, 503, 503)
        try await Self.failSignIn(server)
        await server.server.deliverAuditWebhooks()  // attempt 1
        server.advanceClock(11)
        await server.server.deliverAuditWebhooks()  // attempt 2, after 10 s
        #expect(try await server.rowCount("deliveries") == 1)
        server.advanceClock(10)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 2, "the second backoff is 20 s")
        server.advanceClock(11)
        await server.server.deliverAuditWebhooks()  // attempt 3: the last
        #expect(receiver.received.count == 3)
        #expect(try await server.rowCount("deliveries") == 0, "given up: deleted")
        server.advanceClock(7200)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 3, "never tried again")
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "siem", "failed") + " 3"))
        #expect(exposition.contains(Self.metric(server, "siem", "dropped") + " 1"))
        #expect(exposition.contains(Self.metric(server, "siem", "delivered") + " 0"))
    }

    @Test("a delivery older than max_age_seconds is dropped without an attempt")
    func droppedWhenTooOld() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([try Self.webhook("siem", receiver) { $0.maxAgeSeconds = 60 }])
        defer { Task { await server.stop() } }
        try await Self.failSignIn(server)
        server.advanceClock(61)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.isEmpty)
        #expect(try await server.rowCount("deliveries") == 0)
        #expect(server.server.metrics.exposition().contains(Self.metric(server, "siem", "dropped") + " 1"))
    }

    @Test("a full queue refuses new events for that webhook only: counted, the requests answered as always")
    func fullQueue() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([
            try Self.webhook("small", receiver) {
                $0.queueLimit = 1
                $0.events = [.signInFailed]
            },
            try Self.webhook("large", receiver) { $0.events = [.signInFailed] }
        ])
        defer { Task { await server.stop() } }
        try await Self.failSignIn(server)
        try await Self.failSignIn(server)
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "small", "queue_full") + " 1"), "\(exposition)")
        #expect(exposition.contains(Self.metric(server, "large", "queue_full") + " 0"))
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received(at: "/hooks/small").count == 1)
        #expect(receiver.received(at: "/hooks/large").count == 2)
    }

    @Test("an unreachable receiver: one attempt per pass, the rest of its queue waits for the same retry, no attempt counted")
    func unreachableReceiverHoldsItsQueue() async throws {
        let gone = try LoopbackPort.refusing()  // connections are refused for as long as the test holds it
        defer { withExtendedLifetime(gone) {} }
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([
            try Self.webhook("gone", base: gone.base) {
                $0.retrySeconds = 30
                $0.events = [.signInFailed]
            },
            try Self.webhook("up", receiver) { $0.events = [.signInFailed] }
        ])
        defer { Task { await server.stop() } }
        try await Self.failSignIn(server)
        try await Self.failSignIn(server)
        // The retry is 30 s after the failed attempt, which is after `before` and before `now` (on a busy machine the pass
        // may take seconds).
        let before = server.server.clock.now
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received(at: "/hooks/up").count == 2, "the other webhook is not held up")
        let exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "gone", "failed") + " 1"), "one attempt, not one per row: \(exposition)")
        let now = server.server.clock.now
        let store = server.server.store
        #expect(
            try await store.claimDueDeliveries(
                kind: .auditWebhook, destination: "gone", now: before.addingTimeInterval(29), leaseUntil: before, limit: 10
            )
            .isEmpty)
        let waiting = try await store.claimDueDeliveries(
            kind: .auditWebhook, destination: "gone", now: now.addingTimeInterval(31), leaseUntil: now.addingTimeInterval(31), limit: 10)
        #expect(waiting.map(\.attempts).sorted() == [0, 1], "both wait for the retry; only the one tried counts an attempt")
    }

    @Test("an answer with a body past the client's limit counts by its status: 200 delivered, 500 a failed attempt, neither unreachable")
    func anOversizedAnswerCountsByItsStatus() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([try Self.webhook("siem", receiver) { $0.retrySeconds = 30 }])
        defer { Task { await server.stop() } }
        receiver.answer(500, bodyBytes: 256 * 1024)
        receiver.answer(200, bodyBytes: 256 * 1024)
        try await Self.failSignIn(server)
        try await Self.failSignIn(server)

        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 2, "the 500 is an answer: the second row is tried in the same pass, not given back")
        var exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "siem", "failed") + " 1"))
        #expect(exposition.contains(Self.metric(server, "siem", "delivered") + " 1"))
        server.advanceClock(31)
        receiver.answer(200, bodyBytes: 256 * 1024)
        await server.server.deliverAuditWebhooks()
        exposition = server.server.metrics.exposition()
        #expect(exposition.contains(Self.metric(server, "siem", "delivered") + " 2"))
        #expect(try await server.rowCount("deliveries") == 0)
    }

    @Test("a redirect is not followed: a failed attempt, the body sent nowhere else")
    func redirectIsNotFollowed() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([try Self.webhook("siem", receiver)])
        defer { Task { await server.stop() } }
        receiver.answer(redirectTo: receiver.base + "/hooks/elsewhere")
        try await Self.failSignIn(server)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.map(\.path) == ["/hooks/siem"])
        #expect(server.server.metrics.exposition().contains(Self.metric(server, "siem", "failed") + " 1"))
        #expect(try await server.rowCount("deliveries") == 1, "kept for a retry")
    }

    @Test("the server's own delivery loop delivers without being asked")
    func deliveryLoopRunsWithTheServer() async throws {
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let server = try await Self.start([try Self.webhook("siem", receiver) { $0.events = [.signInFailed] }], loop: true)
        defer { Task { await server.stop() } }
        try await Self.failSignIn(server)
        try await eventually("the loop delivered the event") { receiver.received.count == 1 }
        try await eventually("the delivered row is deleted") { try await server.rowCount("deliveries") == 0 }
        #expect(receiver.received.first?.json["type"] as? String == "signin.failed")
    }

    @Test("the secret never reaches a log line, at trace level, through deliveries, failures and a drop")
    func secretIsNeverLogged() async throws {
        let capture = NoSecretsInLogsTests.Capture()
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        let webhook = try Self.webhook("siem", receiver) { $0.maxAttempts = 2 }
        let server = try await TestServer.start(logger: capture.logger("server")) {
            $0.auditWebhooks = [webhook]
            $0.runsDeliveryLoops = false
        }
        defer { Task { await server.stop() } }
        receiver.answer(500, 500)
        try await Self.failSignIn(server)
        await server.server.deliverAuditWebhooks()
        server.advanceClock(31)
        await server.server.deliverAuditWebhooks()
        try await Self.failSignIn(server)
        await server.server.deliverAuditWebhooks()
        #expect(receiver.received.count == 3)
        let lines = capture.all
        #expect(lines.contains { $0.contains("giving up on an audit event's delivery to a webhook") })
        #expect(!lines.contains { $0.contains(Self.secret) }, "the secret in a log line")
        #expect(!lines.contains { $0.contains(receiver.base) }, "the URL (which may carry a token) in a log line")
        #expect("\(server.server.configuration.auditWebhooks)".contains(Self.secret) == false)
    }
}
