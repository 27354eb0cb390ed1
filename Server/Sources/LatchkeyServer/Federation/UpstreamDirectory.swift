import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(LatchkeyInternal) import LatchkeyJOSE

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
    private var keys: [String: Cached<JWKSet>] = [:]
    private var lastForcedKeyFetch: [String: Date] = [:]
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
        let set = try await keySet(provider.id, url: jwksURL, now: now, force: false)
        do {
            try jws.verify(with: set)
        } catch JOSEError.noMatchingKey {
            if let last = lastForcedKeyFetch[provider.id], now.timeIntervalSince(last) < 60 {
                throw .invalidIdentity("no key of the provider matches the ID token's kid")
            }
            lastForcedKeyFetch[provider.id] = now
            let fresh = try await keySet(provider.id, url: jwksURL, now: now, force: true)
            do { try jws.verify(with: fresh) } catch { throw .invalidIdentity("the ID token's signature does not verify") }
        } catch {
            throw .invalidIdentity("the ID token's signature does not verify")
        }
    }

    private func keySet(_ id: String, url: URL, now: Date, force: Bool) async throws(FederationFailure) -> JWKSet {
        if !force, let cached = keys[id], now.timeIntervalSince(cached.fetchedAt) < cacheSeconds { return cached.value }
        let data = try await http.get(url)
        guard let set = try? JSONDecoder().decode(JWKSet.self, from: data) else { throw .unavailable("its JWKS is not a key set") }
        keys[id] = Cached(value: set, fetchedAt: now)
        return set
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

/// The server's HTTP client towards identity providers: short timeouts, no cookies, no cache, answers capped at 1 MB.
struct UpstreamHTTP: Sendable {
    private let session: URLSession
    static let maximumAnswer = 1 << 20

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        configuration.timeoutIntervalForResource = 20
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    /// GET with `Accept: application/json`; a non-200 answer is the provider being unavailable.
    func get(_ url: URL, bearer: String? = nil, accept: String = "application/json") async throws(FederationFailure) -> Data {
        var request = URLRequest(url: url)
        request.setValue(accept, forHTTPHeaderField: "Accept")
        // GitHub's API refuses requests without a User-Agent.
        request.setValue("Latchkey", forHTTPHeaderField: "User-Agent")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, status) = try await send(request)
        guard status == 200 else { throw .unavailable("GET \(url.path) answered \(status)") }
        return data
    }

    /// POST of a form; returns the body and the status, whatever it is (token endpoints answer errors as 400 JSON).
    func postForm(_ url: URL, _ form: [(String, String)], basic: (user: String, password: String)? = nil) async throws(FederationFailure) -> (
        Data, Int
    ) {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("Latchkey", forHTTPHeaderField: "User-Agent")
        if let basic {
            // RFC 6749 §2.3.1: each part form-encoded before the base64.
            let credentials = FormEncoding.encode(basic.user) + ":" + FormEncoding.encode(basic.password)
            request.setValue("Basic " + Data(credentials.utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        }
        request.httpBody = Data(form.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }.joined(separator: "&").utf8)
        return try await send(request)
    }

    private func send(_ request: URLRequest) async throws(FederationFailure) -> (Data, Int) {
        let data: Data, response: URLResponse
        do { (data, response) = try await session.cancellationSafeData(for: request) } catch {
            throw .unavailable("\(request.url?.host ?? "the provider") could not be reached")
        }
        guard data.count <= Self.maximumAnswer, let http = response as? HTTPURLResponse else {
            throw .unavailable("\(request.url?.host ?? "the provider") answered what no provider should")
        }
        return (data, http.statusCode)
    }
}
