import Foundation
import Hummingbird

/// The console's audit trail: the events newest first, filtered by type, outcome, account and time (the filters of
/// `GET /admin/v1/audit-events`, read by the same code), a page at a time with the same keyset cursor.
struct ConsoleAudit: Sendable {
    let store: any AuditStore & UserStore

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>, console: ConsoleController) {
        group.get("audit") { request, _ in
            try await console.serve(request) { signedIn, params in try await self.list(params, signedIn, locale: request.locale()) }
        }
    }

    private func list(_ params: Parameters, _ signedIn: ConsoleOperator, locale l: SupportedLocale) async throws -> Response {
        // Empty fields of the filter form are absent filters; a date-time field's value has no zone: UTC.
        var filters: [String: [String]] = [:]
        for name in ["type", "outcome", "subject", "client_id", "cursor"] {
            if let value = try params.single(name), !value.isEmpty { filters[name] = [value] }
        }
        for name in ["since", "until"] {
            if let value = try params.single(name), !value.isEmpty { filters[name] = [value.count == 16 ? value + ":00Z" : value] }
        }
        filters["limit"] = ["50"]
        var error: String?
        var events: [AuditEvent] = []
        var next: String?
        do {
            var query = try AuditQuery(parameters: Parameters(filters))
            query.limit = 51
            let found = try await store.auditEvents(query)
            events = Array(found.prefix(50))
            next = found.count > 50 ? events.last.map { AuditCursor(after: $0).token } : nil
        } catch let refusal as APIError {
            error = ConsolePages.t("console.audit.invalid", l, ["reason": refusal.technical])
        }
        let types = ([""] + AuditEvent.Kind.allCases.map(\.rawValue)).map { (type) -> String in
            let label = type.isEmpty ? ConsolePages.t("console.audit.any", l) : type
            return "<option value=\"\(HTML.escape(type))\"\(filters["type"]?.first == type ? " selected" : "")>\(HTML.escape(label))</option>"
        }.joined()
        let outcomes = ["", "success", "failure"].map { (outcome) -> String in
            let label = outcome.isEmpty ? ConsolePages.t("console.audit.any", l) : ConsolePages.t("console.audit.outcome.\(outcome)", l)
            return "<option value=\"\(outcome)\"\(filters["outcome"]?.first == outcome ? " selected" : "")>\(HTML.escape(label))</option>"
        }.joined()
        // Accounts by their usernames (an id alone tells an operator nothing), linked to their page.
        var usernames: [String: String] = [:]
        for id in Set(events.flatMap { [$0.subject, $0.actor] }.compactMap { $0 }) where !id.contains(":") && id != AuditEvent.anonymous {
            usernames[id] = try await store.user(id: id)?.username
        }
        func account(_ id: String?) -> String {
            guard let id else { return "—" }
            guard let name = usernames[id] else { return "<bdi>\(HTML.escape(id))</bdi>" }
            return "<a href=\"/admin/users/\(ConsoleApplications.pathId(id))\" title=\"\(HTML.escape(id))\"><bdi>\(HTML.escape(name))</bdi></a>"
        }
        let rows = events.map { (event) -> String in
            let subject = account(event.subject)
            let details = event.details.keys.sorted().map { "\($0)=\(event.details[$0] ?? "")" }.joined(separator: " ")
            return """
                <tr><td class="time">\(ConsolePages.date(event.at, l))</td><td>\(HTML.escape(event.type.rawValue))</td>
                <td>\(ConsolePages.e("console.audit.outcome.\(event.outcome.rawValue)", l))</td><td>\(account(event.actor))</td>
                <td>\(subject)</td><td>\(HTML.escape(event.clientId ?? "—"))</td><td>\(HTML.escape(event.clientAddress ?? "—"))</td>
                <td>\(HTML.escape(details))</td></tr>
                """
        }.joined()
        var pager = ""
        if let next {
            var query = filters
            query["cursor"] = [next]
            query["limit"] = nil
            var components = URLComponents()
            components.queryItems = query.keys.sorted().compactMap { key in query[key]?.first.map { URLQueryItem(name: key, value: $0) } }
            pager =
                "<p><a href=\"/admin/audit?\(HTML.escape(components.percentEncodedQuery ?? ""))\" rel=\"next\">\(ConsolePages.e("console.next", l))</a></p>"
        }
        func field(_ name: String) -> String { HTML.escape(((try? params.single(name)) ?? nil) ?? "") }
        let body = """
            \(ConsolePages.error(error))
            <form method="get" action="/admin/audit" class="filters" aria-label="\(ConsolePages.e("console.audit.filters", l))">
            <div><label for="type">\(ConsolePages.e("console.audit.type", l))</label><select id="type" name="type">\(types)</select></div>
            <div><label for="outcome">\(ConsolePages.e("console.audit.outcome", l))</label><select id="outcome" name="outcome">\(outcomes)</select></div>
            <div><label for="subject">\(ConsolePages.e("console.audit.subject", l))</label><input type="text" id="subject" name="subject" value="\(field("subject"))"></div>
            <div><label for="since">\(ConsolePages.e("console.audit.since", l))</label><input type="datetime-local" id="since" name="since" value="\(field("since"))"></div>
            <div><label for="until">\(ConsolePages.e("console.audit.until", l))</label><input type="datetime-local" id="until" name="until" value="\(field("until"))"></div>
            <div><button type="submit">\(ConsolePages.e("console.audit.apply", l))</button></div></form>
            <div class="table"><table><caption>\(ConsolePages.e("console.audit.caption", l))</caption>
            <thead><tr><th scope="col">\(ConsolePages.e("console.audit.at", l))</th><th scope="col">\(ConsolePages.e("console.audit.type", l))</th>
            <th scope="col">\(ConsolePages.e("console.audit.outcome", l))</th><th scope="col">\(ConsolePages.e("console.audit.actor", l))</th>
            <th scope="col">\(ConsolePages.e("console.users.username", l))</th><th scope="col">\(ConsolePages.e("console.audit.application", l))</th>
            <th scope="col">\(ConsolePages.e("console.audit.address", l))</th><th scope="col">\(ConsolePages.e("console.audit.details", l))</th></tr></thead>
            <tbody>\(rows)</tbody></table></div>\(pager)
            """
        return Responses.html(
            ConsolePages.layout(title: ConsolePages.t("console.nav.audit", l), body: body, section: .audit, signedIn: signedIn, locale: l),
            status: error == nil ? .ok : .badRequest)
    }
}
