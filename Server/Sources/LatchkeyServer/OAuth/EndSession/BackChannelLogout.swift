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
/// out everywhere", an administrator, a password change, a disabled or deleted account). Each pass of the delivery
/// loop (`DeliveryLoop`, run by a `DeliveryService` beside the HTTP server) first claims the ends not announced yet and
/// queues one notice per application in the store's delivery queue (kind `backchannel_logout`, the client id as
/// destination), then delivers the due notices (`LogoutDeliverer`), retried with doubling backoff (from
/// `retrySeconds` up to an hour) until the application answers 2xx, for at most `maximumAttempts` attempts and a day.
/// The token is signed at each attempt (fresh `iat`/`exp`) with the same `jti`, so an application that did log out but
/// whose answer was lost can recognise the retry. An application deleted or no longer registering the URI gets nothing
/// more.
///
/// Announcing happens after the sign-out, never in its way: errors are logged and the next pass tries again.
struct BackChannelLogout: Sendable {
    let loop: DeliveryLoop<LogoutDeliverer>

    static let eventType = "backchannel_logout"
    static let retrySeconds = 5
    static let maximumAttempts = 12
    static let maximumAgeSeconds = 86400
    /// Notices waiting for one application at most: an application that never answers does not fill the store.
    static let queueLimit = 10000

    init(
        store: any Store, keys: KeyRing, issuerInForce: @escaping @Sendable () -> String, clock: ServerClock, reach: OutboundReach,
        http: OutboundHTTPClient, timeoutSeconds: Int, subjects: SubjectIdentifiers, metrics: ServerMetrics, logger: Logger
    ) {
        let policy = DeliveryPolicy(
            timeoutSeconds: timeoutSeconds, maxAttempts: Self.maximumAttempts, maxAgeSeconds: Self.maximumAgeSeconds,
            retrySeconds: Self.retrySeconds, queueLimit: Self.queueLimit)
        let deliverer = LogoutDeliverer(
            store: store, keys: keys, issuerInForce: issuerInForce, clock: clock, reach: reach, http: http, policy: policy,
            subjects: subjects, announce: Announcer(store: store, clock: clock, logger: logger))
        self.loop = DeliveryLoop(
            deliverer: deliverer, store: store, clock: clock, metrics: metrics, logger: logger, pollInterval: AuditWebhooks.pollInterval)
    }

    /// What a queued notice holds: the logout token's subject and session, fixed when the session ended.
    struct Notice: Codable, Equatable {
        var sub: String
        var sid: String
    }

    /// Delivers due notices until cancelled.
    func runDelivery() async { await loop.run() }

    /// One pass: the sessions ended since the last, then each application's due notices, the applications side by side
    /// (one that does not answer holds up only its own queue).
    func deliverDue() async { await loop.deliverDue() }

    /// Queues the notices of sessions that ended since the last pass, by whatever path they ended (the store records
    /// the end; `SessionStore.claimEndedSessions`), so no way of ending a session can forget to announce it.
    struct Announcer: Sendable {
        let store: any Store
        let clock: ServerClock
        let logger: Logger

        /// Sessions whose end is announced per pass.
        static let batch = 100

        func announceEndedSessions() async {
            let now = clock.now
            do {
                while true {
                    let ended = try await store.claimEndedSessions(now: now, leaseUntil: now.addingTimeInterval(60), limit: Self.batch)
                    for session in ended {
                        try await queueNotices(for: session)
                        try await store.markSessionEndAnnounced(id: session.id)
                    }
                    if ended.count < Self.batch || Task.isCancelled { return }
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
                let queued = try await store.enqueueDelivery(
                    QueuedDelivery(
                        id: Secrets.identifier(), kind: .backchannelLogout, destination: clientId, eventId: Secrets.identifier(),
                        eventType: BackChannelLogout.eventType, body: body, nextAttemptAt: now, createdAt: now),
                    limit: BackChannelLogout.queueLimit)
                if !queued {
                    logger.error("back-channel logout not queued: the application's queue is full", metadata: ["client": .string(clientId)])
                }
            }
        }
    }
}

/// Sends one queued notice: a freshly signed logout token POSTed to the application's `backchannel_logout_uri`.
struct LogoutDeliverer: Deliverer {
    let store: any Store
    let keys: KeyRing
    let issuerInForce: @Sendable () -> String
    let clock: ServerClock
    /// Where each application's notices may go: a registered application's URI is resolved at each attempt and never
    /// reaches the server's own network (`OutboundHTTPClient`, review 3 R3-5).
    let reach: OutboundReach
    let http: OutboundHTTPClient
    let policy: DeliveryPolicy
    /// The `sub` each application is given (a pairwise application's logout token names the account as its ID tokens did).
    let subjects: SubjectIdentifiers
    let announce: BackChannelLogout.Announcer

    /// What one application's notices go to: its configuration and its URI.
    struct Receiver: Sendable {
        var client: ClientConfiguration
        var url: URL
    }

    var kind: DeliveryKind { .backchannelLogout }
    var batchSize: Int { 10 }
    var concurrency: Int { 4 }
    /// Every application's notices share the one policy.
    var leaseTimeoutSeconds: Int { policy.timeoutSeconds }
    var wording: DeliveryWording { DeliveryWording(attempt: "back-channel logout", item: "a back-channel logout") }
    /// The applications with notices waiting: anyone may register one.
    var configuredDestinations: [String]? { nil }
    /// One series for every application: registered ones are not a closed set.
    var metricsLabels: [String] { ["applications"] }
    func metricsLabel(of destination: String) -> String { "applications" }

    func beforePass() async { await announce.announceEndedSessions() }

    /// Nil once the application is deleted or no longer registers a URI: its notices are given up.
    func target(for clientId: String) async throws -> (Receiver, DeliveryPolicy)? {
        guard let client = try await store.client(id: clientId)?.configuration, let uri = client.backchannelLogoutUri,
            let url = URL(string: uri)
        else { return nil }
        return (Receiver(client: client, url: url), policy)
    }

    /// The most of an application's answer read (and ignored): only its status matters.
    static let maximumAnswerBytes = 64 * 1024

    /// One POST of a freshly signed logout token (Back-Channel Logout §2.5: `application/x-www-form-urlencoded`, the
    /// token as `logout_token`).
    func send(_ delivery: QueuedDelivery, to receiver: Receiver) async -> DeliveryAnswer {
        let client = receiver.client
        let token: String
        do {
            let notice = try JSONDecoder().decode(BackChannelLogout.Notice.self, from: Data(delivery.body.utf8))
            token = try await LogoutToken.sign(
                subject: subjects.subject(of: notice.sub, for: client), sessionId: notice.sid, clientId: client.clientId,
                jti: delivery.eventId, issuer: issuerInForce(), now: clock.now, key: try await keys.signingKey(client.idTokenSignedResponseAlg))
        } catch {
            return .failed("the logout token could not be made (\(type(of: error)))")
        }
        // A compact JWS is base64url and dots: nothing in it needs form encoding.
        let outcome = await http.deliver(
            receiver.url, headers: [("Content-Type", "application/x-www-form-urlencoded"), ("User-Agent", "Latchkey-Logout/1")],
            body: Data(("logout_token=" + token).utf8),
            limits: .init(timeoutSeconds: policy.timeoutSeconds, maximumBytes: Self.maximumAnswerBytes, reach: reach.of(client: client.clientId)))
        return DeliveryAnswer(outcome)
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
