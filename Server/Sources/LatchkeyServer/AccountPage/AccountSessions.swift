import Foundation
import Hummingbird

/// The account page's "Where you're signed in": each open session (this browser's marked) with the applications
/// signed in through it, and the applications that stay signed in without one; signing out of one, of all the others,
/// or signing one application out (`SessionEnding`). None of it needs a recent sign-in: ending a session only takes
/// access away, and the owner of a lost device must be able to do it at once (see `SessionsController`).
struct AccountSessions: Sendable {
    let store: any Store
    let ending: SessionEnding

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("sessions") { request, context in
            try await account.serve(request, context, section: .sessions) { holder, params, _ in
                let notices = ["one": "account.sessions.ended", "others": "account.sessions.ended_others", "app": "account.sessions.revoked"]
                return try await self.page(
                    holder, request.locale(),
                    notice: try AccountPages.done(params, holder).flatMap { notices[$0] }.map { AccountPages.t($0, request.locale()) })
            }
        }
        group.post("sessions/end") { request, context in
            try await account.serve(request, context, form: true, section: .sessions) { holder, params, origin in
                let session = try params.single("session") ?? ""
                let ended = try await ending.endSession(session, of: holder.user.id, by: self.actor(holder), origin: origin)
                guard ended, session == holder.caller.claims.sid else { return try await self.after(ended, done: "one", holder, request.locale()) }
                // This browser's own session: the page's sign-in ended with it.
                let l = request.locale()
                return AccountPages.signedOut(
                    title: AccountPages.t("account.signedout.title", l), text: AccountPages.t("account.sessions.ended", l),
                    clearing: account.access.signIn.clearedCookie, l)
            }
        }
        group.post("sessions/end-others") { request, context in
            try await account.serve(request, context, form: true, section: .sessions) { holder, _, origin in
                let family = try await store.accessToken(jti: holder.caller.claims.jti)?.familyId
                try await ending.endAll(
                    of: holder.user.id, keepingCurrent: true, session: holder.caller.claims.sid, family: family, by: self.actor(holder),
                    origin: origin)
                return AccountPages.back(to: .sessions, holder, done: "others")
            }
        }
        group.post("sessions/revoke") { request, context in
            try await account.serve(request, context, form: true, section: .sessions) { holder, params, origin in
                let revoked = try await ending.revokeGrant(
                    try params.single("grant") ?? "", of: holder.user.id, by: self.actor(holder), origin: origin)
                return try await self.after(revoked, done: "app", holder, request.locale())
            }
        }
    }

    private func actor(_ holder: AccountHolder) -> SessionEnding.Actor { .init(id: holder.user.id, administrator: false, via: "account_page") }

    /// Back to the list: with what was done, or (gone meanwhile: another tab, another device) saying so.
    private func after(_ done: Bool, done key: String, _ holder: AccountHolder, _ l: SupportedLocale) async throws -> Response {
        guard done else { return try await page(holder, l, error: AccountPages.t("account.gone", l), status: .notFound) }
        return AccountPages.back(to: .sessions, holder, done: key)
    }

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, notice: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let listing = try await store.userSessions(userId: holder.user.id, now: ending.clock.now)
        var names: [String: String] = [:]
        for clientId in Set(listing.grants.map(\.family.clientId)) {
            names[clientId] = try await store.client(id: clientId)?.configuration.displayName(l) ?? clientId
        }
        let current = holder.caller.claims.sid
        // This browser's session first, then the others, newest first.
        let sessions = listing.sessions.filter { $0.id == current } + listing.sessions.filter { $0.id != current }
        let rows = sessions.map { (session) -> String in
            let apps = listing.grants.filter { $0.sessionId == session.id }.map { names[$0.family.clientId] ?? $0.family.clientId }
            let this = session.id == current ? "<br><strong>\(AccountPages.e("account.sessions.this", l))</strong>" : ""
            let end = AccountPages.button(
                "/account/sessions/end", label: AccountPages.t("account.sessions.end", l), holder: holder, style: "secondary",
                fields: ["session": session.id],
                accessibleLabel: AccountPages.t("account.sessions.end_named", l, ["date": AccountPages.dateText(session.createdAt, l)]))
            return """
                <tr><th scope="row" class="time">\(AccountPages.date(session.createdAt, l))\(this)</th>
                <td>\(apps.isEmpty ? AccountPages.e("account.sessions.no_apps", l) : "<ul>" + apps.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>")</td><td>\(end)</td></tr>
                """
        }.joined()
        let sessionIds = Set(listing.sessions.map(\.id))
        let unbound = listing.grants.filter { grant in grant.sessionId.map { !sessionIds.contains($0) } ?? true }
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error)
        body += """
            <p>\(AccountPages.e("account.sessions.intro", l))</p>
            <div class="table"><table id="sessions"><caption>\(AccountPages.e("account.sessions.caption", l, ["count": String(sessions.count)]))</caption>
            <thead><tr><th scope="col">\(AccountPages.e("account.sessions.started", l))</th><th scope="col">\(AccountPages.e("account.sessions.apps", l))</th>
            <th scope="col"><span class="skip">\(AccountPages.e("account.sessions.end", l))</span></th></tr></thead><tbody>\(rows)</tbody></table></div>
            """
        let others = listing.sessions.contains { $0.id != current } || listing.grants.contains { $0.sessionId != current }
        body +=
            others
            ? AccountPages.button(
                "/account/sessions/end-others", label: AccountPages.t("account.sessions.end_others", l), holder: holder, style: "danger")
            : "<p>\(AccountPages.e("account.sessions.none_other", l))</p>"
        if !unbound.isEmpty {
            let appRows = unbound.map { (grant) -> String in
                let name = names[grant.family.clientId] ?? grant.family.clientId
                let revoke = AccountPages.button(
                    "/account/sessions/revoke", label: AccountPages.t("account.sessions.revoke", l), holder: holder, style: "secondary",
                    fields: ["grant": grant.family.id], accessibleLabel: AccountPages.t("account.sessions.revoke_named", l, ["app": name]))
                return
                    "<tr><th scope=\"row\">\(HTML.escape(name))</th><td class=\"time\">\(AccountPages.date(grant.family.createdAt, l))</td><td>\(revoke)</td></tr>"
            }.joined()
            body += """
                <h2>\(AccountPages.e("account.sessions.apps_heading", l))</h2>
                <div class="table"><table id="apps"><caption>\(AccountPages.e("account.sessions.apps_caption", l, ["count": String(unbound.count)]))</caption>
                <thead><tr><th scope="col">\(AccountPages.e("account.sessions.app", l))</th><th scope="col">\(AccountPages.e("account.sessions.app_since", l))</th>
                <th scope="col"><span class="skip">\(AccountPages.e("account.sessions.revoke", l))</span></th></tr></thead><tbody>\(appRows)</tbody></table></div>
                """
        }
        return AccountPages.page(.sessions, holder, l, body: body, status: status)
    }
}
