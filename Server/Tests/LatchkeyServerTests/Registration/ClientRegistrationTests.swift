import Foundation
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// OAuth 2.0 Dynamic Client Registration (RFC 7591) and its management protocol (RFC 7592) over real loopback HTTP:
/// an application registered with an initial access token is usable at once (also on another instance), read,
/// replaced and deleted with its registration access token, its secret rotated with a grace period; the RFC's errors;
/// who may do each; and the operator's policy, which registration cannot exceed.
@Suite("Dynamic client registration /oauth2/register")
struct ClientRegistrationTests {
    static let redirect = "http://127.0.0.1:7777/callback"

    /// The test server, with `backend` allowed to get initial access tokens (`registration` by client credentials),
    /// the demo user an administrator, and `latchkey-demo` able to ask for `registration` (for the user cases).
    static func start(_ policy: (inout ClientRegistrationPolicy) -> Void = { _ in }) async throws -> TestServer {
        var registration = ClientRegistrationPolicy()
        policy(&registration)
        let chosen = registration
        return try await TestServer.start { configuration in
            configuration.clientRegistration = chosen
            configuration.clients = configuration.clients.map { client in
                var client = client
                if ["latchkey-demo", "backend"].contains(client.clientId) { client.scopes += ["registration", "scim.admin"] }
                return client
            }
            configuration.users = configuration.users.map { user in
                var user = user
                if user.username == "demo@example.com" { user.roles = ["admin"] }
                return user
            }
            configuration.users.append(UserSeed(username: "ada@example.com", password: TestServer.adaPassword, claims: ["email": "ada@example.com"]))
        }
    }

    static var publicApp: [String: Any] {
        [
            "client_name": "Notes for iPad", "redirect_uris": [redirect], "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none", "application_type": "native", "scope": "openid profile email offline_access"
        ]
    }

    static func register(_ server: TestServer, _ body: [String: Any], token: String?) async throws -> HTTPResult {
        try await server.call("POST", "/oauth2/register", token: token, json: body, contentType: "application/json")
    }

    static func manage(_ server: TestServer, _ method: String, _ info: HTTPResult, json: Any? = nil, token: String? = nil, path: String = "")
        async throws -> HTTPResult
    {
        let id = try #require(try info.string("client_id"))
        let registrationToken = try #require(try info.string("registration_access_token"))
        return try await server.call(
            method, "/oauth2/register/\(id)\(path)", token: token ?? registrationToken, json: json, contentType: "application/json")
    }

    static func options(_ info: HTTPResult) throws -> AuthorizeOptions {
        var options = AuthorizeOptions()
        options.clientId = try #require(try info.string("client_id"))
        options.redirectUri = redirect
        return options
    }

    @Test func aRegisteredApplicationSignsPeopleInAtOnce() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let initial = try await server.clientToken(scope: "registration")
        let registered = try await Self.register(server, Self.publicApp, token: initial)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(registered.header("Cache-Control") == "no-store")
        let id = try #require(try registered.string("client_id"))
        #expect(try registered.string("client_name") == "Notes for iPad")
        #expect(try registered.value("redirect_uris") as? [String] == [Self.redirect])
        #expect(try registered.value("grant_types") as? [String] == ["authorization_code", "refresh_token"])
        #expect(try registered.value("response_types") as? [String] == ["code"])
        #expect(try registered.string("token_endpoint_auth_method") == "none")
        #expect(try registered.value("client_secret") == nil, "a public application has no secret")
        #expect(try registered.value("client_id_issued_at") as? Int != nil)
        #expect(try registered.string("registration_client_uri") == server.issuer + "/oauth2/register/" + id)
        #expect(try (registered.string("registration_access_token") ?? "").count >= 43)
        #expect(try registered.value("latchkey_trimmed") == nil)
        #expect(try registered.value("latchkey_require_pkce") as? Bool == true)

        // Usable at once: a sign-in with PKCE, tokens, a refresh.
        let tokens = try await server.tokens(TestBrowser(), try Self.options(registered))
        #expect(try await server.userinfo(tokens.accessToken).status == 200)
        let refreshed = try await server.refresh(try #require(tokens.refreshToken), clientId: id)
        #expect(refreshed.status == 200, "\(refreshed.text)")
        // Discovery names the endpoint.
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["registration_endpoint"] as? String == server.issuer + "/oauth2/register")

        // Audited with who registered it, and no credential in the row.
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationRegistered], limit: 5)).first)
        #expect(event.actor == "client:backend" && event.clientId == id)
        let row = String(describing: event)
        #expect(!row.contains(try #require(try registered.string("registration_access_token"))))
    }

    @Test func readReplaceAndDeleteWithTheRegistrationAccessToken() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let registered = try await Self.register(server, Self.publicApp, token: try await server.clientToken(scope: "registration"))
        let id = try #require(try registered.string("client_id"))
        let tokens = try await server.tokens(TestBrowser(), try Self.options(registered))

        let read = try await Self.manage(server, "GET", registered)
        #expect(read.status == 200, "\(read.text)")
        #expect(try read.string("client_id") == id && read.value("registration_access_token") == nil && read.value("client_secret") == nil)

        // A replacement: absent members take their defaults, the new redirect URI alone is accepted afterwards.
        var replacement = Self.publicApp
        replacement["client_id"] = id
        replacement["redirect_uris"] = ["http://127.0.0.1:7777/other"]
        replacement["client_name"] = "Notes"
        let updated = try await Self.manage(server, "PUT", registered, json: replacement)
        #expect(updated.status == 200, "\(updated.text)")
        #expect(try updated.string("client_name") == "Notes")
        var old = try Self.options(registered)
        old.redirectUri = Self.redirect
        let refused = try await TestBrowser().get(server.authorizeURL(old))
        #expect(refused.status == 400, "the old redirect URI is no longer registered")
        let change = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationUpdated], limit: 5)).first)
        #expect(change.details["changed"] == "client_name redirect_uris")

        // The body's client_id must be the application's own.
        replacement["client_id"] = "someone-else"
        let mismatch = try await Self.manage(server, "PUT", registered, json: replacement)
        #expect(try mismatch.status == 400 && mismatch.string("error") == "invalid_request")

        // Deleted: 204, then unknown (401, RFC 7592 §2.1), and its tokens stop working at once.
        let deleted = try await Self.manage(server, "DELETE", registered)
        #expect(deleted.status == 204)
        let gone = try await Self.manage(server, "GET", registered)
        #expect(gone.status == 401 && gone.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try await server.userinfo(tokens.accessToken).status == 401)
        #expect(try await server.refresh(try #require(tokens.refreshToken), clientId: id).status == 401)
        let removal = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationDeleted], limit: 5)).first)
        #expect(removal.clientId == id && removal.actor == "client:" + id)
    }

    @Test func aSecretRotationKeepsTheOldSecretForTheGracePeriod() async throws {
        let server = try await Self.start { $0.grantTypes.append(.clientCredentials) }
        defer { Task { await server.stop() } }
        let registered = try await Self.register(
            server,
            ["client_name": "Nightly export", "grant_types": ["client_credentials"], "scope": "profile", "application_type": "web"],
            token: try await server.clientToken(scope: "registration"))
        try #require(registered.status == 201, "\(registered.text)")
        let id = try #require(try registered.string("client_id"))
        let first = try #require(try registered.string("client_secret"))
        #expect(try registered.string("token_endpoint_auth_method") == "client_secret_basic", "RFC 7591 §2 default")
        #expect(try registered.value("client_secret_expires_at") as? Int == 0)
        #expect(try registered.value("redirect_uris") as? [String] == [])
        func token(_ secret: String) async throws -> Int {
            try await TestBrowser().postForm(
                server.base + "/oauth2/token", ["grant_type": "client_credentials"], headers: ["Authorization": basicAuth(id, secret)]
            ).status
        }
        #expect(try await token(first) == 200)

        let rotated = try await Self.manage(server, "POST", registered, json: ["grace_period_seconds": 3600], path: "/secret")
        #expect(rotated.status == 200, "\(rotated.text)")
        let second = try #require(try rotated.string("client_secret"))
        #expect(second != first)
        #expect(try await token(second) == 200)
        #expect(try await token(first) == 200, "the previous secret still works during the grace period")
        server.advanceClock(3601)
        #expect(try await token(first) == 401, "…and not after it")
        #expect(try await token(second) == 200)

        // Without a grace period the previous secret stops at once.
        let third = try await Self.manage(server, "POST", registered, path: "/secret")
        let newest = try #require(try third.string("client_secret"))
        #expect(try await token(second) == 401)
        #expect(try await token(newest) == 200)
        // Out-of-range grace periods and public applications are refused.
        let tooLong = try await Self.manage(server, "POST", registered, json: ["grace_period_seconds": 40 * 86_400], path: "/secret")
        #expect(tooLong.status == 400)
        let audit = try await server.server.store.auditEvents(AuditQuery(types: [.applicationSecretRotated], limit: 5))
        #expect(audit.count == 2 && audit.allSatisfy { !String(describing: $0).contains(newest) })
        let publicOne = try await Self.register(server, Self.publicApp, token: try await server.clientToken(scope: "registration"))
        #expect(try await Self.manage(server, "POST", publicOne, path: "/secret").status == 400)
    }

    @Test(
        arguments: [
            (["redirect_uris": ["https://app.example/cb#fragment"]], "invalid_redirect_uri"),
            (["redirect_uris": ["http://app.example/cb"]], "invalid_redirect_uri"),
            (["redirect_uris": "https://app.example/cb"], "invalid_redirect_uri"),
            (["redirect_uris": [] as [String]], "invalid_redirect_uri"),
            (["redirect_uris": ["com.example.app:/cb"], "application_type": "web"], "invalid_redirect_uri"),
            (["redirect_uris": ["javascript:alert(1)"], "application_type": "native"], "invalid_redirect_uri"),
            (["grant_types": ["password"]], "invalid_client_metadata"),
            (["grant_types": ["implicit"], "response_types": ["token"]], "invalid_client_metadata"),
            (["response_types": ["code id_token"]], "invalid_client_metadata"),
            (["grant_types": ["refresh_token"]], "invalid_client_metadata"),
            (["token_endpoint_auth_method": "private_key_jwt"], "invalid_client_metadata"),
            (["id_token_signed_response_alg": "HS256"], "invalid_client_metadata"),
            (["application_type": "desktop"], "invalid_client_metadata"),
            (["client_name": ""], "invalid_client_metadata"),
            (["client_name": 42], "invalid_client_metadata"),
            (["dpop_bound_access_tokens": 1], "invalid_client_metadata"),
            (["latchkey_identity_providers": ["nowhere"]], "invalid_client_metadata"),
            (["scope": "openid bad\"scope"], "invalid_client_metadata")
        ] as [([String: any Sendable], String)])
    func registrationErrorsAreTheRFCs(_ change: [String: any Sendable], _ error: String) async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        var body: [String: Any] = ["redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "none"]
        for (key, value) in change { body[key] = value }
        let answer = try await Self.register(server, body, token: try await server.clientToken(scope: "registration"))
        #expect(answer.status == 400, "\(change): \(answer.text)")
        #expect(try answer.string("error") == error, "\(change): \(answer.text)")
        #expect(answer.header("Cache-Control") == "no-store")
        #expect(try await server.server.store.clients().allSatisfy { $0.origin == .configuration }, "nothing registered")
    }

    @Test func onlyRegistrarsRegister() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let body = Self.publicApp
        let anonymous = try await Self.register(server, body, token: nil)
        #expect(anonymous.status == 401 && anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try await Self.register(server, body, token: "not-a-token").status == 401)
        let withoutScope = try await Self.register(server, body, token: try await server.clientToken(scope: "api.read"))
        #expect(try withoutScope.status == 403 && withoutScope.string("error") == "insufficient_scope")
        // A user with the scope but without the admin role may not; an administrator may.
        let ada = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword, scope: "openid registration")
        #expect(try await Self.register(server, body, token: ada.accessToken).status == 403)
        let admin = try await server.userTokens(scope: "openid registration")
        let byAdmin = try await Self.register(server, body, token: admin.accessToken)
        #expect(byAdmin.status == 201, "\(byAdmin.text)")
        // A registration access token manages its own application only. An initial access token: an administrator's
        // manages any registered application, an automation's only those it registered (review 3, R3-6: before, any
        // registration token managed the administrator's application too).
        let other = try await Self.register(server, body, token: try await server.clientToken(scope: "registration"))
        let foreign = try await Self.manage(
            server, "GET", byAdmin, token: try #require(try other.string("registration_access_token")))
        #expect(foreign.status == 401)
        #expect(try await Self.manage(server, "GET", byAdmin, token: try await server.clientToken(scope: "registration")).status == 401)
        #expect(try await Self.manage(server, "GET", other, token: try await server.clientToken(scope: "registration")).status == 200)
        #expect(try await Self.manage(server, "GET", byAdmin, token: try await server.clientToken(scope: "registration scim.admin")).status == 200)
        #expect(try await Self.manage(server, "GET", byAdmin, token: try await server.clientToken(scope: "api.read")).status == 403)
        // Configured applications are read here, changed only in the file.
        let registrar = try await server.clientToken(scope: "registration")
        let configured = try await server.call("GET", "/oauth2/register/latchkey-demo", token: registrar)
        #expect(try configured.status == 200 && configured.string("client_name") == "Latchkey Demo")
        let change = try await server.call("DELETE", "/oauth2/register/latchkey-demo", token: registrar)
        #expect(try change.status == 400 && (change.string("error_description") ?? "").contains("configuration file"))
        // A body that is not declared JSON is refused (a cross-site form could send it).
        let form = try await server.call(
            "POST", "/oauth2/register", token: registrar, body: Data("{}".utf8), contentType: "text/plain")
        #expect(form.status == 415)
    }

    @Test func registrationCannotExceedThePolicy() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        var body = Self.publicApp
        body["scope"] = "openid scim.admin registration api.read profile"
        body["latchkey_passkey_allowed_origins"] = ["self", "https://evil.example"]
        let trimmed = try await Self.register(server, body, token: registrar)
        #expect(trimmed.status == 201, "\(trimmed.text)")
        #expect(try trimmed.string("scope") == "openid profile")
        #expect(try trimmed.value("latchkey_trimmed.scope") as? [String] == ["scim.admin", "registration", "api.read"])
        #expect(try trimmed.value("latchkey_passkey_allowed_origins") as? [String] == ["self"])
        #expect(try trimmed.value("latchkey_trimmed.latchkey_passkey_allowed_origins") as? [String] == ["https://evil.example"])
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationRegistered], limit: 1)).first)
        #expect(event.details["trimmed"]?.contains("scim.admin") == true)
        // The trimmed scope is not obtainable afterwards.
        var options = try Self.options(trimmed)
        options.scope = "openid scim.admin"
        let refused = try await TestBrowser().get(server.authorizeURL(options))
        #expect(refused.location?.contains("error=invalid_scope") == true, "\(refused.status) \(refused.location ?? "")")

        // Refused, not trimmed: what would change what the application is.
        var backend = Self.publicApp
        backend["grant_types"] = ["client_credentials"]
        backend["token_endpoint_auth_method"] = "client_secret_basic"
        let credentials = try await Self.register(server, backend, token: registrar)
        #expect(try credentials.status == 400 && credentials.string("error") == "invalid_client_metadata")
        var withoutPKCE = Self.publicApp
        withoutPKCE["latchkey_require_pkce"] = false
        #expect(try await Self.register(server, withoutPKCE, token: registrar).status == 400)
    }

    @Test func openRegistrationNeedsNoTokenAndIsThrottled() async throws {
        let server = try await Self.start { $0.open = true }
        defer { Task { await server.stop() } }
        let anonymous = try await Self.register(server, Self.publicApp, token: nil)
        #expect(anonymous.status == 201, "\(anonymous.text)")
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.applicationRegistered], limit: 1)).first)
        #expect(event.actor == AuditEvent.anonymous && event.clientAddress != nil)
        // Per address, like account registration (`max_registrations_per_address`, 20 by default in tests too).
        var statuses: [Int] = []
        for _ in 0..<30 { statuses.append(try await Self.register(server, Self.publicApp, token: nil).status) }
        #expect(statuses.contains(429), "\(statuses)")
        // A token, when sent, must still be a registrar's.
        #expect(try await Self.register(server, Self.publicApp, token: try await server.clientToken(scope: "api.read")).status == 403)
    }

    @Test func administratorsListEveryApplication() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let registered = try await Self.register(server, Self.publicApp, token: try await server.clientToken(scope: "registration"))
        let id = try #require(try registered.string("client_id"))
        let admin = try await server.clientToken(scope: "scim.admin")
        let list = try await server.call("GET", "/admin/v1/applications", token: admin)
        #expect(list.status == 200, "\(list.text)")
        let applications = try #require(try list.value("applications") as? [[String: Any]])
        let byId = Dictionary(uniqueKeysWithValues: applications.compactMap { app in (app["client_id"] as? String).map { ($0, app) } })
        #expect(byId[id]?["latchkey_origin"] as? String == "registration")
        #expect(byId["latchkey-demo"]?["latchkey_origin"] as? String == "configuration")
        #expect(applications.allSatisfy { $0["client_secret"] == nil && $0["registration_access_token"] == nil })
        #expect(try await server.call("GET", "/admin/v1/applications", token: try await server.clientToken(scope: "api.read")).status == 403)
        #expect(try await server.call("GET", "/admin/v1/applications", token: try await server.userTokens().accessToken).status == 403)
    }

    @Test func anApplicationRegisteredOnOneInstanceWorksOnAnotherAtOnce() async throws {
        let first = try await Self.start()
        defer { Task { await first.stop() } }
        let issuer = first.issuer
        let second = try await TestServer.start(databasePath: first.databasePath) { configuration in
            configuration.issuer = URL(string: issuer)!
            configuration.clients = configuration.clients.map { client in
                var client = client
                if ["latchkey-demo", "backend"].contains(client.clientId) { client.scopes += ["registration", "scim.admin"] }
                return client
            }
        }
        defer { Task { await second.stop(keepingDatabase: true) } }
        let registered = try await Self.register(first, Self.publicApp, token: try await first.clientToken(scope: "registration"))
        #expect(registered.status == 201)
        let id = try #require(try registered.string("client_id"))
        // The other instance signs in with it…
        let browser = TestBrowser()
        let query = try await second.signIn(browser, try Self.options(registered))
        #expect(query["code"] != nil)
        // …and sees a deletion made on the first at once.
        #expect(try await Self.manage(first, "DELETE", registered).status == 204)
        let after = try await TestBrowser().get(second.authorizeURL(try Self.options(registered)))
        #expect(after.status == 400, "deleted on one instance, unknown on the other: \(id)")
    }

    @Test func theConfigurationFileWinsForTheApplicationsItNames() async throws {
        let server = try await Self.start()
        let registered = try await Self.register(server, Self.publicApp, token: try await server.clientToken(scope: "registration"))
        let id = try #require(try registered.string("client_id"))
        await server.stop(keepingDatabase: true)
        // A restart whose file names the registered id: the file's settings replace it, and its registration access
        // token stops working (it is a configured application now).
        let restarted = try await TestServer.start(databasePath: server.databasePath) { configuration in
            configuration.clients.append(ClientConfiguration(clientId: id, name: "From the file", redirectUris: [Self.redirect]))
        }
        defer { Task { await restarted.stop() } }
        let record = try #require(try await restarted.server.store.client(id: id))
        #expect(record.origin == .configuration && record.configuration.name == "From the file" && record.registrationTokenHash == nil)
        #expect(try await Self.manage(restarted, "GET", registered).status == 401)
    }

    @Test func thePolicyIsCheckedAtStart() throws {
        func refusal(_ change: (inout ClientRegistrationPolicy) -> Void) -> String {
            var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: TestServer.newSQLitePath(), host: "127.0.0.1")
            change(&configuration.clientRegistration)
            do { try configuration.validate() } catch { return String(describing: error) }
            return ""
        }
        #expect(refusal { $0.scopes.append("scim.admin") }.contains("only the operator grants administrative scopes"))
        #expect(refusal { $0.scopes.append("registration") }.contains("registration"))
        #expect(refusal { $0.identityProviders = ["nowhere"] }.contains("nowhere is not in identity_providers"))
        #expect(refusal { $0.grantTypes = [] }.contains("must not be empty"))
        #expect(refusal { $0.scopes.append("two words") }.contains("is not a scope"))
        #expect(refusal { _ in }.isEmpty)

        // In the file: its keys are checked like every other level's.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("registration-\(UUID().uuidString).json").path
        try Data(#"{"client_registration": {"open": true, "grant_type": ["authorization_code"]}}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try ConfigurationFile.load(path: path)
            Issue.record("an unknown key was accepted")
        } catch {
            #expect(String(describing: error).contains("client_registration.grant_type"))
            #expect(String(describing: error).contains("grant_types"))
        }
        try Data(#"{"client_registration": {"open": true, "grant_types": ["client_credentials"], "allow_without_pkce": true}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: TestServer.newSQLitePath(), host: "127.0.0.1")
        try ConfigurationFile.load(path: path).apply(to: &configuration)
        #expect(configuration.clientRegistration.open && configuration.clientRegistration.grantTypes == [.clientCredentials])
        #expect(configuration.clientRegistration.allowWithoutPKCE && configuration.clientRegistration.scopes.contains("openid"))
    }

    /// Every administrative change made with a person's token needs a recent sign-in (`recent_auth_seconds`, 300 s);
    /// reading and ending sessions do not, nor does a client acting for itself.
    @Test func aStaleAdministratorSignInReadsButChangesNothing() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let admin = try await server.userTokens(scope: "openid registration scim.admin").accessToken
        let ada = try #require(try await server.server.store.user(username: "ada@example.com"))
        let fresh = try await Self.register(server, Self.publicApp, token: admin)
        #expect(fresh.status == 201, "a fresh sign-in may")
        server.advanceClock(301)  // the access token (an hour) is still valid; the sign-in is not recent any more

        func expectStale(_ answer: HTTPResult, _ what: String) {
            #expect(answer.status == 401, "\(what): \(answer.status) \(answer.text.prefix(200))")
            #expect(answer.header("WWW-Authenticate")?.contains("insufficient_user_authentication") == true, "\(what)")
            #expect(answer.header("WWW-Authenticate")?.contains("max_age=300") == true, "\(what)")
        }
        expectStale(try await Self.register(server, Self.publicApp, token: admin), "registering")
        expectStale(try await Self.manage(server, "DELETE", fresh, token: admin), "deleting an application")
        expectStale(
            try await server.call("POST", "/scim2/Users", token: admin, json: SCIMAdministrationTests.newUser("eve")), "creating an account")
        expectStale(
            try await server.call(
                "PATCH", "/scim2/Users/\(ada.id)", token: admin,
                json: [
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [["op": "replace", "path": "active", "value": false]]
                ]), "disabling an account")
        expectStale(try await server.call("DELETE", "/scim2/Users/\(ada.id)", token: admin), "deleting an account")
        expectStale(try await server.call("DELETE", "/admin/v1/users/\(ada.id)/lockout", token: admin), "lifting a lockout")
        #expect(try await server.server.store.user(id: ada.id)?.disabled == false, "nothing changed")

        // Reading, and ending sessions, still work.
        #expect(try await Self.manage(server, "GET", fresh, token: admin).status == 200)
        #expect(try await server.call("GET", "/admin/v1/audit-events?limit=5", token: admin).status == 200)
        #expect(try await server.call("GET", "/scim2/Users/\(ada.id)", token: admin).status == 200)
        let ended = try await server.call("DELETE", "/admin/v1/users/\(ada.id)/sessions", token: admin)
        #expect(ended.status == 204, "\(ended.text)")
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.sessionEnded], limit: 5)).first)
        #expect(event.subject == ada.id && event.details["administrator"] == "true" && event.details["sessions"] == "all")
        // A client acting for itself has no sign-in to be stale.
        #expect(try await Self.register(server, Self.publicApp, token: try await server.clientToken(scope: "registration")).status == 201)
    }
}
