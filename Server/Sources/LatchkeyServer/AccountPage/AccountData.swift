import Foundation
import Hummingbird

/// The account page's "Your data": the download of everything the server holds about the account
/// (`AccountExport`), and deleting the account (`AccountDeletions`: at once, or after `account_deletion_grace_days`
/// during which signing in again keeps it). Both need a recent sign-in ("Confirm it's you" until then): the download
/// holds the account's history, and a deletion cannot be undone.
struct AccountData: Sendable {
    let export: AccountExport
    let deletions: AccountDeletions
    let audit: AuditTrail

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("data") { request, context in
            try await account.serve(request, context, section: .data) { holder, _, _ in self.page(holder, request.locale()) }
        }
        group.post("data/export") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .data) { holder, _, origin in
                try await export.attachment(for: holder.user, caller: holder.caller, audit: audit, origin: origin)
            }
        }
        group.post("data/delete") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .data) { holder, params, origin in
                let l = request.locale()
                guard try params.single("confirm") == "1" else {
                    return self.page(holder, l, error: AccountPages.t("account.delete.unconfirmed", l), status: .badRequest)
                }
                let outcome: AccountDeletions.Outcome
                do { outcome = try await deletions.request(holder.user, locale: l, origin: origin) } catch let error as APIError {
                    return self.page(holder, l, error: failureText(error, l), status: error.status)
                }
                // Every session has ended and every token is revoked, the page's own included.
                let (title, text) =
                    switch outcome {
                    case .deleted: (AccountPages.t("account.deleted.title", l), AccountPages.t("account.deleted.body", l))
                    case .scheduled(let due):
                        (
                            AccountPages.t("account.scheduled.title", l),
                            AccountPages.t("account.scheduled.body", l, ["date": AccountPages.day(due, l)])
                        )
                    }
                return AccountPages.signedOut(title: title, text: text, clearing: account.access.signIn.clearedCookie, l)
            }
        }
    }

    private func page(_ holder: AccountHolder, _ l: SupportedLocale, error: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        let grace =
            deletions.dueDate(requestedAt: deletions.clock.now).map {
                "<p>\(AccountPages.e("account.delete.grace", l, ["date": AccountPages.day($0, l)]))</p>"
            } ?? ""
        let body = """
            \(OwnApplicationPage.error(error))\(AccountPages.freshBanner(holder, section: .data, l))
            <section aria-labelledby="export-heading"><h2 id="export-heading">\(AccountPages.e("account.data.export.heading", l))</h2>
            <p>\(AccountPages.e("account.data.export.body", l))</p>
            <form method="post" action="/account/data/export">\(AccountPages.csrfField(holder))\(AccountPages.freshFieldset(holder, "<button type=\"submit\">\(AccountPages.e("account.data.export.button", l))</button>"))</form></section>
            <section aria-labelledby="delete-heading"><h2 id="delete-heading">\(AccountPages.e("account.delete.heading", l))</h2>
            <p>\(AccountPages.e("account.delete.body", l))</p>\(grace)
            <form method="post" action="/account/data/delete">\(AccountPages.csrfField(holder))\(AccountPages.freshFieldset(holder, """
            <p><input type="checkbox" id="delete-confirm" name="confirm" value="1" required> <label class="inline" for="delete-confirm">\(AccountPages.e("account.delete.confirm", l))</label></p>
            <button class="danger" type="submit">\(AccountPages.e("account.delete.button", l))</button>
            """))</form></section>
            """
        return AccountPages.page(.data, holder, l, body: body, status: status)
    }
}
