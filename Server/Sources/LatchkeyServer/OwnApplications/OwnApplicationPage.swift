import Foundation

/// The pages of the server's own applications (the console, the account page): plain HTML with inline CSS, no inline
/// script (the strict CSP of `Responses.html`), every text from `MessageCatalog` in the person's language,
/// `<html lang dir>` and logical CSS properties so right-to-left languages mirror. For keyboards and screen readers: a
/// skip link, one `<h1>` per page, the current section marked `aria-current`, every field labelled, results and errors
/// announced (`role=status`, `role=alert`), visible focus.
enum OwnApplicationPage {
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
        input[type=email], input[type=password], input[type=tel], input[type=url] { box-sizing: border-box; width: min(36rem, 100%); padding: .5rem .6rem; font-size: 1rem;
            border: 1px solid #888; border-radius: 6px; background: Field; color: FieldText; }
        fieldset { border: 0; padding: 0; margin: 0; }
        fieldset[disabled], button[disabled] { opacity: .6; cursor: not-allowed; }
        .qr svg { display: block; margin-block: 1rem; max-width: 100%; height: auto; }
        .key, .codes { font-family: ui-monospace, monospace; font-size: 1.1rem; letter-spacing: .05em; }
        .codes { columns: 2; max-width: 24rem; padding-inline-start: 2rem; }
        .codes li { margin-block: .2rem; }
        .inline-form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 0; }
        .inline-form input[type=text] { width: 14rem; }
        .fresh { padding: .75rem; border-radius: 8px; border: 1px solid #d97706; margin-block-end: 1rem; }
        section { margin-block-end: 2rem; }
        td ul { margin: 0; padding-inline-start: 1.2rem; }
        """

    /// The sections of the header: their label, and each one's path, title and whether it is the page shown.
    struct Navigation {
        var label: String
        var items: [(path: String, title: String, current: Bool)]
    }

    /// A page: a header with the brand, the sections and `account` (its "Sign out" form), then `body` in `<main>`
    /// under the page's one `<h1>`.
    static func render(
        title: String, brand: String, skip: String, navigation: Navigation?, account: String, body: String, locale l: SupportedLocale
    ) -> String {
        let nav =
            navigation.map { navigation in
                let items = navigation.items.map { item in
                    "<li><a href=\"\(HTML.escape(item.path))\"\(item.current ? " aria-current=\"page\"" : "")>\(HTML.escape(item.title))</a></li>"
                }.joined()
                return "<nav aria-label=\"\(HTML.escape(navigation.label))\"><ul>\(items)</ul></nav>"
            } ?? ""
        return """
            <!doctype html>
            <html lang="\(l.tag)" dir="\(l.direction)">
            <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · \(HTML.escape(brand))</title><style>\(style)</style></head>
            <body><a class="skip" href="#content">\(HTML.escape(skip))</a>
            <header><span class="brand">\(HTML.escape(brand))</span>
            \(nav)
            \(account)</header>
            <main id="content">
            <h1>\(HTML.escape(title))</h1>
            \(body)
            </main></body></html>
            """
    }

    static func csrfField(_ csrf: String) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\">"
    }

    /// A one-button form posting to `action` (with the CSRF token), optionally with hidden fields and a label that
    /// names what the button acts on for screen readers (`accessibleLabel`, when the visible one is short); `disabled`
    /// with the reason in the element `describedBy` names.
    static func button(
        _ action: String, label: String, csrf: String, style: String = "", fields: [String: String] = [:], accessibleLabel: String? = nil,
        disabled describedBy: String? = nil
    ) -> String {
        let hidden = fields.keys.sorted().map { "<input type=\"hidden\" name=\"\(HTML.escape($0))\" value=\"\(HTML.escape(fields[$0] ?? ""))\">" }
            .joined()
        let classAttribute = style.isEmpty ? "" : " class=\"\(style)\""
        let aria =
            (accessibleLabel.map { " aria-label=\"\(HTML.escape($0))\"" } ?? "")
            + (describedBy.map { " disabled aria-describedby=\"\(HTML.escape($0))\"" } ?? "")
        return
            "<form method=\"post\" action=\"\(HTML.escape(action))\">\(csrfField(csrf))\(hidden)<button\(classAttribute)\(aria) type=\"submit\">\(HTML.escape(label))</button></form>"
    }

    static func notice(_ text: String?) -> String {
        text.map { "<p class=\"notice\" role=\"status\">\(HTML.escape($0))</p>" } ?? ""
    }

    static func error(_ text: String?) -> String {
        text.map { "<p class=\"error\" role=\"alert\" id=\"form-error\">\(HTML.escape($0))</p>" } ?? ""
    }
}
