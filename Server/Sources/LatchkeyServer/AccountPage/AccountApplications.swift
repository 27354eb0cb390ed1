import Foundation
import Hummingbird

/// The account page's "Connected apps": the third-party applications the person consented to, with what each may do
/// (the consent page's words, `scope.*`), and "Remove access", which forgets the consent and signs the application out
/// (`ConsentWithdrawal.withdraw`): its next sign-in asks again.
struct AccountApplications: Sendable {
    let store: any Store
    let clock: ServerClock
    let audit: AuditTrail

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("applications") { request, context in
            try await account.serve(request, context, section: .applications) { holder, params, _ in
                let l = request.locale()
                var notice: String?
                if let clientId = try AccountPages.done(params, holder), let client = try await store.client(id: clientId) {
                    notice = AccountPages.t("account.apps.withdrawn", l, ["app": client.configuration.displayName(l)])
                }
                return try await self.page(holder, l, notice: notice)
            }
        }
        group.post("applications/withdraw") { request, context in
            try await account.serve(request, context, form: true, section: .applications) { holder, params, origin in
                let clientId = try params.single("client") ?? ""
                guard
                    let revoked = try await ConsentWithdrawal.withdraw(
                        clientId, of: holder.user.id, store: store, now: clock.now, byAdministrator: false)
                else {
                    return try await self.page(holder, request.locale(), error: AccountPages.t("account.gone", request.locale()), status: .notFound)
                }
                var withdrawn = origin
                withdrawn.client = clientId  // the application whose consent ended, not the account page
                await audit.record(
                    .consentWithdrawn, subject: holder.user.id, actor: holder.user.id,
                    details: ["grants_revoked": String(revoked), "administrator": "false", "via": "account_page"], origin: withdrawn)
                return AccountPages.back(to: .applications, holder, done: clientId)
            }
        }
    }

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, notice: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let consents = try await store.consents(userId: holder.user.id)
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error) + "<p>\(AccountPages.e("account.apps.intro", l))</p>"
        guard !consents.isEmpty else {
            return AccountPages.page(
                .applications, holder, l, body: body + "<p id=\"no-apps\">\(AccountPages.e("account.apps.none", l))</p>", status: status)
        }
        var rows = ""
        for consent in consents {
            let name = try await store.client(id: consent.clientId)?.configuration.displayName(l) ?? consent.clientId
            let access = consent.scopes.map { (scope) -> String in
                let key = "scope.\(scope)"
                let text = MessageCatalog.text(key, locale: l, arguments: [:], default: "")
                return "<li>\(HTML.escape(text.isEmpty ? AccountPages.t("scope.other", l, ["scope": scope]) : text))</li>"
            }.joined()
            let withdraw = AccountPages.button(
                "/account/applications/withdraw", label: AccountPages.t("account.apps.withdraw", l), holder: holder, style: "secondary",
                fields: ["client": consent.clientId], accessibleLabel: AccountPages.t("account.apps.withdraw_named", l, ["app": name]))
            rows += """
                <tr><th scope="row">\(HTML.escape(name))</th><td><ul>\(access)</ul></td>
                <td class="time">\(AccountPages.date(consent.grantedAt, l))</td><td>\(withdraw)</td></tr>
                """
        }
        body += """
            <div class="table"><table id="consents"><caption>\(AccountPages.e("account.apps.caption", l, ["count": String(consents.count)]))</caption>
            <thead><tr><th scope="col">\(AccountPages.e("account.apps.app", l))</th><th scope="col">\(AccountPages.e("account.apps.access", l))</th>
            <th scope="col">\(AccountPages.e("account.apps.since", l))</th><th scope="col"><span class="skip">\(AccountPages.e("account.apps.withdraw", l))</span></th></tr></thead>
            <tbody>\(rows)</tbody></table></div>
            """
        return AccountPages.page(.applications, holder, l, body: body, status: status)
    }
}
