import Foundation

/// The parts of an OpenID Provider's discovery document the SDK uses, completed from its OAuth 2.0
/// authorization-server metadata (RFC 8414) where the first leaves endpoints out.
public struct ProviderMetadata: Sendable, Codable, Equatable {
    public var issuer: String
    public var authorizationEndpoint: URL
    public var tokenEndpoint: URL
    public var jwksUri: URL
    public var userinfoEndpoint: URL?
    public var revocationEndpoint: URL?
    /// RFC 7662: where a token's state can be asked.
    public var introspectionEndpoint: URL?
    public var endSessionEndpoint: URL?
    public var authorizationResponseIssParameterSupported: Bool?
    /// RFC 9126: where authorization requests are pushed; when present, the SDK's browser sign-ins push theirs.
    public var pushedAuthorizationRequestEndpoint: URL?
    /// RFC 8628: where a device (a terminal, a TV) starts a sign-in that a person approves elsewhere.
    public var deviceAuthorizationEndpoint: URL?
    /// RFC 9449: the algorithms the provider accepts for DPoP proofs.
    public var dpopSigningAlgValuesSupported: [String]?

    enum CodingKeys: String, CodingKey {
        case issuer, authorizationEndpoint = "authorization_endpoint", tokenEndpoint = "token_endpoint", jwksUri = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint", revocationEndpoint = "revocation_endpoint"
        case introspectionEndpoint = "introspection_endpoint"
        case endSessionEndpoint = "end_session_endpoint"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
    }

    /// Fetches `<issuer>/.well-known/openid-configuration` and checks that it describes that issuer (OIDC Discovery §4.3).
    /// When it leaves out an endpoint the SDK uses beyond sign-in (revocation, introspection, device authorization,
    /// pushed requests), the provider's RFC 8414 metadata fills it in: OpenID discovery need not list them, and some
    /// widely used providers publish revocation only there. That second document must name the same issuer exactly;
    /// if it cannot be had, the first stands alone (and `missingEndpoints` says what it lacks).
    public static func discover(issuer: String, http: any HTTPClient) async throws -> ProviderMetadata {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        guard let url = URL(string: trimmed + "/.well-known/openid-configuration") else {
            throw LatchkeyError(.invalidConfiguration, "issuer \(issuer) is not a URL")
        }
        let response = try await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"]))
        guard response.status == 200 else {
            throw LatchkeyError(
                .invalidConfiguration, "discovery at \(url.absoluteString) answered HTTP \(response.status); is \(issuer) an OpenID Connect issuer?",
                statusCode: response.status)
        }
        var metadata: ProviderMetadata
        do { metadata = try JSONDecoder().decode(ProviderMetadata.self, from: response.body) } catch {
            throw LatchkeyError(.invalidConfiguration, "discovery document at \(url.absoluteString) is not valid OpenID Provider metadata")
        }
        guard metadata.issuer == trimmed || metadata.issuer == issuer else {
            throw LatchkeyError(.invalidConfiguration, "discovery document names issuer \(metadata.issuer), expected \(trimmed)")
        }
        if !metadata.missingEndpoints.isEmpty, let server = await AuthorizationServerMetadata.fetch(issuer: metadata.issuer, http: http) {
            metadata.complete(from: server)
        }
        return metadata
    }

    /// The endpoints beyond sign-in that neither document names (by their metadata names).
    public var missingEndpoints: [String] {
        [
            ("revocation_endpoint", revocationEndpoint), ("introspection_endpoint", introspectionEndpoint),
            ("device_authorization_endpoint", deviceAuthorizationEndpoint),
            ("pushed_authorization_request_endpoint", pushedAuthorizationRequestEndpoint)
        ]
        .filter { $0.1 == nil }.map(\.0)
    }

    /// Fills in what the OpenID document left out; what it says itself stands.
    mutating func complete(from server: AuthorizationServerMetadata) {
        revocationEndpoint = revocationEndpoint ?? server.revocationEndpoint
        introspectionEndpoint = introspectionEndpoint ?? server.introspectionEndpoint
        deviceAuthorizationEndpoint = deviceAuthorizationEndpoint ?? server.deviceAuthorizationEndpoint
        pushedAuthorizationRequestEndpoint = pushedAuthorizationRequestEndpoint ?? server.pushedAuthorizationRequestEndpoint
        dpopSigningAlgValuesSupported = dpopSigningAlgValuesSupported ?? server.dpopSigningAlgValuesSupported
    }
}

/// The members of an OAuth 2.0 authorization server's metadata (RFC 8414) that complete OpenID discovery.
struct AuthorizationServerMetadata: Decodable, Sendable {
    var issuer: String
    var revocationEndpoint: URL?
    var introspectionEndpoint: URL?
    var deviceAuthorizationEndpoint: URL?
    var pushedAuthorizationRequestEndpoint: URL?
    var dpopSigningAlgValuesSupported: [String]?

    enum CodingKeys: String, CodingKey {
        case issuer, revocationEndpoint = "revocation_endpoint", introspectionEndpoint = "introspection_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
    }

    /// RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path
    /// (`https://host/tenant` → `https://host/.well-known/oauth-authorization-server/tenant`).
    static func url(issuer: String) -> URL? {
        guard var components = URLComponents(string: issuer), components.host != nil else { return nil }
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        components.path = "/.well-known/oauth-authorization-server" + path
        components.query = nil
        components.fragment = nil
        return components.url
    }

    /// The document for exactly `issuer` (RFC 8414 §3.3), or nil when there is none or it names another issuer.
    static func fetch(issuer: String, http: any HTTPClient) async -> AuthorizationServerMetadata? {
        guard let url = url(issuer: issuer),
            let response = try? await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"])),
            response.status == 200,
            let metadata = try? JSONDecoder().decode(AuthorizationServerMetadata.self, from: response.body),
            metadata.issuer == issuer
        else { return nil }
        return metadata
    }
}
