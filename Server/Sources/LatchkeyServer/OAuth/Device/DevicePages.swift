/// The device page (RFC 8628): the code entry form and the confirmation. No script; every text from the catalog.
extension Pages {
    static func deviceEntry(csrf: String, typed: String?, error: String?, locale l: SupportedLocale) -> String {
        let errorBlock = error.map { "<p class=\"error\" id=\"form-error\" role=\"alert\">\(HTML.escape($0))</p>" } ?? ""
        let described = error == nil ? " aria-describedby=\"device-hint\"" : " aria-describedby=\"device-hint form-error\" aria-invalid=\"true\""
        return layout(
            title: t("page.device.title", l),
            body: """
                <h1>\(HTML.escape(t("page.device.title", l)))</h1>
                <p class="sub" id="device-hint">\(HTML.escape(t("page.device.prompt", l)))</p>
                \(errorBlock)
                <form method="post" action="/device" novalidate>
                  <input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
                  <label for="user_code">\(HTML.escape(t("page.device.code", l)))</label>
                  <input id="user_code" name="user_code" type="text" autocomplete="one-time-code" autocapitalize="characters"
                         spellcheck="false" required maxlength="16" value="\(HTML.escape(typed ?? ""))"\(described) autofocus>
                  <button type="submit" id="continue">\(HTML.escape(t("page.device.continue", l)))</button>
                </form>
                """, locale: l)
    }

    /// "{client} on another device asks to sign in as {user} …" with Allow and Deny: the person checks the code the
    /// device shows before anything is granted (RFC 8628 §5.4, remote phishing).
    /// `thirdPartyScopes`: for a third-party application (`ApplicationTrust`), the scopes asked for, said in words, and
    /// that it is not run by this service: approving is then the person's consent.
    static func deviceConfirmation(
        csrf: String, code: String, clientName: String, userName: String, age: String, thirdPartyScopes: [String]? = nil,
        locale l: SupportedLocale
    ) -> String {
        let consent =
            thirdPartyScopes.map { scopes in
                """
                <p class="info" id="third-party">\(HTML.escape(t("page.consent.third_party", l, ["client": clientName])))</p>
                <p>\(HTML.escape(t("page.consent.scopes_intro", l)))</p>
                <ul id="scopes">\(scopes.map { "<li>\(HTML.escape(scopeDescription($0, l)))</li>" }.joined())</ul>
                """
            } ?? ""
        let markers = ["client": "\u{1}client\u{1}", "user": "\u{1}user\u{1}", "code": "\u{1}code\u{1}"]
        let sentence = HTML.escape(t("page.device.confirm", l, markers))
            .replacingOccurrences(of: markers["client"] ?? "", with: "<strong>\(HTML.escape(clientName))</strong>")
            .replacingOccurrences(of: markers["user"] ?? "", with: "<strong>\(HTML.escape(userName))</strong>")
            .replacingOccurrences(of: markers["code"] ?? "", with: "<strong id=\"device-code\">\(HTML.escape(code))</strong>")
        return layout(
            title: t("page.device.title", l),
            body: """
                <h1>\(HTML.escape(t("page.device.title", l)))</h1>
                <p class="sub" id="confirm-text">\(sentence)</p>
                <p class="sub" id="request-age">\(HTML.escape(t("page.device.age", l, ["minutes": age])))</p>
                \(consent)
                <form method="post" action="/device">
                  <input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
                  <input type="hidden" name="user_code" value="\(HTML.escape(code))">
                  <button type="submit" id="approve" name="decision" value="approve">\(HTML.escape(t("page.device.approve", l)))</button>
                  <button type="submit" id="deny" name="decision" value="deny" class="secondary">\(HTML.escape(t("page.device.deny", l)))</button>
                </form>
                """, locale: l)
    }
}
