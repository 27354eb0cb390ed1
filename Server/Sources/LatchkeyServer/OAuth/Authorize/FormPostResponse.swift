import Foundation
import Hummingbird

/// OAuth 2.0 Form Post Response Mode: the authorization response (`code`, `state`, `iss`, or the error) is POSTed to
/// the redirect URI by the browser instead of travelling in its address, so it never lands in the history, the
/// `Referer` of the next page or a proxy's log.
///
/// The page holds a form of hidden fields and submits it with a same-origin script (`/assets/form-post.js`): the
/// page's CSP allows scripts from this server only (no inline script) and `form-action` only the redirect URI's
/// origin, so neither an injected script nor a changed form can send the code elsewhere. Without JavaScript the
/// person presses the form's button.
enum FormPostResponse {
    static let mode = "form_post"
    static let scriptPath = "/assets/form-post.js"
    static let script = """
        (() => { "use strict"; const form = document.getElementById("response"); if (form) { form.submit(); } })();
        """

    /// Only web redirect URIs receive a POST: an app's custom scheme or a claimed https link opens the app with the
    /// address, never a body.
    static func accepts(redirectUri: String) -> Bool {
        guard let scheme = URLComponents(string: redirectUri)?.scheme?.lowercased() else { return false }
        return scheme == "https" || scheme == "http"
    }

    static func page(_ parameters: [(String, String?)], redirectUri: String) -> Response {
        let fields = parameters.compactMap { name, value in
            value.map { "<input type=\"hidden\" name=\"\(HTML.escape(name))\" value=\"\(HTML.escape($0))\">" }
        }.joined(separator: "\n")
        let page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Latchkey</title></head>
            <body><form id="response" method="post" action="\(HTML.escape(redirectUri))">
            \(fields)
            <noscript><button type="submit">Continue</button></noscript>
            </form><script src="\(scriptPath)"></script></body></html>
            """
        var components = URLComponents(string: redirectUri)
        components?.path = ""
        components?.query = nil
        components?.fragment = nil
        let origin = components?.string ?? "'none'"
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .pragma: "no-cache",
                .contentSecurityPolicy:
                    "default-src 'none'; script-src 'self'; form-action \(origin); frame-ancestors 'none'; base-uri 'none'",
                .xFrameOptions: "DENY", .referrerPolicy: "no-referrer", .xContentTypeOptions: "nosniff"
            ],
            body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}
