import Foundation
import Hummingbird

/// The person an account-page request comes from: the verified access token of the page's own sign-in (its cookie),
/// the account, the CSRF token of the page's forms for this session, and whether the sign-in is recent enough for a
/// change that needs one (`recent_auth_seconds`, and never a sign-in single sign-on answered silently).
struct AccountHolder: Sendable {
    let caller: ResourceCaller
    let user: UserRecord
    let csrf: String
    let isFresh: Bool
}

/// Why an account-page request is not served: no (live) sign-in, a form without its CSRF token, or a change whose
/// sign-in is not recent.
enum AccountRefusal: Error, Sendable {
    case signInNeeded
    case forgedForm
    case staleSignIn
}

/// Signing people in to their account page and recognising them on each request (`OwnApplicationSignIn` as the
/// `latchkey-account` application, its cookie `SameSite=Lax`). Any account that can sign in may use the page.
struct AccountAccess: Sendable {
    let signIn: OwnApplicationSignIn
    let accounts: Accounts

    init(kit: TokenKit, store: any Store, cookies: CookiePolicy, accounts: Accounts) {
        signIn = OwnApplicationSignIn(application: AccountClient.application, kit: kit, store: store, cookies: cookies)
        self.accounts = accounts
    }

    /// The person of a request (`AccountRefusal.signInNeeded` otherwise).
    func holder(_ request: Request) async throws -> AccountHolder {
        let token: String, caller: ResourceCaller
        do { (token, caller) = try await signIn.signedIn(request) } catch is OwnApplicationSignIn.SignInNeeded {
            throw AccountRefusal.signInNeeded
        }
        guard let user = caller.user else { throw AccountRefusal.signInNeeded }
        let fresh = (try? accounts.requireRecentAuthentication(caller.claims)) != nil
        return AccountHolder(caller: caller, user: user, csrf: signIn.csrfToken(for: token), isFresh: fresh)
    }

    /// A form of the page: its CSRF token (bound to this session) and, for a change that needs it, a recent sign-in.
    func checkForm(_ params: Parameters, by holder: AccountHolder, needsFreshSignIn: Bool) throws {
        guard try signIn.formIsGenuine(params, csrf: holder.csrf) else { throw AccountRefusal.forgedForm }
        if needsFreshSignIn && !holder.isFresh { throw AccountRefusal.staleSignIn }
    }
}
