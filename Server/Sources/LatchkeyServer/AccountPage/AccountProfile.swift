import Foundation
import Hummingbird

/// The account page's profile: the account's attributes (`UserSchema`, those people may change themselves) in one
/// form, and the code that confirms a new email address. Changing the username or the email needs a recent sign-in
/// (`ProfileChanges`); the other attributes do not.
struct AccountProfile: Sendable {
    let store: any Store
    let changes: ProfileChanges

    private var schema: UserSchema { changes.accounts.userSchema }

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("profile") { request, context in
            try await account.serve(request, context, section: .profile) { holder, params, _ in
                let l = request.locale()
                let notice: String? =
                    switch try AccountPages.done(params, holder) {
                    case "saved": AccountPages.t("account.profile.saved", l)
                    case "email": AccountPages.t("account.email.confirmed", l, ["email": holder.user.claims["email"] ?? ""])
                    default: nil
                    }
                return try await self.page(holder, l, notice: notice)
            }
        }
        group.post("profile") { request, context in
            try await account.serve(request, context, form: true, section: .profile) { holder, params, origin in
                try await self.save(params, holder, request.locale(), origin: origin)
            }
        }
        group.post("profile/email/verify") { request, context in
            try await account.serve(request, context, form: true, section: .profile) { holder, params, origin in
                let l = request.locale()
                // An empty code is not a try: it spends none of the five.
                let code = (try params.single("code") ?? "").trimmingCharacters(in: .whitespaces)
                guard !code.isEmpty else {
                    return try await self.page(holder, l, error: AccountPages.t("flows.executor.errors.invalid_otp", l), status: .badRequest)
                }
                do {
                    _ = try await changes.confirmEmailChange(code: code, of: holder.user, origin: origin)
                } catch let error as APIError {
                    return try await self.page(holder, l, error: failureText(error, l), status: error.status)
                }
                return AccountPages.back(to: .profile, holder, done: "email")
            }
        }
    }

    /// The attributes a person edits here: those they may change, as text (a boolean claim is not typed by people).
    private var editable: [UserSchema.Attribute] { schema.attributes.filter { $0.mutable && $0.kind != .boolean } }

    private func save(
        _ params: Parameters, _ holder: AccountHolder, _ l: SupportedLocale, origin: AuditOrigin
    ) async throws -> Response {
        var values: [String: String?] = [:]
        for attribute in editable {
            guard let value = try params.single(attribute.name) else { continue }
            values[attribute.name] = value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? .some(nil) : value
        }
        do {
            // A new address gets a code, within the account's hourly email budget (`Accounts.startEmailChange`).
            _ = try await changes.replaceAttributes(values, of: holder.user, caller: holder.caller, locale: l, origin: origin)
        } catch is RecentAuthenticationRequired {
            return AccountPages.stale(holder, section: .profile, l)
        } catch let error as APIError {
            let text = error.code == SelfServiceErrors.staleUpdate.code ? AccountPages.t("account.profile.stale", l) : failureText(error, l)
            return try await page(holder, l, values: values, error: text, status: error.status)
        }
        return AccountPages.back(to: .profile, holder, done: "saved")
    }

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, values: [String: String?] = [:], notice: String? = nil, error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = holder.user
        let fields = editable.map { (attribute) -> String in
            let current =
                values[attribute.name].map { $0 ?? "" } ?? (attribute.name == "username" ? user.username : user.claims[attribute.name] ?? "")
            let labelKey = "user:attributes.\(attribute.name).label"
            let label = MessageCatalog.text(labelKey, locale: .en) == attribute.displayName ? AccountPages.t(labelKey, l) : attribute.displayName
            let type =
                switch attribute.kind {
                case .email: "email"
                case .phone: "tel"
                case .url: "url"
                default: "text"
                }
            let autocomplete =
                switch attribute.name {
                case "username": "username"
                case "email": "email"
                case "given_name": "given-name"
                case "family_name": "family-name"
                case "name": "name"
                case "phone_number": "tel"
                case "picture": "photo"
                case "locale": "language"
                default: "off"
                }
            var hint = ""
            let freshLink =
                holder.isFresh
                ? ""
                : " <a href=\"\(HTML.escape(AccountPages.signInPath(fresh: true, returnPath: AccountPages.Section.profile.path)))\">\(AccountPages.e("account.fresh.action", l))</a>"
            if attribute.name == "email" {
                let verified = user.claims["email_verified"] == "true"
                hint =
                    "<p class=\"hint\" id=\"email-hint\"><strong>\(AccountPages.e(verified ? "account.profile.verified" : "account.profile.unverified", l))</strong><br>\(AccountPages.e("account.profile.email_hint", l))\(freshLink)</p>"
            }
            let ltr = ["email", "phone_number", "picture", "username"].contains(attribute.name) ? " dir=\"ltr\"" : ""
            return """
                <label for="attr-\(HTML.escape(attribute.name))">\(HTML.escape(label))</label>
                <input type="\(type)" id="attr-\(HTML.escape(attribute.name))" name="\(HTML.escape(attribute.name))" value="\(HTML.escape(current))" maxlength="\(attribute.maxLength)" autocomplete="\(autocomplete)"\(ltr)\(attribute.required ? " required" : "")\(hint.isEmpty ? "" : " aria-describedby=\"email-hint\"")>
                \(hint)
                """
        }.joined()
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error)
        body += "<p>\(AccountPages.e("account.profile.intro", l))</p>"
        if let pending = try await store.emailChange(userId: user.id), pending.expiresAt > changes.clock.now {
            body += """
                <section aria-labelledby="pending-heading"><h2 id="pending-heading">\(AccountPages.e("account.email.confirm", l))</h2>
                <p>\(AccountPages.e("account.email.pending", l, ["email": pending.email]))</p>
                <form method="post" action="/account/profile/email/verify">\(AccountPages.csrfField(holder))
                <label for="email-code">\(AccountPages.e("account.email.code", l))</label>
                <input type="text" id="email-code" name="code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" dir="ltr" required>
                <div class="actions"><button type="submit">\(AccountPages.e("account.email.confirm", l))</button></div></form></section>
                """
        }
        body += """
            <form method="post" action="/account/profile">\(AccountPages.csrfField(holder))
            \(fields)
            <div class="actions"><button type="submit">\(AccountPages.e("account.profile.save", l))</button></div></form>
            """
        return AccountPages.page(.profile, holder, l, body: body, status: status)
    }
}

/// The person's words for a refusal of the account's rules: each field's message in their language when there are
/// some (the API's summary, "Schema validation failed", is a developer's), else the refusal's message.
func failureText(_ error: APIError, _ l: SupportedLocale) -> String {
    let localized = error.localized(l)
    let fields = localized.fieldErrors.map(\.message)
    return fields.isEmpty ? localized.userMessage : fields.joined(separator: " ")
}
