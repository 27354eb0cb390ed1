import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A scripted SMTP relay on a loopback port (plain TCP: the STARTTLS path is covered by the system test against
/// aiosmtpd), recording what the server sends.
final class FakeRelay: Sendable {
    struct Behaviour: Sendable {
        var silent = false
        var rcptReply = "250 OK"
        var authMechanisms = "LOGIN"
        /// Offers STARTTLS and answers it like an on-path attacker: `220` followed, in the same write, by
        /// plaintext replies to every command the client would send after the handshake.
        var injectAfterStartTLS = false
    }
    struct Received: Sendable {
        var commands: [String] = []
        var data: [String] = []
        var messages = 0
    }

    let port: Int
    private let state: NIOLockedValueBox<Received>
    private let behaviour: NIOLockedValueBox<Behaviour>
    private let task: Task<Void, any Error>
    private let listener: any Channel

    var received: Received { state.withLockedValue { $0 } }
    func set(_ change: @Sendable (inout Behaviour) -> Void) { behaviour.withLockedValue { change(&$0) } }

    init(_ behaviour: Behaviour = Behaviour()) async throws {
        let behaviourBox = NIOLockedValueBox(behaviour)
        let state = NIOLockedValueBox(Received())
        self.state = state
        self.behaviour = behaviourBox
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SMTPLineDecoder()))
                    return try NIOAsyncChannel<SMTPLine, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        port = server.channel.localAddress?.port ?? 0
        listener = server.channel
        // `stop()` closes the listening channel rather than cancelling this task: every connection already accepted
        // is then still taken up (SwiftNIO traps on an accepted connection that never is, swift-nio #3481), and the
        // conversations still going are cancelled once no more can arrive.
        task = Task {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        group.addTask {
                            try? await connection.executeThenClose { lines, out in
                                try await Self.converse(lines: lines, out: out, behaviour: behaviourBox.withLockedValue { $0 }, state: state)
                            }
                        }
                    }
                }
                group.cancelAll()
            }
        }
    }

    private static func converse(
        lines: NIOAsyncChannelInboundStream<SMTPLine>, out: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        behaviour: Behaviour, state: NIOLockedValueBox<Received>
    ) async throws {
        func say(_ text: String) async throws { try await out.write(ByteBuffer(string: text + "\r\n")) }
        if behaviour.silent {
            for try await _ in lines {}
            return
        }
        try await say("220 relay.test ESMTP")
        var inData = false, authStep = 0
        var incoming = lines.makeAsyncIterator()
        while let line = try await incoming.next()?.text {
            if inData {
                if line == "." {
                    inData = false
                    state.withLockedValue { $0.messages += 1 }
                    try await say("250 queued")
                } else {
                    state.withLockedValue { $0.data.append(line) }
                }
                continue
            }
            state.withLockedValue { $0.commands.append(line) }
            if authStep == 1 { authStep = 2; try await say("334 UGFzc3dvcmQ6"); continue }
            if authStep == 2 { authStep = 0; try await say("235 authenticated"); continue }
            let verb = line.uppercased()
            if verb.hasPrefix("EHLO") {
                try await say("250-relay.test")
                if behaviour.injectAfterStartTLS { try await say("250-STARTTLS") }
                try await say("250-AUTH \(behaviour.authMechanisms)")
                try await say("250 8BITMIME")
            } else if verb == "STARTTLS", behaviour.injectAfterStartTLS {
                try await say(
                    [
                        "220 go ahead", "250 injected-ehlo", "250 injected-mail", "250 injected-rcpt", "354 injected-data",
                        "250 injected-queued", "221 injected-bye"
                    ].joined(separator: "\r\n"))
                while try await incoming.next() != nil {}  // no TLS here: whatever the client sends next is not SMTP
                return
            } else if verb == "AUTH LOGIN" {
                authStep = 1
                try await say("334 VXNlcm5hbWU6")
            } else if verb.hasPrefix("MAIL FROM:") {
                try await say("250 sender ok")
            } else if verb.hasPrefix("RCPT TO:") {
                try await say(behaviour.rcptReply)
            } else if verb == "DATA" {
                inData = true
                try await say("354 go ahead")
            } else if verb == "QUIT" {
                try await say("221 bye")
                return
            } else {
                try await say("502 not implemented")
            }
        }
    }

    func stop() async {
        try? await listener.close()
        _ = await task.result
    }
}

@Suite("Security: SMTP delivery")
struct SMTPDeliveryTests {
    /// `timeout`: the SMTP dialogue's, generous (no test here is about it): on a saturated machine a greeting may well
    /// take longer than the 20 s this once was (seen once under a concurrent build).
    static func outbox(port: Int, username: String? = "latchkey", timeout: Int = 120)
        throws -> (SMTPOutbox, any Store, @Sendable (TimeInterval) -> Void)
    {
        var settings = SMTPSettings(
            host: "127.0.0.1", port: port, startTLS: .none, username: username, password: username.map { _ in "relay pw" },
            from: "noreply@example.com")
        settings.timeoutSeconds = timeout
        settings.maxAttempts = 3
        settings.retrySeconds = 60
        settings.queueLimit = 2
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-smtp-\(UUID().uuidString).sqlite").path
        let store = try SQLiteStore(path: path)
        let time = ServerClock.Adjustable()
        var logger = Logger(label: "test.smtp")
        logger.logLevel = .critical
        return (try SMTPOutbox(settings: settings, store: store, clock: time.clock, logger: logger), store, { time.advance(by: $0) })
    }

    static func message(_ recipient: String = "ada@example.com", subject: String = "Your code", body: String = "123456 is your code") -> OutboxMessage
    {
        OutboxMessage(id: UUID().uuidString, channel: .email, recipient: recipient, subject: subject, body: body, code: "123456", createdAt: Date())
    }

    static func queued(_ store: any Store) async throws -> [QueuedDelivery] {
        try await store.claimDueDeliveries(
            kind: .mail, destination: MailDeliverer.relay, now: Date.distantFuture, leaseUntil: Date.distantFuture, limit: 100)
    }

    @Test func deliversWithAuthLoginAndDeletesTheQueuedMessage() async throws {
        let relay = try await FakeRelay()
        defer { Task { await relay.stop() } }
        let (outbox, store, _) = try Self.outbox(port: relay.port)
        try await outbox.send(Self.message(subject: "Réinitialisation", body: "123456\n.hidden line"))
        await outbox.deliverDue()
        let received = relay.received
        #expect(received.messages == 1)
        #expect(received.commands.contains("MAIL FROM:<noreply@example.com>") && received.commands.contains("RCPT TO:<ada@example.com>"))
        #expect(received.commands.contains(Data("latchkey".utf8).base64EncodedString()), "AUTH LOGIN user")
        #expect(received.commands.contains(Data("relay pw".utf8).base64EncodedString()), "AUTH LOGIN password")
        let headers = received.data.prefix { !$0.isEmpty }
        #expect(headers.contains("To: <ada@example.com>") && headers.contains("From: <noreply@example.com>"))
        #expect(headers.contains { $0.hasPrefix("Date: ") } && headers.contains { $0.hasPrefix("Message-ID: <") })
        #expect(headers.contains("Subject: =?UTF-8?B?\(Data("Réinitialisation".utf8).base64EncodedString())?="))
        let body = received.data.drop { !$0.isEmpty }.joined()
        #expect(String(decoding: Data(base64Encoded: body) ?? Data(), as: UTF8.self) == "123456\r\n.hidden line")
        #expect(try await Self.queued(store).isEmpty, "delivered messages leave the queue (their body is a code)")
    }

    @Test func transientFailuresAreRetriedWithBackoffAndPermanentOnesDropped() async throws {
        let relay = try await FakeRelay(.init(rcptReply: "451 try again later"))
        defer { Task { await relay.stop() } }
        let (outbox, store, advance) = try Self.outbox(port: relay.port)
        try await outbox.send(Self.message())
        await outbox.deliverDue()
        #expect(relay.received.messages == 0)
        await outbox.deliverDue()
        #expect(relay.received.commands.filter { $0.hasPrefix("RCPT") }.count == 1, "not retried before the backoff")
        relay.set { $0.rcptReply = "250 OK" }
        advance(61)
        await outbox.deliverDue()
        #expect(relay.received.messages == 1, "retried after the backoff")
        #expect(try await Self.queued(store).isEmpty)

        relay.set { $0.rcptReply = "550 no such user" }
        try await outbox.send(Self.message("gone@example.com"))
        await outbox.deliverDue()
        #expect(try await Self.queued(store).isEmpty, "a 5xx to RCPT is final")
    }

    @Test func anUnreachableRelayKeepsTheMessageUntilMaxAttempts() async throws {
        let relay = try LoopbackPort.refusing()  // nothing listens there, and no other test's server can be given the port
        defer { withExtendedLifetime(relay) {} }
        let (outbox, store, advance) = try Self.outbox(port: relay.port)
        try await outbox.send(Self.message())
        for attempt in 1...3 {
            await outbox.deliverDue()
            let left = try await store.claimDueDeliveries(
                kind: .mail, destination: MailDeliverer.relay, now: Date.distantFuture, leaseUntil: Date.distantPast, limit: 10)
            if attempt < 3 { #expect(left.first?.attempts == attempt) } else { #expect(left.isEmpty, "given up after max_attempts") }
            advance(3600)
        }
    }

    /// One delivery loop for every kind (issue 39): a relay nobody answers costs the pass one attempt, the other emails
    /// wait for the same retry with no attempt counted, and mail is counted like every other kind.
    @Test func anUnreachableRelayCostsOneAttemptAPassAndIsCounted() async throws {
        let relay = try LoopbackPort.refusing()
        defer { withExtendedLifetime(relay) {} }
        let (outbox, store, _) = try Self.outbox(port: relay.port)
        try await outbox.send(Self.message("ada@example.com"))
        try await outbox.send(Self.message("bob@example.com"))
        await outbox.deliverDue()
        let left = try await Self.queued(store)
        #expect(left.map(\.attempts).sorted() == [0, 1], "one attempt found no relay; the other email was given back untried")
        #expect(Set(left.map(\.nextAttemptAt)).count == 1, "both wait for the same retry")
        let exposition = outbox.metrics.exposition()
        #expect(exposition.contains(#"latchkey_deliveries_total{kind="mail",destination="relay",result="failed"} 1"#), "\(exposition)")
        #expect(exposition.contains(#"latchkey_deliveries_total{kind="mail",destination="relay",result="delivered"} 0"#))
        #expect(exposition.contains(#"latchkey_delivery_queue_depth{kind="mail",destination="relay"} 2"#))
    }

    @Test func aSilentRelayTimesOut() async throws {
        let relay = try await FakeRelay(.init(silent: true))
        defer { Task { await relay.stop() } }
        let client = try SMTPClient(
            settings: {
                var s = SMTPSettings(host: "127.0.0.1", port: relay.port, startTLS: .none, from: "noreply@example.com")
                s.timeoutSeconds = 1
                return s
            }())
        await #expect(throws: SMTPError.timeout(stage: "greeting")) {
            try await client.send(from: "noreply@example.com", to: "ada@example.com", data: "Subject: x\r\n\r\nbody\r\n")
        }
    }

    @Test func headerInjectionIsRefusedBeforeQueueing() async throws {
        let (outbox, store, _) = try Self.outbox(port: 9)
        for recipient in [
            "ada@example.com\r\nBcc: eve@example.com", "ada@example.com>, <eve@example.com", "Ada <ada@example.com>", "ada @example.com"
        ] {
            await #expect(throws: SMTPError.self) { try await outbox.send(Self.message(recipient)) }
        }
        await #expect(throws: SMTPError.self) { try await outbox.send(Self.message(subject: "Code\r\nBcc: eve@example.com")) }
        #expect(try await Self.queued(store).isEmpty)
    }

    @Test func theQueueIsBounded() async throws {
        let (outbox, _, _) = try Self.outbox(port: 9)
        try await outbox.send(Self.message())
        try await outbox.send(Self.message())
        await #expect(throws: OutboxError.self) { try await outbox.send(Self.message()) }
    }

    /// The running server works its queue: a recovery code asked for over HTTP reaches the relay, and only the relay.
    @Test func theRunningServerDeliversRecoveryCodes() async throws {
        let relay = try await FakeRelay()
        defer { Task { await relay.stop() } }
        let server = try await TestServer.start { config in
            config.development = false
            config.smtp = SMTPSettings(host: "127.0.0.1", port: relay.port, startTLS: .none, from: "noreply@example.com")
        }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let start = try await browser.postJSON(
            server.base + "/flow/execute",
            ["applicationId": "latchkey-demo", "flowType": "RECOVERY", "inputs": ["username": "demo@example.com"]])
        #expect(start.status == 200)
        try await eventually("the relay receiving the message") { relay.received.messages > 0 }
        let received = relay.received
        #expect(received.messages == 1 && received.commands.contains("RCPT TO:<demo@example.com>"))
        let body = String(decoding: Data(base64Encoded: received.data.drop { !$0.isEmpty }.joined()) ?? Data(), as: UTF8.self)
        let code = try #require(body.split(separator: " ").first.map(String.init))
        #expect(
            code.count == 11 && code.dropFirst(5).first == "-" && code.filter { $0 != "-" }.allSatisfy { LongCode.alphabet.contains($0) }, "\(code)")
        let outbox = try await browser.get(server.base + "/dev/outbox?recipient=demo@example.com")
        #expect(outbox.status == 404 && !outbox.text.contains(code))
    }

    /// Replies a man in the middle slips in after `220` to STARTTLS, before the handshake, are not taken as the
    /// answers of the TLS side (RFC 3207 §4.2): the dialogue stops at STARTTLS and the message stays queued.
    @Test func repliesInjectedBeforeTheTLSHandshakeAreRefused() async throws {
        let relay = try await FakeRelay(.init(injectAfterStartTLS: true))
        defer { Task { await relay.stop() } }
        var settings = SMTPSettings(host: "127.0.0.1", port: relay.port, startTLS: .required, from: "noreply@example.com")
        settings.timeoutSeconds = 120
        let client = try SMTPClient(settings: settings)
        await #expect(throws: SMTPError.plaintextAfterStartTLS) {
            try await client.send(from: "noreply@example.com", to: "ada@example.com", data: "Subject: code\r\n\r\n123456\r\n")
        }
        #expect(relay.received.commands.last == "STARTTLS", "nothing after STARTTLS reached the relay in plaintext")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-smtp-\(UUID().uuidString).sqlite").path
        let store = try SQLiteStore(path: path)
        var logger = Logger(label: "test.smtp")
        logger.logLevel = .critical
        let outbox = try SMTPOutbox(settings: settings, store: store, clock: ServerClock.Adjustable().clock, logger: logger)
        try await outbox.send(Self.message())
        await outbox.deliverDue()
        #expect(try await Self.queued(store).count == 1, "the message is kept for another attempt, not counted as delivered")
        #expect(relay.received.messages == 0)
    }

    @Test func dotStuffingAndEncodedWords() {
        #expect(MailMessage.dotStuffed("a\r\n.\r\n..b\r\nc") == "a\r\n..\r\n...b\r\nc\r\n")
        let long = String(repeating: "é", count: 60)
        let encoded = MailMessage.encodedSubject(long)
        #expect(encoded.components(separatedBy: "\r\n ").allSatisfy { $0.count <= 75 && $0.hasPrefix("=?UTF-8?B?") })
        #expect(MailMessage.encodedSubject("Your code") == "Your code")
    }
}
