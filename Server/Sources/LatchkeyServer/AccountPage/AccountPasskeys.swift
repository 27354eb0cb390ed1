import Foundation
import Hummingbird
import LatchkeyJOSE

/// The account page's passkeys: the account's passkeys with their dates, renaming one, removing one, and creating one
/// with the browser's WebAuthn (`AccountPasskeyScript`), through the same ceremonies as the apps (`Passkeys`) for this
/// server's own origin. Adding and removing need a recent sign-in (as `/identity/v1/webauthn/registration` does) and
/// are mailed; renaming needs neither.
///
/// The only page of the account with a script: the page's CSP allows same-origin scripts (`sameOriginScripts`), and
/// the script posts form fields with the page's CSRF token to `passkeys/options` and `passkeys/credential`, which answer
/// JSON. Without script, or in a browser that cannot make a passkey, the page says so and the list works as ever.
struct AccountPasskeys: Sendable {
    let store: any Store
    let passkeys: Passkeys
    let accounts: Accounts

    private static let notices = [
        "added": "account.passkeys.added_notice", "renamed": "account.passkeys.renamed", "removed": "account.passkeys.removed"
    ]

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, account: AccountController) {
        group.get("passkeys") { request, context in
            try await account.serve(request, context, section: .passkeys) { holder, params, _ in
                let l = request.locale()
                return try await self.page(
                    holder, l, notice: try AccountPages.done(params, holder).flatMap { Self.notices[$0] }.map { AccountPages.t($0, l) })
            }
        }
        group.post("passkeys/options") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .passkeys) { holder, params, origin in
                try await self.options(holder, name: try params.single("name"), request.locale(), origin: origin)
            }
        }
        group.post("passkeys/credential") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .passkeys) { holder, params, origin in
                try await self.credential(holder, params, request.locale(), origin: origin)
            }
        }
        group.post("passkeys/rename") { request, context in
            try await account.serve(request, context, form: true, section: .passkeys) { holder, params, _ in
                let l = request.locale()
                do {
                    _ = try await passkeys.renamePasskey(id: try params.single("id") ?? "", of: holder.user, to: try params.single("name") ?? "")
                } catch let failure as PasskeyFailure {
                    return try await self.page(holder, l, error: Self.text(of: failure, l), status: failure.apiError.status)
                }
                return AccountPages.back(to: .passkeys, holder, done: "renamed")
            }
        }
        group.post("passkeys/delete") { request, context in
            try await account.serve(request, context, form: true, needsFreshSignIn: true, section: .passkeys) { holder, params, origin in
                let l = request.locale()
                let removed: PasskeyRecord
                do { removed = try await passkeys.deletePasskey(id: try params.single("id") ?? "", of: holder.user, origin: origin) } catch let
                    failure as PasskeyFailure
                { return try await self.page(holder, l, error: Self.text(of: failure, l), status: failure.apiError.status) }
                await self.notify(holder.user, "passkey_removed", name: removed.friendlyName, l, origin: origin)
                return AccountPages.back(to: .passkeys, holder, done: "removed")
            }
        }
    }

    // MARK: - Creating one (the script's calls)

    /// Creation options for this origin, in the W3C JSON shape (base64url binary values), excluding the account's
    /// passkeys; `name` is the one the person typed (optional).
    private func options(_ holder: AccountHolder, name: String?, _ l: SupportedLocale, origin: AuditOrigin) async throws -> Response {
        let friendlyName = name?.trimmingCharacters(in: .whitespacesAndNewlines).nonEmpty
        if let friendlyName, friendlyName.count > 100 { return try Self.refusal(AccountPages.t("account.passkeys.name_invalid", l)) }
        do {
            guard let client = try await store.client(id: AccountClient.id)?.configuration else { throw PasskeyFailure.noPasskeys }
            let options = try await passkeys.beginPasskeyRegistration(
                user: holder.user, client: client, origin: passkeys.ownOrigin, friendlyName: friendlyName)
            return try Responses.json(options, noStore: true)
        } catch let failure as PasskeyFailure {
            origin.logger.notice("account page: no passkey options", metadata: ["reason": .string(failure.description)])
            return try Self.refusal(AccountPages.t("account.passkeys.failed", l))
        }
    }

    /// The browser's answer: verified and recorded as the account's passkey (`how: request`), mailed; the page to go
    /// to next (`next`, saying so).
    private func credential(_ holder: AccountHolder, _ params: Parameters, _ l: SupportedLocale, origin: AuditOrigin) async throws -> Response {
        guard let rawId = try params.single("raw_id").flatMap(Base64URL.decode),
            let clientData = try params.single("client_data_json").flatMap(Base64URL.decode),
            let attestation = try params.single("attestation_object").flatMap(Base64URL.decode)
        else { return try Self.refusal(AccountPages.t("account.passkeys.failed", l)) }
        let added: PasskeyRecord
        do {
            added = try await passkeys.finishPasskeyRegistration(
                user: holder.user,
                response: PasskeyRegistrationResponse(credentialId: rawId, clientDataJSON: clientData, attestationObject: attestation),
                how: .request, origin: origin)
        } catch let failure as PasskeyFailure {
            origin.logger.notice("account page: passkey refused", metadata: ["reason": .string(failure.description)])
            if case .alreadyRegistered = failure { return try Self.refusal(AccountPages.t("account.passkeys.exists", l)) }
            return try Self.refusal(AccountPages.t("account.passkeys.failed", l))
        }
        await notify(holder.user, "passkey_added", name: added.friendlyName, l, origin: origin)
        return try Responses.json(["next": AccountPages.path(.passkeys, holder, done: "added")], status: .created, noStore: true)
    }

    /// The script's error answer: the person's message, which the page shows in its alert.
    private static func refusal(_ message: String) throws -> Response {
        try Responses.json(["error": "invalid_request", "error_user_msg": message], status: .badRequest, noStore: true)
    }

    /// A refusal of renaming or removing, in the person's words.
    private static func text(of failure: PasskeyFailure, _ l: SupportedLocale) -> String {
        switch failure {
        case .notFound: AccountPages.t("account.passkeys.not_found", l)
        case .malformed: AccountPages.t("account.passkeys.name_invalid", l)
        default: failureText(failure.apiError, l)
        }
    }

    /// A mail that cannot be sent now is logged, not turned into a failure of what was done.
    private func notify(_ user: UserRecord, _ notice: String, name: String, _ l: SupportedLocale, origin: AuditOrigin) async {
        await accounts.notifyAccountChange(user, notice, arguments: ["name": name], locale: l, logger: origin.logger)
    }

    // MARK: - The page

    private func page(
        _ holder: AccountHolder, _ l: SupportedLocale, notice: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let list = try await store.passkeys(userId: holder.user.id).sorted { $0.createdAt < $1.createdAt }
        var body = OwnApplicationPage.notice(notice) + OwnApplicationPage.error(error)
        body += """
            <p>\(AccountPages.e("account.passkeys.intro", l))</p>\(AccountPages.freshBanner(holder, section: .passkeys, l, reason: "account.passkeys.fresh"))
            """
        if list.isEmpty {
            body += "<p id=\"no-passkeys\">\(AccountPages.e("account.passkeys.none", l))</p>"
        } else {
            let rows = list.enumerated().map { index, passkey -> String in
                let name = HTML.escape(passkey.friendlyName)
                let used = passkey.lastUsedAt.map { AccountPages.date($0, l) } ?? AccountPages.e("account.passkeys.never_used", l)
                let rename = """
                    <form method="post" action="/account/passkeys/rename" class="inline-form">\(AccountPages.csrfField(holder))\
                    <input type="hidden" name="id" value="\(HTML.escape(passkey.id))">\
                    <label class="skip" for="rename-\(index)">\(AccountPages.e("account.passkeys.rename_label", l, ["name": passkey.friendlyName]))</label>\
                    <input type="text" id="rename-\(index)" name="name" value="\(name)" maxlength="100" required>\
                    <button class="secondary" type="submit">\(AccountPages.e("account.passkeys.rename", l))</button></form>
                    """
                let remove = AccountPages.button(
                    "/account/passkeys/delete", label: AccountPages.t("account.passkeys.remove", l), holder: holder, style: "secondary",
                    fields: ["id": passkey.id], accessibleLabel: AccountPages.t("account.passkeys.remove_named", l, ["name": passkey.friendlyName]),
                    needsFreshSignIn: true)
                return """
                    <tr><th scope="row"><bdi>\(name)</bdi></th><td class="time">\(AccountPages.date(passkey.createdAt, l))</td>\
                    <td class="time">\(used)</td><td>\(rename)</td><td>\(remove)</td></tr>
                    """
            }.joined()
            body += """
                <div class="table"><table id="passkeys"><caption>\(AccountPages.e("account.nav.passkeys", l))</caption><thead><tr>\
                <th scope="col">\(AccountPages.e("account.passkeys.name", l))</th><th scope="col">\(AccountPages.e("account.passkeys.added", l))</th>\
                <th scope="col">\(AccountPages.e("account.passkeys.last_used", l))</th>\
                <th scope="col"><span class="skip">\(AccountPages.e("account.passkeys.rename", l))</span></th>\
                <th scope="col"><span class="skip">\(AccountPages.e("account.passkeys.remove", l))</span></th></tr></thead>\
                <tbody>\(rows)</tbody></table></div>
                """
        }
        // Creating one: the script shows the form where the browser can make a passkey, and hides the sentence that
        // says it cannot (which is what a browser without script keeps). Not offered at all when the page's own
        // application does not accept this origin's passkeys (a file that defines `latchkey-account` without "self").
        guard let client = try await store.client(id: AccountClient.id)?.configuration,
            passkeys.passkeyOrigins(of: client).contains(passkeys.ownOrigin)
        else {
            return AccountPages.page(.passkeys, holder, l, body: body, status: status)
        }
        body += """
            <section aria-labelledby="add-passkey-heading"><h2 id="add-passkey-heading">\(AccountPages.e("account.passkeys.add_heading", l))</h2>
            <form id="add-passkey" hidden>\(AccountPages.csrfField(holder))\(AccountPages.freshFieldset(holder, """
            <label for="passkey-name">\(AccountPages.e("account.passkeys.new_name", l))</label>
            <input type="text" id="passkey-name" name="name" maxlength="100" autocomplete="off">
            <div class="actions"><button type="submit" id="add-passkey-button">\(AccountPages.e("account.passkeys.add", l))</button></div>
            """))</form>
            <p id="passkey-unsupported">\(AccountPages.e("account.passkeys.unsupported", l))</p>
            <p class="error" id="passkey-error" data-exists="\(AccountPages.e("account.passkeys.exists", l))" hidden>\(AccountPages.e("account.passkeys.failed", l))</p></section>
            <script src="\(AccountPasskeyScript.path)" defer></script>
            """
        return Responses.html(
            AccountPages.layout(
                title: AccountPages.t(AccountPages.Section.passkeys.titleKey, l), body: body, section: .passkeys, holder: holder, locale: l),
            status: status, headers: [.contentLanguage: l.tag], sameOriginScripts: true)
    }
}

/// `/assets/account-passkeys.js`, the account page's passkey script (the page's CSP forbids inline script): creation
/// options, the browser's WebAuthn, the credential, then the page again saying so. It sends the page's CSRF token with
/// each call, as form fields; a refusal (the server's message, the browser's "not allowed", or "this authenticator
/// already holds one" as `data-exists` says it) shows the page's alert, and a page instead of an answer (the sign-in
/// ended or is no longer recent) is shown by loading the page again.
enum AccountPasskeyScript {
    static let path = "/assets/account-passkeys.js"

    static let source = """
        (() => {
          "use strict";
          \(PasskeyScript.base64URL)
          \(PasskeyScript.createCredential)
          const form = document.getElementById("add-passkey");
          const button = document.getElementById("add-passkey-button");
          const failure = document.getElementById("passkey-error");
          const unsupported = document.getElementById("passkey-unsupported");
          if (!form || !button || !window.PublicKeyCredential || !navigator.credentials) return;
          const failed = failure.textContent;
          unsupported.hidden = true;
          form.hidden = false;
          const post = async (path, fields) => {
            const body = new URLSearchParams({ csrf: form.elements.csrf.value, ...fields });
            const response = await fetch(path, { method: "POST", body, credentials: "same-origin" });
            const answer = await response.json().catch(() => null);
            if (answer === null && (response.status === 401 || response.status === 403)) {
              window.location.reload();  // the page says why (signed out, or "Confirm it's you")
              throw new Error("");
            }
            if (!response.ok) throw new Error((answer && answer.error_user_msg) || "");
            return answer;
          };
          form.addEventListener("submit", async (event) => {
            event.preventDefault();
            if (button.disabled) return;
            button.disabled = true;
            failure.hidden = true;
            failure.textContent = failed;
            try {
              const o = await post("/account/passkeys/options", { name: form.elements.name.value });
              const done = await post("/account/passkeys/credential", await createPasskey(o));
              window.location.assign(done.next);
            } catch (error) {
              if (error && error.name === "InvalidStateError") failure.textContent = failure.dataset.exists;
              else if (error && error.message && error.name === "Error") failure.textContent = error.message;
              failure.setAttribute("role", "alert");  // announced when it appears, not on page load
              failure.hidden = false;
              button.disabled = false;
            }
          });
        })();
        """
}
