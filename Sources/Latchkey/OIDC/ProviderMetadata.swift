import Foundation

/// The parts of an OpenID Provider's discovery document the SDK uses.
public struct ProviderMetadata: Sendable, Codable, Equatable {
    public var issuer: String
    public var authorizationEndpoint: URL
    public var tokenEndpoint: URL
    public var jwksUri: URL
    public var userinfoEndpoint: URL?
    public var revocationEndpoint: URL?
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
        case endSessionEndpoint = "end_session_endpoint"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
    }

    /// Fetches `<issuer>/.well-known/openid-configuration` and checks that it describes that issuer (OIDC Discovery §4.3).
    public static func discover(issuer: String, http: any HTTPClient) async throws -> ProviderMetadata {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        guard let url = URL(string: trimmed + "/.well-known/openid-configuration") else {
            throw LatchkeyError(.invalidConfiguration, "issuer \(issuer) is not a URL")
        }
        let response = try await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"]))
        guard response.status == 200 else {
            throw LatchkeyError(.invalidConfiguration, "discovery at \(url.absoluteString) answered HTTP \(response.status); is \(issuer) an OpenID Connect issuer?",
                                statusCode: response.status)
        }
        let metadata: ProviderMetadata
        do { metadata = try JSONDecoder().decode(ProviderMetadata.self, from: response.body) } catch {
            throw LatchkeyError(.invalidConfiguration, "discovery document at \(url.absoluteString) is not valid OpenID Provider metadata")
        }
        guard metadata.issuer == trimmed || metadata.issuer == issuer else {
            throw LatchkeyError(.invalidConfiguration, "discovery document names issuer \(metadata.issuer), expected \(trimmed)")
        }
        return metadata
    }
}
