import Foundation

/// How the server reaches its SMTP relay (submission, RFC 6409).
public struct SMTPSettings: Sendable, Equatable {
    /// Whether the session must be upgraded with STARTTLS (RFC 3207) before anything else is sent.
    public enum StartTLS: String, Sendable, Codable {
        /// Refuse to continue unless the relay offers STARTTLS and the handshake verifies its certificate.
        case required
        /// Plain TCP: only for a relay on this machine (credentials are refused over it to any other host).
        case none
    }

    public var host: String
    public var port: Int = 587
    public var startTLS: StartTLS = .required
    public var username: String?
    /// The resolved secret (from `password`, or the environment variable named by `password_env`).
    public var password: String?
    /// The envelope sender and `From:` address.
    public var from: String
    /// PEM file of the certificate authorities that may sign the relay's certificate; nil: the system's roots.
    public var caFile: String?
    /// The name this server announces in EHLO.
    public var heloName: String = "localhost"
    /// Connect and per-reply timeout.
    public var timeoutSeconds: Int = 30
    /// Deliveries tried before a message is dropped (and the drop logged).
    public var maxAttempts: Int = 8
    /// Messages that may wait in the queue; further ones are refused (the request that wanted one fails).
    public var queueLimit: Int = 1000
    /// Wait before the first retry; doubled after each failure, capped at an hour.
    public var retrySeconds: Int = 30

    public init(
        host: String, port: Int = 587, startTLS: StartTLS = .required, username: String? = nil, password: String? = nil,
        from: String, caFile: String? = nil
    ) {
        self.host = host; self.port = port; self.startTLS = startTLS; self.username = username; self.password = password
        self.from = from; self.caFile = caFile
    }

    /// How queued emails are tried (`DeliveryLoop`): never older than the queue's retention, whatever `max_attempts`.
    var policy: DeliveryPolicy {
        DeliveryPolicy(
            timeoutSeconds: timeoutSeconds, maxAttempts: maxAttempts, maxAgeSeconds: Int(DeliveryRetention.maximumAgeSeconds),
            retrySeconds: retrySeconds, queueLimit: queueLimit)
    }

    func validate() throws {
        func invalid(_ why: String) -> ConfigurationError { .invalid("smtp: \(why)") }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0.isNewline }) else { throw invalid("host is required") }
        guard (1...65535).contains(port) else { throw invalid("port must be 1-65535") }
        guard MailAddress.isValid(from) else { throw invalid("from must be a plain address such as noreply@example.com") }
        guard MailAddress.isValidDomain(heloName) else { throw invalid("helo_name must be a host name") }
        guard timeoutSeconds >= 1, maxAttempts >= 1, queueLimit >= 1, retrySeconds >= 1 else {
            throw invalid("timeout_seconds, max_attempts, queue_limit and retry_seconds must be at least 1")
        }
        if username != nil, (password ?? "").isEmpty { throw invalid("username is set but the password is empty") }
        if username == nil, password != nil { throw invalid("a password needs a username") }
        // The relay's password would cross the network in clear text.
        if startTLS == .none, username != nil, !LoopbackHost.isLoopback(host) {
            throw invalid("credentials over plain SMTP are only allowed to a loopback relay; use \"starttls\": \"required\"")
        }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) { throw invalid("cannot read ca_file \(caFile)") }
    }
}

/// The `"smtp"` object of the configuration file:
/// `{"host": "smtp.example.com", "port": 587, "starttls": "required", "username": "latchkey",
///   "password_env": "LATCHKEY_SMTP_PASSWORD", "from": "noreply@example.com", "ca_file": "relay-ca.pem",
///   "timeout_seconds": 30, "max_attempts": 8, "queue_limit": 1000, "retry_seconds": 30, "helo_name": "id.example.com"}`
public struct SMTPFile: Codable, Sendable {
    public var host: String
    public var from: String
    public var port: Int?
    public var starttls: SMTPSettings.StartTLS?
    public var username, password, passwordEnv, caFile, heloName: String?
    public var timeoutSeconds, maxAttempts, queueLimit, retrySeconds: Int?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case host, from, port, starttls, username, password, passwordEnv = "password_env", caFile = "ca_file", heloName = "helo_name"
        case timeoutSeconds = "timeout_seconds", maxAttempts = "max_attempts", queueLimit = "queue_limit", retrySeconds = "retry_seconds"
    }

    /// Resolves the password (environment variable names never carry the secret into the file).
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> SMTPSettings {
        if password != nil, passwordEnv != nil { throw ConfigurationError.invalid("smtp: set password or password_env, not both") }
        var secret = password
        if let passwordEnv {
            guard let value = environment[passwordEnv], !value.isEmpty else {
                throw ConfigurationError.invalid("smtp: the environment variable \(passwordEnv) (password_env) is not set")
            }
            secret = value
        }
        var s = SMTPSettings(
            host: host, port: port ?? 587, startTLS: starttls ?? .required, username: username, password: secret,
            from: from, caFile: caFile)
        if let heloName { s.heloName = heloName }
        if let v = timeoutSeconds { s.timeoutSeconds = v }
        if let v = maxAttempts { s.maxAttempts = v }
        if let v = queueLimit { s.queueLimit = v }
        if let v = retrySeconds { s.retrySeconds = v }
        try s.validate()
        return s
    }
}

/// Addresses that may appear in an SMTP envelope and a header: a plain ASCII `local@domain`, nothing that could end a
/// header line or add a recipient (CR, LF, `<`, `>`, `,`, spaces, quotes).
enum MailAddress {
    private static let localCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~.")

    static func isValid(_ address: String) -> Bool {
        guard address.utf8.count <= 254, let at = address.lastIndex(of: "@") else { return false }
        let local = address[..<at], domain = address[address.index(after: at)...]
        guard (1...64).contains(local.count), local.allSatisfy(localCharacters.contains),
            !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..")
        else { return false }
        return isValidDomain(String(domain))
    }

    static func isValidDomain(_ domain: String) -> Bool {
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return (1...253).contains(domain.count)
            && labels.allSatisfy { label in
                (1...63).contains(label.count) && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
                    && !label.hasPrefix("-") && !label.hasSuffix("-")
            }
    }
}

extension ClientConfiguration {
    /// Whether one of the flows this application can run sends an email (recovery, emailed sign-in codes).
    var sendsEmail: Bool {
        FlowType.allCases.contains { type in
            switch type {
            case .recovery where !recoveryEnabled: return false
            case .registration where registration == .disabled: return false
            default: break
            }
            return (flows[type] ?? DefaultFlows.graph(type)).nodes.contains { $0.executor == "EmailCodeSender" }
        }
    }
}

extension ServerConfiguration {
    /// Refusals that keep a development or half-configured instance from being exposed.
    func validateDeployment() throws {
        // Both the issuer and the binding: an https loopback issuer behind a local TLS proxy says nothing
        // about who can reach the port itself (`--host 0.0.0.0` in a container).
        let loopbackIssuer = LoopbackHost.isLoopback(issuer.host ?? "")
        let loopbackBinding = LoopbackHost.isLoopback(host)
        if development, !loopbackIssuer || !loopbackBinding {
            throw ConfigurationError.invalid(
                "development mode (one-time codes readable at /dev/outbox, no attestation) is only allowed with a loopback issuer bound to a loopback address (here: issuer \(issuer.host ?? "-"), binding \(host)); it is what `latchkey serve` runs without --config, with --dev or with \"development\": true: give a configuration file with \"smtp\" and without those"
            )
        }
        if !loopbackIssuer || !loopbackBinding, users.contains(where: { $0.password == DevelopmentDefaults.demoPassword }) {
            throw ConfigurationError.invalid(
                "the demo user's password is published; it cannot be seeded on a non-loopback issuer or binding (give a configuration with clients and without \"demo\": true)"
            )
        }
        try smtp?.validate()
        if !development, outbox == nil, smtp == nil, let client = clients.first(where: \.sendsEmail) {
            throw ConfigurationError.invalid(
                "client \(client.clientId) sends emails (password recovery or emailed codes) but no delivery is configured: add \"smtp\" to the configuration file (or disable recovery and use flows without EmailCodeSender)"
            )
        }
    }
}
