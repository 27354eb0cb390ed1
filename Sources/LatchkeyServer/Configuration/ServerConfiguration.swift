import Foundation

/// Everything a server instance needs to start. Built from defaults, an optional JSON file (`--config`) and flags.
public struct ServerConfiguration: Sendable {
    /// Public base URL; the `iss` of every token and the prefix of every endpoint in discovery.
    public var issuer: URL
    /// Interface to bind. `127.0.0.1` unless the operator asks otherwise.
    public var host: String
    /// Port to bind; 0 picks a free one (tests).
    public var port: Int
    /// SQLite database file.
    public var databasePath: String
    /// Development mode: emails are only recorded (readable at `GET /dev/outbox`) and mobile attestation is waived.
    /// Allowed only with a loopback issuer; `latchkey serve` turns it on only without `--config`, with `--dev` or
    /// with `"development": true`.
    public var development: Bool
    public var clients: [ClientConfiguration]
    public var users: [UserSeed]
    public var lifetimes: TokenLifetimes
    public var loginPolicy: LoginPolicy
    /// bcrypt cost for new password hashes (12 in production; tests lower it to keep suites fast).
    public var bcryptCost: UInt8
    /// The attributes of user accounts (registration, profile, SCIM).
    public var userSchema: UserSchema = .standard
    /// Delivery of email and SMS (one-time codes). Nil: the database in development, otherwise nowhere (logged).
    public var outbox: (any Outbox)?
    /// Checks `Attestation-Token`s of `mobile` applications outside development mode.
    public var attestationVerifier: (any AttestationVerifier)?
    /// The WebAuthn relying party (passkeys).
    public var webAuthn = WebAuthnSettings()
    /// Where Sign in with Apple identity tokens come from and how they are verified.
    public var apple = AppleSettings()
    /// Email delivery through an SMTP relay (used when `outbox` is nil). Required outside development when an
    /// application sends emails (recovery, emailed codes).
    public var smtp: SMTPSettings?
    /// Seconds an HTTP connection may sit idle (or trickle a request head) before it is closed (slowloris).
    public var httpIdleTimeoutSeconds: Int = 60

    public init(issuer: URL, host: String = "127.0.0.1", port: Int = 8090, databasePath: String,
                development: Bool = false, clients: [ClientConfiguration] = [], users: [UserSeed] = [],
                lifetimes: TokenLifetimes = TokenLifetimes(), loginPolicy: LoginPolicy = LoginPolicy(), bcryptCost: UInt8 = 12) {
        self.issuer = issuer; self.host = host; self.port = port; self.databasePath = databasePath
        self.development = development; self.clients = clients; self.users = users
        self.lifetimes = lifetimes; self.loginPolicy = loginPolicy; self.bcryptCost = bcryptCost
    }

    /// The issuer string exactly as it appears in tokens (no trailing slash).
    public var issuerString: String {
        var s = issuer.absoluteString
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }

    /// Plain HTTP is only acceptable when the server is reachable on loopback alone (RFC 8252 §8.3 spirit):
    /// anything else must sit behind TLS, which we expect a reverse proxy to terminate.
    public var usesPlainHTTPOnLoopback: Bool {
        issuer.scheme == "http" && LoopbackHost.isLoopback(issuer.host ?? "")
    }

    /// Refuses configurations that would expose credentials over plain HTTP.
    public func validate() throws {
        guard let scheme = issuer.scheme, scheme == "https" || scheme == "http", issuer.host != nil else {
            throw ConfigurationError.invalid("issuer must be an absolute http(s) URL, got \(issuer.absoluteString)")
        }
        if issuer.query != nil || issuer.fragment != nil {
            throw ConfigurationError.invalid("issuer must not have a query or fragment (OpenID Connect Discovery §3)")
        }
        if scheme == "http" {
            guard LoopbackHost.isLoopback(issuer.host ?? "") else {
                throw ConfigurationError.invalid(
                    "plain http is only allowed for a loopback issuer; put a TLS-terminating reverse proxy in front and set an https issuer")
            }
            guard LoopbackHost.isLoopback(host) else {
                throw ConfigurationError.invalid(
                    "binding \(host) with an http issuer would serve credentials in clear text off this machine; use an https issuer behind a TLS proxy")
            }
        }
        try validateDeployment()
        var seen = Set<String>()
        for client in clients {
            guard seen.insert(client.clientId).inserted else { throw ConfigurationError.invalid("duplicate client \(client.clientId)") }
            try client.validate()
        }
    }
}

/// Lifetimes, in seconds.
public struct TokenLifetimes: Sendable, Codable, Equatable {
    public var accessToken: Int = 3600
    public var idToken: Int = 3600
    public var authorizationCode: Int = 60
    public var refreshToken: Int = 30 * 24 * 3600
    public var session: Int = 12 * 3600
    /// How long a pending login (authorize → form submit) stays valid.
    public var loginRequest: Int = 600
    /// How long an app-native flow execution may sit between two steps.
    public var flowExecution: Int = 900
    /// Lifetime of a flow's COMPLETE assertion: it is meant to be exchanged for tokens at once (and only once).
    public var flowAssertion: Int = 300
    /// Lifetime of an emailed one-time code (second factor, password recovery).
    public var oneTimeCode: Int = 600
    /// A WebAuthn ceremony (options → authenticator → response).
    public var passkeyChallenge: Int = 300
    /// A reachFive `tkn` login ticket, from the password or passkey step to `/oauth/authorize`.
    public var loginTicket: Int = 120
    public init() {}
}

/// Brute-force protection for the hosted login form.
public struct LoginPolicy: Sendable, Codable, Equatable {
    /// Consecutive failures that lock an account.
    public var maxFailuresPerAccount: Int = 5
    /// How long a locked account stays locked.
    public var lockoutSeconds: Int = 15 * 60
    /// Failures tolerated from one address within `addressWindowSeconds`.
    public var maxFailuresPerAddress: Int = 20
    public var addressWindowSeconds: Int = 5 * 60
    /// Passkey challenges and step-up codes one address may ask for within `addressWindowSeconds` (each one stores a
    /// ceremony, and a step-up may send an email).
    public var maxChallengesPerAddress: Int = 60
    public init() {}
}

public enum ConfigurationError: Error, CustomStringConvertible, Equatable {
    case invalid(String)
    public var description: String {
        switch self { case .invalid(let why): "invalid configuration: \(why)" }
    }
}

/// Loopback recognition shared by redirect-URI matching, cookie policy and configuration checks.
public enum LoopbackHost {
    public static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if h == "localhost" || h == "::1" { return true }
        let parts = h.split(separator: ".")
        return parts.count == 4 && parts.first == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
