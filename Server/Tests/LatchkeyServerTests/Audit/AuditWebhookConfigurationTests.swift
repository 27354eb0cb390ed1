import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `audit_webhooks` in the configuration file: through the same shape check and decoding as every other key, refused
/// at start when a URL, a secret or an event type is wrong, and the secret never written in the file or shown.
@Suite("Audit webhooks: configuration")
struct AuditWebhookConfigurationTests {
    static let secret = "whsec-0123456789abcdef0123456789abcdef"

    static func write(_ text: String, suffix: String = "json") throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-webhook-\(UUID().uuidString).\(suffix)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A secret file holding `secret` (with a trailing newline, as editors leave it).
    static func secretFile(_ secret: String = secret) throws -> String { try write(secret + "\n", suffix: "secret") }

    /// The configuration a file with these webhooks (JSON objects) gives, or the error it is refused with.
    static func apply(_ webhooks: String) throws -> ServerConfiguration {
        let path = try write(#"{ "audit_webhooks": [ \#(webhooks) ] }"#)
        var configuration = DevelopmentDefaults.configuration()
        try ConfigurationFile.load(path: path).apply(to: &configuration)
        try configuration.validate()
        return configuration
    }

    /// The refusal's text (an issue when there is none).
    static func refusal(_ webhooks: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        do {
            _ = try apply(webhooks)
            Issue.record("accepted: \(webhooks)", sourceLocation: sourceLocation)
            return ""
        } catch let error as ConfigurationError {
            return error.description
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
            return ""
        }
    }

    @Test("a webhook from the file: its secret read from secret_file (trimmed), events and outcomes parsed, defaults in force")
    func fileIsRead() throws {
        let file = try Self.secretFile()
        let c = try Self.apply(
            #"""
            { "id": "siem", "url": "https://siem.example.com/latchkey?source=id", "secret_file": "\#(file)",
              "events": ["signin.failed", "account.locked"], "outcomes": ["failure"], "max_attempts": 5, "queue_limit": 50 },
            { "id": "local_collector", "url": "http://127.0.0.1:9000/audit", "secret_file": "\#(file)", "timeout_seconds": 3,
              "retry_seconds": 5, "max_age_seconds": 600 }
            """#)
        #expect(c.auditWebhooks.map(\.id) == ["siem", "local_collector"])
        let siem = try #require(c.auditWebhooks.first)
        #expect(siem.url.absoluteString == "https://siem.example.com/latchkey?source=id")
        #expect(siem.secret == WebhookSecret(Self.secret), "the file's content without its newline")
        #expect(siem.events == [.signInFailed, .accountLocked] && siem.outcomes == [.failure])
        #expect(siem.maxAttempts == 5 && siem.queueLimit == 50)
        #expect(siem.timeoutSeconds == 10 && siem.retrySeconds == 30 && siem.maxAgeSeconds == 86_400, "the defaults")
        let local = c.auditWebhooks[1]
        #expect(local.events == nil && local.outcomes == nil, "absent: every event")
        #expect(local.timeoutSeconds == 3 && local.retrySeconds == 5 && local.maxAgeSeconds == 600)
    }

    @Test("secret_env: read from the environment; unset, it is refused by name")
    func secretFromTheEnvironment() throws {
        let file = AuditWebhookFile(id: "siem", url: "https://siem.example.com/hook", secretEnv: "SIEM_SECRET")
        let webhook = try file.configuration(environment: ["SIEM_SECRET": Self.secret])
        #expect(webhook.secret == WebhookSecret(Self.secret))
        #expect(throws: ConfigurationError.self) { try file.configuration(environment: [:]) }
        #expect(throws: ConfigurationError.self) { try file.configuration(environment: ["SIEM_SECRET": ""]) }
    }

    @Test("refused at start: http to a non-loopback host, a short secret, a secret in the file, an unknown event type or outcome")
    func refusals() throws {
        let file = try Self.secretFile()
        let http = Self.refusal(#"{ "id": "siem", "url": "http://siem.example.com/hook", "secret_file": "\#(file)" }"#)
        #expect(http.contains("https"), "\(http)")
        #expect(Self.refusal(#"{ "id": "siem", "url": "http://10.0.0.5/hook", "secret_file": "\#(file)" }"#).contains("https"))
        #expect(Self.refusal(#"{ "id": "siem", "url": "ftp://siem.example.com/hook", "secret_file": "\#(file)" }"#).contains("https"))
        #expect(Self.refusal(#"{ "id": "siem", "url": "https://user:pw@siem.example.com/hook", "secret_file": "\#(file)" }"#).contains("credentials"))
        // http to this machine is fine.
        #expect(throws: Never.self) { try Self.apply(#"{ "id": "siem", "url": "http://localhost:9000/hook", "secret_file": "\#(file)" }"#) }

        let short = try Self.secretFile(String(repeating: "s", count: 31))
        let shortRefusal = Self.refusal(#"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(short)" }"#)
        #expect(shortRefusal.contains("at least 32 bytes"), "\(shortRefusal)")
        #expect(throws: Never.self) {
            try Self.apply(
                #"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(try Self.secretFile(String(repeating: "s", count: 32)))" }"#
            )
        }

        let inFile = Self.refusal(#"{ "id": "siem", "url": "https://siem.example.com/hook", "secret": "\#(Self.secret)" }"#)
        #expect(inFile.contains("secret_env") && inFile.contains("refused"), "\(inFile)")
        #expect(!inFile.contains(Self.secret), "the refusal does not repeat the secret")
        let noSecret = Self.refusal(#"{ "id": "siem", "url": "https://siem.example.com/hook" }"#)
        #expect(noSecret.contains("secret_env or secret_file"), "\(noSecret)")
        let both = Self.refusal(#"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_env": "X", "secret_file": "\#(file)" }"#)
        #expect(both.contains("not both"), "\(both)")
        #expect(
            Self.refusal(#"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "/nonexistent/secret" }"#).contains("cannot read"))

        let unknownType = Self.refusal(
            #"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(file)", "events": ["signin.failed", "signin.maybe"] }"#)
        #expect(unknownType.contains("unknown event type \"signin.maybe\""), "\(unknownType)")
        let unknownOutcome = Self.refusal(
            #"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(file)", "outcomes": ["partial"] }"#)
        #expect(unknownOutcome.contains("unknown outcome"), "\(unknownOutcome)")
        #expect(
            Self.refusal(#"{ "id": "siem", "url": "https://siem.example.com/hook", "secret_file": "\#(file)", "events": [] }"#).contains(
                "at least one"))
    }

    @Test("ids: well-formed and unique; a mistyped key is refused with the nearest known one")
    func idsAndKeys() throws {
        let file = try Self.secretFile()
        #expect(Self.refusal(#"{ "id": "SIEM one", "url": "https://a.example.com/", "secret_file": "\#(file)" }"#).contains("a-z 0-9"))
        let duplicate = Self.refusal(
            #"""
            { "id": "siem", "url": "https://a.example.com/", "secret_file": "\#(file)" },
            { "id": "siem", "url": "https://b.example.com/", "secret_file": "\#(file)" }
            """#)
        #expect(duplicate.contains("duplicate audit webhook siem"), "\(duplicate)")
        let typo = Self.refusal(#"{ "id": "siem", "url": "https://a.example.com/", "secret_evn": "X" }"#)
        #expect(typo.contains("audit_webhooks[0].secret_evn") && typo.contains("secret_env"), "\(typo)")
        #expect(
            Self.refusal(#"{ "id": "siem", "url": "https://a.example.com/", "secret_file": "\#(file)", "max_age_seconds": 999999999 }"#).contains(
                "max_age_seconds"))
        #expect(
            Self.refusal(#"{ "id": "siem", "url": "https://a.example.com/", "secret_file": "\#(file)", "timeout_seconds": 0 }"#).contains(
                "timeout_seconds"))
    }

    @Test("the secret is never shown: not in descriptions, reflections or dumps of the configuration")
    func secretIsRedacted() throws {
        let webhook = AuditWebhook(id: "siem", url: try #require(URL(string: "https://siem.example.com/")), secret: WebhookSecret(Self.secret))
        var dumped = ""
        dump(webhook, to: &dumped)
        for text in ["\(webhook)", String(reflecting: webhook), "\(webhook.secret)", String(reflecting: webhook.secret), dumped, "\([webhook])"] {
            #expect(!text.contains(Self.secret), "\(text)")
        }
    }

    @Test("a configuration built in code is checked too (embedding): validate refuses a short secret and plain http")
    func validateChecksCodeBuiltConfigurations() throws {
        var c = DevelopmentDefaults.configuration()
        c.auditWebhooks = [AuditWebhook(id: "siem", url: try #require(URL(string: "https://siem.example.com/")), secret: WebhookSecret("short"))]
        #expect(throws: ConfigurationError.self) { try c.validate() }
        c.auditWebhooks = [
            AuditWebhook(id: "siem", url: try #require(URL(string: "http://siem.example.com/")), secret: WebhookSecret(Self.secret))
        ]
        #expect(throws: ConfigurationError.self) { try c.validate() }
        c.auditWebhooks[0].url = try #require(URL(string: "https://siem.example.com/"))
        try c.validate()
    }
}
