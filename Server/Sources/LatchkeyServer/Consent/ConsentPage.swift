/// The consent page: a third-party application asks for the person's account; the scopes are said in words.
extension Pages {
    struct ConsentForm {
        var requestId: String
        var csrf: String
        var clientName: String
        /// Who the person is signed in as (username or email), so that a shared browser is noticed.
        var signedInAs: String
        /// The scopes asked for, each said in words (`scopeDescription`).
        var scopes: [String]
        /// Where the browser goes back to: the redirect URI's origin, which a look-alike name cannot fake.
        var redirectOrigin: String?
        /// Who registered the application, in words, when known.
        var registrant: String?
        var display: ApplicationDisplay
        var locale: SupportedLocale = .en
    }

    /// The scope in words: its catalog text, or "Use the permission “…”" for a scope the catalog does not describe.
    static func scopeDescription(_ scope: String, _ locale: SupportedLocale) -> String {
        let key = "scope." + scope
        return MessageCatalog.has(key) ? t(key, locale) : t("scope.other", locale, ["scope": scope])
    }

    static func consent(_ form: ConsentForm) -> String {
        let l = form.locale
        let marker = "\u{1}client\u{1}"
        let subtitle = HTML.escape(t("page.consent.subtitle", l, ["client": marker]))
            .replacingOccurrences(of: marker, with: "<strong>\(HTML.escape(form.clientName))</strong>")
        let scopes = form.scopes.map { "<li>\(HTML.escape(scopeDescription($0, l)))</li>" }.joined()
        let origin =
            form.redirectOrigin.map { "<p class=\"sub\" id=\"origin\">\(HTML.escape(t("page.consent.origin", l, ["origin": $0])))</p>" } ?? ""
        let registrant =
            form.registrant.map { "<p class=\"sub\" id=\"registrant\">\(HTML.escape(t("page.consent.registered_by", l, ["registrant": $0])))</p>" }
            ?? ""
        return layout(
            title: t("page.consent.title", l),
            body: """
                \(applicationLogo(form.display))
                <h1>\(HTML.escape(t("page.consent.title", l)))</h1>
                <p class="sub">\(subtitle)</p>
                <p class="sub" id="signed-in-as">\(HTML.escape(t("page.consent.signed_in_as", l, ["user": form.signedInAs])))</p>
                <p class="info" id="third-party">\(HTML.escape(t("page.consent.third_party", l, ["client": form.clientName])))</p>
                \(origin)
                \(registrant)
                <p>\(HTML.escape(t("page.consent.scopes_intro", l)))</p>
                <ul id="scopes">\(scopes)</ul>
                <form method="post" action="/consent">
                  <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
                  <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
                  <button type="submit" id="allow" name="decision" value="allow">\(HTML.escape(t("page.consent.allow", l)))</button>
                  <button type="submit" id="deny" name="decision" value="deny" class="secondary" style="margin-block-start: .75rem">\(HTML.escape(t("page.consent.deny", l)))</button>
                </form>
                <p class="sub" style="margin-block-start: 1rem">\(HTML.escape(t("page.consent.withdraw_hint", l)))</p>
                \(applicationLinks(form.display, l))
                """, locale: l)
    }
}
