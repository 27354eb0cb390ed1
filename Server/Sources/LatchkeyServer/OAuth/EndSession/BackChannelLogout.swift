import Foundation
import LatchkeyJOSE
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// OpenID Connect Back-Channel Logout 1.0: when a sign-in session ends, every application that took part in it and
/// registered a `backchannel_logout_uri` receives a `logout_token` (`LogoutToken`) by a direct POST from the server, so
/// it can end its own session for that person even when the browser never comes back to it.
///
/// A session's end is a fact in the store (`ended_at`), however it came (signing out at the server or in an app, "sign
/// out everywhere", an administrator, a password change, a disabled or deleted account). Each pass of a loop beside the
/// HTTP server (a `DeliveryService`) claims the ends not announced yet and queues one notice per application in
/// the store's delivery queue (the audit webhooks' table, `QueuedWebhookDelivery`, one queue per application named
/// `backchannel_logout:<client_id>`), then delivers the due notices, retried with doubling backoff (from
/// `retrySeconds` up to an hour) until the application answers 2xx, for at most `maximumAttempts` attempts and a day.
/// The token is signed at each attempt (fresh `iat`/`exp`) with the same `jti`, so an application that did log out but
/// whose answer was lost can recognise the retry. An application deleted or no longer registering the URI gets nothing
/// more.
///
/// Announcing happens after the sign-out, never in its way: errors are logged and the next pass tries again.
struct BackChannelLogout: Sendable {
    let store: any Store
    let keys: KeyRing
    let issuerInForce: @Sendable () -> String
    let clock: ServerClock
    let logger: Logger
    /// Where each application's notices may go: a registered application's URI is resolved at each attempt and never
    /// reaches the server's own network (`OutboundHTTPClient`, review 3 R3-5).
    let reach: OutboundReach
    private let http: OutboundHTTPClient

    static let queuePrefix = "backchannel_logout:"
    static let eventType = "backchannel_logout"
    /// How long one notice may take (`ServerConfiguration.outboundTimeoutSeconds`).
    let timeoutSeconds: Int
    static let retrySeconds = 5
    static let maximumAttempts = 12
    static let maximumAgeSeconds: TimeInterval = 86400
    /// Notices waiting for one application at most: an application that never answers does not fill the store.
    static let queueLimit = 10000
    static let batchSize = 10

    /// The most of an application's answer read (and ignored): only its status matters.
    static let maximumAnswerBytes = 64 * 1024

    /// The `sub` each application is given (a pairwise application's logout token names the account as its ID tokens did).
    let subjects: SubjectIdentifiers

    init(
        store: any Store, keys: KeyRing, issuerInForce: @escaping @Sendable () -> String, clock: ServerClock, reach: OutboundReach,
        http: OutboundHTTPClient, timeoutSeconds: Int, subjects: SubjectIdentifiers, logger: Logger
    ) {
        self.timeoutSeconds = timeoutSeconds
        self.subjects = subjects
        self.store = store
        self.keys = keys
        self.issuerInForce = issuerInForce
        self.clock = clock
        self.reach = reach
        self.http = http
        self.logger = logger
    }

    /// What a queued notice holds: the logout token's subject and session, fixed when the session ended.
    struct Notice: Codable, Equatable {
        var sub: String
        var sid: String
    }

    // MARK: Announcing

    /// Sessions whose end is announced per pass.
    static let announceBatch = 100

    /// Queues the notices of sessions that ended since the last pass, by whatever path they ended (the store records
    /// the end; `SessionStore.claimEndedSessions`), so no way of ending a session can forget to announce it.
    func announceEndedSessions() async {
        let now = clock.now
        do {
            while true {
                let ended = try await store.claimEndedSessions(now: now, leaseUntil: now.addingTimeInterval(60), limit: Self.announceBatch)
                for session in ended {
                    try await queueNotices(for: session)
                    try await store.markSessionEndAnnounced(id: session.id)
                }
                if ended.count < Self.announceBatch || Task.isCancelled { return }
            }
        } catch {
            logger.error("cannot announce ended sessions to applications", metadata: ["error.type": .string("\(type(of: error))")])
        }
    }

    /// A notice for each application of the session that registered a back-channel logout URI.
    private func queueNotices(for session: SessionRecord) async throws {
        for clientId in try await store.sessionClientIds(sessionId: session.id) {
            guard try await store.client(id: clientId)?.configuration.backchannelLogoutUri != nil else { continue }
            let body = String(decoding: try JSONEncoder().encode(Notice(sub: session.userId, sid: session.id)), as: UTF8.self)
            let now = clock.now
            let queued = try await store.enqueueWebhookDelivery(
                QueuedWebhookDelivery(
                    id: Secrets.identifier(), webhookId: Self.queuePrefix + clientId, eventId: Secrets.identifier(),
                    eventType: Self.eventType, body: body, nextAttemptAt: now, createdAt: now),
                limit: Self.queueLimit)
            if !queued {
                logger.error("back-channel logout not queued: the application's queue is full", metadata: ["client": .string(clientId)])
            }
        }
    }

    // MARK: Delivery

    /// Delivers due notices until cancelled.
    func runDelivery() async {
        while !Task.isCancelled {
            await deliverDue()
            try? await Task.sleep(for: AuditWebhooks.pollInterval)
        }
    }

    /// One pass: the sessions ended since the last, then each application's due notices, the applications side by side
    /// (one that does not answer holds up only its own queue).
    func deliverDue() async {
        await announceEndedSessions()
        let queues: [String]
        do {
            queues = try await store.webhookQueueDepths().keys.filter { $0.hasPrefix(Self.queuePrefix) }
        } catch {
            logger.error("cannot read the back-channel logout queue", metadata: ["error.type": .string("\(type(of: error))")])
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for queue in queues {
                group.addTask { await self.deliverDue(queue: queue) }
            }
        }
    }

    private func deliverDue(queue: String) async {
        let clientId = String(queue.dropFirst(Self.queuePrefix.count))
        let now = clock.now
        let lease = now.addingTimeInterval(TimeInterval(timeoutSeconds * Self.batchSize + 60))
        let due: [QueuedWebhookDelivery]
        let client: ClientConfiguration?
        do {
            due = try await store.claimDueWebhookDeliveries(webhookId: queue, now: now, leaseUntil: lease, limit: Self.batchSize)
            guard !due.isEmpty else { return }
            client = try await store.client(id: clientId)?.configuration
        } catch {
            logger.error("cannot read the back-channel logout queue", metadata: ["client": .string(clientId)])
            return
        }
        for (index, delivery) in due.enumerated() {
            guard let client, let uri = client.backchannelLogoutUri, let url = URL(string: uri) else {
                await drop(delivery, clientId: clientId, attempts: delivery.attempts, reason: "the application no longer takes them")
                continue
            }
            if clock.now.timeIntervalSince(delivery.createdAt) > Self.maximumAgeSeconds {
                await drop(delivery, clientId: clientId, attempts: delivery.attempts, reason: "too old")
                continue
            }
            let outcome: OutboundHTTPClient.DeliveryOutcome
            do { outcome = try await send(delivery, to: url, client: client) } catch {
                outcome = .unreachable("the logout token could not be made (\(type(of: error)))")
            }
            if case .status(let status) = outcome, (200..<300).contains(status) {
                try? await store.deleteWebhookDelivery(id: delivery.id)
                logger.debug(
                    "back-channel logout delivered", metadata: ["client": .string(clientId), "attempt": "\(delivery.attempts + 1)"])
                continue
            }
            if Task.isCancelled {
                for row in due[index...] { try? await store.rescheduleWebhookDelivery(id: row.id, attempts: row.attempts, nextAttemptAt: now) }
                return
            }
            let reason: String
            switch outcome {
            case .status(let status): reason = "answered \(status)"
            case .unreachable(let why): reason = why
            }
            let attempt = delivery.attempts + 1
            let next = clock.now.addingTimeInterval(DeliveryBackoff.delay(afterAttempt: attempt, retrySeconds: Self.retrySeconds))
            if attempt >= Self.maximumAttempts || next.timeIntervalSince(delivery.createdAt) > Self.maximumAgeSeconds {
                await drop(delivery, clientId: clientId, attempts: attempt, reason: reason)
                continue
            }
            logger.warning(
                "back-channel logout failed; will retry",
                metadata: [
                    "client": .string(clientId), "attempt": "\(attempt)", "reason": .string(reason),
                    "retry_in_seconds": "\(Int(next.timeIntervalSince(clock.now)))"
                ])
            try? await store.rescheduleWebhookDelivery(id: delivery.id, attempts: attempt, nextAttemptAt: next)
        }
    }

    private func drop(_ delivery: QueuedWebhookDelivery, clientId: String, attempts: Int, reason: String) async {
        logger.error(
            "giving up on a back-channel logout", metadata: ["client": .string(clientId), "attempts": "\(attempts)", "reason": .string(reason)])
        try? await store.deleteWebhookDelivery(id: delivery.id)
    }

    /// One POST of a freshly signed logout token (Back-Channel Logout §2.5: `application/x-www-form-urlencoded`, the
    /// token as `logout_token`).
    private func send(_ delivery: QueuedWebhookDelivery, to url: URL, client: ClientConfiguration) async throws -> OutboundHTTPClient.DeliveryOutcome
    {
        let notice = try JSONDecoder().decode(Notice.self, from: Data(delivery.body.utf8))
        let token = try await LogoutToken.sign(
            subject: subjects.subject(of: notice.sub, for: client), sessionId: notice.sid, clientId: client.clientId, jti: delivery.eventId,
            issuer: issuerInForce(),
            now: clock.now, key: try await keys.signingKey(client.idTokenSignedResponseAlg))
        // A compact JWS is base64url and dots: nothing in it needs form encoding.
        return await http.deliver(
            url, headers: [("Content-Type", "application/x-www-form-urlencoded"), ("User-Agent", "Latchkey-Logout/1")],
            body: Data(("logout_token=" + token).utf8),
            limits: .init(timeoutSeconds: timeoutSeconds, maximumBytes: Self.maximumAnswerBytes, reach: reach.of(client: client.clientId)))
    }
}

/// The `logout_token` of Back-Channel Logout §2.4: a JWT signed like the application's ID tokens, typed
/// `logout+jwt` (so it can never pass for an ID token), with `iss`, `aud` (the application), `iat`, a two-minute `exp`,
/// `jti`, the logout `events` member, `sub` and `sid` — and never a `nonce`.
enum LogoutToken {
    static let event = "http://schemas.openid.net/event/backchannel-logout"
    static let type = "logout+jwt"
    static let lifetimeSeconds = 120

    static func claims(subject: String, sessionId: String, clientId: String, jti: String, issuer: String, now: Date) -> [String: JSONValue] {
        let iat = Int(now.timeIntervalSince1970)
        return [
            "iss": .string(issuer), "aud": .string(clientId), "iat": .number(Double(iat)), "exp": .number(Double(iat + lifetimeSeconds)),
            "jti": .string(jti), "sub": .string(subject), "sid": .string(sessionId), "events": .object([event: .object([:])])
        ]
    }

    static func sign(subject: String, sessionId: String, clientId: String, jti: String, issuer: String, now: Date, key: SigningKey)
        async throws -> String
    {
        try key.sign(
            claims: claims(subject: subject, sessionId: sessionId, clientId: clientId, jti: jti, issuer: issuer, now: now), type: type)
    }
}
