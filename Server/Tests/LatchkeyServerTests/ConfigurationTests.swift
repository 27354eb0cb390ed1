import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

@Suite("Configuration: file format and refusals")
struct ConfigurationTests {
    func write(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-config-\(UUID().uuidString).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func developmentDefaultsAreTheDocumentedOnes() throws {
        let c = DevelopmentDefaults.configuration()
        #expect(c.issuerString == "http://localhost:8090")
        #expect(c.host == "127.0.0.1" && c.port == 8090 && c.databasePath == "latchkey.sqlite")
        let demo = try #require(c.clients.first { $0.clientId == "latchkey-demo" })
        #expect(demo.isPublic && demo.requirePKCE)
        #expect(demo.redirectUris.contains("io.latchkey.demo:/callback"))
        #expect(RedirectURIMatcher.isRegistered("http://127.0.0.1:49152/callback", in: demo.redirectUris))
        #expect(c.users.map(\.username) == ["demo@example.com"])
        try c.validate()
    }

    @Test func fileIsAppliedOverDefaults() throws {
        let path = try write(
            """
            { "issuer": "https://id.example.com", "port": 9000, "database": "/tmp/x.sqlite",
              "clients": [ { "client_id": "app", "redirect_uris": ["com.example:/cb"] },
                           { "client_id": "svc", "client_secret": "0123456789abcdef", "grant_types": ["client_credentials"], "scopes": ["api"] } ],
              "users": [ { "username": "ada@example.com", "password": "pw", "claims": { "email": "ada@example.com" } } ],
              "lifetimes": { "access_token": 300 }, "login_policy": { "max_failures_per_account": 3 },
              "development": false, "smtp": { "host": "smtp.example.com", "from": "noreply@example.com", "max_attempts": 4 } }
            """)
        var c = DevelopmentDefaults.configuration()
        c.clients = []; c.users = []
        try ConfigurationFile.load(path: path).apply(to: &c)
        #expect(!c.development && c.smtp?.host == "smtp.example.com" && c.smtp?.port == 587 && c.smtp?.startTLS == .required)
        #expect(c.smtp?.maxAttempts == 4 && c.smtp?.queueLimit == 1000)
        #expect(c.issuerString == "https://id.example.com" && c.port == 9000 && c.databasePath == "/tmp/x.sqlite")
        #expect(c.clients.map(\.clientId) == ["app", "svc"])
        #expect(c.clients[1].tokenEndpointAuthMethod == .clientSecretBasic)
        #expect(c.lifetimes.accessToken == 300 && c.lifetimes.idToken == 3600)
        #expect(c.loginPolicy.maxFailuresPerAccount == 3)
        #expect(c.users.first?.claims["email"] == "ada@example.com")
        try c.validate()
    }

    /// A whole-number setting of the file: its documented default, a value read, the bounds refused with its message.
    struct BoundedSetting: Sendable, CustomTestStringConvertible {
        let key: String
        let value: @Sendable (ServerConfiguration) -> Int
        let defaultValue, accepted: Int
        let refused: [Int]
        let bounds: String
        var testDescription: String { key }
    }

    static let boundedSettings = [
        BoundedSetting(
            key: "outbound_timeout_seconds", value: { $0.outboundTimeoutSeconds }, defaultValue: 5, accepted: 12, refused: [0, 61], bounds: "1…60"),
        BoundedSetting(
            key: "database_idle_seconds", value: { $0.databaseIdleSeconds }, defaultValue: 60, accepted: 300, refused: [0, 86_401],
            bounds: "1…86400")
    ]

    @Test(arguments: boundedSettings)
    func boundedSettingIsReadAndBounded(_ setting: BoundedSetting) throws {
        var c = DevelopmentDefaults.configuration()
        #expect(setting.value(c) == setting.defaultValue, "the documented default")
        try ConfigurationFile.load(path: try write(#"{ "\#(setting.key)": \#(setting.accepted) }"#)).apply(to: &c)
        #expect(setting.value(c) == setting.accepted)
        for refused in setting.refused {
            var d = DevelopmentDefaults.configuration()
            let file = try ConfigurationFile.load(path: try write(#"{ "\#(setting.key)": \#(refused) }"#))
            #expect(throws: ConfigurationError.invalid("\(setting.key) must be \(setting.bounds)")) { try file.apply(to: &d) }
            #expect(setting.value(d) == setting.defaultValue)
        }
    }

    @Test func dpopDeviceAndPARSettings() throws {
        let path = try write(
            """
            { "issuer": "https://id.example.com", "database": "/tmp/x.sqlite", "development": false,
              "clients": [ { "client_id": "tv", "grant_types": ["urn:ietf:params:oauth:grant-type:device_code"], "require_dpop": true,
                             "require_pushed_authorization_requests": true } ],
              "lifetimes": { "device_code": 900, "device_polling_interval": 2 },
              "dpop": { "require_nonce": true, "proof_lifetime_seconds": 120 } }
            """)
        var c = DevelopmentDefaults.configuration()
        c.clients = []; c.users = []
        try ConfigurationFile.load(path: path).apply(to: &c)
        #expect(c.clients.first?.grantTypes == [.deviceCode] && c.clients.first?.requireDPoP == true)
        #expect(c.clients.first?.requirePushedAuthorizationRequests == true)
        #expect(c.lifetimes.deviceCode == 900 && c.lifetimes.devicePollingInterval == 2)
        #expect(c.dpop == DPoPPolicy(requireNonce: true, proofLifetimeSeconds: 120))
        // The flags survive the store's JSON round trip of a client.
        let stored = try JSONDecoder().decode(ClientConfiguration.self, from: try JSONEncoder().encode(try #require(c.clients.first)))
        #expect(stored.requireDPoP && stored.requirePushedAuthorizationRequests)
        c.dpop.proofLifetimeSeconds = 5
        #expect(throws: ConfigurationError.self) { try c.validate() }
    }

    @Test func plainHTTPIsOnlyForLoopback() throws {
        var c = DevelopmentDefaults.configuration()
        c.issuer = URL(string: "http://id.example.com")!
        #expect(throws: ConfigurationError.self) { try c.validate() }
        c = DevelopmentDefaults.configuration()
        c.host = "0.0.0.0"
        #expect(throws: ConfigurationError.self) { try c.validate() }
        c.issuer = URL(string: "https://id.example.com")!
        // Behind a TLS proxy: a real deployment (development mode and the demo password are loopback-only).
        c.development = false; c.users = []; c.outbox = CapturingOutbox()
        try c.validate()
        #expect(!c.usesPlainHTTPOnLoopback, "an https issuer gets Secure cookies")
    }

    @Test func invalidClientsAreRefusedWithTheReason() throws {
        let cases: [(ClientConfiguration, String)] = [
            (ClientConfiguration(clientId: "a", clientSecret: "short"), "at least 16"),
            (ClientConfiguration(clientId: "b", redirectUris: ["http://evil.example/cb"]), "must be loopback"),
            (ClientConfiguration(clientId: "c", redirectUris: ["com.example:/cb#x"]), "fragment"),
            (ClientConfiguration(clientId: "d", grantTypes: [.clientCredentials]), "public client"),
            (ClientConfiguration(clientId: "e", redirectUris: ["not a uri"]), "absolute")
        ]
        for (client, reason) in cases {
            var c = DevelopmentDefaults.configuration()
            c.clients = [client]
            #expect { try c.validate() } throws: { ($0 as? ConfigurationError)?.description.contains(reason) == true }
        }
        var dup = DevelopmentDefaults.configuration()
        dup.clients += dup.clients
        #expect(throws: ConfigurationError.self) { try dup.validate() }
    }

    @Test func unreadableOrMalformedFilesSayWhy() throws {
        #expect { try ConfigurationFile.load(path: "/nonexistent/latchkey.json") } throws: {
            ($0 as? ConfigurationError)?.description.contains("cannot read") == true
        }
        let path = try write(#"{ "clients": [ { "name": "no id" } ] }"#)
        #expect { try ConfigurationFile.load(path: path) } throws: {
            ($0 as? ConfigurationError)?.description.contains("client_id") == true
        }
    }
}
