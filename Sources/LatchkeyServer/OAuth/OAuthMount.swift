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
