import Foundation
import Hummingbird

/// The account page's frame: its sections, the header's "Sign out", the banner that asks for a fresh sign-in, dates in
/// the person's language, and message pages (signed out, refusals). Texts are `account.*` in `MessageCatalog`.
enum AccountPages {
    enum Section: String, CaseIterable, Sendable {
        case profile, security, passkeys, linked, sessions, applications, data
        var path: String { "/account/\(rawValue)" }
        var titleKey: String { "account.nav.\(rawValue)" }
    }

    static func t(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String { Pages.t(key, locale, arguments) }

    /// `t` escaped for HTML.
    static func e(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String {
        HTML.escape(t(key, locale, arguments))
    }

    /// A page of the account: the sections (`section` current), "Sign out" for `holder`, then `body`.
    static func layout(title: String, body: String, section: Section?, holder: AccountHolder?, locale l: SupportedLocale) -> String {
        let navigation = holder.map { _ in
            OwnApplicationPage.Navigation(
                label: t("account.nav.label", l), items: Section.allCases.map { ($0.path, t($0.titleKey, l), $0 == section) })
        }
        let account = holder.map { holder in
            "<span class=\"hint\">\(e("account.signedin_as", l, ["user": holder.user.username]))</span>"
                + OwnApplicationPage.button("/account/signout", label: t("account.signout", l), csrf: holder.csrf, style: "secondary")
        }
        return OwnApplicationPage.render(
            title: title, brand: t("account.title", l), skip: t("account.skip", l), navigation: navigation, account: account ?? "", body: body,
            locale: l)
    }

    /// A section's page as the answer.
    static func page(
        _ section: Section, _ holder: AccountHolder, _ l: SupportedLocale, body: String, status: HTTPResponse.Status = .ok
    ) -> Response {
        Responses.html(
            layout(title: t(section.titleKey, l), body: body, section: section, holder: holder, locale: l), status: status,
            headers: [.contentLanguage: l.tag])
    }

    /// A message page (signed out, a refusal), with a link to sign in (`fresh`: asking for the credentials again,
    /// returning to `returnPath`).
    static func message(
        title: String, text: String, action: String? = nil, fresh: Bool = false, returnPath: String? = nil, holder: AccountHolder?,
        locale l: SupportedLocale
    ) -> String {
        let link = action.map { "<p><a href=\"\(HTML.escape(signInPath(fresh: fresh, returnPath: returnPath)))\">\(HTML.escape($0))</a></p>" } ?? ""
        return layout(title: title, body: "<p id=\"message\">\(HTML.escape(text))</p>\(link)", section: nil, holder: holder, locale: l)
    }

    /// "Confirm it's you": a change that needs a recent sign-in, refused without changing anything, with the way to a
    /// fresh sign-in that comes back to `section`.
    static func stale(_ holder: AccountHolder?, section: Section?, _ l: SupportedLocale) -> Response {
        Responses.html(
            message(
                title: t("account.stale.title", l), text: t("account.stale.body", l), action: t("account.fresh.action", l), fresh: true,
                returnPath: section?.path, holder: holder, locale: l), status: .unauthorized)
    }

    /// A page after which the browser is no longer signed in to the account page (signed out, this browser's session
    /// ended, the account deleted): `text`, a way to sign in again, and the cookie cleared (`clearing`).
    static func signedOut(title: String, text: String, clearing cookie: String, _ l: SupportedLocale) -> Response {
        Responses.html(message(title: title, text: text, action: t("account.signin", l), holder: nil, locale: l), headers: [.setCookie: cookie])
    }

    /// `/account/login`, asking for the credentials again (`fresh`) and coming back to `returnPath`.
    static func signInPath(fresh: Bool, returnPath: String?) -> String {
        var items: [URLQueryItem] = []
        if fresh { items.append(URLQueryItem(name: "fresh", value: "1")) }
        if let returnPath { items.append(URLQueryItem(name: "return", value: returnPath)) }
        var components = URLComponents()
        components.queryItems = items
        return "/account/login" + (items.isEmpty ? "" : "?" + (components.percentEncodedQuery ?? ""))
    }

    /// Above a form that needs a recent sign-in, when this one is not: why its fields are off, and the way to a fresh
    /// sign-in that comes back to `section`.
    /// `reason` says what needs it, when not the whole page.
    static func freshBanner(_ holder: AccountHolder, section: Section, _ l: SupportedLocale, reason: String = "account.fresh.banner") -> String {
        guard !holder.isFresh else { return "" }
        return """
            <p class="fresh" id="fresh">\(e(reason, l)) <a href="\(HTML.escape(signInPath(fresh: true, returnPath: section.path)))">\(e("account.fresh.action", l))</a></p>
            """
    }

    /// `<fieldset disabled>` around a form's fields while the sign-in is not recent, so nothing is typed for nothing.
    static func freshFieldset(_ holder: AccountHolder, _ content: String) -> String {
        "<fieldset\(holder.isFresh ? "" : " disabled aria-describedby=\"fresh\"")>\(content)</fieldset>"
    }

    /// A day and time in the person's language, in UTC and saying so (the server does not know the person's zone),
    /// machine-readable in `datetime`.
    static func date(_ date: Date, _ l: SupportedLocale) -> String {
        "<time datetime=\"\(HTML.escape(date.formatted(.iso8601)))\">\(HTML.escape(dateText(date, l)))</time>"
    }

    /// `date`'s text: the day, the time and the zone (UTC).
    static func dateText(_ date: Date, _ l: SupportedLocale) -> String {
        date.formatted(
            Date.FormatStyle(locale: Locale(identifier: l.tag), timeZone: utc).year().month(.wide).day().hour().minute()
                .timeZone(.specificName(.short)))
    }

    /// A day in the person's language (UTC, as the deletion's due day is kept and mailed), as plain text.
    static func day(_ date: Date, _ l: SupportedLocale) -> String {
        date.formatted(Date.FormatStyle(date: .long, time: .omitted, locale: Locale(identifier: l.tag), timeZone: utc))
    }

    private static let utc = TimeZone(identifier: "UTC") ?? .gmt

    /// After a change, back to `section` saying what was done (`done`), sealed to this session (a MAC keyed by its
    /// CSRF token), so that a link from elsewhere cannot put a notice such as "Your password was changed" on the page.
    static func back(to section: Section, _ holder: AccountHolder, done: String) -> Response {
        Responses.redirect(to: path(section, holder, done: done), afterPost: true)
    }

    /// `section`'s path saying what was done (`done`), sealed to this session (see `back(to:_:done:)`): where a script
    /// goes after a change it made.
    static func path(_ section: Section, _ holder: AccountHolder, done: String) -> String {
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "done", value: done), URLQueryItem(name: "seal", value: seal(done, holder))]
        return section.path + "?" + (components.percentEncodedQuery ?? "")
    }

    /// What a change sealed with `back(to:_:done:)` did, when the seal is this session's; nil otherwise.
    static func done(_ params: Parameters, _ holder: AccountHolder) throws -> String? {
        guard let done = try params.single("done"), let presented = try params.single("seal"),
            Secrets.constantTimeEquals(presented, seal(done, holder))
        else { return nil }
        return done
    }

    private static func seal(_ value: String, _ holder: AccountHolder) -> String {
        CookiePolicy.csrfToken(secret: holder.csrf, requestId: "notice|" + value)
    }

    static func csrfField(_ holder: AccountHolder) -> String { OwnApplicationPage.csrfField(holder.csrf) }

    /// A one-button form; `needsFreshSignIn` turns it off (pointing to `freshBanner`'s reason) while the sign-in is not
    /// recent.
    static func button(
        _ action: String, label: String, holder: AccountHolder, style: String = "", fields: [String: String] = [:], accessibleLabel: String? = nil,
        needsFreshSignIn: Bool = false
    ) -> String {
        OwnApplicationPage.button(
            action, label: label, csrf: holder.csrf, style: style, fields: fields, accessibleLabel: accessibleLabel,
            disabled: needsFreshSignIn && !holder.isFresh ? "fresh" : nil)
    }
}
