import Hummingbird

/// One mount of the OAuth endpoint family (authorize, token, PAR, device authorization, revoke, introspect, userinfo,
/// logout, jwks): `/oauth2`, the standard and thunderID prefix, and `/oauth`, reachFive's, where the token and
/// revocation endpoints also take JSON bodies and errors carry reachFive's fields. Each mount is a route group with its
/// own error middleware, so an endpoint's errors take the shape of the mount it was reached through.
struct OAuthMount {
    let routes: RouterGroup<LatchkeyRequestContext>
    /// The `/oauth` mount (reachFive's dialect of the same endpoints).
    let isReachFive: Bool
}

extension OAuthMount {
    /// Other methods at a POST-only endpoint (token, revocation, introspection, PAR, device authorization,
    /// registration) answer 405 with `Allow: POST` (RFC 9110 §15.5.6; RFC 9126 §2 for PAR), not 404: the endpoint is
    /// there, the method is not.
    func refuseMethodsOtherThanPost(at path: RouterPath) {
        refuseMethods(at: path, allowing: .post)
    }

    /// Every method of `[GET, POST, PUT, DELETE, PATCH]` but `allowed` answers 405 at `path`.
    func refuseMethods(at path: RouterPath, allowing allowed: HTTPRequest.Method) {
        for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] where method != allowed {
            routes.on(path, method: method) { _, _ in
                Response(status: .methodNotAllowed, headers: [.allow: allowed.rawValue, .cacheControl: "no-store"])
            }
        }
    }
}
