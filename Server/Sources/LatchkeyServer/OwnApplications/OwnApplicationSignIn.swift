import Foundation
import Hummingbird
import LatchkeyJOSE

/// Signs a person in to one of the server's own applications (`OwnApplication`) and recognises them on each request.
///
/// The sign-in is the authorization-code flow with PKCE, `state` and `nonce`, against this server's own authorization
/// endpoint. The callback redeems the code in the store (single use, checked against the client, the redirect URI, the
/// PKCE verifier, the nonce and `iss`, as the token endpoint would) and the access token minted for it is kept in an
/// `HttpOnly` cookie. Each request verifies that token like any resource request (signature, expiry, revocation:
/// ending the person's session ends the application's). What each application demands beyond that (the console's
/// `admin` role and second factor) is its own.
struct OwnApplicationSignIn: Sendable {
    let application: OwnApplication
    let kit: TokenKit
    let store: any Store
    let cookies: CookiePolicy

    /// How long a sign-in in progress may take (the hosted page, a second factor, maybe another provider).
    static let signInSeconds = 600

    /// A code the callback redeemed: the account and the grant, before any token exists for it.
    struct Redemption: Sendable {
        let user: UserRecord
        let record: AuthorizationCodeRecord
        let familyId: String
        /// The page to return to (`start`'s `returnPath`), already checked to be the application's own.
        let returnPath: String?
    }

    /// Why no signed-in person: no cookie, a token that no longer verifies, or a callback that is not the browser's.
    struct SignInNeeded: Error {}

    // MARK: Signing in

    /// Sends the browser to the authorization endpoint; `forceLogin` asks for the credentials again (`prompt=login`),
    /// for a change that needs a recent sign-in. `returnPath` (one of the application's own paths) is where the
    /// callback sends the browser afterwards.
    func start(forceLogin: Bool, locale: SupportedLocale, returnPath: String? = nil) -> Response {
        let state = Secrets.token(bytes: 24), nonce = Secrets.token(bytes: 24), verifier = Secrets.token(bytes: 48)
        let challenge = Base64URL.encode(Secrets.digest(verifier))
        var items = [
            URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: application.clientId),
            URLQueryItem(name: "redirect_uri", value: kit.issuer + application.callbackPath),
            URLQueryItem(name: "scope", value: application.scope.joined(separator: " ")), URLQueryItem(name: "state", value: state),
            URLQueryItem(name: "nonce", value: nonce), URLQueryItem(name: "code_challenge", value: challenge),
            URLQueryItem(name: "code_challenge_method", value: "S256"), URLQueryItem(name: "ui_locales", value: locale.tag)
        ]
        if forceLogin { items.append(URLQueryItem(name: "prompt", value: "login")) }
        var components = URLComponents()
        components.queryItems = items
        var parts = [state, nonce, verifier]
        if let returnPath = ownPath(returnPath) { parts.append(Base64URL.encode(Data(returnPath.utf8))) }
        return Responses.redirect(
            to: "/oauth2/authorize?" + (components.percentEncodedQuery ?? ""),
            headers: [.setCookie: cookies.ownApplicationLogin(application, parts.joined(separator: "."), maxAge: Self.signInSeconds)])
    }

    /// The authorization response's code, redeemed: `SignInNeeded` for a callback without this browser's sign-in
    /// cookie, with another state or issuer, or with a code that does not redeem for this application (start again).
    func redeem(_ request: Request, _ params: Parameters) async throws -> Redemption {
        let parts = request.cookieValue(cookies.ownApplicationLoginName(application))?.split(separator: ".").map(String.init) ?? []
        guard parts.count == 3 || parts.count == 4, let state = try params.single("state"), Secrets.constantTimeEquals(state, parts[0]),
            let code = try params.single("code"), try params.single("iss") == kit.issuer
        else { throw SignInNeeded() }
        let (nonce, verifier) = (parts[1], parts[2])
        let returnPath = parts.count == 4 ? ownPath(Base64URL.decode(parts[3]).flatMap { String(data: $0, encoding: .utf8) }) : nil
        let now = kit.clock.now
        let familyId = Secrets.identifier()
        guard case .redeemed(let record) = try await store.redeemAuthorizationCode(hash: Secrets.digest(code), familyId: familyId, now: now),
            record.expiresAt > now, record.clientId == application.clientId, record.redirectUri == kit.issuer + application.callbackPath,
            let challenge = record.codeChallenge, PKCE.verify(verifier: verifier, challenge: challenge),
            let recordedNonce = record.nonce, Secrets.constantTimeEquals(recordedNonce, nonce),
            let user = try await store.user(id: record.userId), !user.disabled
        else { throw SignInNeeded() }
        return Redemption(user: user, record: record, familyId: familyId, returnPath: returnPath)
    }

    /// The access token of a redeemed code, and the cookies that keep it (and forget the sign-in in progress).
    func issue(_ redemption: Redemption) async throws -> (token: String, cookies: [String]) {
        let record = redemption.record
        let grant = TokenIssuer.Grant(
            user: redemption.user, subject: redemption.user.id, clientId: application.clientId, scope: record.scope,
            authTime: record.authTime, sessionId: record.sessionId, familyId: redemption.familyId, amr: record.amr)
        let access = try await kit.issuing.accessToken(for: grant, client: nil)
        return (
            access.token,
            [cookies.ownApplication(application, access.token, maxAge: access.expiresIn), cookies.ownApplicationLogin(application, "", maxAge: 0)]
        )
    }

    // MARK: Each request

    /// The token of the request's cookie, verified, with its account (`SignInNeeded` otherwise).
    func signedIn(_ request: Request) async throws -> (token: String, caller: ResourceCaller) {
        guard let token = request.cookieValue(cookies.ownApplicationName(application)), !token.isEmpty else { throw SignInNeeded() }
        return (token, try await signedIn(token: token))
    }

    func signedIn(token: String) async throws -> ResourceCaller {
        let claims: AccessTokenClaims
        do { claims = try await kit.validator.resourceAccessToken(token) } catch { throw SignInNeeded() }
        guard claims.clientId == application.clientId, claims.cnf == nil, let user = try await store.user(id: claims.sub), !user.disabled else {
            throw SignInNeeded()
        }
        var caller = ResourceCaller(claims: claims, subject: .user(user))
        caller.trust = .firstParty
        return caller
    }

    /// The CSRF token the application's forms carry for the session of `token`.
    func csrfToken(for token: String) -> String { CookiePolicy.csrfToken(secret: token, requestId: application.csrfScope) }

    /// Whether a form carries the CSRF token of this session (compared in constant time).
    func formIsGenuine(_ params: Parameters, csrf: String) throws -> Bool {
        guard let presented = try params.single("csrf") else { return false }
        return Secrets.constantTimeEquals(presented, csrf)
    }

    /// Signs the person out of the application: its grant is revoked (the cookie's token stops working everywhere)
    /// and the cookie cleared. The single sign-on session stays: other applications are not signed out.
    func signOut(_ caller: ResourceCaller, reason: String) async throws -> String {
        if let record = try await store.accessToken(jti: caller.claims.jti), let familyId = record.familyId {
            try await store.revokeFamily(id: familyId, reason: reason, now: kit.clock.now)
        }
        return clearedCookie
    }

    /// The `Set-Cookie` that forgets the application's session in the browser.
    var clearedCookie: String { cookies.ownApplication(application, "", maxAge: 0) }

    /// `path` when it is one of the application's own sections (`/account/sessions`): one segment of lowercase
    /// letters and hyphens below its base path, so never another site, another path of this one (`..`, `%2e%2e`), a
    /// query or a fragment.
    private func ownPath(_ path: String?) -> String? {
        guard let path, path.hasPrefix(application.basePath + "/") else { return nil }
        let section = path.dropFirst(application.basePath.count + 1)
        guard !section.isEmpty, section.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || $0 == "-" }) else { return nil }
        return path
    }
}
