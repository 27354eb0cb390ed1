import Foundation

/// The console's pages: plain HTML with inline CSS and no JavaScript (the strict CSP of `Responses.html`), every
/// text from `MessageCatalog` (`console.*`) in the operator's language, `<html lang dir>` and logical CSS properties
/// so right-to-left languages mirror. For keyboards and screen readers: a skip link, one `<h1>` per page, the current
/// section marked `aria-current`, every field labelled, tables with captions and column headers, results and errors
/// announced (`role=status`, `role=alert`), visible focus.
enum ConsolePages {
    enum Section: String, CaseIterable {
        case applications, users, audit
        var path: String { "/admin/\(rawValue)" }
        var titleKey: String { "console.nav.\(rawValue)" }
    }

    static func t(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String {
        MessageCatalog.text(key, locale: locale, arguments: arguments, default: key)
    }

    /// `t` escaped for HTML.
    static func e(_ key: String, _ locale: SupportedLocale, _ arguments: [String: String] = [:]) -> String {
        HTML.escape(t(key, locale, arguments))
    }

    /// A console page: header with the sections and "Sign out" (a CSRF-bound form), then `body` in `<main>`.
    static func layout(title: String, body: String, section: Section?, signedIn: ConsoleOperator?, locale l: SupportedLocale) -> String {
        let navigation = signedIn.map { _ in
            OwnApplicationPage.Navigation(
                label: t("console.nav.label", l), items: Section.allCases.map { ($0.path, t($0.titleKey, l), $0 == section) })
        }
        let account = signedIn.map { signedIn in
            OwnApplicationPage.button(
                "/admin/signout", label: t("console.signout", l, ["user": signedIn.user.username]), csrf: signedIn.csrf, style: "secondary")
        }
        return OwnApplicationPage.render(
            title: title, brand: t("console.title", l), skip: t("console.skip", l), navigation: navigation, account: account ?? "", body: body,
            locale: l)
    }

    static func csrfField(_ signedIn: ConsoleOperator) -> String { OwnApplicationPage.csrfField(signedIn.csrf) }

    /// A one-button form posting to `action` (with the CSRF token), optionally with hidden fields.
    static func button(
        _ action: String, label: String, signedIn: ConsoleOperator, style: String = "", fields: [String: String] = [:]
    ) -> String {
        OwnApplicationPage.button(action, label: label, csrf: signedIn.csrf, style: style, fields: fields)
    }

    static func notice(_ text: String?) -> String { OwnApplicationPage.notice(text) }

    static func error(_ text: String?) -> String { OwnApplicationPage.error(text) }

    static func date(_ date: Date?, _ locale: SupportedLocale) -> String {
        guard let date else { return "—" }
        // Isolated, so a right-to-left page does not reorder its digits and separators.
        return "<bdi>\(HTML.escape(date.formatted(.iso8601)))</bdi>"
    }

    /// A message page of the console (refusals, "sign in again").
    static func message(title: String, text: String, action: String? = nil, signedIn: ConsoleOperator?, locale l: SupportedLocale) -> String {
        let link = action.map { "<p><a href=\"/admin/login?fresh=1\">\(HTML.escape($0))</a></p>" } ?? ""
        return layout(title: title, body: "<p id=\"message\">\(HTML.escape(text))</p>\(link)", section: nil, signedIn: signedIn, locale: l)
    }
}
