import Foundation
import Hummingbird

/// The account page at `/account`: server-rendered pages where a person manages their own account in a browser
/// (profile, password, second steps, passkeys, linked accounts, where they are signed in, the applications they
/// allowed, their data), signed in through the server's own OpenID flow (`AccountAccess`). Every page answers in the
/// person's language; every change is a form bound to the session by a CSRF token, and what changes how the account
/// signs in or cannot be undone (a second step, a passkey, a link, the download of the data, the deletion) needs a
/// recent sign-in, offered as "Confirm it's you" (`prompt=login`).
///
/// Routes: `GET /account` (to the profile), `GET /account/login` (starts the sign-in; `fresh=1` asks for the
/// credentials again, `return` names the page to come back to), `GET /account/callback`, `POST /account/signout`, and
/// the sections' (`AccountProfile`, `AccountSecurity`, `AccountPasskeys`, `AccountLinkedAccounts`, `AccountSessions`,
/// `AccountApplications`, `AccountData`).
struct AccountController: Sendable {
    let access: AccountAccess
    let profile: AccountProfile
    let security: AccountSecurity
    let passkeys: AccountPasskeys
    let linked: AccountLinkedAccounts
    let sessions: AccountSessions
    let applications: AccountApplications
    let data: AccountData

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("") { _, _ in Responses.redirect(to: AccountPages.Section.profile.path) }
        group.get("login") { request, _ in
            let query = try Parameters.query(of: request)
            return access.signIn.start(forceLogin: try query.single("fresh") == "1", locale: request.locale(), returnPath: try query.single("return"))
        }
        group.get("callback") { request, _ in try await self.callback(request) }
        group.post("signout") { request, context in
            try await self.serve(request, context, form: true) { holder, _, _ in
                let cleared = try await access.signIn.signOut(holder.caller, reason: "signed out of the account page")
                let l = request.locale()
                return AccountPages.signedOut(
                    title: AccountPages.t("account.signedout.title", l), text: AccountPages.t("account.signedout.body", l), clearing: cleared, l)
            }
        }
        profile.addRoutes(to: group, account: self)
        security.addRoutes(to: group, account: self)
        passkeys.addRoutes(to: group, account: self)
        linked.addRoutes(to: group, account: self)
        sessions.addRoutes(to: group, account: self)
        applications.addRoutes(to: group, account: self)
        data.addRoutes(to: group, account: self)
    }

    private func callback(_ request: Request) async throws -> Response {
        let params = try Parameters.query(of: request)
        let l = request.locale()
        // The person cancelled, or the sign-in was refused, or the callback is not this browser's (cookies blocked,
        // another tab, a bookmark): a page with the way to try again, never a new sign-in at once, which single
        // sign-on would answer with the same failing callback, round and round.
        let refusedPage = Responses.html(
            AccountPages.message(
                title: AccountPages.t("account.refused.title", l), text: AccountPages.t("account.refused.signin", l),
                action: AccountPages.t("account.signin", l), holder: nil, locale: l), status: .forbidden)
        if try params.single("error") != nil { return refusedPage }
        do {
            let redemption = try await access.signIn.redeem(request, params)
            let (_, cookies) = try await access.signIn.issue(redemption)
            var response = Responses.redirect(to: redemption.returnPath ?? AccountPages.Section.profile.path)
            response.headers[values: .setCookie] = cookies
            return response
        } catch is OwnApplicationSignIn.SignInNeeded {
            return refusedPage
        }
    }

    /// Runs `body` for the person of `request`. A form (`form`) must carry its CSRF token and, when
    /// `needsFreshSignIn`, come from a recent sign-in; refusals become pages (`refused`). `body` gets the form's or
    /// the query's parameters and an audit origin naming the account page.
    func serve(
        _ request: Request, _ context: LatchkeyRequestContext, form: Bool = false, needsFreshSignIn: Bool = false,
        section: AccountPages.Section? = nil, _ body: (AccountHolder, Parameters, AuditOrigin) async throws -> Response
    ) async throws -> Response {
        let holder: AccountHolder
        do { holder = try await access.holder(request) } catch let refusal as AccountRefusal {
            return refused(refusal, request: request, holder: nil, section: section)
        }
        let params = form ? try await Parameters.body(of: request) : try Parameters.query(of: request)
        if form {
            do { try access.checkForm(params, by: holder, needsFreshSignIn: needsFreshSignIn) } catch let refusal as AccountRefusal {
                return refused(refusal, request: request, holder: holder, section: section)
            }
        }
        let origin = AuditOrigin(client: AccountClient.id, address: context.clientAddress, logger: context.logger)
        return try await body(holder, params, origin)
    }

    /// A refusal as the person sees it: a sign-in for a page read without one, otherwise a page saying why, with the
    /// way on.
    func refused(_ refusal: AccountRefusal, request: Request, holder: AccountHolder?, section: AccountPages.Section?) -> Response {
        let l = request.locale()
        switch refusal {
        case .signInNeeded:
            // A page read starts the sign-in and comes back to it; a form posted without a live sign-in is not
            // replayed afterwards.
            if request.method == .get { return access.signIn.start(forceLogin: false, locale: l, returnPath: section?.path) }
            return Responses.html(
                AccountPages.message(
                    title: AccountPages.t("account.refused.title", l), text: AccountPages.t("account.refused.expired", l),
                    action: AccountPages.t("account.signin", l), returnPath: section?.path, holder: nil, locale: l), status: .unauthorized)
        case .forgedForm:
            return Responses.html(
                AccountPages.message(
                    title: AccountPages.t("page.csrf.title", l), text: AccountPages.t("page.csrf.body", l), holder: holder, locale: l),
                status: .forbidden)
        case .staleSignIn: return AccountPages.stale(holder, section: section, l)
        }
    }
}
