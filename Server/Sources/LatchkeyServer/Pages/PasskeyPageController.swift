import Foundation
import Hummingbird

/// The hosted login page's passkey sign-in, as a same-origin script (`/assets/passkey-login.js`): the page's CSP
/// allows scripts from our own origin only, never inline ones. It asks `/identity/v1/webauthn/authentication-options`
/// for a discoverable challenge, runs `navigator.credentials.get`, posts the assertion to
/// `/identity/v1/webauthn/authentication` and submits the returned `tkn` with the login form, which finishes the
/// pending authorization like a password would.
///
/// Two ways in:
/// - **Conditional mediation** (passkey AutoFill): where the browser has it, a `mediation: "conditional"` request
///   starts with the page, so the username field (`autocomplete="username webauthn"`) offers the passkeys in its
///   autofill list; picking one signs in without the password field. The form is marked `data-conditional="started"`
///   (tests and support can see the path taken). Browsers without it see the page as it always was.
/// - **The button**: a modal request. A browser runs one WebAuthn request at a time, so the conditional one is
///   aborted first and started again if the modal one fails.
enum PasskeyScript {
    static let path = "/assets/passkey-login.js"

    /// WebAuthn's binary values to and from base64url (`b64`, `unb64`), for the hosted pages' passkey scripts.
    static let base64URL = """
        const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
          const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));
        """

    /// `createPasskey(o)`: the browser's WebAuthn creation for the server's W3C JSON options `o` (`Passkeys`' creation
    /// options), answering the form fields the server's credential endpoints take (`raw_id`, `client_data_json`,
    /// `attestation_object`). After `base64URL`, in the offer's and the account page's scripts.
    static let createCredential = """
        const createPasskey = async (o) => {
            const credential = await navigator.credentials.create({ publicKey: {
              rp: o.rp, challenge: unb64(o.challenge),
              user: { id: unb64(o.user.id), name: o.user.name, displayName: o.user.displayName },
              pubKeyCredParams: o.pubKeyCredParams, timeout: o.timeout,
              excludeCredentials: o.excludeCredentials.map((c) => ({ type: c.type, id: unb64(c.id) })),
              authenticatorSelection: o.authenticatorSelection, attestation: o.attestation } });
            const r = credential.response;
            return { raw_id: b64(credential.rawId), client_data_json: b64(r.clientDataJSON), attestation_object: b64(r.attestationObject) };
          };
        """

    static let source = """
        (() => {
          "use strict";
          \(PasskeyScript.base64URL)
          const button = document.getElementById("passkey");
          const form = document.getElementById("passkey-form");
          const failure = document.getElementById("passkey-error");
          if (!button || !form) return;
          if (!window.PublicKeyCredential) { button.hidden = true; return; }
          const post = async (path, body) => {
            const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
            const json = await response.json();
            if (!response.ok) throw new Error(json.error_user_msg || json.error_description || "passkey sign-in failed");
            return json;
          };
          const showFailure = () => {
            failure.setAttribute("role", "alert");  // announced when it appears, not on page load
            failure.hidden = false;
          };
          // Options, the browser's answer, the server's ticket, the form: one sign-in, modal or conditional.
          const signIn = async (mediation, signal) => {
            const options = (await post("/identity/v1/webauthn/authentication-options",
                                        { client_id: form.dataset.client, origin: location.origin })).public_key;
            const request = { publicKey: {
              challenge: unb64(options.challenge), rpId: options.rp_id, timeout: options.timeout,
              userVerification: options.user_verification,
              allowCredentials: (options.allow_credentials || []).map((c) => ({ type: c.type, id: unb64(c.id) })) } };
            if (mediation) { request.mediation = mediation; request.signal = signal; }
            const credential = await navigator.credentials.get(request);
            const r = credential.response;
            const ticket = await post("/identity/v1/webauthn/authentication", {
              id: credential.id, raw_id: b64(credential.rawId), type: credential.type,
              response: { authenticator_data: b64(r.authenticatorData), client_data_json: b64(r.clientDataJSON),
                          signature: b64(r.signature), user_handle: r.userHandle ? b64(r.userHandle) : null } });
            form.elements.tkn.value = ticket.tkn;
            form.submit();
          };
          let conditional = null;
          const startConditional = async () => {
            if (!PublicKeyCredential.isConditionalMediationAvailable) return;
            if (!(await PublicKeyCredential.isConditionalMediationAvailable().catch(() => false))) return;
            const controller = new AbortController();
            conditional = controller;
            form.dataset.conditional = "started";
            try {
              await signIn("conditional", controller.signal);
            } catch (error) {
              // Aborted for the button, or the browser gave up: nothing to say. A passkey picked and then refused is.
              if (!controller.signal.aborted && error.name !== "NotAllowedError" && error.name !== "AbortError") showFailure();
            } finally {
              if (conditional === controller) { conditional = null; delete form.dataset.conditional; }
            }
          };
          button.addEventListener("click", async () => {
            button.disabled = true;
            failure.hidden = true;
            if (conditional) { conditional.abort(); conditional = null; delete form.dataset.conditional; }
            try {
              await signIn(null, null);
            } catch (error) {
              showFailure();
              button.disabled = false;
              startConditional();
            }
          });
          startConditional();
        })();
        """
}

struct PasskeyPageController: Sendable {
    func addRoutes(to pages: RouterGroup<LatchkeyRequestContext>) {
        pages.get(RouterPath(PasskeyScript.path)) { _, _ in Self.script(PasskeyScript.source, cacheControl: "no-cache") }
        pages.get(RouterPath(PasskeyOfferScript.path)) { _, _ in Self.script(PasskeyOfferScript.source, cacheControl: "no-cache") }
        pages.get(RouterPath(AccountPasskeyScript.path)) { _, _ in Self.script(AccountPasskeyScript.source, cacheControl: "no-cache") }
        pages.get(RouterPath(FormPostResponse.scriptPath)) { _, _ in Self.script(FormPostResponse.script, cacheControl: "public, max-age=3600") }
        pages.get(RouterPath(FrontChannelLogout.scriptPath)) { _, _ in
            Self.script(FrontChannelLogout.script, cacheControl: "public, max-age=3600")
        }
    }

    /// A same-origin script of the hosted pages (their CSP allows no inline script).
    private static func script(_ source: String, cacheControl: String) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: cacheControl, .xContentTypeOptions: "nosniff"],
            body: .init(byteBuffer: ByteBuffer(string: source)))
    }
}
