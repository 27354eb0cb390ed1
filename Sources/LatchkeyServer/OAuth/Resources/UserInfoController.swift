import Foundation
import Hummingbird
import LatchkeyJOSE

/// UserInfo (OIDC Core §5.3): the claims the access token's scopes release, in each OAuth mount (GET, and POST with
/// the token in the form body, RFC 6750 §2.2).
struct UserInfoController {
    /// Verifies a resource request's access token (Bearer, or DPoP with its proof) and returns its claims.
    let authenticate: @Sendable (Request, Parameters?) async throws -> AccessTokenClaims
    let store: any UserStore

    func addRoutes(to mount: OAuthMount) {
        mount.routes.get("userinfo") { request, _ in try await userinfo(request, body: nil) }
        mount.routes.post("userinfo") { request, _ in
            try await userinfo(request, body: try await Parameters.body(of: request))
        }
    }

    /// reachFive's `GET /identity/v1/userinfo`: the same claims, its errors in reachFive's shape.
    func addIdentityRoutes(to identity: RouterGroup<LatchkeyRequestContext>) {
        identity.get("userinfo") { request, _ in try await userinfo(request, body: nil) }
    }

    private func userinfo(_ request: Request, body: Parameters?) async throws -> Response {
        let claims = try await authenticate(request, body)
        guard claims.scopes.contains("openid") else { throw OAuthError(.insufficientScope, "the access token lacks the openid scope") }
        guard let user = try await store.user(id: claims.sub), !user.disabled else { throw OAuthError(.invalidToken, "the user no longer exists") }
        var out = ScopeClaims.claims(of: user, scopes: claims.scopes)
        // Claims the authorization request asked userinfo for by name (OpenID Connect Core §5.5).
        if let names = claims.userinfoClaims {
            let members = Dictionary(uniqueKeysWithValues: names.map { ($0, ClaimsRequest.Member()) })
            out.merge(ClaimsRequest.userClaims(members, of: user)) { scoped, _ in scoped }
        }
        out["sub"] = .string(user.id)
        return try Responses.json(out, noStore: true)
    }
}
