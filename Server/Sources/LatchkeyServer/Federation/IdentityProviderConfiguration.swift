import Crypto
import Foundation

/// Another identity provider whose users may sign in here (`identity_providers` in the configuration file): any
/// OpenID provider by its issuer, or a preset whose endpoints and quirks the server knows.
///
/// ```json
/// { "id": "corp", "type": "oidc", "name": "Corp SSO", "issuer": "https://sso.example.com",
///   "client_id": "latchkey", "client_secret_env": "CORP_SSO_SECRET", "scopes": ["openid", "email", "profile"],
///   "link_by_verified_email": true }
/// ```
/// The redirect URI to register at the provider is `{issuer}/federation/{id}/callback`.
public struct IdentityProviderConfiguration: Sendable, Equatable {
    /// What kind of provider this is.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// Any OpenID provider: its endpoints and keys come from `{issuer}/.well-known/openid-configuration`.
        case oidc
        /// Google: OpenID, issuer `https://accounts.google.com` (its tokens may also say `accounts.google.com`).
        case google
        /// Microsoft Entra ID: OpenID per tenant; `common` and `organizations` publish an issuer template
        /// (`…/{tenantid}/v2.0`) that each token's `tid` fills in.
        case microsoft
        /// GitHub: OAuth 2.0 with a user API, not OpenID (no ID token, no nonce); the verified primary email comes from
        /// `/user/emails`.
        case github
        /// Sign in with Apple on the web: the answer is a `form_post`, the client secret a JWT signed with the team's key.
        case apple
    }

    /// Lower-case letters, digits, `-` and `_`; part of the callback URL and of the `idp` claim.
    public var id: String
    public var kind: Kind
    /// What the person sees ("Continue with …").
    public var name: String
    /// OpenID issuer (`oidc`; the presets know theirs).
    public var issuer: String?
    /// Base URL of a preset's endpoints, for a provider reached under another address (a test double, a sovereign
    /// cloud): Google's issuer, Microsoft's login host, GitHub's web host, Apple's issuer.
    public var authority: String?
    /// GitHub's API base (`https://api.github.com`).
    public var apiBase: String?
    /// Microsoft tenant: `common` (default), `organizations`, `consumers` or a tenant id.
    public var tenant: String?
    public var clientId: String
    /// Resolved from `client_secret_env` or `client_secret_file` when the configuration is read; never logged, never
    /// encoded.
    public var clientSecret: String?
    public var scopes: [String]
    /// Link a first sign-in to an existing account when both the provider and the account have verified the same email.
    public var linkByVerifiedEmail: Bool
    /// Count the provider's multi-factor assertion (`amr` with `mfa`, or the PAPE multi-factor `acr`) as this server's
    /// second factor; off, an application with `require_mfa` always asks for the account's own.
    public var trustsMFA: Bool
    /// Further audiences accepted for ID tokens that an app got from the provider's native SDK (Google's iOS client id).
    public var nativeClientIds: [String]
    /// Apple: the team id, key id and the private key (PEM, PKCS#8 P-256) that sign the client secret.
    public var teamId: String?
    public var keyId: String?
    public var privateKeyPEM: String?

    public init(
        id: String, kind: Kind, name: String? = nil, issuer: String? = nil, authority: String? = nil, apiBase: String? = nil,
        tenant: String? = nil, clientId: String, clientSecret: String? = nil, scopes: [String]? = nil,
        linkByVerifiedEmail: Bool = false, trustsMFA: Bool = true, nativeClientIds: [String] = [],
        teamId: String? = nil, keyId: String? = nil, privateKeyPEM: String? = nil
    ) {
        self.id = id; self.kind = kind; self.issuer = issuer; self.authority = authority; self.apiBase = apiBase
        self.tenant = tenant; self.clientId = clientId; self.clientSecret = clientSecret
        self.linkByVerifiedEmail = linkByVerifiedEmail; self.trustsMFA = trustsMFA; self.nativeClientIds = nativeClientIds
        self.teamId = teamId; self.keyId = keyId; self.privateKeyPEM = privateKeyPEM
        self.name = name ?? Self.defaultName(kind, id: id)
        self.scopes = scopes ?? Self.defaultScopes(kind)
    }

    static func defaultName(_ kind: Kind, id: String) -> String {
        switch kind {
        case .oidc: id
        case .google: "Google"
        case .microsoft: "Microsoft"
        case .github: "GitHub"
        case .apple: "Apple"
        }
    }

    static func defaultScopes(_ kind: Kind) -> [String] {
        switch kind {
        case .github: ["read:user", "user:email"]
        case .apple: ["name", "email"]
        default: ["openid", "email", "profile"]
        }
    }

    /// Whether the provider answers with an ID token (all but GitHub).
    var isOpenID: Bool { kind != .github }

    /// Checks what can be checked without the network.
    func validate() throws {
        func invalid(_ why: String) -> ConfigurationError { .invalid("identity provider \(id): \(why)") }
        guard !id.isEmpty, id.count <= 64, id.unicodeScalars.allSatisfy({ Self.idCharacters.contains($0) }) else {
            throw ConfigurationError.invalid("identity provider id \"\(id)\" must be 1–64 of a-z 0-9 - _")
        }
        guard !clientId.isEmpty else { throw invalid("client_id is required") }
        if kind == .oidc {
            guard let issuer else { throw invalid("an oidc provider needs issuer") }
            try Self.checkURL(issuer, "issuer", provider: id)
        }
        for (name, value) in [("authority", authority), ("api_base", apiBase)] {
            if let value { try Self.checkURL(value, name, provider: id) }
        }
        if kind == .apple {
            guard let teamId, !teamId.isEmpty, let keyId, !keyId.isEmpty else { throw invalid("apple needs team_id and key_id") }
            guard let privateKeyPEM, (try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)) != nil else {
                throw invalid("apple needs private_key_file: a PEM P-256 key (Apple's AuthKey_….p8)")
            }
        } else if (clientSecret ?? "").isEmpty {
            throw invalid("client_secret_env or client_secret_file must name a secret")
        }
        if isOpenID, kind != .apple, !scopes.contains("openid") { throw invalid("scopes must include openid") }
    }

    private static let idCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789-_")

    /// https, or http on a loopback host (a provider on this machine).
    static func checkURL(_ value: String, _ name: String, provider: String) throws {
        guard let url = URL(string: value), let host = url.host, url.scheme == "https" || (url.scheme == "http" && LoopbackHost.isLoopback(host))
        else {
            throw ConfigurationError.invalid("identity provider \(provider): \(name) must be an https URL (http only on loopback), got \(value)")
        }
    }
}

/// `identity_providers[]` as written in the configuration file.
public struct IdentityProviderFile: Codable, Sendable {
    public var id: String
    public var type: String
    public var name, issuer, authority, apiBase, tenant, clientId: String?
    public var clientSecretEnv, clientSecretFile: String?
    public var scopes: [String]?
    public var linkByVerifiedEmail, trustMfa: Bool?
    public var nativeClientIds: [String]?
    public var teamId, keyId, privateKeyFile: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, type, name, issuer, authority, apiBase = "api_base", tenant, clientId = "client_id"
        case clientSecretEnv = "client_secret_env", clientSecretFile = "client_secret_file", scopes
        case linkByVerifiedEmail = "link_by_verified_email", trustMfa = "trust_mfa", nativeClientIds = "native_client_ids"
        case teamId = "team_id", keyId = "key_id", privateKeyFile = "private_key_file"
    }

    /// The provider, with its secret read from the environment or a file (a secret written into the file itself is
    /// not accepted: configuration files get copied, committed and printed).
    func configuration(environment: [String: String]) throws -> IdentityProviderConfiguration {
        guard let kind = IdentityProviderConfiguration.Kind(rawValue: type) else {
            let kinds = IdentityProviderConfiguration.Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError.invalid("identity provider \(id): type must be one of \(kinds), got \(type)")
        }
        var secret: String?
        if let name = clientSecretEnv {
            guard let value = environment[name], !value.isEmpty else {
                throw ConfigurationError.invalid("identity provider \(id): the environment variable \(name) (client_secret_env) is not set")
            }
            secret = value
        } else if let path = clientSecretFile {
            guard let value = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError.invalid("identity provider \(id): cannot read client_secret_file \(path)")
            }
            secret = value.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var pem: String?
        if let path = privateKeyFile {
            guard let value = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError.invalid("identity provider \(id): cannot read private_key_file \(path)")
            }
            pem = value
        }
        return IdentityProviderConfiguration(
            id: id, kind: kind, name: name, issuer: issuer, authority: authority, apiBase: apiBase, tenant: tenant,
            clientId: clientId ?? "", clientSecret: secret, scopes: scopes, linkByVerifiedEmail: linkByVerifiedEmail ?? false,
            trustsMFA: trustMfa ?? true, nativeClientIds: nativeClientIds ?? [], teamId: teamId, keyId: keyId, privateKeyPEM: pem)
    }
}
