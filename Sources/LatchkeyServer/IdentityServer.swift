import Foundation
import Hummingbird
import LatchkeyJOSE
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// The Latchkey identity server: an OpenID Connect provider serving the standard, thunderID and reachFive dialects.
///
/// ```swift
/// let server = try await IdentityServer.open(configuration: DevelopmentDefaults.configuration())
/// try await server.run()
/// ```
public final class IdentityServer: Sendable {
    public let configuration: ServerConfiguration
    let store: any Store
    let keys: KeyRing
    let clock: ServerClock
    let hasher: PasswordHasher
    /// Failed password attempts per address. These four limits live in memory with one instance on SQLite and in
    /// the store when instances share PostgreSQL (`AddressLimiter`).
    let throttle: any AddressLimiter
    /// Passkey challenges and step-up codes per address (every request counts, not only failures).
    let challengeThrottle: any AddressLimiter
    /// Authorization requests and flow starts per address (each one writes a row).
    let startThrottle: any AddressLimiter
    /// Registrations started per address (REGISTRATION flows, passkey sign-up).
    let registrationThrottle: any AddressLimiter
    /// Token requests that carried a DPoP proof (recorded as used) and failed, per address.
    let proofThrottle: any AddressLimiter
    /// Logs the shared recovery-code budget's tripping once per window (`reserveRecoveryCodeAttempt`).
    let recoveryAlarm = OncePerInterval()
    /// Failed client authentications that cost a key derivation, per address and per client.
    let clientAuthThrottles: ClientAuthThrottles
    /// When expired rows were last deleted (`pruneIfDue`).
    let pruneSchedule = OncePerInterval()
    let cookies: CookiePolicy
    /// The logger the server was opened with; log through `logger`, which adds the request's id.
    let baseLogger: Logger
    /// The server's logger, with the `request_id` of the request the calling task serves (`RequestIdMiddleware` sets
    /// it), so that every line a request causes — a replay, a lockout, a refused passkey — is found by the id its
    /// answer carries. Outside a request (start-up, background work) it is the logger the server was opened with.
    var logger: Logger {
        guard let id = RequestIdMiddleware.current else { return baseLogger }
        var logger = baseLogger
        logger[metadataKey: "request_id"] = .string(id)
        return logger
    }
    let outbox: any Outbox
    let appleKeys: AppleKeySet
    /// Seals secrets at rest and keys one-time code digests (`SecretSealer`).
    let sealer: SecretSealer
    /// SMTP delivery, when configured: its queue is worked by a service that runs with the HTTP server.
    let smtpOutbox: SMTPOutbox?
    /// The counters and histograms `GET /metrics` exposes (one registry per server).
    public let metrics: ServerMetrics
    private let issuerBox: NIOLockedValueBox<String>

    /// The issuer in force. With port 0 in the configured issuer, it is completed with the bound port at start.
    public var issuer: String { issuerBox.withLockedValue { $0 } }

    var tokens: TokenIssuer {
        TokenIssuer(issuer: issuer, store: store, keys: keys, lifetimes: configuration.lifetimes, clock: clock)
    }

    private init(
        configuration: ServerConfiguration, store: any Store, sharedStore: Bool, clock: ServerClock, logger: Logger,
        sealer: SecretSealer, smtp: SMTPOutbox? = nil
    ) {
        self.sealer = sealer
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.baseLogger = logger
        let policy = configuration.loginPolicy
        self.hasher = PasswordHasher(cost: configuration.bcryptCost, maxConcurrent: policy.maxConcurrentHashes, maxQueued: policy.maxQueuedHashes)
        let window = TimeInterval(policy.addressWindowSeconds)
        let metrics = ServerMetrics()
        self.metrics = metrics
        func limiter(_ bucket: String, _ limit: Int, _ kind: ServerMetrics.Limit) -> any AddressLimiter {
            let limiter: any AddressLimiter =
                sharedStore
                ? SharedAddressThrottle(store: store, bucket: bucket, limit: limit, window: window)
                : AddressThrottle(limit: limit, window: window, capacity: policy.maxTrackedAddresses)
            return MeteredAddressLimiter(limiter: limiter, limit: kind, metrics: metrics)
        }
        self.throttle = limiter("failed-logins", policy.maxFailuresPerAddress, .login)
        self.challengeThrottle = limiter("challenges", policy.maxChallengesPerAddress, .challenge)
        self.startThrottle = limiter("starts", policy.maxStartsPerAddress, .start)
        self.registrationThrottle = limiter("registrations", policy.maxRegistrationsPerAddress, .registration)
        self.proofThrottle = limiter("dpop-proof-failures", policy.maxStartsPerAddress, .dpopProof)
        self.clientAuthThrottles = ClientAuthThrottles(
            perAddress: limiter("client-auth", policy.maxClientAuthFailuresPerAddress, .clientAuthentication),
            perClient: limiter("client-auth-per-client", policy.maxClientAuthFailuresPerClient, .clientAuthentication))
        self.cookies = CookiePolicy(secure: !configuration.usesPlainHTTPOnLoopback)
        let longest = max(configuration.lifetimes.accessToken, configuration.lifetimes.idToken)
        self.keys = KeyRing(store: store, clock: clock, retentionAfterRetirement: TimeInterval(longest + 3600))
        self.issuerBox = NIOLockedValueBox(configuration.issuerString)
        self.appleKeys = AppleKeySet(settings: configuration.apple, metrics: metrics)
        self.smtpOutbox = smtp
        let fallback: any Outbox = configuration.development ? StoreOutbox(store: store) : UndeliverableOutbox(logger: logger)
        self.outbox = configuration.outbox ?? smtp ?? fallback
    }

    /// Validates the configuration, opens (and migrates) the database, creates signing keys on first start and
    /// seeds the configured clients and users.
    public static func open(
        configuration: ServerConfiguration, clock: ServerClock = .system,
        logger: Logger = Logger(label: "latchkey.server")
    ) async throws -> IdentityServer {
        try configuration.validate()
        KeyEncryptionKeySource.restrictFileCreation()
        let sealer = try SecretSealer(keyEncryptionKey: try KeyEncryptionKeySource.resolve(configuration, logger: logger))
        let store = try await openStore(configuration, sealer: sealer, logger: logger)
        let shared = store is PostgresStore
        let smtp = try configuration.smtp.map { try SMTPOutbox(settings: $0, store: store, clock: clock, logger: logger) }
        let server = IdentityServer(
            configuration: configuration, store: store, sharedStore: shared, clock: clock, logger: logger,
            sealer: sealer, smtp: smtp)
        try await server.keys.bootstrap()
        try await server.seed()
        return server
    }

    /// The SQLite file, or the PostgreSQL database (`ServerConfiguration.database`), migrated to this build's schema.
    static func openStore(_ configuration: ServerConfiguration, sealer: SecretSealer?, logger: Logger) async throws -> any Store {
        do {
            switch try configuration.databaseLocation {
            case .sqlite(let path):
                return try SQLiteStore(path: path, sealer: sealer)
            case .postgres(let location):
                return try await PostgresStore.open(
                    location: location, sealer: sealer, poolSize: configuration.databasePoolSize,
                    timeout: .seconds(configuration.databaseTimeoutSeconds), logger: logger)
            }
        } catch let error as SecretSealerError {
            throw ConfigurationError.invalid(error.description)
        } catch StoreError.schemaTooNew(let found, let known) {
            throw ConfigurationError.invalid(
                "the database schema is at version \(found), newer than this Latchkey knows (\(known)): it was migrated by a newer release; run that release (or a newer one)"
            )
        } catch StoreError.unavailable(let reason) {
            throw ConfigurationError.invalid("the database \(try configuration.databaseLocation) cannot be reached (\(reason))")
        }
    }

    private func seed() async throws {
        for client in configuration.clients {
            try await store.upsertClient(ClientRecord(configuration: client, secretHash: try await seededSecretHash(client)))
            // Instances starting together on one database may each have written a fresh form: the last one stands, and
            // that is the one to remember (one derivation here, none per request).
            if let secret = client.clientSecret, let stored = try await store.client(id: client.clientId)?.secretHash,
                !ClientSecrets.isCheap(stored)
            {
                _ = try await ClientSecrets.verify(secret, against: stored)
            }
        }
        for seed in configuration.users where try await store.user(username: seed.username) == nil {
            try await createUser(
                username: seed.username, password: seed.password, claims: UserRoles.claims(seed.claims, roles: seed.roles),
                disabled: seed.disabled)
        }
    }

    /// The stored form of a configured client's secret, with the secret remembered so that authenticating the client
    /// never needs a key derivation after a start (a flood of wrong secrets on a cold instance made the
    /// real client wait behind it, answered 503). A stored form that already verifies the secret is kept: the other
    /// instances on the same database remember that one, and a new salt at every start would send them back to the
    /// key derivation. Salted PBKDF2 (`ClientSecrets`); test suites use few rounds (`allowsLowBcryptCost`).
    private func seededSecretHash(_ client: ClientConfiguration) async throws -> Data? {
        guard let secret = client.clientSecret else { return nil }
        let rounds = configuration.clientSecretRounds ?? (configuration.allowsLowBcryptCost ? 1_000 : ClientSecrets.rounds)
        if let existing = try await store.client(id: client.clientId)?.secretHash, ClientSecrets.isCurrentForm(existing, rounds: rounds),
            try await ClientSecrets.verify(secret, against: existing)
        {
            return existing  // `verify` remembered it
        }
        let fresh = try ClientSecrets.hash(secret, rounds: rounds)
        ClientSecrets.remember(secret, for: fresh)
        return fresh
    }

    /// Creates a user with a bcrypt password hash.
    @discardableResult
    public func createUser(username: String, password: String, claims: [String: String] = [:], disabled: Bool = false) async throws -> String {
        let id = UUID().uuidString.lowercased()
        try await store.insertUser(
            UserRecord(
                id: id, username: username, passwordHash: try await hasher.hash(password), claims: claims,
                disabled: disabled, failedLogins: 0, lockedUntil: nil, createdAt: clock.now))
        return id
    }

    /// Releases the store's connections (PostgreSQL); call after the application has stopped. Nothing to do on SQLite.
    public func close() {
        (store as? PostgresStore)?.close()
    }

    /// Generates new signing keys; the previous ones stay in the JWKS until their tokens have expired.
    public func rotateKeys() async throws -> [String] { try await keys.rotate() }

    /// The published key set (what `/oauth2/jwks` serves).
    public func jwks() async throws -> JWKSet { try await keys.jwks() }

    // MARK: Running

    /// The Hummingbird application. `onRunning` receives the bound port (useful with port 0).
    public func application(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let configuredIssuer = configuration.issuer
        let issuerBox = self.issuerBox
        let requestTimeout = TimeAmount.seconds(Int64(configuration.httpRequestTimeoutSeconds))
        let metrics = self.metrics
        let closed: @Sendable (ServerMetrics.ConnectionClose) -> Void = { metrics.connectionClosed($0) }
        return Application(
            router: makeRouter(),
            // Heads past the limits are answered 431 (`HeaderLimitHandler`); a client that trickles a request, or
            // does not read its answer, is cut off after `http_request_timeout_seconds` (`ConnectionDeadlineHandler`).
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [
                        HeaderLimitHandler(onClose: closed),
                        ConnectionDeadlineHandler(timeout: requestTimeout, onClose: closed)
                    ],
                    idleTimeout: .seconds(Int64(configuration.httpIdleTimeoutSeconds)),
                    httpDecoderConfiguration: RequestSizeLimits.decoder)),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            services: smtpOutbox.map { [MailDeliveryService(outbox: $0) as any Service] } ?? [],
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                if configuredIssuer.port == 0, var components = URLComponents(url: configuredIssuer, resolvingAgainstBaseURL: false) {
                    components.port = port
                    if let resolved = components.url?.absoluteString {
                        issuerBox.withLockedValue { $0 = resolved.hasSuffix("/") ? String(resolved.dropLast()) : resolved }
                    }
                }
                await onRunning(port)
            },
            logger: logger)
    }

    /// Runs until SIGINT/SIGTERM.
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await application(onRunning: onRunning).runService()
    }

    func makeRouter() -> Router<LatchkeyRequestContext> {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: RequestIdMiddleware())
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        if configuration.issuer.scheme == "https" { router.add(middleware: StrictTransportSecurityMiddleware()) }
        router.add(middleware: ErrorMiddleware(metrics: metrics))
        router.add(middleware: BodyLimitMiddleware())
        router.add(middleware: ClientAddressMiddleware(proxies: configuration.trustedProxies))
        // What the controllers hold: the issuer in force (completed with the bound port at start), and the pieces.
        let issuerBox = self.issuerBox
        let issuer: @Sendable () -> String = { issuerBox.withLockedValue { $0 } }
        let (store, keys, clock) = (self.store, self.keys, self.clock)
        let discovery = DiscoveryController(issuer: issuer, keys: keys)
        discovery.addRoutes(to: router)
        let userInfo = UserInfoController(authenticate: { try await self.authenticateResource($0, body: $1) }, store: store)
        let endSession = EndSessionController(
            validator: { TokenValidator(issuer: issuer(), store: store, keys: keys, clock: clock) },
            store: store, sessions: browserSessions, cookies: cookies, clock: clock)
        // The OAuth family, mounted twice: each mount a group with the error middleware of its dialect.
        for (path, isReachFive) in [("/oauth2", false), ("/oauth", true)] {
            let group = router.group(RouterPath(path))
                .add(middleware: ErrorMiddleware(metrics: metrics, dialect: isReachFive ? .reachFiveOAuth : .oauth))
            let mount = OAuthMount(routes: group, isReachFive: isReachFive)
            addAuthorizeRoutes(mount)
            addPushedAuthorizationRoutes(mount)
            addDeviceAuthorizationRoutes(mount)
            addTokenRoutes(mount)
            addTokenManagementRoutes(mount)
            userInfo.addRoutes(to: mount)
            endSession.addRoutes(to: mount)
            discovery.addRoutes(to: mount)
        }
        userInfo.addIdentityRoutes(to: router)
        addDeviceRoutes(router)
        addLoginRoutes(router)
        addFlowRoutes(router)
        addSelfServiceRoutes(router)
        addSCIMRoutes(router)
        addPasskeyRoutes(router)
        addPasswordLoginRoutes(router)
        addStepUpRoutes(router)
        addPasskeyPageRoutes(router)
        OperabilityController(
            store: store, keys: keys, metrics: metrics, servesMetrics: configuration.servesMetrics,
            metricsOnlyDirect: configuration.metricsEnabled == nil
        ).addRoutes(to: router)
        return router
    }
}
