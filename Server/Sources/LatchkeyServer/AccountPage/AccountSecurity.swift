import Foundation
import Hummingbird

/// The account page's password and second sign-in steps: changing the password with the current one
/// (`ProfileChanges`), which signs the account out everywhere else; adding an authenticator app (a QR code and the key,
/// confirmed by its first code) or emailed codes, creating recovery codes (shown once) and removing a step
/// (`SecondFactorChanges`, the rules of `/users/me/factors`). Every change of a sign-in step needs a recent sign-in.
struct AccountSecurity: Sendable {
    let changes: ProfileChanges
    let factors: SecondFactorChanges

    /// What a change did, as the notice the page shows after it (`AccountPages.back(to:_:done:)`).
    private static let notices = [
        "password": "account.password.changed", "totp": "account.totp.added", "email": "account.factors.email_added",
        "removed": "account.factors.removed"
    ]

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("security") { request, context in
            try await account.serve(request, context, section: .security) { holder, params, _ in
                let l = request.locale()
                return try await self.page(
                    holder, l, notice: try AccountPages.done(params, holder).flatMap { Self.notices[$0] }.map { AccountPages.t($0, l) })
            }
        }
        group.post("security/password") { request, context in
            try await account.serve(request, context, form: true, section: .security) { holder, params, origin in
                let l = request.locale()
                guard let current = try params.single("current_password"), !current.isEmpty, let new = try params.single("new_password"), !new.isEmpty
                else { return try await self.page(holder, l, error: AccountPages.t("account.password.missing", l), status: .badRequest) }
                do {
                    try await changes.changePassword(current: current, new: new, of: holder.user, caller: holder.caller, locale: l, origin: origin)
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
        group.post("security/totp") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .security) { holder, _, _ in
                self.authenticatorSetUp(try factors.startTOTP(for: holder.user, caller: holder.caller), holder, request.locale())
            }
        }
        group.post("security/totp/verify") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .security) { holder, params, origin in
                try await self.confirmAuthenticator(params, holder, request.locale(), origin: origin)
            }
        }
        group.post("security/email-codes") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .security) { holder, _, origin in
                let l = request.locale()
                do { _ = try await factors.enrollEmail(holder.user, caller: holder.caller, locale: l, origin: origin) } catch let error as APIError {
                    return try await self.page(holder, l, error: failureText(error, l), status: error.status)
                }
                return AccountPages.back(to: .security, holder, done: "email")
            }
        }
        group.post("security/recovery-codes") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .security) { holder, _, origin in
                let l = request.locale()
                let codes: [String]
                do { codes = try await factors.generateRecoveryCodes(holder.user, caller: holder.caller, locale: l, origin: origin).codes } catch let
                    error as APIError
                { return try await self.page(holder, l, error: failureText(error, l), status: error.status) }
                return self.recoveryCodes(codes, holder, l)
            }
        }
        group.post("security/remove") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .security) { holder, params, origin in
                try await self.remove(params, holder, request.locale(), origin: origin)
            }
        }
    }

    // MARK: - Authenticator app

    /// The set-up of an authenticator app: the QR code of its `otpauth://` URI, the key to type by hand, a link for an
    /// app on this device, and the field for the first code. Shown once per secret: the answer to a POST, never stored
    /// in a cache (`Responses.html` says `no-store`).
    private func authenticatorSetUp(
        _ started: SecondFactorChanges.StartedTOTP, _ holder: AccountHolder, _ l: SupportedLocale, error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        // A URI too long for a QR code (a very long username) still has its key and link below.
        let qr = (try? QRCode(text: started.uri)).map { "<div class=\"qr\">\($0.svg(label: AccountPages.t("account.totp.qr", l)))</div>" } ?? ""
        let key = Self.grouped(started.secret)
        let body = """
            \(OwnApplicationPage.error(error))
            <p>\(AccountPages.e("account.totp.scan", l))</p>\(qr)
            <p>\(AccountPages.e("account.totp.key", l))</p>
            <p class="key" dir="ltr" id="totp-key">\(HTML.escape(key))</p>
            <p><a href="\(HTML.escape(started.uri))">\(AccountPages.e("account.totp.open", l))</a></p>
            <form method="post" action="/account/security/totp/verify">\(AccountPages.csrfField(holder))
            <input type="hidden" name="enrollment" value="\(HTML.escape(started.enrollment))">
            <label for="totp-code">\(AccountPages.e("account.totp.code", l))</label>
            <input type="text" id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" dir="ltr" required\(error == nil ? "" : " aria-describedby=\"form-error\"")>
            <p class="hint">\(AccountPages.e("account.totp.expires", l, ["time": AccountPages.dateText(started.expiresAt, l)]))</p>
            <div class="actions"><button type="submit">\(AccountPages.e("account.totp.confirm", l))</button>
            <a href="\(AccountPages.Section.security.path)">\(AccountPages.e("account.cancel", l))</a></div></form>
            """
        return Responses.html(
            AccountPages.layout(title: AccountPages.t("account.totp.title", l), body: body, section: .security, holder: holder, locale: l),
            status: status, headers: [.contentLanguage: l.tag])
    }

    /// The key in groups of four, as authenticator apps accept it typed (they ignore the spaces).
    static func grouped(_ key: String) -> String {
        stride(from: 0, to: key.count, by: 4).map { start in
            String(key.dropFirst(start).prefix(4))
        }.joined(separator: " ")
    }

    private func confirmAuthenticator(_ params: Parameters, _ holder: AccountHolder, _ l: SupportedLocale, origin: AuditOrigin) async throws
        -> Response
    {
        let enrollment = try params.single("enrollment") ?? ""
        // A set-up that expired (or was tampered with) starts again from the security page; an empty code is not a try.
        guard let started = try await factors.pendingTOTP(enrollment, of: holder.user) else {
            return try await page(holder, l, error: AccountPages.t("error.userservice.mfa_enrollment_expired", l), status: .badRequest)
        }
        let code = (try params.single("code") ?? "").trimmingCharacters(in: .whitespaces)
        guard !code.isEmpty else {
            return authenticatorSetUp(started, holder, l, error: AccountPages.t("error.userservice.mfa_code_invalid", l), status: .badRequest)
        }
        do {
            _ = try await factors.confirmTOTP(enrollment: enrollment, code: code, of: holder.user, caller: holder.caller, locale: l, origin: origin)
        } catch let error as APIError {
            // A wrong code keeps the same set-up (the app already holds its key); a spent one starts again.
            if error.code == SecondFactorChanges.Errors.enrollmentExpired.code {
                return try await page(holder, l, error: failureText(error, l), status: error.status)
            }
            return authenticatorSetUp(started, holder, l, error: failureText(error, l), status: error.status)
        }
        return AccountPages.back(to: .security, holder, done: "totp")
    }

    // MARK: - Recovery codes

    /// The new recovery codes, shown this once, with the way back to the security page.
    private func recoveryCodes(_ codes: [String], _ holder: AccountHolder, _ l: SupportedLocale) -> Response {
        let items = codes.map { "<li><bdi>\(HTML.escape($0))</bdi></li>" }.joined()
        let body = """
            <div class="secret"><p>\(AccountPages.e("account.recovery.shown_once", l))</p>
            <ol class="codes" dir="ltr" id="recovery-codes">\(items)</ol></div>
            <p><a href="\(HTML.escape(AccountPages.Section.security.path))">\(AccountPages.e("account.recovery.saved", l))</a></p>
            """
        return Responses.html(
            AccountPages.layout(title: AccountPages.t("account.recovery.title", l), body: body, section: .security, holder: holder, locale: l),
            headers: [.contentLanguage: l.tag])
    }

    // MARK: - Remove

    private func remove(_ params: Parameters, _ holder: AccountHolder, _ l: SupportedLocale, origin: AuditOrigin) async throws -> Response {
        let kind = try params.single("kind") ?? ""
        do {
            try await factors.remove(kind, of: holder.user, caller: holder.caller, locale: l, origin: origin)
        } catch let error as APIError {
            // Say which applications need the step, in the person's words: the API's message speaks of "this app".
            guard error.code == SecondFactorChanges.Errors.lastFactor.code else {
                return try await page(holder, l, error: failureText(error, l), status: error.status)
            }
            // Read again for their names: should the sign-in that required it have ended since, the general words.
            let names = try await factors.applicationsRequiringMFA(holder.user, caller: holder.caller).map(\.name)
            let text =
                names.isEmpty
                ? failureText(error, l)
                : AccountPages.t("account.factors.last", l, ["apps": names.formatted(.list(type: .and).locale(Locale(identifier: l.tag)))])
            return try await page(holder, l, error: text, status: error.status)
        }
        return AccountPages.back(to: .security, holder, done: "removed")
    }

    // MARK: - The page

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, notice: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error)
        body += passwordSection(holder, l)
        body += try await factorsSection(holder, l)
        return AccountPages.page(.security, holder, l, body: body, status: status)
    }

    private func passwordSection(_ holder: AccountHolder, _ l: SupportedLocale) -> String {
        let user = holder.user
        var body =
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
        return body + "</section>"
    }

    /// The second sign-in steps: each one with its date and "Remove", the ways to add one, then the recovery codes.
    private func factorsSection(_ holder: AccountHolder, _ l: SupportedLocale) async throws -> String {
        let user = holder.user
        let enrolled = try await factors.factors(of: user)
        var body = """
            <section aria-labelledby="factors-heading"><h2 id="factors-heading">\(AccountPages.e("account.factors.heading", l))</h2>
            <p>\(AccountPages.e("account.factors.intro", l))</p>\(AccountPages.freshBanner(holder, section: .security, l, reason: "account.factors.fresh"))
            """
        if enrolled.isEmpty {
            body += "<p id=\"no-factors\">\(AccountPages.e("account.factors.none", l))</p>"
        } else {
            let rows = enrolled.map { factor -> String in
                let kind = SecondFactorChanges.FactorKind(factor.kind)
                let name = AccountPages.t("account.factors.\(kind.rawValue)", l)
                let unusable =
                    SecondFactorChanges.usable(factor, of: user) ? "" : "<p class=\"hint\">\(AccountPages.e("account.factors.email_unusable", l))</p>"
                let remove = AccountPages.button(
                    "/account/security/remove", label: AccountPages.t("account.factors.remove", l), holder: holder, style: "secondary",
                    fields: ["kind": kind.rawValue], accessibleLabel: AccountPages.t("account.factors.remove_named", l, ["factor": name]),
                    needsFreshSignIn: true)
                return
                    "<tr><th scope=\"row\">\(HTML.escape(name))\(unusable)</th><td class=\"time\">\(AccountPages.date(factor.createdAt, l))</td><td>\(remove)</td></tr>"
            }.joined()
            body += """
                <div class="table"><table id="factors" aria-labelledby="factors-heading"><thead><tr><th scope="col">\(AccountPages.e("account.factors.kind", l))</th>\
                <th scope="col">\(AccountPages.e("account.factors.added", l))</th>\
                <th scope="col"><span class="skip">\(AccountPages.e("account.factors.remove", l))</span></th></tr></thead><tbody>\(rows)</tbody></table></div>
                """
        }
        let hasTOTP = enrolled.contains { $0.kind == .totp }
        var actions = AccountPages.button(
            "/account/security/totp", label: AccountPages.t(hasTOTP ? "account.totp.replace" : "account.totp.add", l), holder: holder,
            needsFreshSignIn: true)
        if !enrolled.contains(where: { $0.kind == .emailOTP }), Accounts.verifiedEmail(of: user) != nil {
            actions += AccountPages.button(
                "/account/security/email-codes", label: AccountPages.t("account.factors.email_add", l), holder: holder, style: "secondary",
                needsFreshSignIn: true)
        }
        body += "<div class=\"actions\">\(actions)</div></section>"
        return body + (try await recoverySection(holder, usable: enrolled.contains { SecondFactorChanges.usable($0, of: user) }, l))
    }

    private func recoverySection(_ holder: AccountHolder, usable: Bool, _ l: SupportedLocale) async throws -> String {
        var body = """
            <section aria-labelledby="recovery-heading"><h2 id="recovery-heading">\(AccountPages.e("account.recovery.heading", l))</h2>
            <p>\(AccountPages.e("account.recovery.intro", l))</p>
            """
        let summary = try await factors.store.recoveryCodes(userId: holder.user.id)
        if let summary {
            body +=
                "<p id=\"recovery-summary\">\(AccountPages.e("account.recovery.left", l, ["remaining": String(summary.remaining), "total": String(summary.total), "date": AccountPages.dateText(summary.createdAt, l)]))</p>"
        }
        if usable {
            body += AccountPages.button(
                "/account/security/recovery-codes", label: AccountPages.t(summary == nil ? "account.recovery.create" : "account.recovery.replace", l),
                holder: holder, style: "secondary", needsFreshSignIn: true)
            if summary != nil { body += "<p class=\"hint\">\(AccountPages.e("account.recovery.replace_hint", l))</p>" }
        } else {
            body += "<p>\(AccountPages.e("error.userservice.mfa_recovery_needs_factor", l))</p>"
        }
        return body + "</section>"
    }
}
