import Foundation

/// How a client proves its identity at the token endpoint (RFC 7591 `token_endpoint_auth_method`).
public enum ClientAuthMethod: String, Codable, Sendable, CaseIterable {
    case none
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
}

public enum GrantType: String, Codable, Sendable, CaseIterable {
    case authorizationCode = "authorization_code"
    case refreshToken = "refresh_token"
    case clientCredentials = "client_credentials"
    case tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
}

/// A registered client (also the "application" of the thunderID dialect: `applicationId` == `clientId`).
public struct ClientConfiguration: Sendable, Codable, Equatable {
    public var clientId: String
    public var name: String
    /// Present only for confidential clients. Stored hashed; the plain value lives only in the config file.
    public var clientSecret: String?
    public var tokenEndpointAuthMethod: ClientAuthMethod
    /// Exact redirect URIs; a loopback `http://127.0.0.1/…`, `http://localhost/…` or `http://[::1]/…` entry without a
    /// port matches any port (RFC 8252 §7.3).
    public var redirectUris: [String]
    public var postLogoutRedirectUris: [String]
    public var grantTypes: [GrantType]
    public var scopes: [String]
    /// Audiences a token exchange may target besides the issuer itself.
    public var allowedAudiences: [String]
    public var requirePKCE: Bool

    public init(clientId: String, name: String? = nil, clientSecret: String? = nil,
                tokenEndpointAuthMethod: ClientAuthMethod? = nil, redirectUris: [String] = [],
                postLogoutRedirectUris: [String] = [], grantTypes: [GrantType] = [.authorizationCode, .refreshToken],
                scopes: [String] = ["openid", "profile", "email", "phone", "address", "offline_access"],
                allowedAudiences: [String] = [], requirePKCE: Bool = true) {
        self.clientId = clientId
        self.name = name ?? clientId
        self.clientSecret = clientSecret
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod ?? (clientSecret == nil ? .none : .clientSecretBasic)
        self.redirectUris = redirectUris
        self.postLogoutRedirectUris = postLogoutRedirectUris
        self.grantTypes = grantTypes
        self.scopes = scopes
        self.allowedAudiences = allowedAudiences
        self.requirePKCE = requirePKCE
    }

    public var isPublic: Bool { tokenEndpointAuthMethod == .none }

    func validate() throws {
        if isPublic && clientSecret != nil {
            throw ConfigurationError.invalid("client \(clientId) is public (auth method none) but has a secret")
        }
        if !isPublic && (clientSecret ?? "").count < 16 {
            throw ConfigurationError.invalid("client \(clientId) needs a client_secret of at least 16 characters")
        }
        if isPublic && grantTypes.contains(.clientCredentials) {
            throw ConfigurationError.invalid("public client \(clientId) cannot use client_credentials")
        }
        for uri in redirectUris + postLogoutRedirectUris {
            guard let url = URL(string: uri), url.scheme != nil else {
                throw ConfigurationError.invalid("client \(clientId): \(uri) is not an absolute URI")
            }
            if url.fragment != nil { throw ConfigurationError.invalid("client \(clientId): redirect URI \(uri) has a fragment") }
            if url.scheme == "http" && !LoopbackHost.isLoopback(url.host ?? "") {
                throw ConfigurationError.invalid("client \(clientId): http redirect URI \(uri) must be loopback")
            }
        }
    }

    enum CodingKeys: String, CodingKey {
        case clientId = "client_id", name, clientSecret = "client_secret"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method", redirectUris = "redirect_uris"
        case postLogoutRedirectUris = "post_logout_redirect_uris", grantTypes = "grant_types", scopes
        case allowedAudiences = "allowed_audiences", requirePKCE = "require_pkce"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = ClientConfiguration(clientId: "")
        let secret = try c.decodeIfPresent(String.self, forKey: .clientSecret)
        self.init(
            clientId: try c.decode(String.self, forKey: .clientId),
            name: try c.decodeIfPresent(String.self, forKey: .name),
            clientSecret: secret,
            tokenEndpointAuthMethod: try c.decodeIfPresent(ClientAuthMethod.self, forKey: .tokenEndpointAuthMethod),
            redirectUris: try c.decodeIfPresent([String].self, forKey: .redirectUris) ?? [],
            postLogoutRedirectUris: try c.decodeIfPresent([String].self, forKey: .postLogoutRedirectUris) ?? [],
            grantTypes: try c.decodeIfPresent([GrantType].self, forKey: .grantTypes) ?? defaults.grantTypes,
            scopes: try c.decodeIfPresent([String].self, forKey: .scopes) ?? defaults.scopes,
            allowedAudiences: try c.decodeIfPresent([String].self, forKey: .allowedAudiences) ?? [],
            requirePKCE: try c.decodeIfPresent(Bool.self, forKey: .requirePKCE) ?? true)
    }
}

/// A user to create at start-up if absent (development data, fixtures). Existing users are never overwritten.
public struct UserSeed: Sendable, Codable, Equatable {
    public var username: String
    public var password: String
    /// Standard OpenID Connect claims (`email`, `given_name`, `name`, …).
    public var claims: [String: String]
    public var disabled: Bool

    public init(username: String, password: String, claims: [String: String] = [:], disabled: Bool = false) {
        self.username = username; self.password = password; self.claims = claims; self.disabled = disabled
    }

    enum CodingKeys: String, CodingKey { case username, password, claims, disabled }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(username: try c.decode(String.self, forKey: .username),
                  password: try c.decode(String.self, forKey: .password),
                  claims: try c.decodeIfPresent([String: String].self, forKey: .claims) ?? [:],
                  disabled: try c.decodeIfPresent(Bool.self, forKey: .disabled) ?? false)
    }
}
