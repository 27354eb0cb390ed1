import Foundation

/// The admin console is an application of the server itself: it signs operators in through the server's own OpenID
/// flow (the hosted page, PKCE, `state`, `nonce`), as any application would, so every rule of sign-in — lockouts,
/// second factors, federation, the audit trail — applies to operators too.
///
/// Seeded at start like a configured application (`latchkey-console`, unless the file names one itself). It requires a
/// second factor (`require_mfa`: the hosted page refuses accounts without one), and its scopes are the administrative
/// ones, which only users with the `admin` role can use (`ResourceCaller.isAdmin`).
enum ConsoleClient {
    static let id = "latchkey-console"
    static let scope = ["openid", "profile", ResourceCaller.adminScope, ClientRegistrationPolicy.registrationScope]
    static let callbackPath = "/admin/callback"

    /// The registered redirect URI: the issuer's `/admin/callback`. An issuer configured with port 0 (the port is
    /// chosen at start) is loopback, whose redirect URIs registered without a port match any port (RFC 8252 §7.3).
    static func configuration(issuer: URL) -> ClientConfiguration {
        var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false)
        if components?.port == 0 { components?.port = nil }
        let base = (components?.url?.absoluteString ?? issuer.absoluteString).trimmingSuffix("/")
        return ClientConfiguration(
            clientId: id, name: "Latchkey console", redirectUris: [base + callbackPath],
            postLogoutRedirectUris: [base + "/admin"], grantTypes: [.authorizationCode], scopes: scope, requirePKCE: true,
            appType: .browser, registration: .disabled, recoveryEnabled: true, requireMFA: true)
    }
}

extension String {
    /// The string without one trailing `suffix`.
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
