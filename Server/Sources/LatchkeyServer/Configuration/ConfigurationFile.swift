import Foundation

/// The `--config FILE` format (JSON). Every key is optional; see docs/configuration.md.
///
/// ```json
/// { "issuer": "http://localhost:8090", "database": "latchkey.sqlite", "port": 8090,
///   "clients": [ { "client_id": "my-app", "redirect_uris": ["com.example.app:/callback"] } ],
///   "users": [ { "username": "ada@example.com", "password": "…", "claims": { "email": "ada@example.com" } } ],
///   "lifetimes": { "access_token": 900 }, "demo": true }
/// ```
public struct ConfigurationFile: Codable, Sendable {
    public var issuer: String?
    public var host: String?
    public var port: Int?
    /// A SQLite file path, or a PostgreSQL URL (`postgres://user@127.0.0.1:5432/latchkey`) for several instances.
    public var database: String?
    /// PostgreSQL: connections per instance (default 10).
    public var databasePoolSize: Int?
    /// PostgreSQL: seconds a statement or a wait for a connection may take before the request fails with 503 (default 10).
    public var databaseTimeoutSeconds: Int?
    /// PostgreSQL: seconds a pooled connection may stay unused before it is closed (default 60).
    public var databaseIdleSeconds: Int?
    /// Seconds the server waits for an application's URL (key set, request object, back-channel logout; default 5).
    public var outboundTimeoutSeconds: Int?
    public var clients: [ClientConfiguration]?
    public var users: [UserSeed]?
    public var lifetimes: Lifetimes?
    public var loginPolicy: Policy?
    /// Seed the demo client and user too (default: true when no clients are configured).
    public var demo: Bool?
    public var bcryptCost: UInt8?
    public var webauthn: WebAuthn?
    public var apple: Apple?
    /// A file holding the base64 of the 32-byte key that encrypts signing keys and TOTP secrets (mode 0600).
    public var keyEncryptionKeyFile: String?
    /// Reverse proxies (addresses or CIDR blocks) whose forwarding header names the client, e.g.
    /// `["127.0.0.1", "::1"]` behind a local proxy; `client_address_header` is `x-forwarded-for` (default) or
    /// `forwarded` (RFC 7239), whichever the proxy writes (it must overwrite or append to it, never pass it through).
    public var trustedProxies: [String]?
    public var clientAddressHeader: String?
    /// Seconds between deletions of expired rows (default 600; 0: never).
    public var pruneIntervalSeconds: Int?
    /// Days audit events are kept (default 90).
    public var auditRetentionDays: Int?
    /// `"account_deletion_grace_days": 0`: how long a deleted account can be restored by signing in again.
    public var accountDeletionGraceDays: Int?
    /// `"recent_auth_seconds": 300`: how recent a sign-in must be to change the username, email or passkeys.
    public var recentAuthSeconds: Int?
    /// `"refresh_token_reuse_seconds": 60`: how long a rotated refresh token presented again by its application gets
    /// the successor it was already given instead of a replay revocation (0: never; `RefreshTokenReuse`).
    public var refreshTokenReuseSeconds: Int?
    /// `"allow_implicit_for_public_clients": true`: public applications may list implicit or hybrid response types.
    public var allowImplicitForPublicClients: Bool?
    /// Development mode (emails recorded at `/dev/outbox`, no attestation); loopback issuers only.
    public var development: Bool?
    /// Email delivery; see `SMTPFile`.
    public var smtp: SMTPFile?
    public var httpIdleTimeoutSeconds: Int?
    /// Seconds a client has to send a whole request (default 30; slowloris).
    public var httpRequestTimeoutSeconds: Int?
    /// `{"require_nonce": true, "proof_lifetime_seconds": 300}` (RFC 9449).
    public var dpop: DPoPFile?
    /// `"metrics": true` serves `GET /metrics` (Prometheus) on any binding; `false` never. Unset: loopback bindings only.
    public var metrics: Bool?
    /// Other identity providers people may sign in with (`IdentityProviderFile`); each application lists the ones its
    /// users may use in its own `identity_providers`.
    public var identityProviders: [IdentityProviderFile]?
    /// What applications registered through `/oauth2/register` may be (`ClientRegistrationPolicy`).
    public var clientRegistration: ClientRegistrationPolicy?
    /// `"console": false` turns the admin console (`/admin`) off.
    public var console: Bool?
    /// `"account_page": false` turns the account page (`/account`) off.
    public var accountPage: Bool?
    /// The association files (`AssociationSettings`): `{"apple_app_ids": ["ABCDE12345.com.example.app"],
    /// "related_origins": ["https://example.co.uk"]}`.
    public var associations: Associations?
    /// Receivers of the audit trail (`AuditWebhookFile`): each event they select is POSTed to them, signed.
    public var auditWebhooks: [AuditWebhookFile]?

    public struct DPoPFile: Codable, Sendable {
        public var requireNonce: Bool?
        public var proofLifetimeSeconds: Int?
        enum CodingKeys: String, CodingKey, CaseIterable { case requireNonce = "require_nonce", proofLifetimeSeconds = "proof_lifetime_seconds" }
    }

    /// `"webauthn": {"rp_id": "example.com", "rp_name": "Example", "user_verification": "required", "trust_anchors": ["ca.pem"],
    /// "attestation": "required", "offer_after_password": false}`
    public struct WebAuthn: Codable, Sendable {
        public var rpId, rpName, userVerification: String?
        /// PEM files of attestation root certificates (paths relative to the working directory).
        public var trustAnchors: [String]?
        /// `optional` (default) or `required`: with `required`, a passkey registers only with an attestation chain
        /// to one of `trust_anchors` (needs at least one); `none` and self attestation are refused.
        public var attestation: String?
        /// Offer a passkey on the hosted pages right after a password sign-in (default true).
        public var offerAfterPassword: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case rpId = "rp_id", rpName = "rp_name", userVerification = "user_verification", trustAnchors = "trust_anchors", attestation
            case offerAfterPassword = "offer_after_password"
        }
    }

    /// `"apple": {"issuer": "https://appleid.apple.com", "jwks_url": "https://appleid.apple.com/auth/keys"}`
    public struct Apple: Codable, Sendable {
        public var issuer, jwksUrl: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case issuer, jwksUrl = "jwks_url" }
    }

    public struct Lifetimes: Codable, Sendable {
        public var accessToken, idToken, authorizationCode, refreshToken, session, loginRequest: Int?
        public var flowExecution, flowAssertion, oneTimeCode, passkeyChallenge, loginTicket, deviceCode, devicePollingInterval: Int?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case accessToken = "access_token", idToken = "id_token", authorizationCode = "authorization_code"
            case refreshToken = "refresh_token", session, loginRequest = "login_request"
            case flowExecution = "flow_execution", flowAssertion = "flow_assertion", oneTimeCode = "one_time_code"
            case passkeyChallenge = "passkey_challenge", loginTicket = "login_ticket", deviceCode = "device_code"
            case devicePollingInterval = "device_polling_interval"
        }
    }

    public struct Policy: Codable, Sendable {
        public var maxFailuresPerAccount, lockoutSeconds, maxFailuresPerAddress, addressWindowSeconds, maxChallengesPerAddress: Int?
        public var maxCodeFailuresPerAccount, codeWindowSeconds, maxRecoveryEmailsPerAccount, maxRecoveryCodeFailures: Int?
        public var maxConcurrentHashes, maxQueuedHashes, maxTrackedAddresses, maxStartsPerAddress, maxRegistrationsPerAddress: Int?
        public var maxFailuresPerAccountAllAddresses: Int?
        public var maxClientAuthFailuresPerAddress, maxClientAuthFailuresPerClient, maxAuditedClientAuthFailuresPerAddress: Int?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case maxFailuresPerAccount = "max_failures_per_account", lockoutSeconds = "lockout_seconds"
            case maxFailuresPerAddress = "max_failures_per_address", addressWindowSeconds = "address_window_seconds"
            case maxChallengesPerAddress = "max_challenges_per_address"
            case maxCodeFailuresPerAccount = "max_code_failures_per_account", codeWindowSeconds = "code_window_seconds"
            case maxRecoveryEmailsPerAccount = "max_recovery_emails_per_account"
            case maxRecoveryCodeFailures = "max_recovery_code_failures"
            case maxConcurrentHashes = "max_concurrent_hashes", maxQueuedHashes = "max_queued_hashes"
            case maxTrackedAddresses = "max_tracked_addresses", maxStartsPerAddress = "max_starts_per_address"
            case maxRegistrationsPerAddress = "max_registrations_per_address"
            case maxFailuresPerAccountAllAddresses = "max_failures_per_account_all_addresses"
            case maxClientAuthFailuresPerAddress = "max_client_auth_failures_per_address"
            case maxClientAuthFailuresPerClient = "max_client_auth_failures_per_client"
            case maxAuditedClientAuthFailuresPerAddress = "max_audited_client_auth_failures_per_address"
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case issuer, host, port, database, clients, users, lifetimes, demo
        case databasePoolSize = "database_pool_size", databaseTimeoutSeconds = "database_timeout_seconds"
        case databaseIdleSeconds = "database_idle_seconds"
        case outboundTimeoutSeconds = "outbound_timeout_seconds"
        case loginPolicy = "login_policy", bcryptCost = "bcrypt_cost", webauthn, apple
        case keyEncryptionKeyFile = "key_encryption_key_file"
        case trustedProxies = "trusted_proxies", clientAddressHeader = "client_address_header"
        case pruneIntervalSeconds = "prune_interval_seconds", auditRetentionDays = "audit_retention_days",
            accountDeletionGraceDays = "account_deletion_grace_days"
        case refreshTokenReuseSeconds = "refresh_token_reuse_seconds"
        case recentAuthSeconds = "recent_auth_seconds", allowImplicitForPublicClients = "allow_implicit_for_public_clients"
        case development, smtp, httpIdleTimeoutSeconds = "http_idle_timeout_seconds", dpop, metrics
        case httpRequestTimeoutSeconds = "http_request_timeout_seconds"
        case identityProviders = "identity_providers", clientRegistration = "client_registration", console, accountPage = "account_page"
        case auditWebhooks = "audit_webhooks", associations
    }

    /// `"associations": {"apple_app_ids": [...], "related_origins": [...]}`.
    public struct Associations: Codable, Sendable {
        public var appleAppIds, relatedOrigins: [String]?
        enum CodingKeys: String, CodingKey, CaseIterable { case appleAppIds = "apple_app_ids", relatedOrigins = "related_origins" }
    }

    public static func load(path: String) throws -> ConfigurationFile {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ConfigurationError.invalid("cannot read config file \(path): \(error.localizedDescription)")
        }
        // Unknown keys first: a typo must not leave a default in force silently.
        if let json = try? JSONSerialization.jsonObject(with: data) {
            do { try ConfigurationShape.file.check(json) } catch ConfigurationError.invalid(let why) {
                throw ConfigurationError.invalid("config file \(path): \(why)")
            }
        }
        do { return try JSONDecoder().decode(ConfigurationFile.self, from: data) } catch let error as DecodingError {
            throw ConfigurationError.invalid("config file \(path): \(Self.describe(error))")
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ ctx: DecodingError.Context) -> String { ctx.codingPath.map(\.stringValue).joined(separator: ".") }
        switch error {
        case .keyNotFound(let key, let ctx): return "missing key \(path(ctx)).\(key.stringValue)"
        case .typeMismatch(_, let ctx), .valueNotFound(_, let ctx): return "wrong type at \(path(ctx)): \(ctx.debugDescription)"
        case .dataCorrupted(let ctx): return "invalid value at \(path(ctx)): \(ctx.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    /// Applies only the database settings: pool size and timeout, checked (also for tools that open the store
    /// without serving). The database itself is `database`.
    public func applyDatabaseSettings(to base: inout ServerConfiguration) throws {
        if let databasePoolSize {
            guard (1...500).contains(databasePoolSize) else { throw ConfigurationError.invalid("database_pool_size must be 1…500") }
            base.databasePoolSize = databasePoolSize
        }
        if let databaseTimeoutSeconds {
            guard (1...600).contains(databaseTimeoutSeconds) else { throw ConfigurationError.invalid("database_timeout_seconds must be 1…600") }
            base.databaseTimeoutSeconds = databaseTimeoutSeconds
        }
        if let databaseIdleSeconds {
            guard (1...86_400).contains(databaseIdleSeconds) else { throw ConfigurationError.invalid("database_idle_seconds must be 1…86400") }
            base.databaseIdleSeconds = databaseIdleSeconds
        }
    }

    /// Applies this file over `base`.
    public func apply(to base: inout ServerConfiguration) throws {
        if let issuer {
            guard let url = URL(string: issuer) else { throw ConfigurationError.invalid("issuer \(issuer) is not a URL") }
            base.issuer = url
        }
        if let host { base.host = host }
        if let port { base.port = port }
        if let database { base.databasePath = database }
        try applyDatabaseSettings(to: &base)
        if let outboundTimeoutSeconds {
            guard (1...60).contains(outboundTimeoutSeconds) else { throw ConfigurationError.invalid("outbound_timeout_seconds must be 1…60") }
            base.outboundTimeoutSeconds = outboundTimeoutSeconds
        }
        if let users { base.users += users }
        if let bcryptCost { base.bcryptCost = bcryptCost }
        if let keyEncryptionKeyFile { base.keyEncryptionKeyFile = keyEncryptionKeyFile }
        if let pruneIntervalSeconds { base.pruneIntervalSeconds = pruneIntervalSeconds }
        if let auditRetentionDays { base.auditRetentionDays = auditRetentionDays }
        if let accountDeletionGraceDays { base.accountDeletionGraceDays = accountDeletionGraceDays }
        if trustedProxies != nil || clientAddressHeader != nil {
            guard let header = TrustedProxies.Header(rawValue: (clientAddressHeader ?? "x-forwarded-for").lowercased()) else {
                throw ConfigurationError.invalid("client_address_header must be x-forwarded-for or forwarded")
            }
            base.trustedProxies = try TrustedProxies(trustedProxies ?? [], header: header)
        }
        if let clients { base.clients = (demo ?? false) ? base.clients + clients : clients }
        if let l = lifetimes {
            if let v = l.accessToken { base.lifetimes.accessToken = v }
            if let v = l.idToken { base.lifetimes.idToken = v }
            if let v = l.authorizationCode { base.lifetimes.authorizationCode = v }
            if let v = l.refreshToken { base.lifetimes.refreshToken = v }
            if let v = l.session { base.lifetimes.session = v }
            if let v = l.loginRequest { base.lifetimes.loginRequest = v }
            if let v = l.flowExecution { base.lifetimes.flowExecution = v }
            if let v = l.flowAssertion { base.lifetimes.flowAssertion = v }
            if let v = l.oneTimeCode { base.lifetimes.oneTimeCode = v }
            if let v = l.passkeyChallenge { base.lifetimes.passkeyChallenge = v }
            if let v = l.loginTicket { base.lifetimes.loginTicket = v }
            if let v = l.deviceCode { base.lifetimes.deviceCode = v }
            if let v = l.devicePollingInterval { base.lifetimes.devicePollingInterval = v }
        }
        if let w = webauthn {
            if let v = w.rpId { base.webAuthn.rpId = v }
            if let v = w.rpName { base.webAuthn.rpName = v }
            if let v = w.userVerification {
                guard ["required", "preferred", "discouraged"].contains(v) else {
                    throw ConfigurationError.invalid("webauthn.user_verification must be required, preferred or discouraged")
                }
                base.webAuthn.userVerification = v
            }
            for path in w.trustAnchors ?? [] { base.webAuthn.trustAnchorsDER += try PEM.certificates(path: path) }
            if let v = w.attestation {
                guard ["optional", "required"].contains(v) else {
                    throw ConfigurationError.invalid("webauthn.attestation must be optional or required")
                }
                base.webAuthn.attestationRequired = v == "required"
            }
            if let v = w.offerAfterPassword { base.webAuthn.offerAfterPassword = v }
        }
        if let associations {
            base.associations = AssociationSettings(
                appleAppIds: associations.appleAppIds ?? [], relatedOrigins: associations.relatedOrigins ?? [])
        }
        if let a = apple {
            if let v = a.issuer { base.apple.issuer = v }
            if let v = a.jwksUrl {
                guard let url = URL(string: v), url.scheme == "https" || url.scheme == "http" else {
                    throw ConfigurationError.invalid("apple.jwks_url \(v) is not an http(s) URL")
                }
                base.apple.jwksURL = url
            }
        }
        if let v = recentAuthSeconds { base.recentAuthenticationSeconds = v }  // bounds: `ServerConfiguration.validate()`
        if let v = refreshTokenReuseSeconds { base.refreshTokenReuseSeconds = v }  // bounds: `ServerConfiguration.validate()`
        if let allowImplicitForPublicClients { base.allowImplicitForPublicClients = allowImplicitForPublicClients }
        if let development { base.development = development }
        if let smtp { base.smtp = try smtp.settings() }
        if let v = httpIdleTimeoutSeconds { base.httpIdleTimeoutSeconds = v }
        if let v = httpRequestTimeoutSeconds { base.httpRequestTimeoutSeconds = v }
        if let metrics { base.metricsEnabled = metrics }
        if let identityProviders {
            let environment = ProcessInfo.processInfo.environment
            base.identityProviders = try identityProviders.map { try $0.configuration(environment: environment) }
        }
        if let clientRegistration { base.clientRegistration = clientRegistration }
        if let console { base.consoleEnabled = console }
        if let accountPage { base.accountPageEnabled = accountPage }
        if let auditWebhooks {
            let environment = ProcessInfo.processInfo.environment
            base.auditWebhooks = try auditWebhooks.map { try $0.configuration(environment: environment) }
        }
        if let v = dpop?.requireNonce { base.dpop.requireNonce = v }
        if let v = dpop?.proofLifetimeSeconds { base.dpop.proofLifetimeSeconds = v }
        if let p = loginPolicy {
            if let v = p.maxFailuresPerAccount { base.loginPolicy.maxFailuresPerAccount = v }
            if let v = p.lockoutSeconds { base.loginPolicy.lockoutSeconds = v }
            if let v = p.maxFailuresPerAddress { base.loginPolicy.maxFailuresPerAddress = v }
            if let v = p.addressWindowSeconds { base.loginPolicy.addressWindowSeconds = v }
            if let v = p.maxChallengesPerAddress { base.loginPolicy.maxChallengesPerAddress = v }
            if let v = p.maxCodeFailuresPerAccount { base.loginPolicy.maxCodeFailuresPerAccount = v }
            if let v = p.codeWindowSeconds { base.loginPolicy.codeWindowSeconds = v }
            if let v = p.maxRecoveryEmailsPerAccount { base.loginPolicy.maxRecoveryEmailsPerAccount = v }
            if let v = p.maxRecoveryCodeFailures { base.loginPolicy.maxRecoveryCodeFailures = v }
            if let v = p.maxConcurrentHashes { base.loginPolicy.maxConcurrentHashes = v }
            if let v = p.maxQueuedHashes { base.loginPolicy.maxQueuedHashes = v }
            if let v = p.maxTrackedAddresses { base.loginPolicy.maxTrackedAddresses = v }
            if let v = p.maxStartsPerAddress { base.loginPolicy.maxStartsPerAddress = v }
            if let v = p.maxRegistrationsPerAddress { base.loginPolicy.maxRegistrationsPerAddress = v }
            if let v = p.maxClientAuthFailuresPerAddress { base.loginPolicy.maxClientAuthFailuresPerAddress = v }
            if let v = p.maxClientAuthFailuresPerClient { base.loginPolicy.maxClientAuthFailuresPerClient = v }
            if let v = p.maxAuditedClientAuthFailuresPerAddress { base.loginPolicy.maxAuditedClientAuthFailuresPerAddress = v }
            if let v = p.maxFailuresPerAccountAllAddresses { base.loginPolicy.maxFailuresPerAccountAllAddresses = v }
        }
    }
}

/// Reads the certificates of a PEM file as DER.
enum PEM {
    static func certificates(path: String) throws -> [Data] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError.invalid("cannot read trust anchor file \(path)")
        }
        let blocks = text.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst().compactMap { block in
            block.components(separatedBy: "-----END CERTIFICATE-----").first
        }
        let ders = blocks.compactMap { Data(base64Encoded: $0.filter { !$0.isWhitespace }) }
        guard !ders.isEmpty, ders.count == blocks.count else {
            throw ConfigurationError.invalid("trust anchor file \(path) holds no readable PEM certificate")
        }
        return ders
    }
}
