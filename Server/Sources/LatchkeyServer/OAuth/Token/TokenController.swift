import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// `POST /oauth2/token` (RFC 6749 §3.2, RFC 8693). Form-encoded; `/oauth/token` also accepts JSON (reachFive).
///
/// The controller holds what every grant shares: client authentication, the client's allowance of the grant, the DPoP
/// proof and its throttle, and the answer's headers. Each grant's rules are its `GrantHandler` (`Grants/`).
struct TokenController: Sendable {
    let clientAuthentication: ClientAuthentication
    let dpop: DPoPVerifier
    /// Token requests that carried a DPoP proof (recorded as used) and failed, per address.
    let proofThrottle: any AddressLimiter
    let pruner: Pruner
    let clock: ServerClock
    /// The handler of each grant the endpoint serves; a grant type without one is `unsupported_grant_type`.
    let grants: [GrantType: any GrantHandler]

    /// The five grants of the token endpoint, each with its own slice of the store.
    static func grants(
        kit: TokenKit, ownTokens: OwnTokens, refreshReuse: RefreshTokenReuse, metrics: ServerMetrics, audit: AuditTrail
    ) -> [GrantType: any GrantHandler] {
        let tokens = GrantTokens(kit: kit)
        return [
            .authorizationCode: AuthorizationCodeGrant(store: kit.store, tokens: tokens),
            .refreshToken: RefreshTokenGrant(store: kit.store, tokens: tokens, refreshReuse: refreshReuse, metrics: metrics, audit: audit),
            .clientCredentials: ClientCredentialsGrant(tokens: tokens),
            .tokenExchange: TokenExchangeGrant(store: kit.store, tokens: tokens, ownTokens: ownTokens),
            .deviceCode: DeviceCodeGrant(store: kit.store, tokens: tokens)
        ]
    }

    func addRoutes(to mount: OAuthMount) {
        mount.refuseMethodsOtherThanPost(at: "token")
        let takesJSON = mount.isReachFive  // reachFive's `/oauth` mount also takes JSON bodies
        mount.routes.post("token") { request, context in
            let params = try await Parameters.body(of: request, allowJSON: takesJSON)
            return try await self.token(request, params, context: context, logger: context.logger)
        }
    }

    private func token(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext, logger: Logger) async throws -> Response {
        let client = try await clientAuthentication.authenticate(request, params, context: context)
        let grantName = try params.required("grant_type")
        // `implicit` names tokens from the authorization endpoint, never a request here (RFC 6749 §4.2).
        guard let grant = GrantType(rawValue: grantName), let handler = grants[grant] else {
            throw OAuthError(.unsupportedGrantType, "unsupported grant_type \(grantName)")
        }
        guard client.grantTypes.contains(grant) else {
            throw OAuthError(.unauthorizedClient, "the client may not use the \(grantName) grant")
        }
        // RFC 9449 §5: a proof binds what this request issues to the client's key.
        var dpop: TokenIssuer.DPoPBinding?
        var proofCountedAt: Date?
        if let proof = try self.dpop.proof(request, challenge: nil) {
            // Each proof is recorded as used before the grant is judged, and a public client_id is all it takes to get
            // here: requests with a proof count against the address until they succeed.
            let now = clock.now
            if let wait = try await proofThrottle.reserve(address: context.clientAddress, now: now) {
                throw APIError.throttled(wait: wait, what: "failed token requests with a DPoP proof")
            }
            proofCountedAt = now
            pruner.pruneIfDue()
            let jkt = try await self.dpop.verifyProof(proof, request: request, accessToken: nil, challenge: nil)
            dpop = .init(jkt: jkt, bindsRefreshToken: client.isPublic)
        } else if client.requireDPoP {
            throw OAuthError(.invalidDPoPProof, "this application requires DPoP: send a DPoP proof with the token request")
        }
        var response = try await handler.tokens(
            for: GrantRequest(
                parameters: params, client: client, dpop: dpop,
                origin: AuditOrigin(client: client.clientId, address: context.clientAddress, logger: logger)))
        if let proofCountedAt { try await proofThrottle.release(address: context.clientAddress, at: proofCountedAt) }
        if dpop != nil { response.tokenType = "DPoP" }
        var headers: HTTPFields = [:]
        if self.dpop.settings.requireNonce, dpop != nil { headers[DPoP.nonceHeader] = self.dpop.currentNonce() }
        return try Responses.json(response, noStore: true, headers: headers)
    }
}
