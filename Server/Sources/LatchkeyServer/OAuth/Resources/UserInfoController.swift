import Foundation
import Hummingbird
import LatchkeyJOSE

/// UserInfo (OIDC Core §5.3): the claims the access token's scopes release, in each OAuth mount (GET, and POST with
/// the token in the form body, RFC 6750 §2.2). An application that registered `userinfo_signed_response_alg` gets them
/// as a JWT signed with the server's key (`application/jwt`, with `iss` and `aud`: OIDC Core §5.3.2).
struct UserInfoController {
    /// Verifies a resource request's access token (Bearer, or DPoP with its proof) and returns its claims.
    let authenticate: @Sendable (Request, Parameters?) async throws -> AccessTokenClaims
    let store: any UserStore & ClientStore
    let keys: KeyRing
    let issuer: @Sendable () -> String

    func addRoutes(to mount: OAuthMount) {
        mount.routes.get("userinfo") { request, _ in try await userinfo(request, body: nil) }
        mount.routes.post("userinfo") { request, _ in
            try await userinfo(request, body: try await Parameters.body(of: request))
        }
    }

    /// reachFive's `GET /identity/v1/userinfo`: the same claims, its errors in reachFive's shape.
    func addIdentityRoutes(to identity: RouterGroup<LatchkeyRequestContext>) {
        identity.get("userinfo") { request, _ in try await userinfo(request, body: nil, mayBeSigned: false) }
    }

    private func userinfo(_ request: Request, body: Parameters?, mayBeSigned: Bool = true) async throws -> Response {
        let claims = try await authenticate(request, body)
        guard claims.scopes.contains("openid") else { throw OAuthError(.insufficientScope, "the access token lacks the openid scope") }
        guard let user = try await store.user(id: claims.sub), !user.disabled else { throw OAuthError(.invalidToken, "the user no longer exists") }
        var out = ScopeClaims.claims(of: user, scopes: claims.scopes)
        // Claims the authorization request asked userinfo for by name (OpenID Connect Core §5.5).
        if let names = claims.userinfoClaims {
            let members = Dictionary(uniqueKeysWithValues: names.map { ($0, ClaimsRequest.Member()) })
            out.merge(ClaimsRequest.userClaims(members, of: user)) { scoped, _ in scoped }
        }
        // The subject the token names: the application's pairwise one where it has them, as in its ID token.
        out["sub"] = .string(claims.subjectAsPublished)
        if mayBeSigned, let alg = try await store.client(id: claims.clientId)?.configuration.userinfoSignedResponseAlg {
            out["iss"] = .string(issuer())
            out["aud"] = .string(claims.clientId)
            let jwt = try await keys.signingKey(alg).sign(claims: out, type: "JWT")
            return Response(
                status: .ok, headers: [.contentType: "application/jwt", .cacheControl: "no-store", .pragma: "no-cache"],
                body: .init(byteBuffer: ByteBuffer(string: jwt)))
        }
        return try Responses.json(out, noStore: true)
    }
}
