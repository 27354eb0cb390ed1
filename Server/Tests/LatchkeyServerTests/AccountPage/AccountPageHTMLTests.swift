import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// Every section of the account page, in English and in Arabic: the language and direction, one `<h1>`, a label for
/// every field, no catalog key left untranslated, and no script but the passkeys page's own same-origin file (the
/// strict policy forbids any other).
@Suite("Account page HTML")
struct AccountPageHTMLTests {
    @Test(arguments: ["en", "ar"])
    func everySectionIsLabelledTranslatedAndScriptFree(language: String) async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let ada = try await AccountPageRig.ada(server)
        try await server.server.store.grantConsent(userId: ada.id, clientId: "backend", scopes: ["openid", "email"], now: Date())
        try await server.server.store.insertPasskey(
            PasskeyRecord(
                id: "cHJlc2VudA", userId: ada.id, publicKey: Data([1]), algorithm: -7, signCount: 0, aaguid: Data(count: 16),
                friendlyName: "Ada's <phone>", attestationFormat: "none", backupEligible: true, backedUp: true, createdAt: Date(),
                lastUsedAt: nil))
        let (browser, _) = try await AccountPageRig.signIn(server, language: language)
        for section in AccountPages.Section.allCases {
            let page = try await browser.get(server.base + section.path, headers: ["Accept-Language": language])
            #expect(page.status == 200, "\(section.path)")
            let html = page.text
            #expect(html.contains("<html lang=\"\(language)\" dir=\"\(language == "ar" ? "rtl" : "ltr")\">"), "\(section.path)")
            #expect(html.components(separatedBy: "<h1").count == 2, "\(section.path): one h1")
            let rawKey = #/(account|scope|home|page)\.[a-z_]+(\.[a-z_]+)?|user:attributes/#
            #expect(html.firstMatch(of: rawKey) == nil, "\(section.path): a raw key \(html.firstMatch(of: rawKey).map { String($0.output.0) } ?? "")")
            #expect(html.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil, "\(section.path)")
            let policy = try #require(page.header("Content-Security-Policy"))
            #expect(policy.hasPrefix("default-src 'none';"), "\(section.path): \(policy)")
            if section == .passkeys {
                #expect(html.components(separatedBy: "<script").count == 2)
                #expect(html.contains("<script src=\"/assets/account-passkeys.js\" defer></script>") && policy.contains("script-src 'self'"))
                #expect(html.contains("<bdi>Ada&#39;s &lt;phone&gt;</bdi>"), "the name escaped")
                #expect(html.contains("value=\"Ada&#39;s &lt;phone&gt;\""), "escaped in the rename field too")
                #expect(
                    html.contains(try Regex(#"<button class="secondary" aria-label="[^"<>]*Ada&#39;s &lt;phone&gt;[^"<>]*""#)),
                    "and in the remove button's accessible name")
            } else {
                #expect(!html.contains("<script") && !policy.contains("script-src"), "\(section.path): \(policy)")
            }
            #expect(page.header("X-Frame-Options") == "DENY" && page.header("Cache-Control") == "no-store")
            // Every field a person types into or ticks has a label that names it.
            let fields = try Regex(#"<input (?![^>]*type="hidden")(?![^>]*\shidden[\s>])[^>]*id="([^"]+)""#)
            for match in html.matches(of: fields) {
                let id = String(match.output[1].substring ?? "")
                #expect(
                    html.contains("<label for=\"\(id)\"") || html.contains("class=\"inline\" for=\"\(id)\"")
                        || html.contains("class=\"skip\" for=\"\(id)\""), "\(section.path): \(id)")
            }
            #expect(html.contains("aria-current=\"page\""), "\(section.path)")
        }
    }
}
