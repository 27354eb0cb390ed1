import Foundation
import Hummingbird
import LatchkeyJOSE

/// The server's cookies, with the attributes the security model needs.
struct CookiePolicy: Sendable {
    /// `Secure` is dropped only for a plain-http loopback development issuer (browsers would refuse to store it).
    let secure: Bool

    static let sessionCookie = "lk_session"
    static let csrfCookie = "lk_csrf"
    static let secondFactorCookie = "lk_mfa"
    static let federationCookie = "lk_fed"
    static let consoleCookie = "lk_console"
    static let accountCookie = "lk_account"
    static let passkeyLaterCookie = "lk_passkey_later"

    /// With `Secure`, every cookie carries the `__Host-` prefix: the browser then only accepts it from this very host,
    /// with `Path=/` and no `Domain`, so a sibling subdomain (same site) can neither plant nor overwrite it (session
    /// injection, or tossing the CSRF cookie to forge a login). Plain-http loopback development cannot use the prefix
    /// (browsers require `Secure` for it) and keeps the bare names.
    private func name(_ base: String) -> String { secure ? "__Host-" + base : base }
    var sessionName: String { name(Self.sessionCookie) }
    var csrfName: String { name(Self.csrfCookie) }
    var secondFactorName: String { name(Self.secondFactorCookie) }
    var federationName: String { name(Self.federationCookie) }
    var passkeyLaterName: String { name(Self.passkeyLaterCookie) }

    func ownApplicationName(_ application: OwnApplication) -> String { name(application.cookie) }
    func ownApplicationLoginName(_ application: OwnApplication) -> String { name(application.cookie + "_login") }

    /// The session of one of the server's own applications (its access token). The console's is `Strict`: no other
    /// site's link or form ever carries it, so a console page can only be reached by navigating within this site. The
    /// account page's is `Lax`: people arrive from an app's or an email's link, and come back from a provider's
    /// sign-in or linking page, and a `Strict` cookie stays off those navigations (a sign-in loop). Its forms are
    /// safe all the same: each carries a CSRF token derived from the session, no GET changes anything, and `Lax`
    /// never rides a cross-site POST.
    func ownApplication(_ application: OwnApplication, _ value: String, maxAge: Int) -> String {
        cookie(ownApplicationName(application), value, maxAge: maxAge, sameSite: application.sameSite)
    }

    /// The sign-in in progress of one of the server's own applications (state, nonce, PKCE verifier, the page to
    /// return to). `Lax`: the hosted sign-in (or a provider it went to) sends the browser back with a top-level
    /// navigation.
    func ownApplicationLogin(_ application: OwnApplication, _ value: String, maxAge: Int) -> String {
        cookie(ownApplicationLoginName(application), value, maxAge: maxAge, sameSite: "Lax")
    }

    func session(_ value: String, maxAge: Int) -> String {
        cookie(sessionName, value, maxAge: maxAge, sameSite: "Lax")
    }

    func clearSession() -> String { cookie(sessionName, "", maxAge: 0, sameSite: "Lax") }

    /// Double-submit CSRF cookie for the hosted forms: `Strict`, so a cross-site POST never carries it.
    func csrf(_ value: String) -> String { cookie(csrfName, value, maxAge: 3600, sameSite: "Strict") }

    /// The form has done its job once the login succeeded.
    func clearCSRF() -> String { cookie(csrfName, "", maxAge: 0, sameSite: "Strict") }

    /// Binds a hosted-page sign-in that owes its second factor to the browser that passed the first one.
    func secondFactor(_ value: String, maxAge: Int) -> String { cookie(secondFactorName, value, maxAge: maxAge, sameSite: "Strict") }

    func clearSecondFactor() -> String { cookie(secondFactorName, "", maxAge: 0, sameSite: "Strict") }

    /// Binds a federated sign-in started on the hosted page to this browser. `Lax`, not `Strict`: the provider sends
    /// the browser back with a cross-site top-level navigation, which must carry it.
    func federation(_ value: String, maxAge: Int) -> String { cookie(federationName, value, maxAge: maxAge, sameSite: "Lax") }

    /// "Not now" on the passkey offer, remembered in this browser for one account (`PasskeyOfferGate.declined`). `Lax`:
    /// the hosted sign-in is reached by a top-level navigation from the application.
    func passkeyLater(_ value: String, maxAge: Int) -> String { cookie(passkeyLaterName, value, maxAge: maxAge, sameSite: "Lax") }

    /// The CSRF token a form carries for one login request: derived from the cookie's secret and the request id, so a
    /// token shown for one login request is worthless for another, and the form never holds the cookie value itself.
    static func csrfToken(secret: String, requestId: String) -> String {
        Base64URL.encode(Secrets.digest("lk-csrf|" + requestId + "|" + secret))
    }

    private func cookie(_ name: String, _ value: String, maxAge: Int, sameSite: String) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=\(sameSite)\(secure ? "; Secure" : "")"
    }
}

extension Request {
    /// Reads one cookie from the `Cookie` header(s).
    func cookieValue(_ name: String) -> String? {
        for header in headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == name { return String(parts[1]) }
            }
        }
        return nil
    }
}

extension CookiePolicy {
    /// The form's `csrf` field is the token of this browser's CSRF cookie for `scope` (a login request id, or the
    /// device page): a double submit bound to the form it was shown with.
    func formCarriesCSRFToken(_ params: Parameters, request: Request, scope: String) throws -> Bool {
        guard let formToken = try params.single("csrf"), let secret = request.cookieValue(csrfName), !secret.isEmpty else {
            return false
        }
        return Secrets.constantTimeEquals(formToken, CookiePolicy.csrfToken(secret: secret, requestId: scope))
    }

    /// The answer to a form without its CSRF token (403, a page in `locale`).
    static func csrfPage(_ locale: SupportedLocale) -> Response {
        Responses.html(Pages.message(titleKey: "page.csrf.title", bodyKey: "page.csrf.body", locale: locale), status: .forbidden)
    }
}
