import Foundation
import Hummingbird

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

/// Signing operators in to the console and recognising them on each request: the server's own sign-in
/// (`OwnApplicationSignIn`, its cookie `SameSite=Strict`), and then the `admin` role (`ResourceCaller.isAdmin`) and a
/// multi-factor sign-in (`amr`). Forms carry a CSRF token derived from the token, and a change needs a recent sign-in
/// (`AdministratorFreshness`).
struct ConsoleAccess: Sendable {
    let signIn: OwnApplicationSignIn
    let freshness: AdministratorFreshness

    var cookies: CookiePolicy { signIn.cookies }

    init(kit: TokenKit, store: any Store, cookies: CookiePolicy, freshness: AdministratorFreshness) {
        signIn = OwnApplicationSignIn(application: ConsoleClient.application, kit: kit, store: store, cookies: cookies)
        self.freshness = freshness
    }

    // MARK: Signing in

    /// Sends the browser to the authorization endpoint; `forceLogin` asks for the credentials again (`prompt=login`),
    /// for a change that needs a recent sign-in.
    func startSignIn(forceLogin: Bool, locale: SupportedLocale) -> Response {
        signIn.start(forceLogin: forceLogin, locale: locale)
    }

    /// The authorization response: the console's cookies, or the refusal. A callback without the browser's sign-in
    /// cookie, with another state, or with a code that does not redeem is `signInNeeded` (start again).
    func finishSignIn(_ request: Request, _ params: Parameters) async throws -> (ConsoleOperator, cookies: [String]) {
        let redemption: OwnApplicationSignIn.Redemption
        do { redemption = try await signIn.redeem(request, params) } catch is OwnApplicationSignIn.SignInNeeded {
            throw ConsoleRefusal.signInNeeded
        }
        // Decided before a token with the console's administrative scopes exists for the account.
        guard UserRoles.of(redemption.user).contains(UserRoles.admin) else { throw ConsoleRefusal.notAdministrator }
        guard AuthenticationMethods.isMultiFactor(redemption.record.amr) else { throw ConsoleRefusal.noSecondFactor }
        let (token, cookies) = try await signIn.issue(redemption)
        return (try await self.operator(token: token), cookies)
    }

    // MARK: Each request

    /// The operator of a console request (`ConsoleRefusal` otherwise).
    func `operator`(_ request: Request) async throws -> ConsoleOperator {
        do {
            let (token, _) = try await signIn.signedIn(request)
            return try await self.operator(token: token)
        } catch is OwnApplicationSignIn.SignInNeeded { throw ConsoleRefusal.signInNeeded }
    }

    private func `operator`(token: String) async throws -> ConsoleOperator {
        let caller: ResourceCaller
        do { caller = try await signIn.signedIn(token: token) } catch is OwnApplicationSignIn.SignInNeeded { throw ConsoleRefusal.signInNeeded }
        guard caller.isAdmin, let user = caller.user else { throw ConsoleRefusal.notAdministrator }
        guard AuthenticationMethods.isMultiFactor(caller.claims.amr ?? []) else { throw ConsoleRefusal.noSecondFactor }
        return ConsoleOperator(caller: caller, user: user, csrf: signIn.csrfToken(for: token))
    }

    /// A console form: its CSRF token (bound to this session) and, for a change, a recent sign-in.
    func checkForm(_ params: Parameters, by signedIn: ConsoleOperator, checkFreshness: Bool = true) throws {
        guard try signIn.formIsGenuine(params, csrf: signedIn.csrf) else { throw ConsoleRefusal.forgedForm }
        guard checkFreshness else { return }
        do { try freshness.check(signedIn.caller) } catch { throw ConsoleRefusal.staleSignIn }
    }

    /// Signs the operator out of the console: its grant is revoked and the cookie cleared; the single sign-on session
    /// stays.
    func signOut(_ signedIn: ConsoleOperator) async throws -> String {
        try await signIn.signOut(signedIn.caller, reason: "signed out of the console")
    }
}
