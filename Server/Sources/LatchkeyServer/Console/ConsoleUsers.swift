import Foundation
import Hummingbird

/// The console's users: search (by username or email, or every account page by page), one account with its lockout
/// and sessions, and what an operator does to it: disable or enable it, lift its lockout, reset its password (the
/// current one stops working and its sessions end; the person chooses a new one with "Forgot password?"), end one
/// session or all of them. Each change is audited with the operator as actor.
struct ConsoleUsers: Sendable {
    let accounts: Accounts
    let store: any Store
    let audit: AuditTrail

    static let pageSize = 50

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, console: ConsoleController) {
        group.get("users") { request, _ in
            try await console.serve(request) { signedIn, params in try await self.search(params, signedIn, locale: request.locale()) }
        }
        group.get("users/:id") { request, context in
            try await console.serve(request) { signedIn, params in
                try await self.detail(try context.parameters.require("id"), signedIn, notice: try params.single("done"), locale: request.locale())
            }
        }
        for action in ["disable", "enable", "unlock", "reset-password", "end-sessions", "withdraw-consent"] {
            group.post("users/:id/\(action)") { request, context in
                try await console.serve(request, form: true) { signedIn, params in
                    try await self.act(action, on: try context.parameters.require("id"), params, signedIn, request: request, context: context)
                }
            }
        }
    }

    // MARK: Pages

    private func search(_ params: Parameters, _ signedIn: ConsoleOperator, locale l: SupportedLocale) async throws -> Response {
        let text = (try params.single("q") ?? "").trimmingCharacters(in: .whitespaces)
        let page = max(1, Int(try params.single("page") ?? "1") ?? 1)
        var users: [UserRecord] = []
        var total = 0
        if text.isEmpty {
            let found = try await store.users(matching: UserQuery(), offset: (page - 1) * Self.pageSize, limit: Self.pageSize)
            (users, total) = (found.users, found.total)
        } else {
            for condition in [UserQuery.Condition.username(text), .email(text), .id(text)] {
                for user in try await store.users(matching: UserQuery([condition]), offset: 0, limit: 10).users
                where !users.contains(where: { $0.id == user.id }) {
                    users.append(user)
                }
            }
            total = users.count
        }
        let rows = users.map { (user) -> String in
            """
            <tr><th scope="row"><a href="/admin/users/\(ConsoleApplications.pathId(user.id))">\(HTML.escape(user.username))</a></th>
            <td>\(HTML.escape(user.claims["email"] ?? "—"))</td>
            <td>\(ConsolePages.e(user.disabled ? "console.users.disabled" : "console.users.active", l))</td>
            <td>\(ConsolePages.date(user.createdAt, l))</td></tr>
            """
        }.joined()
        var pager = ""
        if text.isEmpty && page * Self.pageSize < total {
            pager = "<p><a href=\"/admin/users?page=\(page + 1)\" rel=\"next\">\(ConsolePages.e("console.next", l))</a></p>"
        }
        let body = """
            <form method="get" action="/admin/users" role="search" class="filters">
            <div><label for="q">\(ConsolePages.e("console.users.search", l))</label>
            <input type="search" id="q" name="q" value="\(HTML.escape(text))" aria-describedby="q-hint"></div>
            <div><button type="submit">\(ConsolePages.e("console.users.find", l))</button></div></form>
            <p class="hint" id="q-hint">\(ConsolePages.e("console.users.search.hint", l))</p>
            <table><caption>\(ConsolePages.e("console.users.caption", l, ["count": String(total)]))</caption>
            <thead><tr><th scope="col">\(ConsolePages.e("console.users.username", l))</th><th scope="col">\(ConsolePages.e("console.users.email", l))</th>
            <th scope="col">\(ConsolePages.e("console.users.status", l))</th><th scope="col">\(ConsolePages.e("console.users.created", l))</th></tr></thead>
            <tbody>\(rows)</tbody></table>\(pager)
            """
        return Self.page(signedIn, l, title: ConsolePages.t("console.nav.users", l), body: body)
    }

    private func detail(_ id: String, _ signedIn: ConsoleOperator, notice: String?, locale l: SupportedLocale) async throws -> Response {
        guard let user = try await store.user(id: id) else {
            return Self.page(
                signedIn, l, title: ConsolePages.t("console.notfound", l), body: "<p>\(ConsolePages.e("console.notfound.body", l))</p>",
                status: .notFound)
        }
        let now = accounts.clock.now
        let lockout = try await store.lockout(userId: user.id, now: now)
        let listing = try await store.userSessions(userId: user.id, now: now)
        let path = "/admin/users/\(ConsoleApplications.pathId(user.id))"
        let notices = [
            "disable": "console.users.done.disable", "enable": "console.users.done.enable", "unlock": "console.users.done.unlock",
            "reset-password": "console.users.done.reset", "end-sessions": "console.users.done.sessions",
            "withdraw-consent": "console.users.done.consent"
        ]
        var body = ConsolePages.notice(notice.flatMap { notices[$0] }.map { ConsolePages.t($0, l) })
        let lockText: String
        if let lockout, lockout.isLocked {
            let until = lockout.lockedUntil ?? lockout.latestAddressLockUntil
            lockText = ConsolePages.e("console.users.locked", l, ["count": String(lockout.lockedAddresses)]) + " " + ConsolePages.date(until, l)
        } else {
            lockText = ConsolePages.e("console.users.not_locked", l)
        }
        body += """
            <dl><dt>\(ConsolePages.e("console.users.id", l))</dt><dd><code>\(HTML.escape(user.id))</code></dd>
            <dt>\(ConsolePages.e("console.users.email", l))</dt><dd>\(HTML.escape(user.claims["email"] ?? "—"))</dd>
            <dt>\(ConsolePages.e("console.users.status", l))</dt><dd>\(ConsolePages.e(user.disabled ? "console.users.disabled" : "console.users.active", l))</dd>
            <dt>\(ConsolePages.e("console.users.roles", l))</dt><dd>\(HTML.escape(UserRoles.of(user).isEmpty ? "—" : UserRoles.of(user).sorted().joined(separator: ", ")))</dd>
            <dt>\(ConsolePages.e("console.users.lockout", l))</dt><dd>\(lockText)</dd>
            <dt>\(ConsolePages.e("console.users.created", l))</dt><dd>\(ConsolePages.date(user.createdAt, l))</dd></dl>
            <div class="actions">
            \(ConsolePages.button(path + (user.disabled ? "/enable" : "/disable"), label: ConsolePages.t(user.disabled ? "console.users.enable" : "console.users.disable", l), signedIn: signedIn, style: user.disabled ? "" : "danger"))
            \(lockout?.isLocked == true ? ConsolePages.button(path + "/unlock", label: ConsolePages.t("console.users.unlock", l), signedIn: signedIn) : "")
            \(ConsolePages.button(path + "/reset-password", label: ConsolePages.t("console.users.reset", l), signedIn: signedIn, style: "secondary"))
            </div>
            <p class="hint">\(ConsolePages.e("console.users.reset.hint", l))</p>
            <p><a href="/admin/audit?subject=\(ConsoleApplications.pathId(user.id))">\(ConsolePages.e("console.users.history", l))</a></p>
            """
        let rows = listing.sessions.map { (session) -> String in
            let applications = listing.grants.filter { $0.sessionId == session.id }.map(\.family.clientId).joined(separator: ", ")
            return """
                <tr><td class="time">\(ConsolePages.date(session.createdAt, l))</td><td>\(HTML.escape(session.amr.joined(separator: " ")))</td>
                <td>\(HTML.escape(applications.isEmpty ? "—" : applications))</td>
                <td>\(ConsolePages.button(path + "/end-sessions", label: ConsolePages.t("console.users.end", l), signedIn: signedIn, style: "secondary", fields: ["session": session.id]))</td></tr>
                """
        }.joined()
        body += """
            <h2>\(ConsolePages.e("console.users.sessions", l))</h2>
            <table><caption>\(ConsolePages.e("console.users.sessions.caption", l, ["count": String(listing.sessions.count)]))</caption>
            <thead><tr><th scope="col">\(ConsolePages.e("console.users.sessions.since", l))</th><th scope="col">\(ConsolePages.e("console.users.sessions.methods", l))</th>
            <th scope="col">\(ConsolePages.e("console.users.sessions.apps", l))</th><th scope="col"><span class="skip">\(ConsolePages.e("console.users.end", l))</span></th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(listing.sessions.isEmpty && listing.grants.isEmpty ? "" : ConsolePages.button(path + "/end-sessions", label: ConsolePages.t("console.users.end_all", l), signedIn: signedIn, style: "danger"))
            """
        body += try await consentsTable(of: user, path: path, signedIn, locale: l)
        return Self.page(signedIn, l, title: user.username, body: body)
    }

    /// The account's consents to third-party applications, each with a button that withdraws it (and its grants).
    private func consentsTable(of user: UserRecord, path: String, _ signedIn: ConsoleOperator, locale l: SupportedLocale) async throws -> String {
        let consents = try await store.consents(userId: user.id)
        var rows = ""
        for consent in consents {
            let name = try await store.client(id: consent.clientId)?.configuration.name ?? consent.clientId
            rows += """
                <tr><th scope="row">\(HTML.escape(name)) <code>\(HTML.escape(consent.clientId))</code></th>
                <td>\(HTML.escape(consent.scopes.joined(separator: " ")))</td><td class="time">\(ConsolePages.date(consent.grantedAt, l))</td>
                <td>\(ConsolePages.button(path + "/withdraw-consent", label: ConsolePages.t("console.users.consents.withdraw", l), signedIn: signedIn, style: "secondary", fields: ["client": consent.clientId]))</td></tr>
                """
        }
        return """
            <h2>\(ConsolePages.e("console.users.consents", l))</h2>
            <table id="consents"><caption>\(ConsolePages.e("console.users.consents.caption", l, ["count": String(consents.count)]))</caption>
            <thead><tr><th scope="col">\(ConsolePages.e("console.users.consents.app", l))</th><th scope="col">\(ConsolePages.e("console.users.consents.scopes", l))</th>
            <th scope="col">\(ConsolePages.e("console.users.consents.since", l))</th><th scope="col"><span class="skip">\(ConsolePages.e("console.users.consents.withdraw", l))</span></th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """
    }

    // MARK: Changes

    private func act(
        _ action: String, on id: String, _ params: Parameters, _ signedIn: ConsoleOperator, request: Request, context: LatchkeyRequestContext
    ) async throws -> Response {
        let l = request.locale()
        guard let user = try await store.user(id: id) else {
            return Self.page(
                signedIn, l, title: ConsolePages.t("console.notfound", l), body: "<p>\(ConsolePages.e("console.notfound.body", l))</p>",
                status: .notFound)
        }
        let origin = AuditOrigin(client: ConsoleClient.id, address: context.clientAddress, logger: context.logger)
        let actor = signedIn.caller.auditActor
        let now = accounts.clock.now
        switch action {
        case "disable", "enable":
            let disable = action == "disable"
            // An administrator cannot lock itself out (as through SCIM); another administrator can.
            if disable && user.id == signedIn.user.id {
                return Self.page(
                    signedIn, l, title: user.username, body: ConsolePages.error(ConsolePages.t("console.users.self", l)), status: .forbidden)
            }
            switch try await accounts.updateProfile(of: user, changes: [:], disabled: disable, byAdministrator: true, logger: context.logger) {
            case .success:
                await audit.record(
                    .userUpdated, subject: user.id, actor: actor, details: ["attributes": "active", "via": "console", "administrator": "true"],
                    origin: origin)
            case .failure:
                return Self.page(signedIn, l, title: user.username, body: ConsolePages.error(ConsolePages.t("console.retry", l)), status: .conflict)
            }
        case "unlock":
            _ = try await store.clearLockout(userId: user.id)
            await audit.record(.accountUnlocked, subject: user.id, actor: actor, details: ["via": "console"], origin: origin)
        case "reset-password":
            try await store.replacePassword(
                userId: user.id, passwordHash: PasswordHasher.noPassword, keepingSession: nil, keepingFamily: nil, now: now)
            await audit.record(.passwordReset, subject: user.id, actor: actor, details: ["via": "console", "administrator": "true"], origin: origin)
        case "withdraw-consent":
            guard let clientId = try params.single("client"),
                let revoked = try await ConsentWithdrawal.withdraw(clientId, of: user.id, store: store, now: now, byAdministrator: true)
            else {
                return Self.page(
                    signedIn, l, title: user.username, body: ConsolePages.error(ConsolePages.t("console.notfound.body", l)), status: .notFound)
            }
            var withdrawn = origin
            withdrawn.client = clientId
            await audit.record(
                .consentWithdrawn, subject: user.id, actor: actor,
                details: ["grants_revoked": String(revoked), "administrator": "true", "via": "console"], origin: withdrawn)
        default:  // end-sessions: one (`session`) or all
            let ending = SessionEnding(store: store, clock: accounts.clock, audit: audit)
            let administrator = SessionEnding.Actor(id: actor, administrator: true, via: "console")
            if let sessionId = try params.single("session") {
                guard try await ending.endSession(sessionId, of: user.id, by: administrator, origin: origin) else {
                    return Self.page(
                        signedIn, l, title: user.username, body: ConsolePages.error(ConsolePages.t("console.notfound.body", l)), status: .notFound)
                }
            } else {
                try await ending.endAll(of: user.id, by: administrator, origin: origin)
            }
        }
        return Responses.redirect(to: "/admin/users/\(ConsoleApplications.pathId(user.id))?done=\(action)", afterPost: true)
    }

    static func page(_ signedIn: ConsoleOperator, _ l: SupportedLocale, title: String, body: String, status: HTTPResponse.Status = .ok) -> Response {
        Responses.html(ConsolePages.layout(title: title, body: body, section: .users, signedIn: signedIn, locale: l), status: status)
    }
}
