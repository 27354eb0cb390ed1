import Foundation
import Hummingbird

/// The account page's password and security: changing the password with the current one (`ProfileChanges`), which
/// signs the account out everywhere else.
struct AccountSecurity: Sendable {
    let changes: ProfileChanges

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("security") { request, context in
            try await account.serve(request, context, section: .security) { holder, params, _ in
                let l = request.locale()
                return try await self.page(
                    holder, l, notice: try AccountPages.done(params, holder) == "password" ? AccountPages.t("account.password.changed", l) : nil)
            }
        }
        group.post("security/password") { request, context in
            try await account.serve(request, context, form: true, section: .security) { holder, params, origin in
                let l = request.locale()
                guard let current = try params.single("current_password"), !current.isEmpty, let new = try params.single("new_password"), !new.isEmpty
                else { return try await self.page(holder, l, error: AccountPages.t("account.password.missing", l), status: .badRequest) }
                do {
                    try await changes.changePassword(current: current, new: new, of: holder.user, caller: holder.caller, origin: origin)
                } catch let error as APIError {
                    // The API's words ("Invalid credentials") are a developer's; the page says which password.
                    let text =
                        error.messageKey == "error.userservice.invalid_current_password"
                        ? AccountPages.t("account.password.wrong", l) : failureText(error, l)
                    return try await self.page(holder, l, error: text, status: error.status)
                }
                return AccountPages.back(to: .security, holder, done: "password")
            }
        }
    }

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, notice: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = holder.user
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error)
        body +=
            "<section aria-labelledby=\"password-heading\"><h2 id=\"password-heading\">\(AccountPages.e("signin:forms.credentials.password.label", l))</h2>"
        if user.passwordHash == PasswordHasher.noPassword {
            body += "<p>\(AccountPages.e("account.password.none", l))</p>"
        } else {
            // The username rides along (hidden from view) so a password manager files the new password under it.
            body += """
                <p>\(AccountPages.e("account.password.intro", l))</p>
                <form method="post" action="/account/security/password">\(AccountPages.csrfField(holder))
                <input type="text" name="username" value="\(HTML.escape(user.username))" autocomplete="username" hidden>
                <label for="current-password">\(AccountPages.e("account.password.current", l))</label>
                <input type="password" id="current-password" name="current_password" autocomplete="current-password" required>
                <label for="new-password">\(AccountPages.e("account.password.new", l))</label>
                <input type="password" id="new-password" name="new_password" autocomplete="new-password" required>
                <div class="actions"><button type="submit">\(AccountPages.e("account.password.change", l))</button></div></form>
                """
        }
        body += "</section>"
        return AccountPages.page(.security, holder, l, body: body, status: status)
    }
}
