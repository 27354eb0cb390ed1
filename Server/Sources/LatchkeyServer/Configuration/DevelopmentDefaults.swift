import Foundation

/// The development instance `latchkey serve` starts with no arguments.
public enum DevelopmentDefaults {
    public static let port = 8090
    public static let issuer = "http://localhost:8090"
    public static let databasePath = "latchkey.sqlite"
    public static let demoClientId = "latchkey-demo"
    public static let demoUsername = "demo@example.com"
    public static let demoPassword = "correct horse battery staple"

    /// Public client `latchkey-demo`: loopback redirects on any port (RFC 8252 §7.3) and the app's custom scheme.
    public static func demoClient() -> ClientConfiguration {
        ClientConfiguration(
            clientId: demoClientId, name: "Latchkey Demo",
            redirectUris: [
                "http://127.0.0.1/callback", "http://localhost/callback", "http://[::1]/callback",
                "io.latchkey.demo:/callback"
            ],
            postLogoutRedirectUris: [
                "http://127.0.0.1/logout", "http://localhost/logout", "http://[::1]/logout",
                "http://127.0.0.1/callback", "http://localhost/callback",
                "io.latchkey.demo:/logout", "io.latchkey.demo:/callback"
            ],
            grantTypes: [.authorizationCode, .refreshToken, .tokenExchange, .deviceCode],
            registration: .open,  // the demo is meant to be tried: sign-up stays open whatever the defaults become
            passkeyOrigins: ["self"])
    }

    public static let demoUser = UserSeed(
        username: demoUsername, password: demoPassword,
        claims: [
            "email": demoUsername, "email_verified": "true", "name": "Demo User", "given_name": "Demo",
            "family_name": "User", "preferred_username": "demo", "locale": "en-US"
        ])

    /// A complete development configuration; `port` changes the issuer too so links stay right.
    public static func configuration(port: Int = port, databasePath: String = databasePath, host: String = "localhost") -> ServerConfiguration {
        var components = URLComponents()
        components.scheme = "http"
        components.host = host
        components.port = port
        let issuer = components.url ?? URL(fileURLWithPath: "/")  // validate() rejects the fallback with a clear message
        return ServerConfiguration(
            issuer: issuer, host: "127.0.0.1", port: port, databasePath: databasePath, development: true,
            clients: [demoClient()], users: [demoUser])
    }
}
