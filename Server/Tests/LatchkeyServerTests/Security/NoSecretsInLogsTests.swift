import LatchkeyTestSupport
import Foundation
@testable import Latchkey
@testable import LatchkeyServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// Every line the server and the SDK log at trace level, during a browser sign-in, userinfo, refreshes, an app-native
/// flow, a passkey sign-up and sign-in, a profile update and sign-out, is searched for the secrets that crossed the
/// wire: no token, code, password, verifier or query string may be in one.
@Suite("Logs: no secret reaches a log line")
struct NoSecretsInLogsTests {
    /// Keeps every line (message and metadata) of every logger made with it.
    final class Capture: Sendable {
        private let lines = NIOLockedValueBox<[String]>([])
        var all: [String] { lines.withLockedValue { $0 } }
        func append(_ line: String) { lines.withLockedValue { $0.append(line) } }

        func logger(_ label: String) -> Logger {
            var logger = Logger(label: label) { label in Handler(label: label, capture: self) }
            logger.logLevel = .trace
            return logger
        }

        struct Handler: LogHandler {
            let label: String
            let capture: Capture
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                let merged = metadata.merging(event.metadata ?? [:]) { $1 }
                capture.append(
                    "\(label) \(event.level) \(event.message) \(merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
                )
            }
        }
    }

    @Test("a whole run at trace level: server and SDK lines hold no token, code, password, verifier or query string")
    func wholeRun() async throws {
        let capture = Capture()
        let server = try await TestServer.start(logger: capture.logger("server")) { $0.lifetimes.accessToken = 10 }
        defer { Task { await server.stop() } }
        let password = "correct horse battery staple"
        var secrets: [String] = [password]
        let storage = InMemoryStorageAdapter()
        func remember() async throws {
            for key in ["latchkey.session.default", "latchkey.session.flow"] {
                guard let data = await storage.get(key) else { continue }
                let tokens = try StoredSession.decode(data)
                secrets += [tokens.accessToken] + [tokens.refreshToken, tokens.idToken].compactMap { $0 }
            }
        }

        // Browser sign-in (code flow with PKCE), userinfo, refreshes (access tokens live 10 s: each call refreshes).
        let authenticator = SoftwareAuthenticator()
        let client = LatchkeyClient(http: productionHTTPClient(), logger: capture.logger("sdk"))
        client.passkeyAuthenticator = authenticator
        client.credentialProvider = SoftwareCredentialProvider(authenticator: authenticator)
        try await client.initialize(config: server.sdkConfig(), storage: storage)
        let callback = try await server.browse(try client.buildSignInURL())
        for item in URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? [] where item.name == "code" || item.name == "state" {
            secrets += [item.value].compactMap { $0 }
        }
        _ = try await client.handleRedirectCallback(url: callback)
        try await remember()
        _ = try await client.getUser(options: ["source": "userinfo"])
        _ = try await client.getAccessToken()
        try await remember()
        _ = try await client.updateUserProfile(payload: ["given_name": .string("Dee")])

        // An app-native flow into a second session, then its refresh.
        let request = EmbeddedFlowRequestConfig(flowType: .authentication)
        let first = try await client.signIn(payload: .init(), request: request, sessionId: "flow")
        _ = try await client.signIn(
            payload: .init(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": password]), request: request, sessionId: "flow")
        try await remember()

        // Passkeys: register one for the signed-in user, then sign in with it.
        let token = try await client.authToken()
        try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "laptop"), authToken: token)
        _ = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
        try await remember()
        try await client.signOut(sessionId: "flow")
        try await client.signOut()

        let lines = capture.all
        #expect(lines.contains { $0.hasPrefix("sdk debug HTTP 200 POST") }, "the SDK's request summaries are there")
        #expect(lines.contains { $0.hasPrefix("server info profile updated through SCIM") }, "the server's lines are there")
        #expect(lines.count > 20)
        let patterns = ["code=", "code_verifier", "refresh_token=", "access_token=", "Bearer ", "DPoP ", "password=", "?"]
        // A JWT of any kind (not only the ones this run saw): a base64url `{"` header, a dot, a payload. Not bare "eyJ":
        // the random identifiers in audit lines (families, request ids) hold those three letters now and then (a
        // 22-character id once in about 13,000), which failed a fresh-clone run once.
        let jwtShaped = try Regex("eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}")
        for line in lines {
            for secret in Set(secrets) where line.contains(secret) { Issue.record("a secret in a log line: \(line.prefix(160))") }
            for pattern in patterns where line.contains(pattern) { Issue.record("\(pattern) in a log line: \(line.prefix(160))") }
            if line.contains(jwtShaped) { Issue.record("a JWT in a log line: \(line.prefix(160))") }
        }
    }
}
