import Foundation
import Hummingbird

/// OpenID Connect Front-Channel Logout 1.0: when a person signs out at the server (RP-initiated logout), the "signed
/// out" page loads the `frontchannel_logout_uri` of every application that took part in the ended session in a hidden
/// frame, with `iss` and `sid` (§2), so each clears its own cookies in this browser; then it continues to the
/// `post_logout_redirect_uri`, if any.
///
/// The page's CSP lets frames come only from those applications' origins, and scripts only from this server: a
/// same-origin script (`scriptPath`) creates the frames, waits for each to load (at most `waitMilliseconds`, so a
/// dead application cannot keep the person on the page) and then follows the "Continue" link. Without JavaScript the
/// frames are in a `<noscript>` and the person follows the link.
enum FrontChannelLogout {
    static let scriptPath = "/assets/frontchannel-logout.js"
    static let waitMilliseconds = 5000
    static let script = """
        (() => {
          "use strict";
          const box = document.getElementById("logout-frames");
          const next = document.getElementById("continue");
          if (!box) { return; }
          let uris = [];
          try { uris = JSON.parse(box.dataset.uris || "[]"); } catch (error) { uris = []; }
          let waiting = uris.length, gone = false;
          const go = () => { if (!gone && next) { gone = true; window.location.assign(next.href); } };
          for (const uri of uris) {
            const frame = document.createElement("iframe");
            frame.title = box.dataset.title || "";
            frame.setAttribute("aria-hidden", "true");
            frame.tabIndex = -1;
            frame.style.display = "none";
            // The listener before the address: a frame that loads at once is still counted.
            frame.addEventListener("load", () => { waiting -= 1; if (waiting <= 0) { go(); } });
            frame.src = uri;
            box.appendChild(frame);
          }
          if (waiting === 0) { go(); }
          setTimeout(go, \(waitMilliseconds));
        })();
        """

    /// The front-channel logout URIs of the applications that took part in the sessions, each with `iss` and `sid`.
    static func frames(for sessionIds: [String], store: any ClientStore & SessionStore, issuer: String) async throws -> [String] {
        var frames: [String] = []
        for sessionId in sessionIds {
            for clientId in try await store.sessionClientIds(sessionId: sessionId) {
                guard let uri = try await store.client(id: clientId)?.configuration.frontchannelLogoutUri else { continue }
                frames.append(RedirectURL.appending([("iss", issuer), ("sid", sessionId)], to: uri))
            }
        }
        return frames
    }

    /// The signed-out page that runs the frames, then continues to `next` (the post-logout redirect), if any.
    static func page(frames: [String], next: String?, locale: SupportedLocale, headers: HTTPFields) -> Response {
        let title = Pages.t("page.signed_out.title", locale)
        let uris = String(decoding: (try? JSONEncoder().encode(frames)) ?? Data("[]".utf8), as: UTF8.self)
        let noscript = frames.map { "<iframe src=\"\(HTML.escape($0))\" title=\"\(HTML.escape(title))\" hidden></iframe>" }.joined()
        let link = next.map {
            "<p><a id=\"continue\" href=\"\(HTML.escape($0))\">\(HTML.escape(Pages.t("page.signed_out.continue", locale)))</a></p>"
        }
        let body = """
            <h1>\(HTML.escape(title))</h1>
            <p id="message">\(HTML.escape(Pages.t("page.signed_out.body", locale)))</p>
            \(link ?? "")
            <div id="logout-frames" data-uris="\(HTML.escape(uris))" data-title="\(HTML.escape(title))"></div>
            <noscript>\(noscript)</noscript>
            <script src="\(scriptPath)"></script>
            """
        return Responses.html(
            Pages.layout(title: title, body: body, locale: locale), headers: headers, sameOriginScripts: true,
            frameSources: frames.compactMap(CSPSource.origin(of:)))
    }
}
