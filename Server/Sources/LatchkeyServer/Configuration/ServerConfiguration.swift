import Foundation

/// Everything a server instance needs to start. Built from defaults, an optional JSON file (`--config`) and flags.
public struct ServerConfiguration: Sendable {
    /// Public base URL; the `iss` of every token and the prefix of every endpoint in discovery.
    public var issuer: URL
    /// Interface to bind. `127.0.0.1` unless the operator asks otherwise.
    public var host: String
    /// Port to bind; 0 picks a free one (tests).
    public var port: Int
    /// Where the data lives: a SQLite file path (the default, one instance) or a PostgreSQL URL
    /// (`postgres://user@host:5432/latchkey`, shared by several instances; see `DatabaseLocation`).
    public var databasePath: String
    /// PostgreSQL only: the most connections one instance opens (`database_pool_size`).
    public var databasePoolSize: Int = 10
    /// PostgreSQL only: how long a statement, a lock wait or a wait for a connection may take before the request fails
    /// with 503 (`database_timeout_seconds`).
    public var databaseTimeoutSeconds: Int = 10
    /// PostgreSQL only: how long a pooled connection may stay unused before it is closed (`database_idle_seconds`).
    /// Every open connection is a process on the database server; a quiet instance gives its connections back.
    public var databaseIdleSeconds: Int = 60
    /// How long the server waits for a URL an application gave it (a `jwks_uri`, a `request_uri`, a back-channel logout
    /// URI) to answer, connect included (`outbound_timeout_seconds`). Short by default: a slow application must not
    /// hold the request that needed its document.
    public var outboundTimeoutSeconds: Int = 5
    /// Development mode: emails are only recorded (readable at `GET /dev/outbox`) and mobile attestation is waived.
    /// Allowed only with a loopback issuer; `latchkey serve` turns it on only without `--config`, with `--dev` or
    /// with `"development": true`.
    public var development: Bool
    public var clients: [ClientConfiguration]
    public var users: [UserSeed]
    public var lifetimes: TokenLifetimes
    public var loginPolicy: LoginPolicy
    /// bcrypt cost for new password hashes (12 in production; tests lower it to keep suites fast).
    public var bcryptCost: UInt8
    /// Lets `bcryptCost` go below `minimumProductionBcryptCost` outside development mode, and hashes client secrets
    /// with few PBKDF2 rounds. For test suites only (they hash at cost 4 to stay fast); not settable from the
    /// configuration file.
    public var allowsLowBcryptCost = false
    /// PBKDF2 rounds for client secrets stored from now on; nil: `ClientSecrets.rounds` (1,000 with
    /// `allowsLowBcryptCost`). Not read from the configuration file: tests of the production cost set it.
    public var clientSecretRounds: Int?
    /// The attributes of user accounts (registration, profile, SCIM).
    public var userSchema: UserSchema = .standard
    /// Delivery of email and SMS (one-time codes). Nil: the database in development, otherwise nowhere (logged).
    public var outbox: (any Outbox)?
    /// Checks `Attestation-Token`s of `mobile` applications outside development mode.
    public var attestationVerifier: (any AttestationVerifier)?
    /// The WebAuthn relying party (passkeys).
    public var webAuthn = WebAuthnSettings()
    /// Where Sign in with Apple identity tokens come from and how they are verified.
    public var apple = AppleSettings()
    /// The apps and web origins the association files name (`/.well-known/apple-app-site-association`,
    /// `/.well-known/webauthn`).
    public var associations = AssociationSettings()
    /// A file holding the key-encryption key of secrets at rest (base64 of 32 bytes, mode 0600). The
    /// `LATCHKEY_KEY_ENCRYPTION_KEY` environment variable takes precedence; in development, with neither, a key file is
    /// generated next to the database. Outside development one of them is required.
    public var keyEncryptionKeyFile: String?
    /// The key-encryption key itself (32 bytes), for servers embedded in another program; overrides the others.
    public var keyEncryptionKey: Data?
    /// Reverse proxies whose forwarding header names the client (`trusted_proxies`, `client_address_header`);
    /// none by default, so forwarding headers are ignored and the socket peer is the client.
    public var trustedProxies: TrustedProxies = .noneTrusted
    /// How often expired rows (pending logins, flow executions, tokens, sessions, ceremonies, outbox) are deleted;
    /// 0 turns the periodic pruning off.
    public var pruneIntervalSeconds: Int = 600
    /// How long audit events are kept (`audit_retention_days`), in days; older ones are deleted with the expired rows.
    public var auditRetentionDays: Int = 90
    /// How long an account whose owner asked to delete it (`DELETE /users/me`) is kept, in days
    /// (`account_deletion_grace_days`, 0–365): meanwhile it has no sessions or tokens and signing in again restores it;
    /// then it is deleted. 0 deletes at once.
    public var accountDeletionGraceDays: Int = 0
    /// How recent the sign-in behind an access token (`auth_time`) must be, in seconds, for the token to change the
    /// account's identifiers (username, email) or its passkeys: a leaked token alone must not take the account over.
    public var recentAuthenticationSeconds: Int = 300
    /// How long after its rotation a refresh token presented again by the same application (and DPoP key) is answered
    /// with the successor already issued rather than treated as a replay (`refresh_token_reuse_seconds`, 0–300; 0
    /// turns it off). The default covers an answer lost on a mobile network and an app's extensions racing one
    /// rotation, and is short enough that a stolen token used later still revokes the family (`RefreshTokenReuse`).
    /// It is longer than the SDK's request timeout (30 s of silence) so that an answer lost silently, noticed only at
    /// that timeout, is still inside it when the SDK sends the refresh again at once.
    public var refreshTokenReuseSeconds: Int = 60
    /// Email delivery through an SMTP relay (used when `outbox` is nil). Required outside development when an
    /// application sends emails (recovery, emailed codes).
    public var smtp: SMTPSettings?
    /// Seconds a keep-alive HTTP connection may sit idle between requests before it is closed.
    public var httpIdleTimeoutSeconds: Int = 60
    /// Seconds a client has to send a whole request (head and body) from its first byte, and to make room for an
    /// answer it is not reading; slower connections are closed, however they pace their bytes (slowloris).
    /// `ConnectionDeadlineHandler`.
    public var httpRequestTimeoutSeconds: Int = 30
    /// DPoP (RFC 9449): how old a proof may be and whether proofs must carry a server nonce.
    public var dpop = DPoPPolicy()
    /// Whether `GET /metrics` is served: nil (the default) serves it only on a development instance bound to a
    /// loopback address that trusts no proxy, and then only to requests that no proxy forwarded (see `servesMetrics`),
    /// since the figures are for the operator's scraper, not for the internet; true or false decides outright.
    public var metricsEnabled: Bool?
    /// Other identity providers people may sign in with (`identity_providers`); an application offers those it names
    /// in its own `identity_providers`.
    public var identityProviders: [IdentityProviderConfiguration] = []
    /// Whether a public application (no client authentication) may use the implicit or hybrid response types
    /// (`allow_implicit_for_public_clients`, off): its tokens would come through the browser with nothing to tie them
    /// to the application (RFC 9700 §2.1.2). Applies to the configuration file and to registration alike.
    public var allowImplicitForPublicClients = false
    /// What applications registered at runtime (`/oauth2/register`, RFC 7591) may be (`client_registration`).
    public var clientRegistration = ClientRegistrationPolicy()
    /// The admin console at `/admin` (`console`): on by default; only accounts with the `admin` role and a second
    /// factor can sign in to it.
    public var consoleEnabled = true
    /// The account page at `/account` (`account_page`): on by default; any account signs in to it to manage itself.
    public var accountPageEnabled = true
    /// Receivers of the audit trail (`audit_webhooks`): each event one selects is queued in the store and POSTed to
    /// it, signed (`AuditWebhooks`).
    public var auditWebhooks: [AuditWebhook] = []
    /// Whether the server's service group runs the delivery loops: audit webhooks (when `auditWebhooks` is not empty)
    /// and back-channel logout. Tests turn it off and run each pass themselves (`IdentityServer.deliverAuditWebhooks()`,
    /// `deliverBackChannelLogouts()`); not read from the configuration file.
    public var runsDeliveryLoops = true
    /// Resolves the host names of URLs applications gave the server (`jwks_uri`, `request_uris`, back-channel logout
    /// URIs) before it connects to a checked address (`OutboundHTTPClient`). Nil: the system's resolver. Tests give one
    /// that answers names of their choosing; not read from the configuration file.
    public var hostResolver: (any HostResolver)?
    /// Serves `sector_identifier_uri` documents in place of fetching them (tests: a registered application may only
    /// name public `https` URLs, which a test cannot serve). Nil: fetched (`SectorDocuments`).
    var sectorDocuments: SectorDocuments?

    /// `clientRegistration` with the server-wide rules registration follows too.
    var registrationPolicy: ClientRegistrationPolicy {
        var policy = clientRegistration
        policy.publicClientsMayUseImplicit = allowImplicitForPublicClients
        return policy
    }

    /// The provider with this id.
    func identityProvider(_ id: String) -> IdentityProviderConfiguration? { identityProviders.first { $0.id == id } }

    /// Whether `GET /metrics` is routed: `metricsEnabled`, or, when it is unset, a development instance on a loopback
    /// binding with no trusted proxies. A real server must say `"metrics": true`: on 127.0.0.1 behind a
    /// reverse proxy (the setup docs/operating.md recommends) it is reachable from the internet through the proxy, and a
    /// proxy that adds no forwarding header cannot be told from a local scraper.
    public var servesMetrics: Bool {
        metricsEnabled ?? (development && LoopbackHost.isLoopback(host) && trustedProxies.isEmpty)
    }

    public init(
        issuer: URL, host: String = "127.0.0.1", port: Int = 8090, databasePath: String,
        development: Bool = false, clients: [ClientConfiguration] = [], users: [UserSeed] = [],
        lifetimes: TokenLifetimes = TokenLifetimes(), loginPolicy: LoginPolicy = LoginPolicy(), bcryptCost: UInt8 = 12
    ) {
        self.issuer = issuer; self.host = host; self.port = port; self.databasePath = databasePath
        self.development = development; self.clients = clients; self.users = users
        self.lifetimes = lifetimes; self.loginPolicy = loginPolicy; self.bcryptCost = bcryptCost
    }

    /// `databasePath` read as a SQLite path or a PostgreSQL URL.
    public var databaseLocation: DatabaseLocation {
        get throws { try DatabaseLocation(databasePath) }
    }

    /// The issuer string exactly as it appears in tokens (no trailing slash).
    public var issuerString: String {
        var s = issuer.absoluteString
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }

    /// Plain HTTP is only acceptable when the server is reachable on loopback alone (RFC 8252 §8.3 spirit):
    /// anything else must sit behind TLS, which we expect a reverse proxy to terminate.
    public var usesPlainHTTPOnLoopback: Bool {
        issuer.scheme == "http" && LoopbackHost.isLoopback(issuer.host ?? "")
    }

    /// The lowest `bcrypt_cost` accepted outside development mode.
    public static let minimumProductionBcryptCost: UInt8 = 10

    /// Refuses configurations that would expose credentials over plain HTTP.
    public func validate() throws {
        guard let scheme = issuer.scheme, scheme == "https" || scheme == "http", issuer.host != nil else {
            throw ConfigurationError.invalid("issuer must be an absolute http(s) URL, got \(issuer.absoluteString)")
        }
        if issuer.query != nil || issuer.fragment != nil {
            throw ConfigurationError.invalid("issuer must not have a query or fragment (OpenID Connect Discovery §3)")
        }
        guard (10...3600).contains(dpop.proofLifetimeSeconds) else {
            throw ConfigurationError.invalid("dpop.proof_lifetime_seconds must be between 10 and 3600")
        }
        guard (1...60).contains(lifetimes.devicePollingInterval), (60...3600).contains(lifetimes.deviceCode) else {
            throw ConfigurationError.invalid("lifetimes.device_polling_interval must be 1–60 s and lifetimes.device_code 60–3600 s")
        }
        if scheme == "http" {
            guard LoopbackHost.isLoopback(issuer.host ?? "") else {
                throw ConfigurationError.invalid(
                    "plain http is only allowed for a loopback issuer; put a TLS-terminating reverse proxy in front and set an https issuer")
            }
            guard LoopbackHost.isLoopback(host) else {
                throw ConfigurationError.invalid(
                    "binding \(host) with an http issuer would serve credentials in clear text off this machine; use an https issuer behind a TLS proxy"
                )
            }
        }
        let p = loginPolicy
        guard p.maxConcurrentHashes >= 1, p.maxQueuedHashes >= 0, p.maxTrackedAddresses >= 1, p.maxFailuresPerAccount >= 1,
            p.maxFailuresPerAccountAllAddresses >= 1,
            p.maxFailuresPerAddress >= 1, p.maxStartsPerAddress >= 1, p.maxRegistrationsPerAddress >= 1,
            p.maxClientAuthFailuresPerAddress >= 1, p.maxClientAuthFailuresPerClient >= 1,
            p.maxAuditedClientAuthFailuresPerAddress >= 1
        else {
            throw ConfigurationError.invalid(
                "login_policy: max_concurrent_hashes, max_tracked_addresses and the max_* per-address and per-account limits must be at least 1, max_queued_hashes at least 0"
            )
        }
        // bcrypt accepts 4...31; below 10 a stolen database is cheap to crack, so only development mode and test
        // suites (`allowsLowBcryptCost`, cost 4 to stay fast) may go lower.
        guard (4...31).contains(bcryptCost) else { throw ConfigurationError.invalid("bcrypt_cost must be between 4 and 31") }
        guard development || allowsLowBcryptCost || bcryptCost >= Self.minimumProductionBcryptCost else {
            throw ConfigurationError.invalid("bcrypt_cost must be at least \(Self.minimumProductionBcryptCost) outside development mode")
        }
        guard pruneIntervalSeconds >= 0 else { throw ConfigurationError.invalid("prune_interval_seconds must not be negative") }
        guard (1...36_500).contains(auditRetentionDays) else {
            throw ConfigurationError.invalid("audit_retention_days must be between 1 and 36500")
        }
        // Checked here, not only when read from a file, so configurations built in code (embedding, tests) obey them too.
        for (name, value) in [
            ("max_code_failures_per_account", p.maxCodeFailuresPerAccount), ("code_window_seconds", p.codeWindowSeconds),
            ("max_recovery_emails_per_account", p.maxRecoveryEmailsPerAccount),
            ("max_recovery_code_failures", p.maxRecoveryCodeFailures)
        ] where value < 1 {
            throw ConfigurationError.invalid("login_policy.\(name) must be at least 1, got \(value)")
        }
        // Below a minute nobody can finish a change after signing in; above a day the check protects nothing.
        guard (0...300).contains(refreshTokenReuseSeconds) else {
            throw ConfigurationError.invalid("refresh_token_reuse_seconds must be between 0 and 300, got \(refreshTokenReuseSeconds)")
        }
        guard (0...365).contains(accountDeletionGraceDays) else {
            throw ConfigurationError.invalid("account_deletion_grace_days must be between 0 and 365, got \(accountDeletionGraceDays)")
        }
        guard (60...86_400).contains(recentAuthenticationSeconds) else {
            throw ConfigurationError.invalid("recent_auth_seconds must be between 60 and 86400, got \(recentAuthenticationSeconds)")
        }
        guard httpIdleTimeoutSeconds >= 1 else { throw ConfigurationError.invalid("http_idle_timeout_seconds must be at least 1") }
        guard (1...3600).contains(httpRequestTimeoutSeconds) else {
            throw ConfigurationError.invalid("http_request_timeout_seconds must be between 1 and 3600")
        }
        try associations.validate(rpId: webAuthn.resolvedRpId(issuer: issuer), development: development)
        if webAuthn.attestationRequired, webAuthn.trustAnchorsDER.isEmpty {
            throw ConfigurationError.invalid("webauthn attestation required needs at least one trust anchor certificate")
        }
        try validateDeployment()
        var providers = Set<String>()
        for provider in identityProviders {
            guard providers.insert(provider.id).inserted else { throw ConfigurationError.invalid("duplicate identity provider \(provider.id)") }
            try provider.validate()
        }
        try clientRegistration.validate(providers: providers)
        // FAPI 2.0 Security Profile §5.3.2.1: authorization codes live at most 60 seconds.
        if let fapi = clients.first(where: { $0.securityProfile == .fapi2 }), lifetimes.authorizationCode > 60 {
            throw ConfigurationError.invalid(
                "client \(fapi.clientId) follows security_profile fapi2, which allows authorization codes of at most 60 s (lifetimes.authorization_code is \(lifetimes.authorizationCode))"
            )
        }
        for user in users where user.secondFactor == .email {
            guard user.claims["email"] != nil, user.claims["email_verified"] == "true" else {
                throw ConfigurationError.invalid(
                    "user \(user.username): second_factor email needs an email claim marked \"email_verified\": \"true\" (codes go only to verified addresses)"
                )
            }
        }
        var webhooks = Set<String>()
        for webhook in auditWebhooks {
            guard webhooks.insert(webhook.id).inserted else { throw ConfigurationError.invalid("duplicate audit webhook \(webhook.id)") }
            try webhook.validate()
        }
        var seen = Set<String>()
        for client in clients {
            guard seen.insert(client.clientId).inserted else { throw ConfigurationError.invalid("duplicate client \(client.clientId)") }
            try client.validate()
            if client.isPublic, !allowImplicitForPublicClients, let type = client.responseTypes.first(where: \.isFrontChannel) {
                throw ConfigurationError.invalid(
                    "client \(client.clientId) is public and lists response type \(type.rawValue): tokens through the browser for a public application need allow_implicit_for_public_clients"
                )
            }
            for id in client.identityProviders where !providers.contains(id) {
                throw ConfigurationError.invalid("client \(client.clientId): identity provider \(id) is not in identity_providers")
            }
        }
    }
}

/// Lifetimes, in seconds.
public struct TokenLifetimes: Sendable, Codable, Equatable {
    public var accessToken: Int = 3600
    public var idToken: Int = 3600
    public var authorizationCode: Int = 60
    public var refreshToken: Int = 30 * 24 * 3600
    public var session: Int = 12 * 3600
    /// How long a pending login (authorize → form submit) stays valid.
    public var loginRequest: Int = 600
    /// How long an app-native flow execution may sit between two steps.
    public var flowExecution: Int = 900
    /// Lifetime of a flow's COMPLETE assertion: it is meant to be exchanged for tokens at once (and only once).
    public var flowAssertion: Int = 300
    /// Lifetime of an emailed one-time code (second factor, password recovery).
    public var oneTimeCode: Int = 600
    /// A WebAuthn ceremony (options → authenticator → response).
    public var passkeyChallenge: Int = 300
    /// A reachFive `tkn` login ticket, from the password or passkey step to `/oauth/authorize`.
    public var loginTicket: Int = 120
    /// A device authorization (RFC 8628): how long the person has to enter the code and allow it.
    public var deviceCode: Int = 600
    /// How often a device may poll for its token, seconds (RFC 8628 `interval`; each `slow_down` adds 5).
    public var devicePollingInterval: Int = 5
    public init() {}
}

/// Brute-force protection for the hosted login form.
public struct LoginPolicy: Sendable, Codable, Equatable {
    /// Consecutive failures from one client address (IPv6: one /64) that lock the account for that address. Per
    /// address so that nobody can lock someone else out with a handful of requests.
    public var maxFailuresPerAccount: Int = 5
    /// Consecutive failures from all addresses together that lock the account for everyone: bounds guessing spread
    /// over many addresses.
    public var maxFailuresPerAccountAllAddresses: Int = 50
    /// How long a locked account stays locked.
    public var lockoutSeconds: Int = 15 * 60
    /// Failures tolerated from one address within `addressWindowSeconds`.
    public var maxFailuresPerAddress: Int = 20
    public var addressWindowSeconds: Int = 5 * 60
    /// Passkey challenges and step-up codes one address may ask for within `addressWindowSeconds` (each one stores a
    /// ceremony, and a step-up may send an email).
    public var maxChallengesPerAddress: Int = 60
    /// Wrong one-time codes (second factor: TOTP or emailed; recovery codes are counted apart) one account may submit
    /// within `codeWindowSeconds`, across executions, resends and step-up challenges; then its codes are refused
    /// until the oldest failure leaves the window.
    public var maxCodeFailuresPerAccount: Int = 10
    public var codeWindowSeconds: Int = 3600
    /// Password-recovery emails one account (or unknown identifier) may be sent within `codeWindowSeconds`.
    public var maxRecoveryEmailsPerAccount: Int = 5
    /// Wrong password-recovery codes over *all* accounts and addresses (and all instances sharing a store) within
    /// `codeWindowSeconds`; past that no recovery code is checked until the window frees up, and the operator is told
    /// (a warning in the log, `latchkey_throttled_requests_total{limit="recovery_codes"}`). An alarm against guessing
    /// spread thin; someone who trips it on purpose delays recoveries, not sign-ins.
    public var maxRecoveryCodeFailures: Int = 1000
    /// bcrypt hashes that run at once (default: one per core) and that may wait for a slot; past that a request
    /// needing a hash is refused at once with 503 `server.busy` instead of queueing without bound.
    public var maxConcurrentHashes: Int = ProcessInfo.processInfo.activeProcessorCount
    public var maxQueuedHashes: Int = 64
    /// Addresses each per-address throttle remembers at most (least recently seen are dropped beyond).
    public var maxTrackedAddresses: Int = 100_000
    /// Unauthenticated starts one address may make within `addressWindowSeconds`: authorization requests that
    /// store a pending login and flow executions (each one writes a row). The same number bounds, apart, the token
    /// requests with a DPoP proof (each proof is recorded) that fail.
    public var maxStartsPerAddress: Int = 300
    /// Registrations one address may start within `addressWindowSeconds` (REGISTRATION flows, passkey sign-up).
    public var maxRegistrationsPerAddress: Int = 20
    /// Client authentications that need a key derivation (a secret not yet verified since the start) and fail,
    /// per address and, over all addresses, per client, within `addressWindowSeconds`; past that they are refused
    /// (429) before the derivation runs. Configured clients never need one after a start (their secrets are
    /// remembered then), so this bounds what a flood of wrong secrets can cost, not what a real client may do.
    public var maxClientAuthFailuresPerAddress: Int = 20
    public var maxClientAuthFailuresPerClient: Int = 60
    /// Failed client authentications of one address that are audited one by one within `addressWindowSeconds`; past
    /// that none is written, and one `client.authentication_failed_aggregated` event per address and window says how
    /// many there were (an unknown `client_id` costs the caller nothing, so each refusal must not cost a row).
    public var maxAuditedClientAuthFailuresPerAddress: Int = 20
    public init() {}
}

public enum ConfigurationError: Error, CustomStringConvertible, Equatable {
    case invalid(String)
    public var description: String {
        switch self {
        case .invalid(let why): "invalid configuration: \(why)"
        }
    }
}

/// Loopback recognition shared by redirect-URI matching, cookie policy and configuration checks.
public enum LoopbackHost {
    public static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if h == "localhost" || h == "::1" { return true }
        let parts = h.split(separator: ".")
        return parts.count == 4 && parts.first == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// How the server checks DPoP proofs (RFC 9449).
public struct DPoPPolicy: Sendable, Equatable {
    /// Proofs must carry the nonce the server sends in `DPoP-Nonce` (§8); one that lacks it, or carries an old one, is
    /// answered `use_dpop_nonce` with a fresh nonce, which clients retry with once. A nonce lives 5 to 10 minutes.
    public var requireNonce = false
    /// How old a proof's `iat` may be, seconds; its `jti` is remembered that long.
    public var proofLifetimeSeconds = 300
    /// How far ahead of the server's clock a proof's `iat` may be: clock skew, not validity. (Clients that learn the
    /// server's time from its `Date` header, as Latchkey's SDK does, date their proofs within it.)
    public static let maximumFutureSkewSeconds: TimeInterval = 30
    /// The defaults: no nonce, five minutes.
    public init(requireNonce: Bool = false, proofLifetimeSeconds: Int = 300) {
        self.requireNonce = requireNonce
        self.proofLifetimeSeconds = proofLifetimeSeconds
    }
}
