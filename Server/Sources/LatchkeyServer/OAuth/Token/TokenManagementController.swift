import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// Revocation (RFC 7009) and introspection (RFC 7662).
struct TokenManagementController: Sendable {
    let kit: TokenKit
    let clientAuthentication: ClientAuthentication
    let dpop: DPoPVerifier
    let audit: AuditTrail

    private var store: any UserStore & ClientStore & TokenStore { kit.store }
    private var clock: ServerClock { kit.clock }
    private var issuer: String { kit.issuer }
    private var validator: TokenValidator { kit.validator }

    func addRoutes(to mount: OAuthMount) {
        mount.refuseMethodsOtherThanPost(at: "revoke")
        mount.refuseMethodsOtherThanPost(at: "introspect")
        let takesJSON = mount.isReachFive  // reachFive's `/oauth` mount also takes JSON bodies
        mount.routes.post("revoke") { request, context in
            try await self.revoke(
                request, try await Parameters.body(of: request, allowJSON: takesJSON), context: context, logger: context.logger)
        }
        mount.routes.post("introspect") { request, context in
            try await self.introspect(request, try await Parameters.body(of: request), context: context)
        }
    }

    /// Revoking a refresh token revokes its whole family, access tokens included. Unknown tokens answer 200
    /// (RFC 7009 §2.2) so the endpoint cannot be used to probe for valid tokens.
    private func revoke(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext, logger: Logger) async throws -> Response {
        let client = try await clientAuthentication.authenticate(request, params, context: context)
        let token = try params.required("token")
        let hint = try params.single("token_type_hint")
        if let hint, !["refresh_token", "access_token"].contains(hint) {
            throw OAuthError(.unsupportedTokenType, "unsupported token_type_hint \(hint)")
        }
        if let refresh = try await store.refreshToken(hash: Secrets.digest(token)) {
            guard refresh.clientId == client.clientId else { throw OAuthError(.invalidGrant, "the token was issued to another client") }
            // A public client's bound refresh token is revoked only by the holder of its key: otherwise whoever copied
            // it could end the session (RFC 7009 §2.2 lets the answer stay 200 either way).
            if let bound = refresh.jkt, client.isPublic {
                guard let proof = try dpop.proof(request, challenge: nil),
                    let key = try? await dpop.verifyProof(proof, request: request, accessToken: nil, challenge: nil),
                    Secrets.constantTimeEquals(key, bound)
                else {
                    logger.notice("revocation of a DPoP-bound refresh token without its key ignored", metadata: ["client": .string(client.clientId)])
                    return Responses.empty(headers: [.cacheControl: "no-store"])
                }
            }
            try await store.revokeFamily(id: refresh.familyId, reason: "revoked by client", now: clock.now)
            await audit.record(
                .tokenRevoked, subject: refresh.userId, actor: AuditEvent.clientActor(client.clientId),
                details: ["token_type": "refresh_token", "family": refresh.familyId],
                origin: AuditOrigin(client: client.clientId, address: context.clientAddress, logger: logger))
            return Responses.empty(headers: [.cacheControl: "no-store"])
        }
        if let jws = try? CompactJWS(parsing: token), (try? jws.verify(with: try await kit.keys.verificationKeys(kid: jws.header.kid))) != nil,
            let claims = try? jws.claims(as: RegisteredClaims.self), let jti = claims.jti,
            let record = try await store.accessToken(jti: jti)
        {
            guard record.clientId == client.clientId else { throw OAuthError(.invalidGrant, "the token was issued to another client") }
            try await store.revokeAccessToken(jti: jti, now: clock.now)
            await audit.record(
                .tokenRevoked, subject: record.subject, actor: AuditEvent.clientActor(client.clientId),
                details: ["token_type": "access_token"].merging(record.familyId.map { ["family": $0] } ?? [:]) { a, _ in a },
                origin: AuditOrigin(client: client.clientId, address: context.clientAddress, logger: logger))
        }
        return Responses.empty(headers: [.cacheControl: "no-store"])
    }

    struct IntrospectionResponse: Encodable {
        var active: Bool
        var scope: String?
        var clientId: String?
        var username: String?
        var tokenType: String?
        var exp: Int?
        var iat: Int?
        var sub: String?
        var aud: JSONValue?
        var iss: String?
        var jti: String?
        /// RFC 9449 §6.2: the key a DPoP-bound token is bound to.
        var cnf: AccessTokenClaims.Confirmation?

        static let inactive = IntrospectionResponse(active: false)

        enum CodingKeys: String, CodingKey {
            case active, scope, username, exp, iat, sub, aud, iss, jti, cnf, clientId = "client_id", tokenType = "token_type"
        }
    }

    /// RFC 7662 §4 leaves to the server which protected resources may ask about which tokens: here a refresh token is
    /// answered only to its own client (no resource server ever receives one), an access token to its own client, to a
    /// client its `aud` names, or to an application the operator marked as an introspector (`introspection`, only in
    /// the configuration file). Any other question gets `{"active": false}`, exactly what a dead token gets, so that
    /// no registered application holds a validity oracle for everyone's tokens (review 3, R3-9).
    private func introspect(_ request: Request, _ params: Parameters, context: LatchkeyRequestContext) async throws -> Response {
        let client = try await clientAuthentication.authenticate(request, params, context: context)
        let token = try params.required("token")
        var result = IntrospectionResponse.inactive
        if let refresh = try await store.refreshToken(hash: Secrets.digest(token)) {
            // Checked before anything about the token is read, so a foreign question costs the same as an unknown token.
            if refresh.clientId == client.clientId, refresh.usedAt == nil, refresh.expiresAt > clock.now,
                let family = try await store.family(id: refresh.familyId), family.revokedAt == nil,
                try await store.user(id: refresh.userId).map({ !$0.disabled }) == true
            {
                // Its own client asks: it reads the subject it was given, and no username beside a pairwise one.
                let sub = kit.subjects.subject(of: refresh.userId, for: client)
                result = IntrospectionResponse(
                    active: true, scope: refresh.scope.joined(separator: " "), clientId: refresh.clientId,
                    username: sub == refresh.userId ? try await store.user(id: refresh.userId)?.username : nil, tokenType: "refresh_token",
                    exp: Int(refresh.expiresAt.timeIntervalSince1970), iat: Int(refresh.createdAt.timeIntervalSince1970),
                    sub: sub, iss: issuer, cnf: refresh.jkt.map { .init(jkt: $0) })
            }
        } else if let claims = try? await validator.accessToken(token), Self.may(client, introspect: claims), try await subjectMaySignIn(claims) {
            // The subject the token names (a pairwise one for a pairwise application), and the username only beside
            // an account id: next to a pairwise subject it would be the correlator pairwise subjects exist to withhold.
            let pairwise = claims.subjectAsPublished != claims.sub
            result = IntrospectionResponse(
                active: true, scope: claims.scope, clientId: claims.clientId,
                username: pairwise ? nil : try await store.user(id: claims.sub)?.username, tokenType: claims.cnf == nil ? "Bearer" : "DPoP",
                exp: claims.exp, iat: claims.iat, sub: claims.subjectAsPublished, aud: claims.aud, iss: claims.iss, jti: claims.jti,
                cnf: claims.cnf)
        }
        return try Responses.json(result, noStore: true)
    }

    /// Whether `client` may learn about the access token `claims`: its own token, one whose audience names it, or any
    /// when the operator made it an introspector (a public client never is: `ClientConfiguration.validate`).
    private static func may(_ client: ClientConfiguration, introspect claims: AccessTokenClaims) -> Bool {
        if claims.clientId == client.clientId { return true }
        if claims.aud.stringArray?.contains(client.clientId) == true { return true }
        return client.introspection && !client.isPublic
    }

    /// A user's token is active only while the user may sign in (a disabled account's tokens are dead to resource
    /// servers too); a client's own token has no user to check.
    private func subjectMaySignIn(_ claims: AccessTokenClaims) async throws -> Bool {
        if let user = try await store.user(id: claims.sub) { return !user.disabled }
        if claims.sub == claims.clientId { return true }
        return try await store.client(id: claims.sub) != nil
    }
}
