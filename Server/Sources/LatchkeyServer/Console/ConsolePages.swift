import Foundation

/// The console's pages: plain HTML with inline CSS and no JavaScript (the strict CSP of `Responses.html`), every
/// text from `MessageCatalog` (`console.*`) in the operator's language, `<html lang dir>` and logical CSS properties
/// so right-to-left languages mirror. For keyboards and screen readers: a skip link, one `<h1>` per page, the current
/// section marked `aria-current`, every field labelled, tables with captions and column headers, results and errors
/// announced (`role=status`, `role=alert`), visible focus.
enum ConsolePages {
    static let style = """
        :root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
        body { margin: 0; background: Canvas; color: CanvasText; }
        a { color: LinkText; }
        .skip { position: absolute; inset-inline-start: -999px; }
        .skip:focus { inset-inline-start: 1rem; inset-block-start: 1rem; background: Canvas; padding: .5rem; z-index: 1; }
        header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .75rem 1.5rem; border-block-end: 1px solid #8884; }
        header .brand { font-weight: 700; margin-inline-end: 1rem; }
        nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
        nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
        header form { margin-inline-start: auto; }
        main { padding: 1.5rem; max-width: 72rem; }
        h1 { font-size: 1.5rem; margin-block: 0 1rem; }
        h2 { font-size: 1.15rem; margin-block: 2rem .75rem; }
        table { border-collapse: collapse; width: 100%; margin-block-end: 1rem; }
        caption { text-align: start; font-weight: 600; padding-block-end: .5rem; }
        th, td { text-align: start; padding: .45rem .6rem; border-block-end: 1px solid #8884; vertical-align: top; }
        code { font-size: .9em; overflow-wrap: anywhere; }
        td.id, td.id code, td.time { white-space: nowrap; }
        .table { overflow-x: auto; margin-block-end: 1rem; }
        label { display: block; font-weight: 600; margin-block: 1rem .35rem; }
        label.inline { display: inline; font-weight: 500; margin: 0; }
        fieldset ul { list-style: none; padding: 0; margin: .25rem 0; }
        fieldset li { margin-block: .25rem; }
        input[type=text], input[type=search], input[type=datetime-local], select, textarea { box-sizing: border-box; width: min(36rem, 100%);
            padding: .5rem .6rem; font-size: 1rem; border: 1px solid #888; border-radius: 6px; background: Field; color: FieldText; }
        textarea { min-height: 5rem; font-family: ui-monospace, monospace; }
        .hint { margin-block: .25rem 0; opacity: .8; font-size: .9rem; }
        button { padding: .5rem 1rem; font-size: 1rem; font-weight: 600; color: #fff; background: #1d4ed8; border: 0; border-radius: 6px; cursor: pointer; }
        button.secondary { color: CanvasText; background: transparent; border: 1px solid #888; }
        button.danger { background: #b91c1c; }
        a:focus, button:focus, input:focus, select:focus, textarea:focus { outline: 3px solid #2563eb; outline-offset: 2px; }
        .actions { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; margin-block: 1rem; }
        .actions form { margin: 0; }
        .filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: end; }
        .filters label { margin-block: 0 .35rem; }
        .filters input, .filters select { width: auto; }
        .notice { padding: .75rem; border-radius: 8px; border: 1px solid #16a34a; margin-block-end: 1rem; }
        .error { padding: .75rem; border-radius: 8px; background: #fee2e2; color: #7f1d1d; border: 1px solid #fca5a5; margin-block-end: 1rem; }
        .secret { padding: 1rem; border: 2px solid #d97706; border-radius: 8px; margin-block-end: 1rem; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .4rem 1rem; }
        dt { font-weight: 600; }
        dd { margin: 0; }
        """

    enum Section: String, CaseIterable {
        case applications, users, audit
        var path: String { "/admin/\(rawValue)" }
        var titleKey: String { "console.nav.\(rawValue)" }
    }

    static func t(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String {
        MessageCatalog.text(key, locale: locale, arguments: arguments, default: key)
    }

    /// `t` escaped for HTML.
    static func e(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String {
        HTML.escape(t(key, locale, arguments))
    }

    /// A console page: header with the sections and "Sign out" (a CSRF-bound form), then `body` in `<main>`.
    static func layout(title: String, body: String, section: Section?, signedIn: ConsoleOperator?, locale l: SupportedLocale) -> String {
        let navigation = Section.allCases.map { (item) -> String in
            let current = item == section ? " aria-current=\"page\"" : ""
            return "<li><a href=\"\(item.path)\"\(current)>\(e(item.titleKey, l))</a></li>"
        }.joined()
        let account =
            signedIn.map { signedIn in
                """
                <form method="post" action="/admin/signout">\(csrfField(signedIn))<button class="secondary" type="submit">\(e("console.signout", l, ["user": signedIn.user.username]))</button></form>
                """
            } ?? ""
        return """
            <!doctype html>
            <html lang="\(l.tag)" dir="\(l.direction)">
            <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · \(e("console.title", l))</title><style>\(style)</style></head>
            <body><a class="skip" href="#content">\(e("console.skip", l))</a>
            <header><span class="brand">\(e("console.title", l))</span>
            \(signedIn == nil ? "" : "<nav aria-label=\"\(e("console.nav.label", l))\"><ul>\(navigation)</ul></nav>")
            \(account)</header>
            <main id="content">
            <h1>\(HTML.escape(title))</h1>
            \(body)
            </main></body></html>
            """
    }

    static func csrfField(_ signedIn: ConsoleOperator) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(signedIn.csrf))\">"
    }

    /// A one-button form posting to `action` (with the CSRF token), optionally with hidden fields.
    static func button(
        _ action: String, label: String, signedIn: ConsoleOperator, style: String = "", fields: [String: String] = [:]
    ) -> String {
        let hidden = fields.keys.sorted().map { "<input type=\"hidden\" name=\"\(HTML.escape($0))\" value=\"\(HTML.escape(fields[$0] ?? ""))\">" }
            .joined()
        let classAttribute = style.isEmpty ? "" : " class=\"\(style)\""
        return
            "<form method=\"post\" action=\"\(HTML.escape(action))\">\(csrfField(signedIn))\(hidden)<button\(classAttribute) type=\"submit\">\(HTML.escape(label))</button></form>"
    }

    static func notice(_ text: String?) -> String {
        text.map { "<p class=\"notice\" role=\"status\">\(HTML.escape($0))</p>" } ?? ""
    }

    static func error(_ text: String?) -> String {
        text.map { "<p class=\"error\" role=\"alert\" id=\"form-error\">\(HTML.escape($0))</p>" } ?? ""
    }

    static func date(_ date: Date?, _ locale: SupportedLocale) -> String {
        guard let date else { return "—" }
        // Isolated, so a right-to-left page does not reorder its digits and separators.
        return "<bdi>\(HTML.escape(date.formatted(.iso8601)))</bdi>"
    }

    /// A message page of the console (refusals, "sign in again").
    static func message(title: String, text: String, action: String? = nil, signedIn: ConsoleOperator?, locale l: SupportedLocale) -> String {
        let link = action.map { "<p><a href=\"/admin/login?fresh=1\">\(HTML.escape($0))</a></p>" } ?? ""
        return layout(title: title, body: "<p id=\"message\">\(HTML.escape(text))</p>\(link)", section: nil, signedIn: signedIn, locale: l)
    }
}
