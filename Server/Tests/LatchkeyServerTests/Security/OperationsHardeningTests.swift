import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Idle connections, the published demo password, HSTS, and who may self-register by default.
@Suite("Security: operations hardening and default registration")
struct OperationsHardeningTests {
    @Test func demoUserIsNotSeededOnAPublicIssuer() async throws {
        let refused = await DevelopmentModeTests.refusal { config in
            config.development = false
            config.outbox = CapturingOutbox()
            config.issuer = URL(string: "https://id.example.com")!
        }
        #expect(refused?.contains("demo user") == true)
    }

    @Test func httpsIssuerSendsStrictTransportSecurity() async throws {
        let server = try await TestServer.start { config in
            config.development = false
            config.outbox = CapturingOutbox()
            config.issuer = URL(string: "https://id.example.com")!
            config.users = []
        }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        #expect(try await browser.get(server.base + "/health").header("Strict-Transport-Security") == "max-age=31536000")
        #expect(
            try await browser.get(server.base + "/no-such-page").header("Strict-Transport-Security") == "max-age=31536000",
            "error answers too")

        let loopback = try await TestServer.start()
        defer { Task { await loopback.stop() } }
        #expect(try await browser.get(loopback.base + "/health").header("Strict-Transport-Security") == nil, "plain-http loopback issuer")
    }

    /// A client that sends half a request head and then nothing (slowloris) is disconnected after the idle timeout.
    @Test func idleConnectionsAreClosed() async throws {
        let server = try await TestServer.start { config in config.httpIdleTimeoutSeconds = 1 }
        defer { Task { await server.stop() } }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: server.port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        // Our own bound, so that a server without a timeout fails the test instead of hanging it.
        let gaveUp = NIOLockedValueBox(false)
        let watchdog = channel.channel.eventLoop.scheduleTask(in: .seconds(30)) {
            gaveUp.withLockedValue { $0 = true }
            channel.channel.close(promise: nil)
        }
        defer { watchdog.cancel() }
        let closedByServer = try await channel.executeThenClose { inbound, outbound in
            do { try await outbound.write(ByteBuffer(string: "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")) } catch ChannelError.ioOnClosedChannel {
                // A machine so busy that the second of idleness passed before the write: the server closed it already.
                return !gaveUp.withLockedValue { $0 }
            }
            // Without a timeout this read never ends: the server would wait for the rest of the head forever.
            var received = 0
            for try await buffer in inbound { received += buffer.readableBytes }
            return received == 0 && !gaveUp.withLockedValue { $0 }
        }
        #expect(closedByServer, "closed without an answer")
    }

    @Test func backEndClientsDoNotOpenSelfRegistration() async throws {
        #expect(
            ClientConfiguration(clientId: "svc", clientSecret: "svc-secret-0123456789", grantTypes: [.clientCredentials]).registration == .disabled)
        #expect(ClientConfiguration(clientId: "app").registration == .open)
        #expect(ClientConfiguration(clientId: "x", grantTypes: [.tokenExchange]).registration == .open)
        #expect(
            ClientConfiguration(
                clientId: "svc", clientSecret: "svc-secret-0123456789", grantTypes: [.clientCredentials],
                registration: .open
            ).registration == .open, "explicit wins")
        let decoded = try JSONDecoder().decode(
            ClientConfiguration.self,
            from: Data(
                #"""
                {"client_id": "svc", "client_secret": "svc-secret-0123456789", "grant_types": ["client_credentials"]}
                """#.utf8))
        #expect(decoded.registration == .disabled)

        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        // `poster` is a client_credentials back end: its client_id alone used to be enough to create accounts.
        let refused = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "poster", "flowType": "REGISTRATION"])
        #expect(try refused.status == 400 && (try refused.json()["code"] as? String) == "FES-1006")
        let demo = try await browser.postJSON(server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "REGISTRATION"])
        #expect(demo.status == 200, "the demo app stays open")
    }
}
