import Foundation
import Hummingbird

/// The server's root page `/`: what this server is, for a person who typed its address or followed a link to it, and
/// the way to their account page (when it is on). It reads nothing and sets nothing.
struct HomePage: Sendable {
    let accountPageEnabled: Bool

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get("/") { request, _ in Responses.html(self.render(request.locale())) }
    }

    func render(_ l: SupportedLocale) -> String {
        let account = accountPageEnabled ? "<p><a href=\"/account\">\(HTML.escape(Pages.t("home.account", l)))</a></p>" : ""
        let body = """
            <h1>\(HTML.escape(Pages.t("home.title", l)))</h1>
            <p>\(HTML.escape(Pages.t("home.body", l)))</p>
            \(account)
            <p><a href="/.well-known/openid-configuration">\(HTML.escape(Pages.t("home.developers", l)))</a></p>
            """
        return Pages.layout(title: Pages.t("home.title", l), body: body, locale: l)
    }
}
