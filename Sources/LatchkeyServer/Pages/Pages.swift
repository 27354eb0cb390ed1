/// The hosted pages: sign-in form, sign-out confirmation, messages. Plain HTML with inline CSS, no JavaScript.
enum Pages {
    private static let style = """
        :root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
        body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: Canvas; color: CanvasText; }
        main { width: min(24rem, 92vw); padding: 2rem; border: 1px solid #8884; border-radius: 12px; }
        h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
        p.sub { margin: 0 0 1.5rem; opacity: .8; }
        label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
        input { width: 100%; box-sizing: border-box; padding: .65rem .75rem; font-size: 1rem; border: 1px solid #888; border-radius: 8px; }
        input:focus, button:focus { outline: 3px solid #2563eb; outline-offset: 2px; }
        button { margin-top: 1.5rem; width: 100%; padding: .75rem; font-size: 1rem; font-weight: 600; color: #fff;
                 background: #1d4ed8; border: 0; border-radius: 8px; cursor: pointer; }
        .error { margin: 1rem 0 0; padding: .75rem; border-radius: 8px; background: #fee2e2; color: #7f1d1d; border: 1px solid #fca5a5; }
        """

    static func layout(title: String, body: String, lang: String = "en", dir: String = "ltr") -> String {
        """
        <!doctype html>
        <html lang="\(HTML.escape(lang))" dir="\(HTML.escape(dir))">
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
    }

    static func login(_ form: LoginForm) -> String {
        let errorBlock = form.error.map {
            "<p class=\"error\" id=\"form-error\" role=\"alert\">\(HTML.escape($0))</p>"
        } ?? ""
        let described = form.error == nil ? "" : " aria-describedby=\"form-error\" aria-invalid=\"true\""
        return layout(title: "Sign in", body: """
            <h1>Sign in</h1>
            <p class="sub">to continue to <strong>\(HTML.escape(form.clientName))</strong></p>
            \(errorBlock)
            <form method="post" action="/login" novalidate>
              <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
              <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
              <label for="username">Email or username</label>
              <input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false"
                     required value="\(HTML.escape(form.username ?? ""))"\(described)\(form.username == nil ? " autofocus" : "")>
              <label for="password">Password</label>
              <input id="password" name="password" type="password" autocomplete="current-password" required\(described)\(form.username == nil ? "" : " autofocus")>
              <button type="submit" id="submit">Sign in</button>
            </form>
            """)
    }

    static func logoutConfirmation(csrf: String, hiddenFields: [(String, String)]) -> String {
        let hidden = hiddenFields.map { "<input type=\"hidden\" name=\"\(HTML.escape($0.0))\" value=\"\(HTML.escape($0.1))\">" }
            .joined(separator: "\n  ")
        return layout(title: "Sign out", body: """
            <h1>Sign out?</h1>
            <p class="sub">You will be signed out of Latchkey on this browser.</p>
            <form method="post" action="/oauth2/logout">
              <input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
              <input type="hidden" name="confirm" value="yes">
              \(hidden)
              <button type="submit" id="confirm-logout">Sign out</button>
            </form>
            """)
    }

    static func message(title: String, body: String) -> String {
        layout(title: title, body: "<h1>\(HTML.escape(title))</h1>\n<p id=\"message\">\(HTML.escape(body))</p>")
    }
}
