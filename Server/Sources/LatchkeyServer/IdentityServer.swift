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
    let cookies: CookiePolicy
    /// The logger the server was opened with: the application's, which Hummingbird gives every request as
    /// `context.logger` (with the request's id, `RequestIdMiddleware`).
    let logger: Logger
    /// SMTP delivery, when configured: its queue is worked by a service that runs with the HTTP server.
    let smtpOutbox: SMTPOutbox?
    /// Delivery of audit events to webhooks, when configured (`audit_webhooks`): the audit trail's sink, and a queue
    /// worked by a service that runs with the HTTP server.
    let auditWebhooks: AuditWebhooks?
    /// Back-channel logout: announces ended sessions to the applications that took part (`BackChannelLogout`).
    let backChannelLogout: BackChannelLogout
    /// The counters and histograms `GET /metrics` exposes (one registry per server).
    public let metrics: ServerMetrics
    private let issuerBox: NIOLockedValueBox<String>

    // The parts the controllers are built from (`makeRouter`), each holding only what it needs.
    let kit: TokenKit
    let accounts: Accounts
    let admission: Admission
    let pruner: Pruner
    let ownTokens: OwnTokens
    let passkeys: Passkeys
    let apple: NativeAppleSignIn
    let dpop: DPoPVerifier
    let resources: ResourceAuthenticator
    let clientAuthentication: ClientAuthentication
    /// Applications' keys by value or fetched from their `jwks_uri` (cached), and request objects at `request_uris`.
    let clientKeys: ClientKeySets
    let requestObjectReferences: RequestObjectReference
    let sectorDocuments: SectorDocuments
    let nativeSignIn: NativeSignInPolicy
    /// The nonces of native provider sign-in, and the spending of the upstream tokens exchanged with them.
    let nativeNonces: NativeSignInNonces
    let sessions: SignInSessions
    let browserSessions: BrowserSessions
    let responses: AuthorizationResponses
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    /// Security-relevant events: rows in the store, log lines, a metric (`Audit/AuditTrail.swift`).
    let audit: AuditTrail
    /// Deletions of accounts their owners asked for (`DELETE /users/me`).
    let accountDeletions: AccountDeletions
    /// Token requests that carried a DPoP proof (recorded as used) and failed, per address.
    let proofThrottle: any AddressLimiter
    /// The reuse interval of rotated refresh tokens (`refresh_token_reuse_seconds`).
    let refreshReuse: RefreshTokenReuse

    /// The issuer in force. With port 0 in the configured issuer, it is completed with the bound port at start.
    public var issuer: String { issuerBox.withLockedValue { $0 } }

    private init(
        configuration: ServerConfiguration, store: any Store, sharedStore: Bool, clock: ServerClock, logger: Logger,
        sealer: SecretSealer, metrics: ServerMetrics, smtp: SMTPOutbox? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.logger = logger
        let policy = configuration.loginPolicy
        let hasher = PasswordHasher(cost: configuration.bcryptCost, maxConcurrent: policy.maxConcurrentHashes, maxQueued: policy.maxQueuedHashes)
        self.hasher = hasher
        let window = TimeInterval(policy.addressWindowSeconds)
        self.metrics = metrics
        // The server's one HTTP client: every request it makes (providers, Apple, applications' documents, logout
        // tokens, webhooks) goes through it, each use with its own limits.
        let outbound = OutboundHTTPClient(resolver: configuration.hostResolver ?? SystemHostResolver())
        let webhooks =
            configuration.auditWebhooks.isEmpty
            ? nil
            : AuditWebhooks(
                webhooks: configuration.auditWebhooks, store: store, http: outbound, clock: clock, metrics: metrics, logger: logger)
        self.auditWebhooks = webhooks
        let audit = AuditTrail(store: store, clock: clock, metrics: metrics, sinks: webhooks.map { [$0] } ?? [])
        self.audit = audit
        // Per-address limits live in memory with one instance on SQLite, and in the store when instances share
        // PostgreSQL (`AddressLimiter`).
        func limiter(_ bucket: String, _ limit: Int, _ kind: ServerMetrics.Limit) -> any AddressLimiter {
            let limiter: any AddressLimiter =
                sharedStore
                ? SharedAddressThrottle(store: store, bucket: bucket, limit: limit, window: window)
                : AddressThrottle(limit: limit, window: window, capacity: policy.maxTrackedAddresses)
            return MeteredAddressLimiter(limiter: limiter, limit: kind, metrics: metrics)
        }
        let cookies = CookiePolicy(secure: !configuration.usesPlainHTTPOnLoopback)
        self.cookies = cookies
        let longest = max(configuration.lifetimes.accessToken, configuration.lifetimes.idToken)
        let keys = KeyRing(store: store, clock: clock, retentionAfterRetirement: TimeInterval(longest + 3600))
        self.keys = keys
        let issuerBox = NIOLockedValueBox(configuration.issuerString)
        self.issuerBox = issuerBox
        self.smtpOutbox = smtp
        let fallback: any Outbox = configuration.development ? StoreOutbox(store: store) : UndeliverableOutbox(logger: logger)
        let outbox = configuration.outbox ?? smtp ?? fallback

        let issuerInForce: @Sendable () -> String = { issuerBox.withLockedValue { $0 } }
        // The server's requests to URLs applications gave it (key sets, request objects, back-channel logout) reach
        // anywhere for the configuration file's applications and only public addresses for registered ones.
        let reach = OutboundReach(operatorClients: Set(configuration.clients.map(\.clientId)))
        let subjects = SubjectIdentifiers(sealer: sealer)
        self.refreshReuse = RefreshTokenReuse(seconds: configuration.refreshTokenReuseSeconds, sealer: sealer)
        self.backChannelLogout = BackChannelLogout(
            store: store, keys: keys, issuerInForce: issuerInForce, clock: clock, reach: reach, http: outbound,
            timeoutSeconds: configuration.outboundTimeoutSeconds, subjects: subjects, metrics: metrics, logger: logger)
        let kit = TokenKit(
            issuerInForce: issuerInForce, store: store, keys: keys, lifetimes: configuration.lifetimes, clock: clock, subjects: subjects)
        self.kit = kit
        let accounts = Accounts(
            configuration: configuration, store: store, clock: clock, hasher: hasher,
            throttle: limiter("failed-logins", policy.maxFailuresPerAddress, .login), recoveryAlarm: OncePerInterval(),
            sealer: sealer, outbox: outbox, metrics: metrics, audit: audit)
        self.accounts = accounts
        let http = UpstreamHTTP(http: outbound, outboundTimeoutSeconds: configuration.outboundTimeoutSeconds)
        let federation = Federation(
            providers: configuration.identityProviders, issuerInForce: issuerInForce, directory: UpstreamDirectory(http: http), http: http,
            store: store, clock: clock, lifetimes: configuration.lifetimes, metrics: metrics, sealer: sealer)
        self.federation = federation
        let deletions = AccountDeletions(
            store: store, accounts: accounts, federation: federation, audit: audit, clock: clock,
            graceDays: configuration.accountDeletionGraceDays, logger: logger)
        self.accountDeletions = deletions
        let pruner = Pruner(
            store: store, clock: clock, intervalSeconds: configuration.pruneIntervalSeconds,
            auditRetentionDays: configuration.auditRetentionDays, deletions: deletions, schedule: OncePerInterval(), logger: logger)
        self.pruner = pruner
        self.admission = Admission(
            startThrottle: limiter("starts", policy.maxStartsPerAddress, .start),
            registrationThrottle: limiter("registrations", policy.maxRegistrationsPerAddress, .registration),
            challengeThrottle: limiter("challenges", policy.maxChallengesPerAddress, .challenge), clock: clock, pruner: pruner)
        self.proofThrottle = limiter("dpop-proof-failures", policy.maxStartsPerAddress, .dpopProof)
        // Documents applications registered by URL: their key sets (`jwks_uri`) and request objects (`request_uris`).
        let documents = ClientDocumentFetcher(
            http: outbound, reach: reach, timeoutSeconds: configuration.outboundTimeoutSeconds, logger: logger)
        let clientKeys = ClientKeySets(fetcher: documents, logger: logger)
        self.clientKeys = clientKeys
        self.requestObjectReferences = RequestObjectReference(fetcher: documents)
        self.sectorDocuments = configuration.sectorDocuments ?? SectorDocuments(fetcher: documents)
        self.clientAuthentication = ClientAuthentication(
            store: store,
            throttles: ClientAuthThrottles(
                perAddress: limiter("client-auth", policy.maxClientAuthFailuresPerAddress, .clientAuthentication),
                perClient: limiter("client-auth-per-client", policy.maxClientAuthFailuresPerClient, .clientAuthentication)),
            clock: clock, audit: audit, issuer: issuerInForce, keys: clientKeys,
            auditBudget: AddressAuditBudget(
                limit: policy.maxAuditedClientAuthFailuresPerAddress, window: window, capacity: policy.maxTrackedAddresses))
        let sessions = SignInSessions(
            store: store, clock: clock, lifetime: configuration.lifetimes.session, audit: audit, deletions: deletions)
        self.sessions = sessions
        self.browserSessions = BrowserSessions(store: store, cookies: cookies, clock: clock)
        self.ownTokens = OwnTokens(kit: kit, sessions: sessions)
        self.passkeys = Passkeys(
            webAuthn: configuration.webAuthn, configuredIssuer: configuration.issuer, issuerInForce: issuerInForce,
            lifetimes: configuration.lifetimes, userSchema: configuration.userSchema, store: store, clock: clock, metrics: metrics,
            audit: audit)
        let dpop = DPoPVerifier(kit: kit, settings: configuration.dpop, sealer: sealer)
        self.dpop = dpop
        self.resources = ResourceAuthenticator(kit: kit, dpop: dpop)
        self.nativeNonces = NativeSignInNonces(sealer: sealer, store: store, clock: clock)
        self.nativeSignIn = NativeSignInPolicy(development: configuration.development, attestationVerifier: configuration.attestationVerifier)
        self.responses = AuthorizationResponses(kit: kit)
        let federatedAccounts = FederatedAccounts(store: store, userSchema: configuration.userSchema, clock: clock, audit: audit)
        self.federatedAccounts = federatedAccounts
        self.apple = NativeAppleSignIn(
            appleKeys: AppleKeySet(settings: configuration.apple, http: http, metrics: metrics), appleIssuer: configuration.apple.issuer,
            clock: clock, metrics: metrics, federation: federation, accounts: federatedAccounts)
    }

    /// Validates the configuration, opens (and migrates) the database, creates signing keys on first start and
    /// seeds the configured clients and users.
    public static func open(
        configuration: ServerConfiguration, clock: ServerClock = .system,
        logger: Logger = Logger(label: "latchkey.server")
    ) async throws -> IdentityServer {
        try configuration.validate()
        for warning in configuration.associations.warnings(
            issuer: configuration.issuer, rpId: configuration.webAuthn.resolvedRpId(issuer: configuration.issuer), clients: configuration.clients)
        {
            logger.warning("\(warning)")
        }
        KeyEncryptionKeySource.restrictFileCreation()
        let sealer = try SecretSealer(keyEncryptionKey: try KeyEncryptionKeySource.resolve(configuration, logger: logger))
        let store = try await openStore(configuration, sealer: sealer, logger: logger)
        let shared = store is PostgresStore
        let metrics = ServerMetrics()
        let smtp = try configuration.smtp.map { try SMTPOutbox(settings: $0, store: store, clock: clock, metrics: metrics, logger: logger) }
        let server = IdentityServer(
            configuration: configuration, store: store, sharedStore: shared, clock: clock, logger: logger,
            sealer: sealer, metrics: metrics, smtp: smtp)
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
                    timeout: .seconds(configuration.databaseTimeoutSeconds),
                    idleTimeout: .seconds(configuration.databaseIdleSeconds), logger: logger)
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
            // The file is the source of the applications it names: one registered through the API under the same id
            // becomes a configured one (its registration access token stops working).
            if try await store.client(id: client.clientId)?.origin == .registration {
                logger.warning(
                    "the configuration file names a registered application; the file's settings replace it",
                    metadata: ["client_id": .string(client.clientId)])
            }
            try await store.upsertClient(ClientRecord(configuration: client, secretHash: try await seededSecretHash(client)))
            // Instances starting together on one database may each have written a fresh form: the last one stands, and
            // that is the one to remember (one derivation here, none per request).
            if let secret = client.clientSecret, let stored = try await store.client(id: client.clientId)?.secretHash,
                !ClientSecrets.isCheap(stored)
            {
                _ = try await ClientSecrets.verify(secret, against: stored)
            }
        }
        // The console's own application, unless the file defines one under its id.
        if configuration.consoleEnabled, !configuration.clients.contains(where: { $0.clientId == ConsoleClient.id }) {
            try await store.upsertClient(
                ClientRecord(configuration: ConsoleClient.application.configuration(issuer: configuration.issuer), secretHash: nil))
        }
        // The account page's, with this server's passkeys and every provider: each way an account signs in opens it.
        if configuration.accountPageEnabled, !configuration.clients.contains(where: { $0.clientId == AccountClient.id }) {
            let client = AccountClient.application.configuration(
                issuer: configuration.issuer, passkeyOrigins: ["self"], identityProviders: configuration.identityProviders.map(\.id))
            try await store.upsertClient(ClientRecord(configuration: client, secretHash: nil))
        }
        for seed in configuration.users where try await store.user(username: seed.username) == nil {
            let id = try await createUser(
                username: seed.username, password: seed.password, claims: UserRoles.claims(seed.claims, roles: seed.roles),
                disabled: seed.disabled)
            if seed.secondFactor == .email { try await enrollEmailOTP(userId: id) }
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
        try await accounts.createUser(username: username, password: password, claims: claims, disabled: disabled)
    }

    /// Deletes expired rows now: pending logins, flow executions, authorization codes, access tokens, refresh tokens
    /// (expired, or of a revoked family), sessions (expired or ended), consumed token ids, passkey and step-up
    /// ceremonies, outbox messages older than a day, audit events older than `audit_retention_days`, and accounts
    /// whose deletion grace period ended. Returns the number of rows (and accounts) deleted.
    @discardableResult
    public func pruneExpired() async throws -> Int { try await pruner.pruneExpired() }

    /// Deletes now the accounts whose deletion grace period (`account_deletion_grace_days`) has ended, as pruning
    /// does; returns how many this call deleted (an account another instance deleted first is not counted).
    @discardableResult
    public func deleteDueAccounts() async throws -> Int { try await accountDeletions.deleteDue() }

    /// One pass of webhook delivery now: every due delivery of every webhook is tried once (what the delivery loop does
    /// until nothing is due). For servers run without the loop (`runsDeliveryLoops` off: tests drive it this way).
    func deliverAuditWebhooks() async {
        await auditWebhooks?.deliverDue()
    }

    /// One pass of back-channel logout now: the sessions ended since the last pass are announced, and every due notice
    /// is tried once (what the loop does each second). For servers run without the loop (`runsDeliveryLoops` off).
    func deliverBackChannelLogouts() async {
        await backChannelLogout.deliverDue()
    }

    /// Releases the store's connections (PostgreSQL) when the server was used without running its application (whose
    /// service group closes them at shutdown). Nothing to do on SQLite.
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
        // The pool first: services stop in reverse order, so mail and webhook delivery (which read their queues from the
        // store) stop before the pool closes, and the HTTP server (Hummingbird runs it last) before all of them.
        var services: [any Service] = []
        if let pool = store as? PostgresStore { services.append(PostgresStore.PoolService(store: pool)) }
        if let smtpOutbox { services.append(DeliveryService { await smtpOutbox.runDelivery() }) }
        if let auditWebhooks, configuration.runsDeliveryLoops { services.append(DeliveryService { await auditWebhooks.runDelivery() }) }
        if configuration.runsDeliveryLoops {
            let backChannelLogout = self.backChannelLogout
            services.append(DeliveryService { await backChannelLogout.runDelivery() })
        }
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
            services: services,
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
        let (store, clock, issuer) = (self.store, self.clock, kit.issuerInForce)
        let discovery = DiscoveryController(
            issuer: issuer, keys: keys,
            responseTypes: configuration.clients.flatMap(\.responseTypes) + configuration.clientRegistration.responseTypes)
        let userInfo = UserInfoController(authenticate: resources.authenticateResource, store: store, keys: keys, issuer: issuer)
        let endSession = EndSessionController(
            validator: { [kit] in kit.validator }, issuer: issuer, store: store, sessions: browserSessions, cookies: cookies, clock: clock,
            subjects: kit.subjects)
        let consent = ConsentGate(store: store, clock: clock, lifetimes: configuration.lifetimes)
        let authorize = AuthorizeController(
            admission: admission,
            resolver: AuthorizationRequestResolver(
                store: store, clock: clock, issuer: { [kit] in kit.issuer }, clientKeys: clientKeys, references: requestObjectReferences),
            ticketSignIn: LoginTicketSignIn(store: store, ownTokens: ownTokens, accounts: accounts, sessions: sessions, responses: responses),
            providerSignIn: NativeProviderSignIn(
                clock: clock, nativeSignIn: nativeSignIn, nativeNonces: nativeNonces, apple: apple, federation: federation,
                federatedAccounts: federatedAccounts, accounts: accounts, ownTokens: ownTokens, sessions: sessions, responses: responses),
            browserSignIn: BrowserSignIn(
                store: store, clock: clock, lifetimes: kit.lifetimes, browserSessions: browserSessions, federation: federation,
                accounts: accounts, consent: consent, responses: responses, metrics: metrics, audit: audit),
            responses: responses, audit: audit)
        let pushed = PushedAuthorizationController(
            store: store, clock: clock, admission: admission, clientAuthentication: clientAuthentication, dpop: dpop, issuer: issuer,
            keys: clientKeys)
        let device = DeviceController(
            recentAuthenticationSeconds: configuration.recentAuthenticationSeconds, kit: kit, cookies: cookies, admission: admission,
            clientAuthentication: clientAuthentication,
            accounts: accounts, browserSessions: browserSessions, audit: audit)
        let token = TokenController(
            clientAuthentication: clientAuthentication, dpop: dpop, proofThrottle: proofThrottle, pruner: pruner, clock: clock,
            grants: TokenController.grants(kit: kit, ownTokens: ownTokens, refreshReuse: refreshReuse, metrics: metrics, audit: audit))
        let tokenManagement = TokenManagementController(kit: kit, clientAuthentication: clientAuthentication, dpop: dpop, audit: audit)
        let freshness = AdministratorFreshness(window: configuration.recentAuthenticationSeconds, clock: clock)
        let registration = ClientRegistrationController(
            registrations: ClientRegistrations(
                store: store, clock: clock, policy: configuration.registrationPolicy,
                providers: Set(configuration.identityProviders.map(\.id)), audit: audit, sectors: sectorDocuments),
            resources: resources, store: store, admission: admission, freshness: freshness, issuerInForce: issuer)
        // The OAuth family, mounted twice: each mount a group with the error middleware of its dialect.
        for (path, isReachFive) in [("/oauth2", false), ("/oauth", true)] {
            let group = router.group(RouterPath(path))
                .add(middleware: ErrorMiddleware(metrics: metrics, dialect: isReachFive ? .reachFiveOAuth : .oauth))
            let mount = OAuthMount(routes: group, isReachFive: isReachFive)
            authorize.addRoutes(to: mount)
            pushed.addRoutes(to: mount)
            device.addRoutes(to: mount)
            token.addRoutes(to: mount)
            tokenManagement.addRoutes(to: mount)
            userInfo.addRoutes(to: mount)
            endSession.addRoutes(to: mount)
            registration.addRoutes(to: mount)
            discovery.addRoutes(to: mount)
        }
        // Every other family on a group of its own, with the error middleware of its dialect; the protected ones
        // behind the resource authentication, their handlers given a context that carries the caller.
        func group(_ path: RouterPath, _ dialect: Dialect) -> RouterGroup<LatchkeyRequestContext> {
            router.group(path).add(middleware: ErrorMiddleware(metrics: metrics, dialect: dialect))
        }
        func protected(
            _ group: RouterGroup<LatchkeyRequestContext>, refusal: (@Sendable (OAuthError, Request) throws -> Response)? = nil,
            accountManagement: Bool = false
        ) -> RouterGroup<ResourceRequestContext> {
            group.add(middleware: ResourceAuthenticationMiddleware(authenticator: resources, refusal: refusal, accountManagement: accountManagement))
                .group(context: ResourceRequestContext.self)
        }
        let wellKnown = group("/.well-known", .oauth)
        discovery.addRoutes(to: wellKnown)
        AssociationController(
            settings: configuration.associations, issuerHost: configuration.issuer.host ?? "", clients: configuration.clients
        ).addRoutes(to: wellKnown)
        // Pages, the development outbox and the operability endpoints answer errors as pages.
        let pages = group("", .html)
        device.addRoutes(to: pages)
        let hostedLogin = HostedLoginController(
            lifetimes: configuration.lifetimes, store: store, clock: clock, cookies: cookies, sessions: sessions, accounts: accounts,
            passkeys: passkeys, ownTokens: ownTokens, responses: responses, federation: federation, federatedAccounts: federatedAccounts,
            audit: audit, consent: consent,
            passkeyOffer: PasskeyOfferGate(enabled: configuration.webAuthn.offerAfterPassword, store: store, cookies: cookies, passkeys: passkeys),
            admission: admission)
        hostedLogin.addRoutes(to: pages)
        ConsentController(store: store, clock: clock, cookies: cookies, browserSessions: browserSessions, responses: responses, audit: audit)
            .addRoutes(to: pages)
        PasskeyOfferController(
            store: store, clock: clock, cookies: cookies, browserSessions: browserSessions, passkeys: passkeys, consent: consent,
            responses: responses,
            accounts: accounts
        ).addRoutes(to: pages)
        // Other identity providers send the browser back here; failures are pages in the person's language.
        let federationController = FederationController(federation: federation, hostedSignIn: hostedLogin, store: store, audit: audit)
        federationController.addRoutes(to: group("/federation", .html))
        PasskeyPageController().addRoutes(to: pages)
        OperabilityController(
            store: store, keys: keys, metrics: metrics, servesMetrics: configuration.servesMetrics,
            metricsOnlyDirect: configuration.metricsEnabled == nil
        ).addRoutes(to: pages)

        // thunderID: app-native flows and the signed-in user's own account.
        let executors = FlowExecutors(
            authentication: AuthenticationExecutors(accounts: accounts, store: store, clock: clock, audit: audit),
            codes: CodeExecutors(
                accounts: accounts, admission: admission, store: store, clock: clock, lifetimes: configuration.lifetimes,
                outbox: accounts.outbox, audit: audit),
            registration: RegistrationExecutors(
                accounts: accounts, store: store, userSchema: accounts.userSchema, hasher: accounts.hasher, clock: clock),
            recovery: RecoveryExecutors(accounts: accounts, store: store, audit: audit),
            passkeys: PasskeyExecutors(accounts: accounts, passkeys: passkeys, store: store, clock: clock),
            federation: FederationExecutors(federation: federation, federatedAccounts: federatedAccounts, clock: clock),
            sessions: SessionExecutors(accounts: accounts, ownTokens: ownTokens, kit: kit, store: store, clock: clock))
        FlowController(
            development: configuration.development, lifetimes: configuration.lifetimes, store: store, executors: executors,
            userSchema: accounts.userSchema, clock: clock, admission: admission, federation: federation, kit: kit,
            resources: resources, nativeSignIn: nativeSignIn, metrics: metrics
        ).addRoutes(to: group("/flow", .thunder), development: group("/dev", .html))
        // The account's own management: first-party applications, or tokens with `latchkey.account` (R3-2).
        let me = protected(group("/users/me", .thunder), refusal: SelfServiceHTTP.refusal, accountManagement: true)
        SelfServiceController(
            store: store, clock: clock, accounts: accounts, deletions: accountDeletions, export: AccountExport(store: store, clock: clock),
            admission: admission, audit: audit
        )
        .addRoutes(to: me)
        let identityLinkChanges = IdentityLinkChanges(
            store: store, federation: federation, federatedAccounts: federatedAccounts, accounts: accounts, audit: audit)
        LinkedIdentitiesController(store: store, accounts: accounts, changes: identityLinkChanges).addRoutes(to: me)
        let secondFactorChanges = SecondFactorChanges(store: store, clock: clock, accounts: accounts, audit: audit)
        SecondFactorsController(changes: secondFactorChanges).addRoutes(to: me)
        // Administration (administrators only, each handler checks): a user's sessions and grants, the audit trail.
        let admin = protected(group("/admin/v1", .thunder), refusal: SelfServiceHTTP.refusal)
        // A user's sessions and grants: the user's own on `/users/me`, any user's for administrators on `/admin/v1`.
        let sessionsController = SessionsController(store: store, clock: clock, audit: audit)
        sessionsController.addSelfRoutes(to: me)
        sessionsController.addAdminRoutes(to: admin)
        let consents = ConsentsController(store: store, clock: clock, audit: audit)
        consents.addSelfRoutes(to: me)
        consents.addAdminRoutes(to: admin)
        AuditController(store: store, clock: clock).addRoutes(to: admin)
        ApplicationsController(store: store, issuerInForce: issuer).addRoutes(to: admin)
        LockoutController(store: store, clock: clock, audit: audit, freshness: freshness).addRoutes(to: admin)

        // The admin console: pages over the same administration, for operators signed in through the hosted page.
        if configuration.consoleEnabled {
            let registrations = ClientRegistrations(
                store: store, clock: clock, policy: configuration.registrationPolicy,
                providers: Set(configuration.identityProviders.map(\.id)), audit: audit, sectors: sectorDocuments)
            ConsoleController(
                access: ConsoleAccess(kit: kit, store: store, cookies: cookies, freshness: freshness),
                applications: ConsoleApplications(store: store, registrations: registrations),
                users: ConsoleUsers(accounts: accounts, store: store, audit: audit), audit: ConsoleAudit(store: store)
            ).addRoutes(to: group("/admin", .html))
        }

        // The account page: the same self-service, for people in a browser, signed in through the hosted page.
        if configuration.accountPageEnabled {
            let profileChanges = ProfileChanges(store: store, clock: clock, accounts: accounts, audit: audit, channel: .accountPage)
            AccountController(
                access: AccountAccess(kit: kit, store: store, cookies: cookies, accounts: accounts),
                profile: AccountProfile(store: store, changes: profileChanges),
                security: AccountSecurity(changes: profileChanges, factors: secondFactorChanges),
                passkeys: AccountPasskeys(store: store, passkeys: passkeys, accounts: accounts),
                linked: AccountLinkedAccounts(store: store, changes: identityLinkChanges, cookies: cookies),
                sessions: AccountSessions(store: store, ending: SessionEnding(store: store, clock: clock, audit: audit)),
                applications: AccountApplications(store: store, clock: clock, audit: audit),
                data: AccountData(export: AccountExport(store: store, clock: clock), deletions: accountDeletions, audit: audit)
            ).addRoutes(to: group("/account", .html))
        }
        HomePage(accountPageEnabled: configuration.accountPageEnabled).addRoutes(to: pages)

        // SCIM 2.0: the accounts behind the resource authentication, the discovery resources public.
        let scim = SCIMController(
            issuerInForce: issuer, store: store, accounts: accounts, deletions: accountDeletions, audit: audit)
        scim.addRoutes(me: protected(group("/scim2", .scim), accountManagement: true), users: protected(group("/scim2", .scim)))
        scim.addDiscoveryRoutes(to: group("/scim2", .scim))

        // reachFive's identity API.
        let identity = group("/identity/v1", .reachFive)
        userInfo.addIdentityRoutes(to: identity)
        federationController.addProviderList(to: [identity, group("/api/v1", .reachFive)])
        ReachFivePasswordController(store: store, clock: clock, accounts: accounts, ownTokens: ownTokens, nativeSignIn: nativeSignIn)
            .addRoutes(to: identity)
        NativeNonceController(store: store, nonces: nativeNonces, admission: admission, nativeSignIn: nativeSignIn).addRoutes(to: identity)
        StepUpController(
            lifetimes: configuration.lifetimes, store: store, clock: clock, issuerInForce: issuer, accounts: accounts, ownTokens: ownTokens,
            admission: admission, sessions: sessions, responses: responses, audit: audit
        ).addRoutes(to: identity)
        ReachFivePasskeyController(
            store: store, clock: clock, accounts: accounts, passkeys: passkeys, ownTokens: ownTokens, admission: admission,
            nativeSignIn: nativeSignIn
        ).addRoutes(
            to: group("/identity/v1/webauthn", .reachFive), signedIn: protected(group("/identity/v1/webauthn", .reachFive), accountManagement: true))
        return router
    }
}
