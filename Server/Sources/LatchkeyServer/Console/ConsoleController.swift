import Foundation
import Hummingbird

/// The admin console at `/admin`: server-rendered pages over the administration the APIs offer (applications, users
/// and their sessions, the audit trail), for operators signed in through the server's own OpenID flow
/// (`ConsoleAccess`). Every page answers in the operator's language; every change is a CSRF-bound form that needs a
/// recent sign-in and lands in the audit trail with the operator as actor.
///
/// Routes: `GET /admin` (to the applications), `GET /admin/login` (starts the sign-in; `fresh=1` asks for the
/// credentials again), `GET /admin/callback`, `POST /admin/signout`, and the sections' (`ConsoleApplications`,
/// `ConsoleUsers`, `ConsoleAudit`).
struct ConsoleController: Sendable {
    let access: ConsoleAccess
    let applications: ConsoleApplications
    let users: ConsoleUsers
    let audit: ConsoleAudit

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("") { _, _ in Responses.redirect(to: "/admin/applications") }
        group.get("login") { request, _ in
            let fresh = try Parameters.query(of: request).single("fresh") == "1"
            return access.startSignIn(forceLogin: fresh, locale: request.locale())
        }
        group.get("callback") { request, _ in try await self.callback(request) }
        group.post("signout") { request, _ in
            try await self.serve(request, form: true, checkFreshness: false) { signedIn, _ in
                let cleared = try await access.signOut(signedIn)
                let l = request.locale()
                return Responses.html(
                    ConsolePages.message(
                        title: ConsolePages.t("console.signedout.title", l), text: ConsolePages.t("console.signedout.body", l),
                        action: ConsolePages.t("console.signin", l), signedIn: nil, locale: l),
                    headers: [.setCookie: cleared])
            }
        }
        applications.addRoutes(to: group, console: self)
        users.addRoutes(to: group, console: self)
        audit.addRoutes(to: group, console: self)
    }

    private func callback(_ request: Request) async throws -> Response {
        let params = try Parameters.query(of: request)
        let l = request.locale()
        if let error = try params.single("error") {
            // The sign-in was refused (a person without a second factor under `require_mfa`, or one who cancelled).
            return Responses.html(
                ConsolePages.message(
                    title: ConsolePages.t("console.refused.title", l),
                    text: ConsolePages.t(error == "access_denied" ? "console.refused.mfa" : "console.refused.signin", l), signedIn: nil,
                    locale: l), status: .forbidden)
        }
        do {
            let (_, cookies) = try await access.finishSignIn(request, params)
            var response = Responses.redirect(to: "/admin/applications")
            response.headers[values: .setCookie] = cookies
            return response
        } catch let refusal as ConsoleRefusal {
            return refused(refusal, request: request, signedIn: nil)
        }
    }

    /// Runs `body` for the operator of `request`; a form (`form`) must carry its CSRF token and, unless
    /// `checkFreshness` is false (signing out), a recent sign-in. Refusals become pages (`refused`).
    func serve(
        _ request: Request, form: Bool = false, checkFreshness: Bool = true,
        _ body: (ConsoleOperator, Parameters) async throws -> Response
    ) async throws -> Response {
        let signedIn: ConsoleOperator
        do { signedIn = try await access.operator(request) } catch let refusal as ConsoleRefusal {
            return refused(refusal, request: request, signedIn: nil)
        }
        let params = form ? try await Parameters.body(of: request) : try Parameters.query(of: request)
        if form {
            do { try access.checkForm(params, by: signedIn, checkFreshness: checkFreshness) } catch let refusal as ConsoleRefusal {
                return refused(refusal, request: request, signedIn: signedIn)
            }
        }
        return try await body(signedIn, params)
    }

    /// A refusal as the operator sees it: a sign-in for a page read without one, otherwise a page saying why.
    func refused(_ refusal: ConsoleRefusal, request: Request, signedIn: ConsoleOperator?) -> Response {
        let l = request.locale()
        func page(_ titleKey: String, _ textKey: String, action: String? = nil, status: HTTPResponse.Status) -> Response {
            Responses.html(
                ConsolePages.message(
                    title: ConsolePages.t(titleKey, l), text: ConsolePages.t(textKey, l), action: action.map { ConsolePages.t($0, l) },
                    signedIn: signedIn, locale: l), status: status)
        }
        switch refusal {
        case .signInNeeded:
            // A page read starts the sign-in; a form posted without a live sign-in is not replayed afterwards.
            if request.method == .get { return access.startSignIn(forceLogin: false, locale: l) }
            return page("console.refused.title", "console.refused.expired", action: "console.signin", status: .unauthorized)
        case .notAdministrator: return page("console.refused.title", "console.refused.admin", status: .forbidden)
        case .noSecondFactor: return page("console.refused.title", "console.refused.mfa", status: .forbidden)
        case .forgedForm: return page("page.csrf.title", "page.csrf.body", status: .forbidden)
        case .staleSignIn: return page("console.stale.title", "console.stale.body", action: "console.signin", status: .unauthorized)
        }
    }
}
