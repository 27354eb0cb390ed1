import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Logging
import Testing

/// Outside development, one-time codes go to their recipient only: `/dev/outbox` does not exist, and a server that
/// would send emails without a delivery, or development mode on a public issuer, refuses to start.
@Suite("Security: development mode and email delivery")
struct DevelopmentModeTests {
    static func refusal(_ configure: (inout ServerConfiguration) -> Void) async -> String? {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-refusal-\(UUID().uuidString).sqlite").path
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: path, host: "127.0.0.1")
        configuration.bcryptCost = 12  // the production cost: these configurations are judged as real deployments
        configure(&configuration)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        do {
            _ = try await IdentityServer.open(configuration: configuration, logger: logger)
            return nil
        } catch {
            return (error as? ConfigurationError)?.description ?? "\(error)"
        }
    }

    @Test func recoveryCodeIsNotHandedToAnAttackerOutsideDevelopment() async throws {
        let mail = CapturingOutbox()
        let server = try await TestServer.start { config in
            config.development = false
            config.outbox = mail
        }
        defer { Task { await server.stop() } }
        let attacker = TestBrowser()
        let start = try await attacker.postJSON(
            server.base + "/flow/execute",
            ["applicationId": "latchkey-demo", "flowType": "RECOVERY", "inputs": ["username": "demo@example.com"]])
        #expect(start.status == 200)
        let code = try #require(mail.messages.first { $0.recipient == "demo@example.com" }?.code, "the code went to the account's address")
        let outbox = try await attacker.get(server.base + "/dev/outbox?recipient=demo@example.com")
        #expect(outbox.status == 404)
        #expect(!outbox.text.contains(code))
        #expect(try await server.server.outboxMessages(recipient: "demo@example.com").isEmpty, "nothing recorded for /dev/outbox either")
    }

    @Test func developmentServerStillServesItsOutbox() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await browser.postJSON(
            server.base + "/flow/execute",
            ["applicationId": "latchkey-demo", "flowType": "RECOVERY", "inputs": ["username": "demo@example.com"]])
        let outbox = try await browser.get(server.base + "/dev/outbox?recipient=demo@example.com")
        #expect(outbox.status == 200)
        #expect((try outbox.json()["messages"] as? [[String: Any]])?.first?["code"] is String)
    }

    @Test func developmentModeNeedsALoopbackIssuer() async throws {
        let refused = await Self.refusal { config in
            config.issuer = URL(string: "https://id.example.com")!
            config.users = []
        }
        #expect(refused?.contains("development mode") == true)
    }

    /// An https loopback issuer (a local TLS proxy) with the port itself bound to every interface.
    @Test func developmentModeNeedsALoopbackBindingToo() async throws {
        for host in ["0.0.0.0", "192.0.2.1", "::"] {
            let refused = await Self.refusal { config in
                config.issuer = URL(string: "https://127.0.0.1:18406")!
                config.host = host
            }
            #expect(refused?.contains("development mode") == true && refused?.contains("binding \(host)") == true, "\(host): \(refused ?? "started")")
        }
        // The demo user is refused on such a binding even outside development mode.
        let demo = await Self.refusal { config in
            config.issuer = URL(string: "https://localhost:18406")!
            config.host = "0.0.0.0"
            config.development = false
            config.outbox = CapturingOutbox()
            config.keyEncryptionKey = Data(repeating: 0x4C, count: 32)
            config.users = [UserSeed(username: DevelopmentDefaults.demoUsername, password: DevelopmentDefaults.demoPassword)]
        }
        #expect(demo?.contains("demo user") == true, "\(demo ?? "started")")
    }

    @Test func emailsWithoutADeliveryRefuseToStart() async throws {
        let refused = await Self.refusal { config in config.development = false }
        #expect(refused?.contains("no delivery is configured") == true, "recovery is on by default")
        #expect(refused?.contains("latchkey-demo") == true)
        // An SMTP relay is a delivery.
        let relayed = try await TestServer.start { config in
            config.development = false
            config.smtp = SMTPSettings(host: "127.0.0.1", startTLS: .none, from: "noreply@example.com")
        }
        await relayed.stop()
        // No application that emails: nothing to deliver, so no relay is needed.
        var backEnd = DevelopmentDefaults.configuration(port: 0, databasePath: "unused.sqlite", host: "127.0.0.1")
        backEnd.development = false
        backEnd.users = []
        backEnd.clients = [
            ClientConfiguration(
                clientId: "svc", clientSecret: "svc-secret-0123456789", grantTypes: [.clientCredentials],
                recoveryEnabled: false,
                flows: [
                    .authentication: FlowGraph(
                        id: "pw", type: .authentication,
                        nodes: [
                            FlowNode(id: "start", kind: .start, next: "end"), FlowNode(id: "end", kind: .end)
                        ])
                ])
        ]
        try backEnd.validate()
    }

    @Test func smtpSettingsAreChecked() async throws {
        func refusal(_ smtp: SMTPSettings) async -> String? {
            await Self.refusal { config in
                config.development = false; config.smtp = smtp
            }
        }
        #expect(
            await refusal(SMTPSettings(host: "smtp.example.com", startTLS: .none, username: "u", password: "p", from: "a@example.com"))?
                .contains("plain SMTP") == true, "credentials in clear text to a remote relay")
        #expect(await refusal(SMTPSettings(host: "smtp.example.com", from: "a@example.com\r\nBcc: x@example.com"))?.contains("from") == true)
        #expect(await refusal(SMTPSettings(host: "smtp.example.com", username: "u", from: "a@example.com"))?.contains("password") == true)
        #expect(await refusal(SMTPSettings(host: "smtp.example.com", from: "a@example.com", caFile: "/nonexistent.pem"))?.contains("ca_file") == true)
        let file = SMTPFile(host: "smtp.example.com", from: "a@example.com", username: "u", passwordEnv: "LATCHKEY_TEST_UNSET_VARIABLE")
        #expect(throws: ConfigurationError.self) { try file.settings(environment: [:]) }
        #expect(try file.settings(environment: ["LATCHKEY_TEST_UNSET_VARIABLE": "s3cret"]).password == "s3cret")
    }
}
