import Foundation

/// An application of the server itself: the admin console (`/admin`) and the account page (`/account`). Each signs
/// people in through the server's own OpenID flow (the hosted page, PKCE, `state`, `nonce`), as any application would,
/// so every rule of sign-in — lockouts, second factors, federation, the audit trail — applies to them too.
///
/// Each is seeded at start like a configured application, unless the file defines one under its id, and is
/// first-party (`ApplicationTrust`): no consent page. What differs between them is this value.
struct OwnApplication: Sendable {
    let clientId: String
    let name: String
    let scope: [String]
    /// Where the application lives (`/admin`): its callback is `/callback` below it, and signing out returns there.
    let basePath: String
    /// Its session cookie's name; the sign-in in progress uses this name with `_login` appended.
    let cookie: String
    /// `Strict` keeps the session off every navigation that starts on another site; `Lax` lets a link from an app or
    /// an email open the page signed in (see `CookiePolicy.ownApplication`).
    let sameSite: String
    /// Whether the hosted page refuses an account without a second factor.
    let requireMFA: Bool
    /// The scope of the CSRF tokens its forms carry, so that one application's token is worthless for the other.
    let csrfScope: String

    var callbackPath: String { basePath + "/callback" }

    /// The registered client. An issuer configured with port 0 (the port is chosen at start) is loopback, whose
    /// redirect URIs registered without a port match any port (RFC 8252 §7.3).
    func configuration(issuer: URL, passkeyOrigins: [String] = [], identityProviders: [String]? = nil) -> ClientConfiguration {
        var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false)
        if components?.port == 0 { components?.port = nil }
        let base = (components?.url?.absoluteString ?? issuer.absoluteString).trimmingSuffix("/")
        var configuration = ClientConfiguration(
            clientId: clientId, name: name, redirectUris: [base + callbackPath], postLogoutRedirectUris: [base + basePath],
            grantTypes: [.authorizationCode], scopes: scope, requirePKCE: true, appType: .browser, registration: .disabled,
            recoveryEnabled: true, requireMFA: requireMFA)
        configuration.passkeyOrigins = passkeyOrigins
        if let identityProviders { configuration.identityProviders = identityProviders }
        return configuration
    }
}

/// The admin console. It requires a second factor (`require_mfa`: the hosted page refuses accounts without one), and
/// its scopes are the administrative ones, which only users with the `admin` role can use (`ResourceCaller.isAdmin`).
enum ConsoleClient {
    static let id = "latchkey-console"
    static let application = OwnApplication(
        clientId: id, name: "Latchkey console",
        scope: ["openid", "profile", ResourceCaller.adminScope, ClientRegistrationPolicy.registrationScope], basePath: "/admin",
        cookie: CookiePolicy.consoleCookie, sameSite: "Strict", requireMFA: true, csrfScope: "console")
}

/// The account page, where people manage their own account in a browser. Any account may use it (no second factor
/// demanded beyond what the account itself has), with the passkeys of this server's own origin and every configured
/// identity provider, so that each way an account signs in also opens its page.
enum AccountClient {
    static let id = "latchkey-account"
    static let application = OwnApplication(
        clientId: id, name: "Latchkey account", scope: ["openid", "profile"], basePath: "/account",
        cookie: CookiePolicy.accountCookie, sameSite: "Lax", requireMFA: false, csrfScope: "account")
}

extension String {
    /// The string without one trailing `suffix`.
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

extension ClientConfiguration {
    /// The application's name as a person reads it in a list in `locale`: the server's own applications (with the name
    /// they are seeded with) in the person's language, "Your account" rather than "Latchkey account"; any other as
    /// configured. (Not inside a sentence: "continue to Your account" reads wrong, and in German needs another case.)
    func displayName(_ locale: SupportedLocale) -> String {
        for (application, key) in [(ConsoleClient.application, "console.title"), (AccountClient.application, "account.title")]
        where clientId == application.clientId && name == application.name {
            return MessageCatalog.text(key, locale: locale, arguments: [:], default: name)
        }
        return name
    }
}
