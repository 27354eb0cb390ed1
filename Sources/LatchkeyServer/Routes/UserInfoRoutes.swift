import Foundation
import Hummingbird
import LatchkeyJOSE

/// UserInfo (OIDC Core §5.3): the claims the access token's scopes release.
extension IdentityServer {
    func addUserInfoRoutes(_ mount: OAuthMount) {
        mount.routes.get("userinfo") { request, _ in try await self.userinfo(request, body: nil) }
        mount.routes.post("userinfo") { request, _ in
            try await self.userinfo(request, body: try await Parameters.body(of: request))
        }
    }

    /// Bearer token from the header (RFC 6750 §2.1) or, for POST, the form body (§2.2) — not both.
    func bearerToken(_ request: Request, body: Parameters?) throws(OAuthError) -> String {
        let header = request.headers[.authorization]
        let fromBody = try body?.single("access_token")
        if let header {
            guard fromBody == nil else { throw OAuthError(.invalidRequest, "send the access token only once") }
            guard header.lowercased().hasPrefix("bearer "), case let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces), !token.isEmpty
            else {
                throw OAuthError(.invalidToken, "expected Authorization: Bearer <access token>")
            }
            return token
        }
        guard let fromBody else { throw OAuthError(.invalidToken, "an access token is required") }
        return fromBody
    }

    func userinfo(_ request: Request, body: Parameters?) async throws -> Response {
        let claims = try await authenticateResource(request, body: body)
        guard claims.scopes.contains("openid") else { throw OAuthError(.insufficientScope, "the access token lacks the openid scope") }
        guard let user = try await store.user(id: claims.sub), !user.disabled else { throw OAuthError(.invalidToken, "the user no longer exists") }
        var out = ScopeClaims.claims(of: user, scopes: claims.scopes)
        out["sub"] = .string(user.id)
        return try Responses.json(out, noStore: true)
    }
}
