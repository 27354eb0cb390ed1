import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// Review 3, R3-6: a `registration` token (the operator's automation, no admin role) manages the applications its
/// holder registered, and no others: not one an administrator made in the console, whose redirect URIs it could
/// otherwise extend (and steal codes) or whose secret it could rotate (and lock the application out). Each
/// application's own registration access token still manages it, and administrators manage every registered one.
@Suite("Registration ownership: a registration token manages only its own registrations")
struct RegistrationOwnershipTests {
    static let adminApp = "https://payroll.example/cb"

    /// `ClientRegistrationTests`' server (backend may get `registration` and `scim.admin` by client credentials, demo is
    /// an administrator) with a second automation, `partner`, allowed `registration` too; demo gets a TOTP second
    /// factor when `secondFactor` (the console requires one). Returns the server and demo's TOTP secret.
    static func start(secondFactor: Bool = true) async throws -> (TestServer, String) {
        let partner = ClientConfiguration(
            clientId: "partner", name: "Partner automation", clientSecret: "partner-secret-0123456789",
            tokenEndpointAuthMethod: .clientSecretBasic, grantTypes: [.clientCredentials], scopes: ["registration"])
        let server = try await TestServer.start { configuration in
            configuration.clients = configuration.clients.map { client in
                var client = client
                if ["latchkey-demo", "backend"].contains(client.clientId) { client.scopes += ["registration", "scim.admin"] }
                return client
            }
            configuration.clients.append(partner)
            configuration.users = configuration.users.map { user in
                var user = user
                if user.username == "demo@example.com" { user.roles = ["admin"] }
                return user
            }
        }
        guard secondFactor else { return (server, "") }
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: demo.id).secret
        return (server, secret)
    }

    /// A `registration` token of `client` (client credentials), as the operator's automation holds.
    static func registrationToken(_ server: TestServer, client: String, secret: String) async throws -> String {
        let answer = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials", "scope": "registration"],
            headers: ["Authorization": basicAuth(client, secret)])
        return try #require(try answer.json()["access_token"] as? String, "\(answer.text)")
    }

    static var confidentialApp: [String: Any] {
        [
            "client_name": "Reports", "redirect_uris": ["https://reports.example/cb"], "grant_types": ["authorization_code"],
            "token_endpoint_auth_method": "client_secret_basic", "application_type": "web", "scope": "openid"
        ]
    }

    @Test(
        "an application an administrator made in the console: another client's registration token can neither PUT its redirect_uris nor rotate its secret"
    )
    func consoleApplicationsAreForAdministrators() async throws {
        let (server, secret) = try await Self.start()
        defer { Task { await server.stop() } }
        let (browser, landed) = try await ConsoleTests.signIn(server, secret: secret)
        #expect(landed.location == "/admin/applications", "\(landed.status)")
        let form = try await browser.get(server.base + "/admin/applications/new")
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: form.text))
        let created = try await ConsoleTests.post(
            browser, server.base + "/admin/applications",
            [
                ("csrf", csrf), ("name", "Payroll"), ("app_type", "native"), ("confidential", "yes"), ("redirect_uris", Self.adminApp),
                ("grant_types", "authorization_code"), ("scope", "openid")
            ])
        #expect(created.status == 201, "\(created.text.prefix(400))")
        let clientId = try #require(ConsoleTests.code("client-id", in: created.text))

        let automation = try await Self.registrationToken(server, client: "partner", secret: "partner-secret-0123456789")
        let path = "/oauth2/register/\(clientId)"
        let read = try await server.call("GET", path, token: automation, contentType: "application/json")
        #expect([401, 403].contains(read.status), "read: \(read.status) \(read.text)")
        let body: [String: Any] = [
            "client_id": clientId, "client_name": "Payroll", "redirect_uris": [Self.adminApp, "https://attacker.example/steal"],
            "grant_types": ["authorization_code"], "token_endpoint_auth_method": "client_secret_basic", "application_type": "native",
            "scope": "openid"
        ]
        let put = try await server.call("PUT", path, token: automation, json: body, contentType: "application/json")
        #expect([401, 403].contains(put.status), "PUT: \(put.status) \(put.text)")
        let rotate = try await server.call(
            "POST", path + "/secret", token: automation, json: ["grace_period_seconds": 0], contentType: "application/json")
        #expect([401, 403].contains(rotate.status), "secret: \(rotate.status) \(rotate.text)")
        let delete = try await server.call("DELETE", path, token: automation, contentType: "application/json")
        #expect([401, 403].contains(delete.status), "DELETE: \(delete.status) \(delete.text)")

        let record = try #require(try await server.server.store.client(id: clientId))
        #expect(record.configuration.redirectUris == [Self.adminApp], "the redirect URIs are unchanged")
        #expect(record.previousSecretHash == nil, "the secret was not rotated")
    }

    @Test("positive control: the automation manages what it registered (read, PUT, rotate, delete), and not another automation's")
    func theAutomationManagesItsOwnRegistrations() async throws {
        let (server, _) = try await Self.start()
        defer { Task { await server.stop() } }
        let partner = try await Self.registrationToken(server, client: "partner", secret: "partner-secret-0123456789")
        let backend = try await Self.registrationToken(server, client: "backend", secret: "backend-secret-0123456789")
        let registered = try await ClientRegistrationTests.register(server, Self.confidentialApp, token: partner)
        #expect(registered.status == 201, "\(registered.text)")
        let clientId = try #require(try registered.string("client_id"))

        #expect(try await ClientRegistrationTests.manage(server, "GET", registered, token: partner).status == 200)
        var changed = Self.confidentialApp
        changed["client_id"] = clientId
        changed["redirect_uris"] = ["https://reports.example/cb", "https://reports.example/cb2"]
        let put = try await ClientRegistrationTests.manage(server, "PUT", registered, json: changed, token: partner)
        #expect(put.status == 200, "\(put.text)")
        let rotated = try await ClientRegistrationTests.manage(
            server, "POST", registered, json: ["grace_period_seconds": 60], token: partner, path: "/secret")
        #expect(rotated.status == 200, "\(rotated.text)")

        // Another automation (backend, with the registration scope only in its token) may not touch it.
        #expect([401, 403].contains(try await ClientRegistrationTests.manage(server, "GET", registered, token: backend).status))
        // Its own registration access token still manages it.
        #expect(try await ClientRegistrationTests.manage(server, "GET", registered).status == 200)

        // The change of redirect_uris is audited with the old and the new values.
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationUpdated], limit: 1)).first)
        #expect(event.details["changed"]?.contains("redirect_uris") == true)
        #expect(event.details["redirect_uris_old"] == "https://reports.example/cb", "\(event.details)")
        #expect(event.details["redirect_uris_new"] == "https://reports.example/cb https://reports.example/cb2", "\(event.details)")

        #expect(try await ClientRegistrationTests.manage(server, "DELETE", registered, token: partner).status == 204)
    }

    @Test("an administrator's API token (admin role) and an isAdmin client token still manage every registered application")
    func administratorsManageEveryRegistration() async throws {
        let (server, _) = try await Self.start(secondFactor: false)
        defer { Task { await server.stop() } }
        let partner = try await Self.registrationToken(server, client: "partner", secret: "partner-secret-0123456789")
        let registered = try await ClientRegistrationTests.register(server, Self.confidentialApp, token: partner)
        #expect(registered.status == 201, "\(registered.text)")
        let admin = try await server.userTokens(scope: "openid registration")
        #expect(try await ClientRegistrationTests.manage(server, "GET", registered, token: admin.accessToken).status == 200)
        let operatorToken = try await server.clientToken(scope: "registration scim.admin")
        #expect(try await ClientRegistrationTests.manage(server, "GET", registered, token: operatorToken).status == 200)
    }
}
