import Foundation
import Hummingbird

/// The account page's linked accounts: the account's links to other identity providers with when each was made, the
/// providers still to link, "Link" (the provider's own sign-in, then back here) and "Unlink", through the same rules as
/// the apps (`IdentityLinkChanges`): both need a recent sign-in, both are mailed and audited, and the account's last
/// way in stays.
///
/// A link is the apps' link with the page as the app: `link` starts the provider's sign-in for this account, the
/// provider comes back to `/federation/{id}/callback`, which hands the verified identity off under a one-time code to
/// `/account/linked/{id}/callback`, and that page, signed in as the account that started it, completes it. Someone
/// who sends another person the provider's page cannot attach that person's identity to their own account: the
/// provider's answer is taken only in the browser that started the link (its `lk_fed` cookie, as for the hosted
/// page's "Continue with …"), and its code only in the session of the account that started it, for this page.
struct AccountLinkedAccounts: Sendable {
    let store: any ClientStore
    let changes: IdentityLinkChanges
    let cookies: CookiePolicy

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("linked") { request, context in
            try await account.serve(request, context, section: .linked) { holder, params, _ in
                let l = request.locale()
                return try await self.page(holder, l, notice: try AccountPages.done(params, holder).flatMap { notice($0, l) })
            }
        }
        group.post("linked/link") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .linked) { holder, params, origin in
                try await self.link(holder, providerId: try params.single("provider") ?? "", request, origin: origin)
            }
        }
        group.get("linked/:provider/callback") { request, context in
            let providerId = try context.parameters.require("provider")
            return try await account.serve(request, context, section: .linked) { holder, params, origin in
                try await self.callback(holder, providerId: providerId, params, request.locale(), origin: origin)
            }
        }
        group.post("linked/unlink") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .linked) { holder, params, origin in
                let l = request.locale()
                let providerId = try params.single("provider") ?? ""
                switch try await changes.unlink(providerId: providerId, user: holder.user, locale: l, origin: origin) {
                case .unlinked: return AccountPages.back(to: .linked, holder, done: "unlinked:" + providerId)
                case .notLinked: return try await self.page(holder, l, error: AccountPages.t("account.gone", l), status: .notFound)
                case .lastCredential:
                    return try await self.page(
                        holder, l, error: AccountPages.t("federation.last_credential", l, ["provider": changes.name(of: providerId)]),
                        status: .conflict)
                }
            }
        }
    }

    /// The page's own application: the providers it offers are the ones a person may link here.
    private func client() async throws -> ClientConfiguration? { try await store.client(id: AccountClient.id)?.configuration }

    /// The provider `id`, when the page offers it.
    private func provider(_ id: String) async throws -> IdentityProviderConfiguration? {
        guard let client = try await client() else { return nil }
        return try? changes.federation.provider(id, for: client)
    }

    /// Starts the provider's sign-in for this account, bound to this browser, and sends the browser there.
    private func link(_ holder: AccountHolder, providerId: String, _ request: Request, origin: AuditOrigin) async throws -> Response {
        let l = request.locale()
        guard let provider = try await provider(providerId) else {
            return try await page(holder, l, error: AccountPages.t("account.gone", l), status: .badRequest)
        }
        // The hosted page's binding cookie, reused when this browser has one (a sign-in with a provider in progress).
        let binding = request.cookieValue(cookies.federationName).flatMap { $0.count >= 32 ? $0 : nil } ?? Secrets.token()
        do {
            let (url, _) = try await changes.federation.begin(
                provider, purpose: .link, target: holder.user.id, clientId: AccountClient.id,
                redirectUri: changes.federation.issuerInForce() + Self.callbackPath(provider.id), browserBinding: binding)
            return Responses.redirect(
                to: url.absoluteString, afterPost: true,
                headers: [.setCookie: cookies.federation(binding, maxAge: changes.federation.lifetimes.loginRequest)])
        } catch let failure as FederationFailure {
            origin.logger.notice("account page: the link did not start", metadata: ["reason": .string(failure.description)])
            return try await page(holder, l, error: text(failure.messageKey, providerId, l), status: .serviceUnavailable)
        }
    }

    /// Where the provider's answer is handed back to the page.
    static func callbackPath(_ providerId: String) -> String { "/account/linked/\(providerId)/callback" }

    /// The provider's answer, handed off by `/federation/{id}/callback`: the link completed for this account, or the
    /// page saying why not. Nothing in the query is shown as it came: a refusal's words are the catalog's, chosen from
    /// the federation's own keys.
    private func callback(
        _ holder: AccountHolder, providerId: String, _ params: Parameters, _ l: SupportedLocale, origin: AuditOrigin
    ) async throws -> Response {
        // Only a provider the page offers: its configured name is the only word of the address a page may show.
        guard try await provider(providerId) != nil else {
            return try await page(holder, l, error: AccountPages.t("account.gone", l), status: .notFound)
        }
        if try params.single("error") != nil {
            let key = try params.single("error_message_key") ?? ""
            return try await page(holder, l, error: text(key, providerId, l), status: .badRequest)
        }
        guard let code = try params.single("code"), let state = try params.single("state") else {
            return try await page(holder, l, error: text("federation.expired", providerId, l), status: .badRequest)
        }
        // The start needed a recent sign-in, and the code is single-use, short-lived and bound to this account: a
        // provider that took a while does not send the person round again.
        do {
            _ = try await changes.complete(
                providerId: providerId, code: code, state: state, user: holder.user, clientId: AccountClient.id, locale: l, origin: origin)
        } catch let failure as FederationFailure {
            let status: HTTPResponse.Status =
                switch failure {
                case .linkedElsewhere, .alreadyLinked: .conflict
                default: .badRequest
                }
            return try await page(holder, l, error: text(failure.messageKey, providerId, l), status: status)
        }
        return AccountPages.back(to: .linked, holder, done: "linked:" + providerId)
    }

    /// A federation refusal in the person's words: one of the federation's own messages, otherwise the page's.
    private func text(_ key: String, _ providerId: String, _ l: SupportedLocale) -> String {
        guard Self.refusals.contains(key) else { return AccountPages.t("account.linked.failed", l) }
        return AccountPages.t(key, l, ["provider": changes.name(of: providerId)])
    }

    private static let refusals: Set<String> = [
        "federation.failed", "federation.denied", "federation.unavailable", "federation.linked_elsewhere", "federation.already_linked",
        "federation.expired"
    ]

    /// The notice of a sealed `done` (`linked:<id>`, `unlinked:<id>`).
    private func notice(_ done: String, _ l: SupportedLocale) -> String? {
        let parts = done.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        switch parts[0] {
        case "linked": return AccountPages.t("account.linked.linked_notice", l, ["provider": changes.name(of: parts[1])])
        case "unlinked": return AccountPages.t("account.linked.unlinked_notice", l, ["provider": changes.name(of: parts[1])])
        default: return nil
        }
    }

    // MARK: - The page

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, notice: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let links = try await changes.links(of: holder.user.id)
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error)
        body += """
            <p>\(AccountPages.e("account.linked.intro", l))</p>\(AccountPages.freshBanner(holder, section: .linked, l, reason: "account.linked.fresh"))
            """
        if links.isEmpty {
            body += "<p id=\"no-links\">\(AccountPages.e("account.linked.none", l))</p>"
        } else {
            let rows = links.map { link -> String in
                let unlink = AccountPages.button(
                    "/account/linked/unlink", label: AccountPages.t("account.linked.unlink", l), holder: holder, style: "secondary",
                    fields: ["provider": link.provider], accessibleLabel: AccountPages.t("account.linked.unlink_named", l, ["provider": link.name]),
                    needsFreshSignIn: true)
                return """
                    <tr><th scope="row"><bdi>\(HTML.escape(link.name))</bdi></th><td class="time">\(AccountPages.date(link.linkedAt, l))</td>\
                    <td>\(unlink)</td></tr>
                    """
            }.joined()
            body += """
                <div class="table"><table id="links"><caption>\(AccountPages.e("account.nav.linked", l))</caption><thead><tr>\
                <th scope="col">\(AccountPages.e("account.linked.provider", l))</th><th scope="col">\(AccountPages.e("account.linked.since", l))</th>\
                <th scope="col"><span class="skip">\(AccountPages.e("account.linked.unlink", l))</span></th></tr></thead>\
                <tbody>\(rows)</tbody></table></div>
                """
        }
        let available = changes.available(for: try await client(), besides: links)
        if !available.isEmpty {
            let buttons = available.map { provider in
                AccountPages.button(
                    "/account/linked/link", label: AccountPages.t("account.linked.link_named", l, ["provider": provider.name]), holder: holder,
                    fields: ["provider": provider.id], needsFreshSignIn: true)
            }.joined()
            body += """
                <section aria-labelledby="link-heading" id="link-providers"><h2 id="link-heading">\(AccountPages.e("account.linked.add_heading", l))</h2>\
                <div class="actions">\(buttons)</div></section>
                """
        }
        return AccountPages.page(.linked, holder, l, body: body, status: status)
    }
}
