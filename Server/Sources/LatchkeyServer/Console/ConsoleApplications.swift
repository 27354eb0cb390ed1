import Foundation
import Hummingbird

/// The console's applications: the list (configured and registered), a new one, one application's settings, its
/// secret rotated, its deletion. Registered applications change through `ClientRegistrations`, the same path as
/// RFC 7591/7592 (the same policy, the same audit events); configured ones are shown read-only, since the
/// configuration file is their source.
struct ConsoleApplications: Sendable {
    let store: any ClientStore
    let registrations: ClientRegistrations

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, console: ConsoleController) {
        group.get("applications") { request, context in
            try await console.serve(request) { signedIn, params in
                try await self.list(signedIn, notice: try params.single("done"), locale: request.locale())
            }
        }
        group.get("applications/new") { request, _ in
            try await console.serve(request) { signedIn, _ in
                Self.page(
                    signedIn, request.locale(), titleKey: "console.apps.new",
                    body: Self.form(signedIn, values: .blank, action: "/admin/applications", locale: request.locale()))
            }
        }
        group.post("applications") { request, context in
            try await console.serve(request, form: true) { signedIn, params in
                try await self.create(params, signedIn, request: request, context: context)
            }
        }
        group.get("applications/:id") { request, context in
            try await console.serve(request) { signedIn, params in
                try await self.detail(try context.parameters.require("id"), signedIn, notice: try params.single("done"), locale: request.locale())
            }
        }
        group.post("applications/:id") { request, context in
            try await console.serve(request, form: true) { signedIn, params in
                try await self.update(try context.parameters.require("id"), params, signedIn, request: request, context: context)
            }
        }
        group.post("applications/:id/secret") { request, context in
            try await console.serve(request, form: true) { signedIn, params in
                try await self.rotate(try context.parameters.require("id"), params, signedIn, request: request, context: context)
            }
        }
        group.post("applications/:id/delete") { request, context in
            try await console.serve(request, form: true) { signedIn, params in
                try await self.delete(try context.parameters.require("id"), params, signedIn, request: request, context: context)
            }
        }
    }

    // MARK: Pages

    private func list(_ signedIn: ConsoleOperator, notice: String?, locale l: SupportedLocale) async throws -> Response {
        let rows = try await store.clients().map { (record) -> String in
            let c = record.configuration
            return """
                <tr><th scope="row"><a href="/admin/applications/\(Self.pathId(c.clientId))">\(HTML.escape(c.name))</a></th>
                <td class="id"><code>\(HTML.escape(c.clientId))</code></td><td>\(ConsolePages.e("console.apps.origin.\(record.origin.rawValue)", l))</td>
                <td>\(ConsolePages.e("console.apps.type.\(c.appType.rawValue)", l))</td>
                <td>\(HTML.escape(Self.shortGrantNames(c.grantTypes)))</td></tr>
                """
        }.joined()
        let body = """
            \(ConsolePages.notice(notice == "deleted" ? ConsolePages.t("console.apps.deleted", l) : nil))
            <p><a href="/admin/applications/new">\(ConsolePages.e("console.apps.new", l))</a></p>
            <table><caption>\(ConsolePages.e("console.apps.caption", l))</caption>
            <thead><tr><th scope="col">\(ConsolePages.e("console.apps.name", l))</th><th scope="col">\(ConsolePages.e("console.apps.client_id", l))</th>
            <th scope="col">\(ConsolePages.e("console.apps.origin", l))</th><th scope="col">\(ConsolePages.e("console.apps.type", l))</th>
            <th scope="col">\(ConsolePages.e("console.apps.grants", l))</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """
        return Self.page(signedIn, l, titleKey: "console.nav.applications", body: body)
    }

    private func detail(_ id: String, _ signedIn: ConsoleOperator, notice: String?, locale l: SupportedLocale) async throws -> Response {
        guard let record = try await store.client(id: id) else { return Self.notFound(signedIn, l) }
        let c = record.configuration
        let notices = ["saved": "console.apps.saved", "rotated": "console.apps.rotated"]
        var body = ConsolePages.notice(notice.flatMap { notices[$0] }.map { ConsolePages.t($0, l) })
        body += """
            <dl><dt>\(ConsolePages.e("console.apps.client_id", l))</dt><dd><code>\(HTML.escape(c.clientId))</code></dd>
            <dt>\(ConsolePages.e("console.apps.origin", l))</dt><dd>\(ConsolePages.e("console.apps.origin.\(record.origin.rawValue)", l))</dd>
            <dt>\(ConsolePages.e("console.apps.auth", l))</dt><dd>\(HTML.escape(c.tokenEndpointAuthMethod.rawValue))</dd></dl>
            """
        guard record.origin == .registration else {
            body += """
                <p>\(ConsolePages.e("console.apps.configured", l))</p>
                <dl><dt>\(ConsolePages.e("console.apps.redirects", l))</dt><dd>\(HTML.escape(c.redirectUris.joined(separator: ", ")))</dd>
                <dt>\(ConsolePages.e("console.apps.grants", l))</dt><dd>\(HTML.escape(Self.shortGrantNames(c.grantTypes)))</dd>
                <dt>\(ConsolePages.e("console.apps.scope", l))</dt><dd>\(HTML.escape(c.scopes.joined(separator: " ")))</dd></dl>
                """
            return Self.page(signedIn, l, title: c.name, body: body)
        }
        body += Self.form(signedIn, values: FormValues(c), action: "/admin/applications/\(Self.pathId(c.clientId))", locale: l)
        if c.usesSecret {
            let options = [0, 3600, 86_400, 7 * 86_400].map { (seconds) -> String in
                "<option value=\"\(seconds)\">\(ConsolePages.e("console.apps.grace.\(seconds)", l))</option>"
            }.joined()
            body += """
                <h2>\(ConsolePages.e("console.apps.rotate", l))</h2>
                <form method="post" action="/admin/applications/\(Self.pathId(c.clientId))/secret">\(ConsolePages.csrfField(signedIn))
                <label for="grace">\(ConsolePages.e("console.apps.grace", l))</label><select id="grace" name="grace_period_seconds">\(options)</select>
                <div class="actions"><button type="submit">\(ConsolePages.e("console.apps.rotate", l))</button></div></form>
                """
        }
        body += """
            <h2>\(ConsolePages.e("console.apps.delete", l))</h2>
            <form method="post" action="/admin/applications/\(Self.pathId(c.clientId))/delete">\(ConsolePages.csrfField(signedIn))
            <p><input type="checkbox" id="confirm" name="confirm" value="yes" required>
            <label class="inline" for="confirm">\(ConsolePages.e("console.apps.delete.confirm", l))</label></p>
            <div class="actions"><button class="danger" type="submit">\(ConsolePages.e("console.apps.delete", l))</button></div></form>
            """
        return Self.page(signedIn, l, title: c.name, body: body)
    }

    // MARK: Changes

    private func create(_ params: Parameters, _ signedIn: ConsoleOperator, request: Request, context: LatchkeyRequestContext) async throws
        -> Response
    {
        let l = request.locale()
        let values = FormValues(params)
        do {
            let outcome = try await registrations.register(
                values.metadata, actor: signedIn.caller.auditActor, via: "console", origin: Self.origin(context))
            let c = outcome.record.configuration
            let secret =
                outcome.secret.map { (secret) -> String in
                    """
                    <div class="secret" role="status"><p><strong>\(ConsolePages.e("console.apps.secret.once", l))</strong></p>
                    <p>\(ConsolePages.e("console.apps.secret", l)): <code id="client-secret">\(HTML.escape(secret))</code></p></div>
                    """
                } ?? ""
            let trimmed =
                outcome.trimmed.isEmpty
                ? ""
                : ConsolePages.notice(
                    ConsolePages.t("console.apps.trimmed", l, ["values": outcome.trimmed.values.flatMap { $0 }.joined(separator: " ")]))
            let body = """
                \(ConsolePages.notice(ConsolePages.t("console.apps.created", l)))\(trimmed)
                <dl><dt>\(ConsolePages.e("console.apps.client_id", l))</dt><dd><code id="client-id">\(HTML.escape(c.clientId))</code></dd></dl>
                \(secret)
                <p><a href="/admin/applications/\(Self.pathId(c.clientId))">\(ConsolePages.e("console.apps.open", l))</a></p>
                """
            return Self.page(signedIn, l, title: c.name, body: body, status: .created)
        } catch let error as OAuthError {
            let body =
                ConsolePages.error(ConsolePages.t("console.apps.invalid", l, ["reason": error.description]))
                + Self.form(signedIn, values: values, action: "/admin/applications", locale: l)
            return Self.page(signedIn, l, titleKey: "console.apps.new", body: body, status: .badRequest)
        }
    }

    private func update(_ id: String, _ params: Parameters, _ signedIn: ConsoleOperator, request: Request, context: LatchkeyRequestContext)
        async throws -> Response
    {
        let l = request.locale()
        guard let record = try await store.client(id: id), record.origin == .registration else { return Self.notFound(signedIn, l) }
        let values = FormValues(params)
        // The form shows some settings: the others (keys, logout URIs, DPoP, the security profile …) stay as they are.
        let current = record.configuration
        var metadata = ClientMetadata(describing: current)
        values.apply(to: &metadata)
        if current.tokenEndpointAuthMethod != .none && values.confidential {
            // "Confidential" keeps the way it authenticates (a secret, or private_key_jwt with the keys it registered).
            metadata.tokenEndpointAuthMethod = current.tokenEndpointAuthMethod.rawValue
        } else {
            metadata.tokenEndpointAuthSigningAlg = nil  // only a private_key_jwt application has one
        }
        do {
            let outcome = try await registrations.update(
                record, with: metadata, actor: signedIn.caller.auditActor, via: "console", origin: Self.origin(context))
            if let secret = outcome.secret {  // made confidential: its first secret, shown once
                return Self.page(
                    signedIn, l, title: outcome.record.configuration.name,
                    body: """
                        <div class="secret" role="status"><p><strong>\(ConsolePages.e("console.apps.secret.once", l))</strong></p>
                        <p>\(ConsolePages.e("console.apps.secret", l)): <code id="client-secret">\(HTML.escape(secret))</code></p></div>
                        <p><a href="/admin/applications/\(Self.pathId(id))">\(ConsolePages.e("console.apps.open", l))</a></p>
                        """)
            }
            return Responses.redirect(to: "/admin/applications/\(Self.pathId(id))?done=saved", afterPost: true)
        } catch let error as OAuthError {
            let body =
                ConsolePages.error(ConsolePages.t("console.apps.invalid", l, ["reason": error.description]))
                + Self.form(signedIn, values: values, action: "/admin/applications/\(Self.pathId(id))", locale: l)
            return Self.page(signedIn, l, title: record.configuration.name, body: body, status: .badRequest)
        }
    }

    private func rotate(_ id: String, _ params: Parameters, _ signedIn: ConsoleOperator, request: Request, context: LatchkeyRequestContext)
        async throws -> Response
    {
        let l = request.locale()
        guard let record = try await store.client(id: id), record.origin == .registration else { return Self.notFound(signedIn, l) }
        let grace = Int(try params.single("grace_period_seconds") ?? "0") ?? -1
        do {
            let rotated = try await registrations.rotateSecret(
                record, graceSeconds: grace, actor: signedIn.caller.auditActor, via: "console", origin: Self.origin(context))
            let until = Date(timeIntervalSince1970: TimeInterval(rotated.previousSecretExpiresAt))
            return Self.page(
                signedIn, l, title: record.configuration.name,
                body: """
                    <div class="secret" role="status"><p><strong>\(ConsolePages.e("console.apps.secret.once", l))</strong></p>
                    <p>\(ConsolePages.e("console.apps.secret", l)): <code id="client-secret">\(HTML.escape(rotated.clientSecret))</code></p>
                    <p>\(ConsolePages.e("console.apps.previous_until", l)) \(ConsolePages.date(until, l))</p></div>
                    <p><a href="/admin/applications/\(Self.pathId(id))">\(ConsolePages.e("console.apps.open", l))</a></p>
                    """)
        } catch let error as OAuthError {
            return Self.page(
                signedIn, l, title: record.configuration.name,
                body: ConsolePages.error(ConsolePages.t("console.apps.invalid", l, ["reason": error.description])), status: .badRequest)
        }
    }

    private func delete(_ id: String, _ params: Parameters, _ signedIn: ConsoleOperator, request: Request, context: LatchkeyRequestContext)
        async throws -> Response
    {
        let l = request.locale()
        guard let record = try await store.client(id: id), record.origin == .registration else { return Self.notFound(signedIn, l) }
        guard try params.single("confirm") == "yes" else {
            return Self.page(
                signedIn, l, title: record.configuration.name, body: ConsolePages.error(ConsolePages.t("console.apps.delete.unconfirmed", l)),
                status: .badRequest)
        }
        try await registrations.delete(record, actor: signedIn.caller.auditActor, via: "console", origin: Self.origin(context))
        return Responses.redirect(to: "/admin/applications?done=deleted", afterPost: true)
    }

    // MARK: Helpers

    static func page(
        _ signedIn: ConsoleOperator, _ l: SupportedLocale, titleKey: String? = nil, title: String? = nil, body: String,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let heading = title ?? ConsolePages.t(titleKey ?? "console.title", l)
        return Responses.html(
            ConsolePages.layout(title: heading, body: body, section: .applications, signedIn: signedIn, locale: l), status: status)
    }

    static func notFound(_ signedIn: ConsoleOperator, _ l: SupportedLocale) -> Response {
        page(signedIn, l, titleKey: "console.notfound", body: "<p>\(ConsolePages.e("console.notfound.body", l))</p>", status: .notFound)
    }

    /// `authorization_code refresh_token device_code`: the last part of each grant type's name (URN grants included).
    static func shortGrantNames(_ grants: [GrantType]) -> String {
        grants.map { $0.rawValue.split(separator: ":").last.map(String.init) ?? $0.rawValue }.joined(separator: " ")
    }

    static func pathId(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? id
    }

    static func origin(_ context: LatchkeyRequestContext) -> AuditOrigin {
        AuditOrigin(client: ConsoleClient.id, address: context.clientAddress, logger: context.logger)
    }
}
