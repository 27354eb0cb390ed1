import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import NIOHTTP1

/// Where a provider's endpoints are, once resolved from its discovery document or its preset.
struct UpstreamEndpoints: Sendable, Equatable {
    var authorization: URL
    var token: URL
    var jwks: URL?
    var userinfo: URL?
    /// The `iss` its ID tokens carry; Microsoft's multi-tenant documents hold `{tenantid}`, which each token's `tid`
    /// fills in.
    var issuer: String?
    /// RFC 9207: the provider says it adds `iss` to its authorization responses, so a response without it is refused.
    var sendsIssParameter = false
    /// The provider takes `client_secret_basic` (OAuth's default); otherwise the secret goes in the form.
    var usesBasicAuthentication = false
    /// Where a refresh token is revoked (Apple's `auth/revoke`); only Apple's are kept, so only Apple's is known.
    var revocation: URL?
}

/// The providers' discovery documents and signing keys, fetched on first use and cached (an hour); a token signed with
/// an unknown `kid` refetches the keys at most once a minute per provider, so forged tokens cannot turn the server
/// into a request amplifier against a provider. One per server; shared by every request.
actor UpstreamDirectory {
    private struct Cached<Value> {
        var value: Value
        var fetchedAt: Date
    }
    private var endpoints: [String: Cached<UpstreamEndpoints>] = [:]
    private var keySets: [String: RemoteKeySet] = [:]
    private let http: UpstreamHTTP
    private let cacheSeconds: TimeInterval = 3600

    init(http: UpstreamHTTP) { self.http = http }

    /// The provider's endpoints: its preset's, or its discovery document's (checked to name the configured issuer,
    /// OpenID Connect Discovery §4.3).
    func endpoints(of provider: IdentityProviderConfiguration, now: Date) async throws(FederationFailure) -> UpstreamEndpoints {
        if let cached = endpoints[provider.id], now.timeIntervalSince(cached.fetchedAt) < cacheSeconds { return cached.value }
        let resolved = try await resolve(provider)
        endpoints[provider.id] = Cached(value: resolved, fetchedAt: now)
        return resolved
    }

    /// Verifies `jws` with the provider's keys, refetching them once when no key matches (a rotation).
    func verify(_ jws: CompactJWS, provider: IdentityProviderConfiguration, jwksURL: URL, now: Date) async throws(FederationFailure) {
        do {
            try await keySet(of: provider, url: jwksURL).verify(jws, now: now)
        } catch let failure as FederationFailure {
            throw failure
        } catch JOSEError.noMatchingKey {
            throw .invalidIdentity("no key of the provider matches the ID token's kid")
        } catch {
            throw .invalidIdentity("the ID token's signature does not verify")
        }
    }

    /// The provider's key set at `url` (a provider whose discovery document moved its keys gets a new one).
    private func keySet(of provider: IdentityProviderConfiguration, url: URL) -> RemoteKeySet {
        let key = provider.id + "\u{0}" + url.absoluteString
        if let known = keySets[key] { return known }
        let http = self.http
        let made = RemoteKeySet(policy: .init(lifetime: cacheSeconds, refetchInterval: 60)) { () async throws -> JWKSet in
            let data = try await http.get(url)
            guard let set = try? JSONDecoder().decode(JWKSet.self, from: data) else {
                throw FederationFailure.unavailable("its JWKS is not a key set")
            }
            return set
        }
        keySets[key] = made
        return made
    }

    private func resolve(_ provider: IdentityProviderConfiguration) async throws(FederationFailure) -> UpstreamEndpoints {
        func url(_ string: String) throws(FederationFailure) -> URL {
            guard let url = URL(string: string) else { throw .unavailable("\(string) is not a URL") }
            return url
        }
        switch provider.kind {
        case .github:
            let web = Self.trimmed(provider.authority ?? "https://github.com")
            return UpstreamEndpoints(
                authorization: try url(web + "/login/oauth/authorize"), token: try url(web + "/login/oauth/access_token"),
                userinfo: try url(Self.trimmed(provider.apiBase ?? "https://api.github.com") + "/user"))
        case .apple:
            let base = Self.trimmed(provider.authority ?? "https://appleid.apple.com")
            return UpstreamEndpoints(
                authorization: try url(base + "/auth/authorize"), token: try url(base + "/auth/token"), jwks: try url(base + "/auth/keys"),
                issuer: base, revocation: try url(base + "/auth/revoke"))
        case .oidc, .google, .microsoft:
            let issuer = Self.trimmed(provider.issuer ?? "")
            let documentURL: String
            switch provider.kind {
            case .google: documentURL = Self.trimmed(provider.authority ?? "https://accounts.google.com") + "/.well-known/openid-configuration"
            case .microsoft:
                documentURL =
                    Self.trimmed(provider.authority ?? "https://login.microsoftonline.com") + "/\(provider.tenant ?? "common")/v2.0"
                    + "/.well-known/openid-configuration"
            default: documentURL = issuer + "/.well-known/openid-configuration"
            }
            let data = try await http.get(try url(documentURL))
            guard let document = try? JSONDecoder().decode(DiscoveryDocument.self, from: data) else {
                throw .unavailable("its discovery document is not OpenID provider metadata")
            }
            if provider.kind == .oidc, Self.trimmed(document.issuer) != issuer {
                throw .unavailable("its discovery document names issuer \(document.issuer), not \(issuer)")
            }
            let methods = document.tokenEndpointAuthMethodsSupported
            return UpstreamEndpoints(
                authorization: try url(document.authorizationEndpoint), token: try url(document.tokenEndpoint),
                jwks: try url(document.jwksUri), userinfo: try document.userinfoEndpoint.map(url), issuer: document.issuer,
                sendsIssParameter: document.authorizationResponseIssParameterSupported ?? false,
                usesBasicAuthentication: provider.kind == .oidc && (methods == nil || methods?.contains("client_secret_basic") == true))
        }
    }

    static func trimmed(_ url: String) -> String {
        var s = url
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }

    private struct DiscoveryDocument: Decodable {
        var issuer: String
        var authorizationEndpoint: String
        var tokenEndpoint: String
        var jwksUri: String
        var userinfoEndpoint: String?
        var tokenEndpointAuthMethodsSupported: [String]?
        var authorizationResponseIssParameterSupported: Bool?
        enum CodingKeys: String, CodingKey {
            case issuer, authorizationEndpoint = "authorization_endpoint", tokenEndpoint = "token_endpoint", jwksUri = "jwks_uri"
            case userinfoEndpoint = "userinfo_endpoint", tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
            case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        }
    }
}

/// The server's requests to identity providers, through its one HTTP client (`OutboundHTTPClient`): the whole exchange
/// within 20 s (or `outbound_timeout_seconds` when that is longer), answers of at most 1 MB (the transfer is cut past
/// it), no redirect followed, no cookie. A provider's URLs are the operator's (the configuration file or the preset),
/// so any address may be reached.
struct UpstreamHTTP: Sendable {
    private let http: OutboundHTTPClient
    let limits: OutboundHTTPClient.Limits

    init(http: OutboundHTTPClient, outboundTimeoutSeconds: Int) {
        self.http = http
        limits = OutboundHTTPClient.Limits(timeoutSeconds: max(20, outboundTimeoutSeconds), maximumBytes: 1 << 20, reach: .any)
    }

    /// GET with `Accept: application/json`; a non-200 answer is the provider being unavailable.
    func get(_ url: URL, bearer: String? = nil, accept: String = "application/json") async throws(FederationFailure) -> Data {
        // GitHub's API refuses requests without a User-Agent.
        var headers = [("Accept", accept), ("User-Agent", "Latchkey")]
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        let (data, status) = try await send(.GET, url, headers: headers, body: nil)
        guard status == 200 else { throw .unavailable("GET \(url.path) answered \(status)") }
        return data
    }

    /// POST of a form; returns the body and the status, whatever it is (token endpoints answer errors as 400 JSON).
    func postForm(_ url: URL, _ form: [(String, String)], basic: (user: String, password: String)? = nil) async throws(FederationFailure) -> (
        Data, Int
    ) {
        var headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"), ("User-Agent", "Latchkey")]
        if let basic {
            // RFC 6749 §2.3.1: each part form-encoded before the base64.
            let credentials = FormEncoding.encode(basic.user) + ":" + FormEncoding.encode(basic.password)
            headers.append(("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString()))
        }
        let body = Data(form.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }.joined(separator: "&").utf8)
        return try await send(.POST, url, headers: headers, body: body)
    }

    private func send(_ method: HTTPMethod, _ url: URL, headers: [(String, String)], body: Data?) async throws(FederationFailure) -> (Data, Int) {
        let host = url.host ?? "the provider"
        switch await http.send(method, url, headers: headers, body: body, limits: limits) {
        case .response(let status, let data): return (data, status)
        case .tooLarge: throw .unavailable("\(host) answered what no provider should")
        case .failed: throw .unavailable("\(host) could not be reached")
        }
    }
}
