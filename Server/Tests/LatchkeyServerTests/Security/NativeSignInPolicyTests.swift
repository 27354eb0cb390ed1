import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// Replayed over HTTP: the application's type and attestation policy hold on every
/// native sign-in endpoint, not only on flow initiation.
@Suite("Security: reachFive endpoints obey the application's type and attestation policy")
struct NativeSignInPolicyTests {
    struct FixedVerifier: AttestationVerifier {
        func verify(_ token: String, applicationId: String) -> Bool { token == "genuine-app-\(applicationId)" }
    }

    static func start() async throws -> TestServer {
        try await TestServer.start { config in
            config.development = false
            config.attestationVerifier = FixedVerifier()
            config.clients.append(
                ClientConfiguration(
                    clientId: "ios-app", grantTypes: [.authorizationCode, .tokenExchange, .refreshToken],
                    appType: .mobile, passkeyOrigins: ["self"]))
            config.clients.append(
                ClientConfiguration(
                    clientId: "web-app", redirectUris: ["https://web.example/cb"], appType: .browser,
                    passkeyOrigins: ["self"]))
        }
    }

    func post(_ server: TestServer, _ path: String, _ body: [String: Any], attestation: String? = nil) async throws -> HTTPResult {
        try await server.call(
            "POST", path, token: nil, json: body, contentType: "application/json",
            headers: attestation.map { ["Attestation-Token": $0] } ?? [:])
    }

    @Test("password sign-in: a bot without the app's attestation gets no tkn; a browser-only app gets none at all")
    func passwordLogin() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        func login(_ client: String, attestation: String? = nil) async throws -> HTTPResult {
            try await post(
                server, "/identity/v1/password/login",
                [
                    "email": "demo@example.com", "password": "correct horse battery staple",
                    "client_id": client
                ], attestation: attestation)
        }
        let bot = try await login("ios-app")
        #expect(try bot.status == 401 && (try bot.json()["tkn"]) == nil, "\(bot.text)")
        let forged = try await login("ios-app", attestation: "forged")
        #expect(try forged.status == 401 && (try forged.json()["tkn"]) == nil)
        let web = try await login("web-app")
        #expect(try web.status == 403 && (try web.json()["tkn"]) == nil, "\(web.text)")
        let genuine = try await login("ios-app", attestation: "genuine-app-ios-app")
        #expect(try genuine.status == 200 && (try genuine.json()["tkn"] as? String) != nil, "\(genuine.text)")
    }

    @Test("passkey sign-in and sign-up options: the same gate (a browser application's sign-in on the server's own page only)")
    func passkeyOptions() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        for path in ["/identity/v1/webauthn/authentication-options", "/identity/v1/webauthn/signup-options"] {
            var body: [String: Any] = ["client_id": "ios-app", "origin": server.issuer]
            if path.hasSuffix("signup-options") { body["profile"] = ["email": "new-user@example.com"] }
            let bot = try await post(server, path, body)
            #expect(try bot.status == 401 && (try bot.json()["options"]) == nil && (try bot.json()["publicKey"]) == nil, "\(path): \(bot.text)")
            body["client_id"] = "web-app"
            // A browser application's passkey sign-in is served for the server's own origin only: that is the hosted
            // page's passkey button, and WebAuthn binds the assertion to the origin. Sign-up never.
            let own = try await post(server, path, body)
            #expect(own.status == (path.hasSuffix("signup-options") ? 403 : 200), "\(path): \(own.text)")
            body["origin"] = "https://elsewhere.example"
            #expect(try await post(server, path, body).status == 403, "\(path)")
            body["origin"] = server.issuer
            body["client_id"] = "ios-app"
            let genuine = try await post(server, path, body, attestation: "genuine-app-ios-app")
            #expect(genuine.status == 200, "\(path): \(genuine.text)")
        }
    }

    @Test("a browser application's login ticket (its hosted page's passkey) opens neither /oauth2/authorize nor the step-up")
    func browserTicketIsForTheHostedPageOnly() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        func ticket(_ clientId: String, mfaPending: Bool = false) async throws -> String {
            try await server.server.ownTokens.mintLoginTicket(user: demo, clientId: clientId, amr: ["hwk"], mfaPending: mfaPending)
        }
        var options = AuthorizeOptions()
        options.clientId = "web-app"
        options.redirectUri = "https://web.example/cb"
        options.scope = "openid"
        options.extra["tkn"] = try await ticket("web-app")
        let refused = try await TestBrowser().get(server.authorizeURL(options))
        #expect(refused.locationQuery["error"] == "access_denied", "\(refused.status) \(refused.location ?? "")")
        #expect(refused.locationQuery["code"] == nil)
        let stepUp = try await post(
            server, "/identity/v1/mfa/stepup",
            [
                "tkn": try await ticket("web-app", mfaPending: true), "client_id": "web-app", "redirect_uri": "https://web.example/cb",
                "code_challenge": TestPKCE().challenge, "code_challenge_method": "S256"
            ])
        #expect(stepUp.status == 403 && stepUp.text.contains("flows.errors.direct_initiation"), "\(stepUp.text)")
        // The same ticket for an application that may sign in natively is a sign-in.
        var demoOptions = AuthorizeOptions()
        demoOptions.extra["tkn"] = try await ticket(DevelopmentDefaults.demoClientId)
        let accepted = try await TestBrowser().get(server.authorizeURL(demoOptions))
        #expect(accepted.locationQuery["code"] != nil, "\(accepted.status) \(accepted.location ?? "")")
    }
}
