import Foundation

/// The offer page's HTML. Without script (or a browser that cannot make a passkey) it is a sentence and "Not now";
/// `PasskeyOfferScript` shows "Create a passkey" where the device has a platform authenticator, and otherwise moves on
/// by itself, so such a browser barely sees the page.
enum PasskeyOfferPage {
    struct Form {
        var requestId: String
        var csrf: String
        var clientName: String
        /// How the account is known to the person (its email, else its username).
        var account: String
        var locale: SupportedLocale
    }

    static func render(_ form: Form) -> String {
        let l = form.locale
        let (client, account) = ("\u{1}client\u{1}", "\u{1}account\u{1}")
        let body = HTML.escape(Pages.t("page.passkey_offer.body", l, ["client": client, "account": account]))
            .replacingOccurrences(of: client, with: "<strong>\(HTML.escape(form.clientName))</strong>")
            .replacingOccurrences(of: account, with: "<strong>\(HTML.escape(form.account))</strong>")
        return Pages.layout(
            title: Pages.t("page.passkey_offer.title", l),
            body: """
                <h1>\(HTML.escape(Pages.t("page.passkey_offer.title", l)))</h1>
                <p class="sub">\(body)</p>
                <form id="offer-form" method="post" action="\(PasskeyOfferGate.path)">
                  <input type="hidden" name="request" value="\(HTML.escape(form.requestId))">
                  <input type="hidden" name="csrf" value="\(HTML.escape(form.csrf))">
                  <input type="hidden" name="decision" value="later">
                  <button type="button" id="create-passkey" hidden>\(HTML.escape(Pages.t("page.passkey_offer.create", l)))</button>
                  <button type="submit" id="not-now" class="secondary" style="margin-block-start: .75rem">\(HTML.escape(Pages.t("page.passkey_offer.later", l)))</button>
                </form>
                <p class="error" id="offer-error" hidden>\(HTML.escape(Pages.t("page.passkey_offer.failed", l)))</p>
                <script src="\(PasskeyOfferScript.path)" defer></script>
                """, locale: l)
    }
}

/// `/assets/passkey-offer.js`, the offer page's same-origin script (the page's CSP forbids inline script). It sends
/// the page's request id and CSRF token with each call, as form fields.
enum PasskeyOfferScript {
    static let path = "/assets/passkey-offer.js"

    static let source = """
        (() => {
          "use strict";
          \(PasskeyScript.base64URL)
          \(PasskeyScript.createCredential)
          const form = document.getElementById("offer-form");
          const button = document.getElementById("create-passkey");
          const failure = document.getElementById("offer-error");
          if (!form || !button) return;
          const go = (decision) => { form.elements.decision.value = decision; form.submit(); };
          const post = async (path, fields) => {
            const body = new URLSearchParams({ request: form.elements.request.value, csrf: form.elements.csrf.value, ...fields });
            const response = await fetch(path, { method: "POST", body });
            if (!response.ok) throw new Error("refused");
            return response.json();
          };
          const create = async () => {
            const o = await post("/passkey-offer/options", {});
            await post("/passkey-offer/credential", await createPasskey(o));
          };
          button.addEventListener("click", async () => {
            button.disabled = true;
            failure.hidden = true;
            try {
              await create();
              go("created");
            } catch (error) {
              failure.setAttribute("role", "alert");  // announced when it appears, not on page load
              failure.hidden = false;
              button.disabled = false;
            }
          });
          // A passkey this device can keep, or nothing to offer: the browser goes on by itself.
          (async () => {
            const able = window.PublicKeyCredential && PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable &&
              await PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable().catch(() => false);
            if (able) { button.hidden = false; button.focus(); } else { go("unsupported"); }
          })();
        })();
        """
}
