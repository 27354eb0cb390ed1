import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// What the hosted sign-in page shows of an application besides its name: the logo, privacy policy and terms it
/// registered (OpenID Connect Registration `logo_uri`, `policy_uri`, `tos_uri`, `client_uri`; the Dynamic plan's
/// `oidcc-registration-logo-uri`, `-policy-uri` and `-tos-uri`, which ask to see them on the page).
@Suite("The sign-in page shows the application's logo, policy and terms")
struct ApplicationDisplayTests {
    @Test("oidcc-registration-logo-uri / -policy-uri / -tos-uri: shown, with the logo's origin alone allowed for images")
    func shownOnTheSignInPage() async throws {
        let server = try await TestServer.start { configuration in
            for index in configuration.clients.indices where configuration.clients[index].clientId == "latchkey-demo" {
                configuration.clients[index].logoUri = "https://cdn.notes.example/logo.png?v=2"
                configuration.clients[index].clientUri = "https://notes.example/"
                configuration.clients[index].policyUri = "https://notes.example/privacy"
                configuration.clients[index].tosUri = "https://notes.example/terms"
            }
        }
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.extra = ["ui_locales": "fr"]
        let page = try await server.openLoginPage(TestBrowser(), options)
        #expect(page.text.contains("<img class=\"app-logo\" src=\"https://cdn.notes.example/logo.png?v=2\" alt=\"\""))
        #expect(page.text.contains("<a href=\"https://notes.example/\" rel=\"noopener noreferrer\" target=\"_blank\"><img"))
        #expect(
            page.text.contains(
                "href=\"https://notes.example/privacy\" rel=\"noopener noreferrer\" target=\"_blank\">Politique de confidentialité</a>"))
        #expect(page.text.contains(">Conditions d&#39;utilisation</a>"))
        let csp = try #require(page.header("Content-Security-Policy"))
        #expect(csp.contains("img-src 'self' data: https://cdn.notes.example;"), "\(csp)")

        // An application without them: nothing shown, images from this server only.
        let plain = try await TestServer.start()
        defer { Task { await plain.stop() } }
        let plainPage = try await plain.openLoginPage(TestBrowser(), AuthorizeOptions())
        #expect(!plainPage.text.contains("class=\"app-logo\"") && !plainPage.text.contains("class=\"app-links\""))
        #expect(try #require(plainPage.header("Content-Security-Policy")).contains("img-src 'self' data:;"))
    }

    @Test("https (or loopback http) in the file; https of a public host through registration, echoed back")
    func urlRules() async throws {
        for (uri, accepted) in [
            ("https://notes.example/logo.png", true), ("http://127.0.0.1:8080/logo.png", true), ("http://notes.example/logo.png", false),
            ("javascript:alert(1)", false), ("https://u:p@notes.example/", false)
        ] {
            var client = ClientConfiguration(clientId: "c", redirectUris: ["http://127.0.0.1/cb"])
            client.logoUri = uri
            #expect(((try? client.validate()) != nil) == accepted, "\(uri)")
        }
        let server = try await ClientRegistrationTests.start()
        defer { Task { await server.stop() } }
        let token = try await server.clientToken(scope: "registration")
        var app = ClientRegistrationTests.publicApp
        app["logo_uri"] = "https://notes.example/logo.png"
        app["policy_uri"] = "https://notes.example/privacy"
        app["tos_uri"] = "https://notes.example/terms"
        app["client_uri"] = "https://notes.example/"
        let registered = try await ClientRegistrationTests.register(server, app, token: token)
        #expect(registered.status == 201, "\(registered.text)")
        for member in ["logo_uri", "policy_uri", "tos_uri", "client_uri"] {
            #expect(try registered.string(member) == app[member] as? String, "\(member) echoed")
        }
        app["tos_uri"] = "http://notes.example/terms"
        let refused = try await ClientRegistrationTests.register(server, app, token: token)
        let error = try refused.string("error")
        #expect(refused.status == 400 && error == "invalid_client_metadata")
    }
}
