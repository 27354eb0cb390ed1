import Foundation
import Hummingbird
import LatchkeyJOSE

/// The operator a console request comes from: the verified access token of the console's own sign-in (its cookie),
/// the account, and the CSRF token of the console's forms for this session.
struct ConsoleOperator: Sendable {
    let caller: ResourceCaller
    let user: UserRecord
    let csrf: String
}

/// Why a console request is not served: no (live) console sign-in, a sign-in that may not use the console, a form
/// without its CSRF token, or a change whose sign-in is no longer recent.
enum ConsoleRefusal: Error, Sendable {
    case signInNeeded
    case notAdministrator
    case noSecondFactor
    case forgedForm
    case staleSignIn
}

/// Signing operators in to the console and recognising them on each request.
///
/// The sign-in is the authorization-code flow with PKCE, `state` and `nonce`, against this server's own authorization
/// endpoint: the console is `ConsoleClient`. The callback redeems the code in the store (single use, checked against
/// the client, the redirect URI, the PKCE verifier and the nonce, as the token endpoint would) and keeps the access
/// token it mints in an `HttpOnly`, `SameSite=Strict` cookie. Each request verifies that token like any resource
/// request (signature, expiry, revocation: ending the operator's session ends the console's) and then requires the
/// `admin` role (`ResourceCaller.isAdmin`) and a multi-factor sign-in (`amr`). Forms carry a CSRF token derived from
/// the token, and a change needs a recent sign-in (`AdministratorFreshness`).
struct ConsoleAccess: Sendable {
    let kit: TokenKit
    let store: any Store
    let cookies: CookiePolicy
    let freshness: AdministratorFreshness

    /// How long a sign-in in progress may take (the hosted page, a second factor, maybe another provider).
    static let signInSeconds = 600

    // MARK: Signing in

    /// Sends the browser to the authorization endpoint; `forceLogin` asks for the credentials again (`prompt=login`),
    /// for a change that needs a recent sign-in.
    func startSignIn(forceLogin: Bool, locale: SupportedLocale) -> Response {
        let state = Secrets.token(bytes: 24), nonce = Secrets.token(bytes: 24), verifier = Secrets.token(bytes: 48)
        let challenge = Base64URL.encode(Secrets.digest(verifier))
        var items = [
            URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: ConsoleClient.id),
            URLQueryItem(name: "redirect_uri", value: kit.issuer + ConsoleClient.callbackPath),
            URLQueryItem(name: "scope", value: ConsoleClient.scope.joined(separator: " ")), URLQueryItem(name: "state", value: state),
            URLQueryItem(name: "nonce", value: nonce), URLQueryItem(name: "code_challenge", value: challenge),
            URLQueryItem(name: "code_challenge_method", value: "S256"), URLQueryItem(name: "ui_locales", value: locale.tag)
        ]
        if forceLogin { items.append(URLQueryItem(name: "prompt", value: "login")) }
        var components = URLComponents()
        components.queryItems = items
        let query = components.percentEncodedQuery ?? ""
        return Responses.redirect(
            to: "/oauth2/authorize?" + query,
            headers: [.setCookie: cookies.consoleLogin([state, nonce, verifier].joined(separator: "."), maxAge: Self.signInSeconds)])
    }

    /// The authorization response: the console's session cookie, or the refusal. A callback without the browser's
    /// sign-in cookie, with another state, or with a code that does not redeem is `signInNeeded` (start again).
    func finishSignIn(_ request: Request, _ params: Parameters) async throws -> (ConsoleOperator, cookie: String) {
        let parts = request.cookieValue(cookies.consoleLoginName)?.split(separator: ".").map(String.init) ?? []
        guard parts.count == 3, let state = try params.single("state"), Secrets.constantTimeEquals(state, parts[0]),
            let code = try params.single("code"), try params.single("iss") == kit.issuer
        else { throw ConsoleRefusal.signInNeeded }
        let (nonce, verifier) = (parts[1], parts[2])
        let now = kit.clock.now
        let familyId = Secrets.identifier()
        guard case .redeemed(let record) = try await store.redeemAuthorizationCode(hash: Secrets.digest(code), familyId: familyId, now: now),
            record.expiresAt > now, record.clientId == ConsoleClient.id, record.redirectUri == kit.issuer + ConsoleClient.callbackPath,
            let challenge = record.codeChallenge, PKCE.verify(verifier: verifier, challenge: challenge),
            let recordedNonce = record.nonce, Secrets.constantTimeEquals(recordedNonce, nonce),
            let user = try await store.user(id: record.userId), !user.disabled
        else { throw ConsoleRefusal.signInNeeded }
        // Decided before a token with the console's administrative scopes exists for the account.
        guard UserRoles.of(user).contains(UserRoles.admin) else { throw ConsoleRefusal.notAdministrator }
        guard AuthenticationMethods.isMultiFactor(record.amr) else { throw ConsoleRefusal.noSecondFactor }
        let grant = TokenIssuer.Grant(
            user: user, subject: user.id, clientId: ConsoleClient.id, scope: record.scope, authTime: record.authTime,
            sessionId: record.sessionId, familyId: familyId, amr: record.amr)
        let access = try await kit.issuing.accessToken(for: grant, client: nil)
        let signedIn = try await self.operator(token: access.token)
        return (signedIn, cookies.console(access.token, maxAge: access.expiresIn))
    }

    // MARK: Each request

    /// The operator of a console request (`ConsoleRefusal` otherwise).
    func `operator`(_ request: Request) async throws -> ConsoleOperator {
        guard let token = request.cookieValue(cookies.consoleName), !token.isEmpty else { throw ConsoleRefusal.signInNeeded }
        return try await self.operator(token: token)
    }

    private func `operator`(token: String) async throws -> ConsoleOperator {
        let claims: AccessTokenClaims
        do { claims = try await kit.validator.resourceAccessToken(token) } catch { throw ConsoleRefusal.signInNeeded }
        guard claims.clientId == ConsoleClient.id, claims.cnf == nil, let user = try await store.user(id: claims.sub), !user.disabled else {
            throw ConsoleRefusal.signInNeeded
        }
        let caller = ResourceCaller(claims: claims, subject: .user(user))
        guard caller.isAdmin else { throw ConsoleRefusal.notAdministrator }
        guard AuthenticationMethods.isMultiFactor(claims.amr ?? []) else { throw ConsoleRefusal.noSecondFactor }
        return ConsoleOperator(caller: caller, user: user, csrf: CookiePolicy.csrfToken(secret: token, requestId: "console"))
    }

    /// A console form: its CSRF token (double submit, bound to this session) and, for a change, a recent sign-in.
    func checkForm(_ params: Parameters, by signedIn: ConsoleOperator) throws {
        guard let presented = try params.single("csrf"), Secrets.constantTimeEquals(presented, signedIn.csrf) else {
            throw ConsoleRefusal.forgedForm
        }
        do { try freshness.check(signedIn.caller) } catch { throw ConsoleRefusal.staleSignIn }
    }

    /// Signs the operator out of the console: its grant is revoked (the cookie's token stops working everywhere) and
    /// the cookie cleared. The operator's single sign-on session stays: other applications are not signed out.
    func signOut(_ signedIn: ConsoleOperator) async throws -> String {
        if let record = try await store.accessToken(jti: signedIn.caller.claims.jti), let familyId = record.familyId {
            try await store.revokeFamily(id: familyId, reason: "signed out of the console", now: kit.clock.now)
        }
        return cookies.console("", maxAge: 0)
    }
}
