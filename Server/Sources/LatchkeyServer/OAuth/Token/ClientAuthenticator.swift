import Foundation
import Hummingbird
import LatchkeyJOSE
import Logging

/// Client authentication at the token, revocation, introspection, PAR and device authorization endpoints (RFC 6749
/// §2.3): `client_secret_basic`, `client_secret_post`, `private_key_jwt` (`ClientAssertion`) or a public client's bare
/// `client_id`. The method used must be the one the client registered, and a request presents one credential only.
///
/// A secret is checked at the cost of one SHA-256 once it has been verified since the start (configured clients'
/// secrets are remembered at start). Any other check costs a PBKDF2 run, so it first takes a place in the failure
/// budgets of its address and of its client (`ClientAuthThrottles`, shared by every instance on PostgreSQL): past
/// them it is refused with 429 before deriving anything, and a check that succeeds gives its places back. A client
/// assertion costs one signature verification per candidate key (at most `ClientKeys.maximumKeys`) and is not
/// throttled.
struct ClientAuthenticator: Sendable {
    let store: any ClientStore & SingleUseStore
    let throttles: ClientAuthThrottles
    /// The request's client address (`LatchkeyRequestContext.clientAddress`), the key of the per-address budget.
    let address: String
    let now: Date
    /// The issuer in force: client assertions must name it (or one of its endpoints) as their audience.
    let issuer: String
    /// The keys assertions are verified with (a client's `jwks`, or those at its `jwks_uri`).
    let keys: ClientKeySets

    /// Throws `ClientAuthRefusal` for a failed authentication (`invalid_client`), `OAuthError` for a malformed
    /// request (`invalid_request`: two credentials, a repeated parameter).
    func authenticate(_ request: Request, _ params: Parameters) async throws -> ClientConfiguration {
        let basic: (id: String, secret: String)?
        do { basic = try Self.basicCredentials(request) } catch {
            throw ClientAuthRefusal(.malformedCredentials, client: nil, "malformed Basic credentials")
        }
        let postId = try params.single("client_id")
        let postSecret = try params.single("client_secret")
        let assertionType = try params.single("client_assertion_type")
        let assertion = try params.single("client_assertion")
        let presented = [basic != nil, postSecret != nil, assertionType != nil || assertion != nil].filter { $0 }.count
        if presented > 1 {
            throw OAuthError(.invalidRequest, "use only one client authentication method")
        }
        if assertionType != nil || assertion != nil {
            return try await authenticateAssertion(type: assertionType, assertion: assertion, clientId: postId, path: request.uri.path)
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
            throw ClientAuthRefusal(.noCredentials, client: nil, "client authentication is required")
        }
        guard let record = try await store.client(id: clientId) else {
            throw ClientAuthRefusal(.unknownClient, client: nil, "unknown client")
        }
        try Self.requireMethod(method, of: record.configuration)
        if method != .none {
            guard let secret, let expected = record.secretHash else {
                throw ClientAuthRefusal(.wrongSecret, client: clientId, "client authentication failed")
            }
            if try await verify(secret, against: expected, clientId: clientId) { return record.configuration }
            // After a rotation the previous secret works until its grace period ends (a registered application's
            // secrets are stored as SHA-256, so this second check costs no key derivation).
            guard let previous = record.previousSecretHash(at: now), try await verify(secret, against: previous, clientId: clientId) else {
                throw ClientAuthRefusal(.wrongSecret, client: clientId, "client authentication failed")
            }
        }
        return record.configuration
    }

    /// One method per client, the one it registered.
    private static func requireMethod(_ method: ClientAuthMethod, of client: ClientConfiguration) throws {
        guard client.tokenEndpointAuthMethod == method else {
            throw ClientAuthRefusal(
                .wrongMethod, client: client.clientId, "the client must authenticate with \(client.tokenEndpointAuthMethod.rawValue)")
        }
    }

    /// `private_key_jwt`: the client is the one the assertion's `sub` names (or `client_id`, which must then be the
    /// same), and the assertion must pass `ClientAssertion.verify`.
    private func authenticateAssertion(type: String?, assertion: String?, clientId postId: String?, path: String) async throws
        -> ClientConfiguration
    {
        guard type == ClientAssertion.type else {
            throw ClientAuthRefusal(.malformedCredentials, client: nil, "client_assertion_type must be \(ClientAssertion.type)")
        }
        guard let assertion, !assertion.isEmpty else {
            throw ClientAuthRefusal(.malformedCredentials, client: nil, "client_assertion is missing")
        }
        let jws: CompactJWS
        let claims: [String: JSONValue]
        do {
            jws = try CompactJWS(parsing: assertion)
            claims = try jws.claimsObject()
        } catch {
            throw ClientAuthRefusal(.malformedCredentials, client: nil, "the client assertion is not a JWS with a JSON object of claims")
        }
        // Unverified until `ClientAssertion.verify`: used only to find whose keys to verify with.
        let sub = claims["sub"]?.stringValue
        guard let clientId = postId ?? sub, !clientId.isEmpty else {
            throw ClientAuthRefusal(.malformedCredentials, client: nil, "the client assertion has no sub naming the client")
        }
        guard let record = try await store.client(id: clientId) else {
            throw ClientAuthRefusal(.unknownClient, client: nil, "unknown client")
        }
        let client = record.configuration
        try Self.requireMethod(.privateKeyJWT, of: client)
        if let postId, postId != sub {
            throw ClientAuthRefusal(.assertionClaims, client: clientId, "client_id does not match the client assertion's sub")
        }
        do {
            try await ClientAssertion.verify(
                jws, claims: claims, client: client, issuer: issuer,
                audiences: ClientAssertion.acceptedAudiences(issuer: issuer, requestPath: path),
                now: now, store: store, keys: keys)
        } catch let failure as ClientAssertion.Failure {
            throw ClientAuthRefusal(failure.reason, client: clientId, failure.description)
        }
        return client
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

/// Why a client authentication failed: the closed set of the `client.authentication_failed` audit event's `reason`
/// (the error's text may name a client id the caller chose, so it is never recorded).
enum ClientAuthFailure: String, Sendable {
    /// No client was named (no Basic header, no `client_id`).
    case noCredentials = "no_credentials"
    /// The client named does not exist (its id is not recorded: it is text anyone can send).
    case unknownClient = "unknown_client"
    /// The client registered another method.
    case wrongMethod = "wrong_method"
    /// Unreadable credentials: Basic not base64 `id:secret`, a wrong `client_assertion_type`, an assertion that is not
    /// a JWS or names no client.
    case malformedCredentials = "malformed_credentials"
    case wrongSecret = "wrong_secret"
    /// `private_key_jwt`: an `alg` or `typ` refused, no registered key for it, or a signature that does not verify.
    case assertionSignature = "assertion_signature"
    /// `private_key_jwt`: a signed assertion whose `iss`, `sub`, `aud`, `iat`, `nbf`, lifetime or `jti` is refused.
    case assertionClaims = "assertion_claims"
    case assertionExpired = "assertion_expired"
    /// `private_key_jwt`: the assertion's `jti` was already used.
    case assertionReplayed = "assertion_replayed"
    /// `private_key_jwt`: the keys at the client's `jwks_uri` could not be fetched, or are not acceptable.
    case keysUnavailable = "keys_unavailable"
}

/// A failed client authentication: `invalid_client` (401), with why (audited) and which existing client it was about.
struct ClientAuthRefusal: Error, Sendable {
    let reason: ClientAuthFailure
    /// The client's id, only when the client exists.
    let client: String?
    let error: OAuthError

    init(_ reason: ClientAuthFailure, client: String?, _ description: String) {
        self.reason = reason
        self.client = client
        self.error = OAuthError(.invalidClient, description)
    }
}

/// Client authentication as the endpoints use it: one `ClientAuthenticator` per request, with its address and time.
struct ClientAuthentication: Sendable {
    let store: any ClientStore & SingleUseStore
    let throttles: ClientAuthThrottles
    let clock: ServerClock
    let audit: AuditTrail
    /// The issuer in force (with port 0, completed at start).
    let issuer: @Sendable () -> String
    let keys: ClientKeySets
    /// Which refusals are audited one by one (`max_audited_client_auth_failures_per_address` per address and window);
    /// the rest are summed up per address and window (`client.authentication_failed_aggregated`).
    let auditBudget: AddressAuditBudget

    /// The client a request authenticates as (`ClientAuthenticator`), with failed key derivations throttled by the
    /// request's address and by client. A refusal (`invalid_client`) is audited with the client it was about, within
    /// the address's audit budget.
    func authenticate(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext) async throws -> ClientConfiguration {
        do {
            let client = try await ClientAuthenticator(
                store: store, throttles: throttles, address: context.clientAddress, now: clock.now, issuer: issuer(), keys: keys
            )
            .authenticate(request, params)
            // Summaries are written when a window has closed and the next client authentication comes, whatever its
            // outcome: no timer to run, and a live server authenticates clients all the time.
            await recordSummaries(await auditBudget.close(now: clock.now), logger: context.logger)
            return client
        } catch let refusal as ClientAuthRefusal {
            // Decided before anything is written: past the budget a refusal costs a counter, not a row and a delivery
            // to every webhook.
            let (record, closed) = await auditBudget.admit(address: context.clientAddress, now: clock.now)
            await recordSummaries(closed, logger: context.logger)
            if record {
                await audit.record(
                    .clientAuthenticationFailed, .failure, subject: nil, actor: refusal.client.map(AuditEvent.clientActor),
                    details: ["reason": refusal.reason.rawValue, "endpoint": Self.endpoint(request)],
                    origin: AuditOrigin(client: refusal.client, address: context.clientAddress, logger: context.logger))
            }
            throw refusal.error
        }
    }

    /// One `client.authentication_failed_aggregated` per closed window that had refusals past the budget.
    private func recordSummaries(_ summaries: [AddressAuditBudget.Summary], logger: Logger) async {
        guard !summaries.isEmpty else { return }
        // A summary belongs to no request: not to the one that happened to come after its window.
        var background = logger
        background[metadataKey: "request_id"] = nil
        for summary in summaries {
            await audit.record(
                .clientAuthenticationFailedAggregated, .failure, subject: nil,
                details: [
                    "count": String(summary.count), "recorded": String(auditBudget.limit),
                    "window_start": summary.windowStart.formatted(.iso8601), "window_seconds": String(Int(auditBudget.window))
                ],
                origin: AuditOrigin(address: summary.address, logger: background))
        }
    }

    /// The endpoint's last path segment (`token`, `revoke`, `introspect`, `par`, `device_authorization`).
    private static func endpoint(_ request: Request) -> String {
        let last = request.uri.path.split(separator: "/").last.map(String.init) ?? ""
        return ["token", "revoke", "introspect", "par", "device_authorization"].contains(last) ? last : "other"
    }
}
