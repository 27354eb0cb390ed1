import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// Sign in with Apple creates an account only where the application's registration is open; linking an existing
/// account with the same verified email is fine under any policy.
@Suite("Security: Sign in with Apple obeys the registration policy")
struct AppleRegistrationPolicyTests {
    static let bundleId = "io.latchkey.demo"

    func apple(_ server: TestServer, _ issuer: AppleStandIn, sub: String, email: String) async throws -> HTTPResult {
        try await server.appleSignIn(issuer, sub: sub, email: email, bundleId: Self.bundleId)
    }

    @Test(
        "registration invite_only or disabled: an unknown Apple user gets access_denied and no account",
        arguments: [
            ClientConfiguration.RegistrationPolicy.inviteOnly, .disabled
        ])
    func newAccountRefused(_ policy: ClientConfiguration.RegistrationPolicy) async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await TestServer.startForNativeLogin(bundleId: Self.bundleId, apple: issuer) { configuration in
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.registration = policy }
                return client
            }
        }
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let refused = try await apple(server, issuer, sub: "apple-stranger", email: "stranger@icloud.example")
        #expect(refused.status == 302)
        #expect(refused.locationQuery["error"] == "access_denied", "\(refused.location ?? "")")
        #expect(refused.locationQuery["error_message_key"] == "flows.errors.registration_disabled")
        #expect(refused.locationQuery["code"] == nil)
        #expect(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-stranger") == nil)
        #expect(try await server.server.store.users(claim: "email", equals: "stranger@icloud.example").isEmpty)
        #expect(try await server.server.store.user(username: "stranger@icloud.example") == nil)

        // An existing account with that verified address is still linked and signed in.
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        let linked = try await apple(server, issuer, sub: "apple-demo", email: "demo@example.com")
        #expect(linked.locationQuery["code"] != nil, "\(linked.location ?? "")")
        #expect(try await server.server.store.federatedIdentity(provider: "apple", subject: "apple-demo")?.userId == demo.id)
    }
}
