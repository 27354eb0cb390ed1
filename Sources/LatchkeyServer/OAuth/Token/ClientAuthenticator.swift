import Foundation
import Hummingbird
import LatchkeyJOSE

/// Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3).
/// The method used must be the one the client registered; a public client may not present a secret.
///
/// A secret is checked at the cost of one SHA-256 once it has been verified since the start (configured clients'
/// secrets are remembered at start). Any other check costs a PBKDF2 run, so it first takes a place in the failure
/// budgets of its address and of its client (`ClientAuthThrottles`, shared by every instance on PostgreSQL): past
/// them it is refused with 429 before deriving anything, and a check that succeeds gives its places back.
struct ClientAuthenticator: Sendable {
    let store: any ClientStore
    let throttles: ClientAuthThrottles
    /// The request's client address (`LatchkeyRequestContext.clientAddress`), the key of the per-address budget.
    let address: String
    let now: Date

    func authenticate(_ request: Request, _ params: Parameters) async throws -> ClientConfiguration {
        let basic = try Self.basicCredentials(request)
        let postId = try params.single("client_id")
        let postSecret = try params.single("client_secret")
        if basic != nil && postSecret != nil {
            throw OAuthError(.invalidRequest, "use only one client authentication method")
        }
        let method: ClientAuthMethod
        let clientId: String
        let secret: String?
        if let basic {
            method = .clientSecretBasic; clientId = basic.id; secret = basic.secret
            if let postId, postId != basic.id { throw OAuthError(.invalidRequest, "client_id does not match the Authorization header") }
        } else if let postId {
            clientId = postId; secret = postSecret
            method = postSecret == nil ? .none : .clientSecretPost
        } else {
            throw OAuthError(.invalidClient, "client authentication is required")
        }
        guard let record = try await store.client(id: clientId) else {
            throw OAuthError(.invalidClient, "unknown client")
        }
        guard record.configuration.tokenEndpointAuthMethod == method else {
            throw OAuthError(.invalidClient, "the client must authenticate with \(record.configuration.tokenEndpointAuthMethod.rawValue)")
        }
        if method != .none {
            guard let secret, let expected = record.secretHash else { throw OAuthError(.invalidClient, "client authentication failed") }
            if try await verify(secret, against: expected, clientId: clientId) { return record.configuration }
            // After a rotation the previous secret works until its grace period ends (a registered application's
            // secrets are stored as SHA-256, so this second check costs no key derivation).
            guard let previous = record.previousSecretHash(at: now), try await verify(secret, against: previous, clientId: clientId) else {
                throw OAuthError(.invalidClient, "client authentication failed")
            }
        }
        return record.configuration
    }

    /// `ClientSecrets.verify`, throttled when it would derive a key.
    private func verify(_ secret: String, against expected: Data, clientId: String) async throws -> Bool {
        guard !ClientSecrets.isCheap(expected) else { return try await ClientSecrets.verify(secret, against: expected) }
        let clientKey = "client:" + clientId
        if let wait = try await throttles.perAddress.reserve(address: address, now: now) { throw ClientAuthThrottles.refusal(wait) }
        let perClient: Int?
        do { perClient = try await throttles.perClient.reserve(address: clientKey, now: now) } catch {
            try? await throttles.perAddress.release(address: address, at: now)
            throw error
        }
        if let wait = perClient {
            try await throttles.perAddress.release(address: address, at: now)
            throw ClientAuthThrottles.refusal(wait)
        }
        let ok: Bool
        do {
            ok = try await ClientSecrets.verify(secret, against: expected)
        } catch {
            // Not a wrong secret (the derivation queue was full, 503): the places are given back.
            try? await throttles.perAddress.release(address: address, at: now)
            try? await throttles.perClient.release(address: clientKey, at: now)
            throw error
        }
        if ok {  // not a failure: both places are given back
            try await throttles.perAddress.release(address: address, at: now)
            try await throttles.perClient.release(address: clientKey, at: now)
        }
        return ok
    }

    /// `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))`.
    static func basicCredentials(_ request: Request) throws -> (id: String, secret: String)? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic ") else { return nil }
        guard let data = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":"),
            let id = String(text[..<colon]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
            let secret = String(text[text.index(after: colon)...]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
            !id.isEmpty
        else { throw OAuthError(.invalidClient, "malformed Basic credentials") }
        return (id, secret)
    }
}

/// The failure budgets of client authentications that need a key derivation: per address, and per client over all
/// addresses (so many addresses cannot keep a cold instance deriving for one client either).
struct ClientAuthThrottles: Sendable {
    let perAddress: any AddressLimiter
    let perClient: any AddressLimiter

    static func refusal(_ wait: Int) -> APIError {
        let message = LocalizedMessage("request.throttled", ["minutes": String(MessageCatalog.minutes(seconds: wait))])
        return APIError(
            status: .tooManyRequests, code: "SRV-429", error: "too_many_requests", messageKey: message.key,
            userMessage: message.english, technical: "too many failed client authentications; retry after \(wait) s",
            arguments: message.arguments)
    }
}

/// Client authentication as the endpoints use it: one `ClientAuthenticator` per request, with its address and time.
struct ClientAuthentication: Sendable {
    let store: any ClientStore
    let throttles: ClientAuthThrottles
    let clock: ServerClock
    let audit: AuditTrail

    /// The client a request authenticates as (`ClientAuthenticator`), with failed key derivations throttled by the
    /// request's address and by client. A refusal (`invalid_client`) is audited with the client id it claimed.
    func authenticate(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext) async throws -> ClientConfiguration {
        do {
            return try await ClientAuthenticator(store: store, throttles: throttles, address: context.clientAddress, now: clock.now)
                .authenticate(request, params)
        } catch let error as OAuthError where error.code == .invalidClient {
            let claimed = ((try? ClientAuthenticator.basicCredentials(request))??.id ?? (try? params.single("client_id")) ?? nil)
                .map { String($0.prefix(128)) }
            // An unknown id is not recorded: it is text anyone can send (a mistyped secret, say).
            let known = if let claimed { try await store.client(id: claimed) != nil } else { false }
            await audit.record(
                .clientAuthenticationFailed, .failure, subject: nil, actor: known ? claimed.map(AuditEvent.clientActor) : nil,
                details: ["reason": Self.reason(error, known: known, claimed: claimed != nil), "endpoint": Self.endpoint(request)],
                origin: AuditOrigin(client: known ? claimed : nil, address: context.clientAddress, logger: context.logger))
            throw error
        }
    }

    /// Why, from a closed set (the error's text may name a client id the caller chose).
    private static func reason(_ error: OAuthError, known: Bool, claimed: Bool) -> String {
        if !claimed { return "no_credentials" }
        if !known { return "unknown_client" }
        if error.description.contains("must authenticate with") { return "wrong_method" }
        if error.description.contains("malformed") { return "malformed_credentials" }
        return "wrong_secret"
    }

    /// The endpoint's last path segment (`token`, `revoke`, `introspect`, `par`, `device_authorization`).
    private static func endpoint(_ request: Request) -> String {
        let last = request.uri.path.split(separator: "/").last.map(String.init) ?? ""
        return ["token", "revoke", "introspect", "par", "device_authorization"].contains(last) ? last : "other"
    }
}
