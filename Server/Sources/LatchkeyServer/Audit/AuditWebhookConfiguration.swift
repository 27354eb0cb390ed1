import Foundation

/// A receiver of the audit trail (`audit_webhooks` in the configuration file): every event it selects is POSTed to its
/// URL as JSON, signed with HMAC-SHA256 under its secret (`WebhookSignature`), from a queue in the store, retried with
/// exponential backoff until delivered or given up (`AuditWebhooks`).
///
/// ```json
/// { "id": "siem", "url": "https://siem.example.com/latchkey", "secret_env": "LATCHKEY_SIEM_WEBHOOK_SECRET",
///   "events": ["signin.failed", "account.locked"], "outcomes": ["failure"] }
/// ```
public struct AuditWebhook: Sendable, Equatable, CustomStringConvertible {
    /// Lower-case letters, digits, `-` and `_`: the metrics label and the name in the logs (the URL is never logged).
    public var id: String
    /// https; plain http only to a loopback host (a collector on this machine).
    public var url: URL
    /// The HMAC key. Never logged, never encoded, never stored.
    public var secret: WebhookSecret
    /// The event types sent; nil sends every type.
    public var events: Set<AuditEvent.Kind>?
    /// The outcomes sent; nil sends both.
    public var outcomes: Set<AuditEvent.Outcome>?
    /// Seconds one POST may take, connection included (`timeout_seconds`).
    public var timeoutSeconds = 10
    /// Attempts before a delivery is dropped, with an error in the log (`max_attempts`).
    public var maxAttempts = 15
    /// How old a delivery may get before it is dropped, however few attempts it had (`max_age_seconds`).
    public var maxAgeSeconds = 86_400
    /// The wait before the first retry; doubled after each failure, capped at `DeliveryPolicy.maximumRetryDelay` (`retry_seconds`).
    public var retrySeconds = 30
    /// Deliveries that may wait for this webhook; further events are not queued for it (logged and counted) (`queue_limit`).
    public var queueLimit = 10_000
    /// Deliveries of low-priority events (`AuditEvent.Kind.isLowPriority`: failed client authentications, which anyone
    /// can cause without credentials) that may wait for this webhook; the rest of `queueLimit` is kept for the other
    /// events, so that a flood of refusals cannot fill the queue and shut out the events that matter
    /// (`low_priority_queue_limit`). Nil: a tenth of `queueLimit`.
    public var lowPriorityQueueLimit: Int?

    /// How its deliveries are tried (`DeliveryLoop`).
    var policy: DeliveryPolicy {
        DeliveryPolicy(
            timeoutSeconds: timeoutSeconds, maxAttempts: maxAttempts, maxAgeSeconds: maxAgeSeconds, retrySeconds: retrySeconds,
            queueLimit: queueLimit)
    }

    /// `lowPriorityQueueLimit` as it applies.
    var lowPriorityLimit: Int { lowPriorityQueueLimit ?? max(1, queueLimit / 10) }

    public init(
        id: String, url: URL, secret: WebhookSecret, events: Set<AuditEvent.Kind>? = nil, outcomes: Set<AuditEvent.Outcome>? = nil
    ) {
        self.id = id
        self.url = url
        self.secret = secret
        self.events = events
        self.outcomes = outcomes
    }

    public var description: String { "audit webhook \(id)" }

    /// Whether `event` goes to this webhook.
    func selects(_ event: AuditEvent) -> Bool {
        (events?.contains(event.type) ?? true) && (outcomes?.contains(event.outcome) ?? true)
    }

    /// The shortest secret accepted: 32 bytes, the HMAC-SHA256 block's half and the output's size.
    public static let minimumSecretBytes = 32

    func validate() throws {
        func invalid(_ why: String) -> ConfigurationError { .invalid("audit webhook \(id): \(why)") }
        guard !id.isEmpty, id.count <= 64, id.unicodeScalars.allSatisfy({ Self.idCharacters.contains($0) }) else {
            throw ConfigurationError.invalid("audit webhook id \"\(id.prefix(80))\" must be 1–64 of a-z 0-9 - _")
        }
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw invalid("url must be an absolute https URL")
        }
        guard scheme == "https" || (scheme == "http" && LoopbackHost.isLoopback(host)) else {
            throw invalid("url must be https (plain http only to a loopback host such as 127.0.0.1)")
        }
        // Credentials in the URL would be one more secret in a file that gets copied and printed; the signature is the
        // receiver's proof of origin.
        guard url.user == nil, url.password == nil, url.fragment == nil else {
            throw invalid("url must not carry credentials (user:password@) or a fragment")
        }
        guard secret.count >= Self.minimumSecretBytes else {
            throw invalid("the secret must be at least \(Self.minimumSecretBytes) bytes (e.g. `openssl rand -hex 32`)")
        }
        if let events, events.isEmpty { throw invalid("events must name at least one event type (leave it out for every type)") }
        if let outcomes, outcomes.isEmpty { throw invalid("outcomes must name at least one outcome (leave it out for both)") }
        guard (1...300).contains(timeoutSeconds) else { throw invalid("timeout_seconds must be 1–300") }
        guard (1...100).contains(maxAttempts) else { throw invalid("max_attempts must be 1–100") }
        guard (60...Int(DeliveryRetention.maximumAgeSeconds)).contains(maxAgeSeconds) else {
            throw invalid("max_age_seconds must be 60–\(Int(DeliveryRetention.maximumAgeSeconds)) (7 days)")
        }
        guard (1...3600).contains(retrySeconds) else { throw invalid("retry_seconds must be 1–3600") }
        guard (1...1_000_000).contains(queueLimit) else { throw invalid("queue_limit must be 1–1000000") }
        if let lowPriorityQueueLimit, !(1...queueLimit).contains(lowPriorityQueueLimit) {
            throw invalid("low_priority_queue_limit must be 1–queue_limit (\(queueLimit))")
        }
    }

    private static let idCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789-_")
}

/// A webhook's HMAC key: its bytes are used as they are (the UTF-8 of what the environment variable or file holds, the
/// file's surrounding whitespace trimmed). Its descriptions never show it.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let bytes: Data

    public init(_ text: String) { bytes = Data(text.utf8) }
    public init(bytes: Data) { self.bytes = bytes }

    public var count: Int { bytes.count }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    public static func == (lhs: WebhookSecret, rhs: WebhookSecret) -> Bool { Secrets.constantTimeEquals(lhs.bytes, rhs.bytes) }
}

/// `audit_webhooks[]` as written in the configuration file.
public struct AuditWebhookFile: Codable, Sendable {
    public var id: String
    public var url: String
    public var secretEnv, secretFile: String?
    /// Read only to be refused: a secret is never written into the configuration file itself.
    public var secret: String?
    public var events, outcomes: [String]?
    public var timeoutSeconds, maxAttempts, maxAgeSeconds, retrySeconds, queueLimit, lowPriorityQueueLimit: Int?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, url, secret, events, outcomes
        case secretEnv = "secret_env", secretFile = "secret_file"
        case timeoutSeconds = "timeout_seconds", maxAttempts = "max_attempts", maxAgeSeconds = "max_age_seconds"
        case retrySeconds = "retry_seconds", queueLimit = "queue_limit", lowPriorityQueueLimit = "low_priority_queue_limit"
    }

    /// The webhook, with its secret read from the environment or a file (never from the configuration file: files get
    /// copied, committed and printed), its event types and outcomes checked against the known ones.
    func configuration(environment: [String: String]) throws -> AuditWebhook {
        func invalid(_ why: String) -> ConfigurationError { .invalid("audit webhook \(id): \(why)") }
        if secret != nil {
            throw invalid("a secret written in the configuration file is refused; name an environment variable (secret_env) or a file (secret_file)")
        }
        let secretText: String
        switch (secretEnv, secretFile) {
        case (let name?, nil):
            guard let value = environment[name], !value.isEmpty else {
                throw invalid("the environment variable \(name) (secret_env) is not set")
            }
            secretText = value
        case (nil, let path?):
            guard let value = try? String(contentsOfFile: path, encoding: .utf8) else { throw invalid("cannot read secret_file \(path)") }
            secretText = value.trimmingCharacters(in: .whitespacesAndNewlines)
        case (.some, .some):
            throw invalid("set secret_env or secret_file, not both")
        case (nil, nil):
            throw invalid("secret_env or secret_file must name the signing secret")
        }
        guard let parsed = URL(string: url) else { throw invalid("url is not a URL") }
        var events: Set<AuditEvent.Kind>?
        if let names = self.events {
            events = Set(
                try names.map { name in
                    guard let kind = AuditEvent.Kind(rawValue: name) else {
                        let known = AuditEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")
                        throw invalid("unknown event type \"\(name.prefix(64))\" in events (known: \(known))")
                    }
                    return kind
                })
        }
        var outcomes: Set<AuditEvent.Outcome>?
        if let names = self.outcomes {
            outcomes = Set(
                try names.map { name in
                    guard let outcome = AuditEvent.Outcome(rawValue: name) else {
                        throw invalid("unknown outcome \"\(name.prefix(64))\" in outcomes (success or failure)")
                    }
                    return outcome
                })
        }
        var webhook = AuditWebhook(id: id, url: parsed, secret: WebhookSecret(secretText), events: events, outcomes: outcomes)
        if let v = timeoutSeconds { webhook.timeoutSeconds = v }
        if let v = maxAttempts { webhook.maxAttempts = v }
        if let v = maxAgeSeconds { webhook.maxAgeSeconds = v }
        if let v = retrySeconds { webhook.retrySeconds = v }
        if let v = queueLimit { webhook.queueLimit = v }
        if let v = lowPriorityQueueLimit { webhook.lowPriorityQueueLimit = v }
        try webhook.validate()
        return webhook
    }
}
