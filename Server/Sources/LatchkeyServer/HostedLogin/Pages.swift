/// The hosted pages: sign-in form, sign-out confirmation, messages. Plain HTML with inline CSS, no JavaScript.
/// Every text comes from `MessageCatalog` in the page's language; `<html lang dir>` follow it, and the CSS uses
/// logical properties only (`margin-block`, `text-align: start`), so right-to-left pages (Arabic) mirror correctly.
enum Pages {
    private static let style = """
        :root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
        body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: Canvas; color: CanvasText; }
        main { width: min(24rem, 92vw); padding: 2rem; border: 1px solid #8884; border-radius: 12px; }
        main { text-align: start; }
        h1 { font-size: 1.4rem; margin-block: 0 .25rem; margin-inline: 0; }
        p.sub { margin-block: 0 1.5rem; margin-inline: 0; opacity: .8; }
        img.app-logo { display: block; border-radius: 12px; object-fit: contain; }
        p.app-links { margin-block: 1.5rem 0; font-size: .875rem; opacity: .8; }
        label { display: block; font-weight: 600; margin-block: 1rem .35rem; margin-inline: 0; }
        input { width: 100%; box-sizing: border-box; padding: .65rem .75rem; font-size: 1rem; border: 1px solid #888; border-radius: 8px; }
        input:focus, button:focus { outline: 3px solid #2563eb; outline-offset: 2px; }
        button { margin-block-start: 1.5rem; width: 100%; padding: .75rem; font-size: 1rem; font-weight: 600; color: #fff;
                 background: #1d4ed8; border: 0; border-radius: 8px; cursor: pointer; }
        button.secondary { margin-block-start: 0; color: CanvasText; background: transparent; border: 1px solid #888; }
        button#resend { margin-block-start: .75rem; }
        button.idp + button.idp { margin-block-start: .5rem; }
        p.or { text-align: center; margin: 1rem 0; opacity: .7; }
        .info { margin-block: 1rem 0; margin-inline: 0; padding: .75rem; border-radius: 8px; border: 1px solid #93c5fd; }
        .error { margin-block: 1rem 0; margin-inline: 0; padding: .75rem; border-radius: 8px; background: #fee2e2; color: #7f1d1d; border: 1px solid #fca5a5; }
        """

    static func layout(title: String, body: String, locale: SupportedLocale = .en) -> String {
        """
        <!doctype html>
        <html lang="\(locale.tag)" dir="\(locale.direction)">
        <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(HTML.escape(title)) · Latchkey</title><style>\(style)</style></head>
        <body><main>
        \(body)
        </main></body></html>
        """
    }

    struct LoginForm {
        var requestId: String
        var csrf: String
        var clientName: String
        var username: String?
        var error: String?
        var locale: SupportedLocale = .en
        /// The application accepts passkeys from this server's own origin: offer "Sign in with a passkey"
        /// (`PasskeyScript`), which posts the resulting `tkn` with this form's request id and CSRF token.
        var passkeyClientId: String? = nil
        /// The application's other identity providers, as (id, name): one "Continue with …" button each.
        var providers: [(id: String, name: String)] = []
        /// What the application registered to show beside its name.
        var display = ApplicationDisplay(nil)
    }

    /// What an application registered to show beside its name on the hosted pages (OpenID Connect Registration
    /// `logo_uri`, `client_uri`, `policy_uri`, `tos_uri`): its logo, home page, privacy policy and terms. Loaded or
    /// followed by the person's browser, never fetched by the server.
    struct ApplicationDisplay {
        var logoUri: String?
        var clientUri: String?
        var policyUri: String?
        var tosUri: String?

        init(_ client: ClientConfiguration?) {
            logoUri = client?.logoUri; clientUri = client?.clientUri; policyUri = client?.policyUri; tosUri = client?.tosUri
        }

        /// The logo's origin, the one image source the page's CSP adds.
        var imageSources: [String] { logoUri.flatMap(CSPSource.origin(of:)).map { [$0] } ?? [] }
    }

    /// A catalog text for the page (HTML-escaped by the callers).
    static func t(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String {
        MessageCatalog.text(key, locale: locale, arguments: arguments, default: key)
    }

    static func login(_ form: LoginForm) -> String {
        let errorBlock =
            form.error.map {
                "<p class=\"error\" id=\"form-error\" role=\"alert\">\(HTML.escape($0))</p>"
            } ?? ""
        let described = form.error == nil ? "" : " aria-describedby=\"form-error\" aria-invalid=\"true\""
        let l = form.locale
        // The client name is inserted after escaping the sentence around it, so it can be wrapped in <strong>.
        let marker = "\u{1}client\u{1}"
        let subtitle = HTML.escape(t("page.login.subtitle", l, ["client": marker]))
            .replacingOccurrences(of: marker, with: "<strong>\(HTML.escape(form.clientName))</strong>")
        return layout(
            title: t("page.login.title", l),
            body: """
                \(applicationLogo(form.display))
                <h1>\(HTML.escape(t("page.login.title", l)))</h1>
                <p class="sub">\(subtitle)</p>
                \(errorBlock)
                <form method="post" action="/login" novalidate>
                  <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
                  <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
                  <label for="username">\(HTML.escape(t("page.login.username", l)))</label>
                  <input id="username" name="username" type="text" autocomplete="\(form.passkeyClientId == nil ? "username" : "username webauthn")" autocapitalize="none" spellcheck="false"
                         required value="\(HTML.escape(form.username ?? ""))"\(described)\(form.username == nil ? " autofocus" : "")>
                  <label for="password">\(HTML.escape(t("page.login.password", l)))</label>
                  <input id="password" name="password" type="password" autocomplete="current-password" required\(described)\(form.username == nil ? "" : " autofocus")>
                  <button type="submit" id="submit">\(HTML.escape(t("page.login.submit", l)))</button>
                </form>
                \(passkeyBlock(form))
                \(providerBlock(form))
                \(applicationLinks(form.display, form.locale))
                """, locale: l)
    }

    /// The application's logo (decorative: its name is in the sentence below), linked to its home page when it has one.
    static func applicationLogo(_ display: ApplicationDisplay) -> String {
        guard let logo = display.logoUri else { return "" }
        let image = "<img class=\"app-logo\" src=\"\(HTML.escape(logo))\" alt=\"\" width=\"64\" height=\"64\" referrerpolicy=\"no-referrer\">"
        guard let home = display.clientUri else { return "<p>\(image)</p>" }
        return "<p><a href=\"\(HTML.escape(home))\" rel=\"noopener noreferrer\" target=\"_blank\">\(image)</a></p>"
    }

    /// Links to the application's privacy policy and terms, opened beside the sign-in.
    static func applicationLinks(_ display: ApplicationDisplay, _ locale: SupportedLocale) -> String {
        let links = [("page.login.policy", display.policyUri), ("page.login.terms", display.tosUri)].compactMap { key, uri in
            uri.map { "<a href=\"\(HTML.escape($0))\" rel=\"noopener noreferrer\" target=\"_blank\">\(HTML.escape(t(key, locale)))</a>" }
        }
        guard !links.isEmpty else { return "" }
        return "<p class=\"app-links\">" + links.joined(separator: " · ") + "</p>"
    }

    struct SecondFactorForm {
        var requestId: String
        var csrf: String
        var clientName: String
        var kind: SecondFactor
        var error: String?
        /// A neutral notice (a new code was sent).
        var info: String?
        var locale: SupportedLocale = .en
    }

    /// The second step of a hosted sign-in: the code from the authenticator app or the email. No script; the
    /// "send a new code" button (email only) is a second submit button of the same form. A recovery code goes in a form
    /// of its own, folded away (`<details>`, no script), whose field takes letters.
    static func secondFactor(_ form: SecondFactorForm) -> String {
        let l = form.locale
        let errorBlock = form.error.map { "<p class=\"error\" id=\"form-error\" role=\"alert\">\(HTML.escape($0))</p>" } ?? ""
        let infoBlock = form.info.map { "<p class=\"info\" id=\"form-info\" role=\"status\">\(HTML.escape($0))</p>" } ?? ""
        let described = form.error == nil ? " aria-describedby=\"mfa-hint\"" : " aria-describedby=\"mfa-hint form-error\" aria-invalid=\"true\""
        let hint = t(form.kind == .totp ? "page.mfa.totp" : "page.mfa.email", l)
        let resend =
            form.kind == .email
            ? "<button type=\"submit\" id=\"resend\" name=\"resend\" value=\"1\" class=\"secondary\" formnovalidate>\(HTML.escape(t("page.mfa.resend", l)))</button>"
            : ""
        let marker = "\u{1}client\u{1}"
        let subtitle = HTML.escape(t("page.login.subtitle", l, ["client": marker]))
            .replacingOccurrences(of: marker, with: "<strong>\(HTML.escape(form.clientName))</strong>")
        // The code is digits, read left to right in every language (dir="ltr" on the field only).
        return layout(
            title: t("page.mfa.title", l),
            body: """
                <h1>\(HTML.escape(t("page.mfa.title", l)))</h1>
                <p class="sub">\(subtitle)</p>
                <p id="mfa-hint">\(HTML.escape(hint))</p>
                \(infoBlock)
                \(errorBlock)
                <form method="post" action="/login" novalidate>
                  <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
                  <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
                  <label for="otp">\(HTML.escape(t("page.mfa.code", l)))</label>
                  <input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]*" maxlength="\(SecondFactor.codeLength)"
                         dir="ltr" required autofocus\(described)>
                  <button type="submit" id="verify">\(HTML.escape(t("page.mfa.submit", l)))</button>
                  \(resend)
                </form>
                <details id="recovery">
                  <summary>\(HTML.escape(t("page.mfa.use_recovery_code", l)))</summary>
                  <form method="post" action="/login" novalidate>
                    <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
                    <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
                    <label for="recovery-code">\(HTML.escape(t("page.mfa.recovery_code", l)))</label>
                    <input id="recovery-code" name="otp" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false"
                           maxlength="\(LongCode.length + 4)" dir="ltr" required>
                    <button type="submit" id="verify-recovery">\(HTML.escape(t("page.mfa.submit", l)))</button>
                  </form>
                </details>
                """, locale: l)
    }

    /// "Continue with …" for each identity provider: a form of its own (the same request and CSRF token), so choosing a
    /// provider sends no typed password along.
    private static func providerBlock(_ form: LoginForm) -> String {
        guard !form.providers.isEmpty else { return "" }
        let l = form.locale
        let buttons = form.providers.map { provider in
            let label = t("page.login.continue_with", l, ["provider": provider.name])
            return "<button type=\"submit\" class=\"secondary idp\" name=\"idp\" value=\"\(HTML.escape(provider.id))\">\(HTML.escape(label))</button>"
        }
        return """
            <p class="or">\(HTML.escape(t("page.login.or", l)))</p>
            <form id="idp-form" method="post" action="/login">
              <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
              <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
              \(buttons.joined(separator: "\n  "))
            </form>
            """
    }

    private static func passkeyBlock(_ form: LoginForm) -> String {
        guard let clientId = form.passkeyClientId else { return "" }
        let l = form.locale
        return """
            <p class="or">\(HTML.escape(t("page.login.or", l)))</p>
            <form id="passkey-form" method="post" action="/login" data-client="\(HTML.escape(clientId))">
              <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
              <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
              <input type="hidden" name="tkn" value="">
              <button type="button" id="passkey" class="secondary">\(HTML.escape(t("page.login.passkey", l)))</button>
            </form>
            <p class="error" id="passkey-error" hidden>\(HTML.escape(t("page.login.passkey_failed", l)))</p>
            <script src="\(PasskeyScript.path)" defer></script>
            """
    }

    static func logoutConfirmation(csrf: String, hiddenFields: [(String, String)], locale l: SupportedLocale = .en) -> String {
        let hidden = hiddenFields.map { "<input type=\"hidden\" name=\"\(HTML.escape($0.0))\" value=\"\(HTML.escape($0.1))\">" }
            .joined(separator: "\n  ")
        return layout(
            title: t("page.logout.heading_plain", l),
            body: """
                <h1>\(HTML.escape(t("page.logout.heading", l)))</h1>
                <p class="sub">\(HTML.escape(t("page.logout.body", l)))</p>
                <form method="post" action="/oauth2/logout">
                  <input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
                  <input type="hidden" name="confirm" value="yes">
                  \(hidden)
                  <button type="submit" id="confirm-logout">\(HTML.escape(t("page.logout.submit", l)))</button>
                </form>
                """, locale: l)
    }

    static func message(title: String, body: String, locale: SupportedLocale = .en) -> String {
        layout(title: title, body: "<h1>\(HTML.escape(title))</h1>\n<p id=\"message\">\(HTML.escape(body))</p>", locale: locale)
    }

    /// A message page whose title and body are catalog keys.
    static func message(titleKey: String, bodyKey: String, locale: SupportedLocale) -> String {
        message(title: t(titleKey, locale), body: t(bodyKey, locale), locale: locale)
    }
}
