import LatchkeyTestSupport
import Foundation
import Testing

/// SCIM administration over real HTTP: creation (RFC 7644 §3.3), deletion (§3.6) and what it revokes, `active`,
/// filters and pages (§3.4.2), and the operator-granted roles (RFC 7643 §4.1.2), with who may do each.
@Suite("SCIM 2.0 administration /scim2/Users")
struct SCIMAdministrationTests {
    static let userURN = SCIMTests.userURN
    static let strongPassword = "a long enough password 42"

    static func newUser(_ userName: String, email: String? = nil, password: String? = nil, extra: [String: Any] = [:]) -> [String: Any] {
        var body: [String: Any] = [
            "schemas": [userURN], "userName": userName,
            "emails": [["value": email ?? "\(userName)@example.com", "type": "work", "primary": true]]
        ]
        if let password { body["password"] = password }
        return body.merging(extra) { $1 }
    }

    static func filter(_ text: String) -> String {
        "/scim2/Users?filter=" + (text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text)
    }

    @Test func createsAccountsWithOrWithoutAPassword() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        let created = try await server.call(
            "POST", "/scim2/Users", token: admin,
            json: Self.newUser(
                "linus", password: Self.strongPassword,
                extra: ["name": ["givenName": "Linus", "familyName": "T."], "locale": "fi", "externalId": "hr-7", "id": "ignored"]))
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("Content-Type")?.hasPrefix("application/scim+json") == true)
        let id = try #require(try created.string("id"))
        #expect(id != "ignored", "id is the server's")
        #expect(created.header("Location") == server.issuer + "/scim2/Users/" + id)
        #expect(try created.string("meta.location") == created.header("Location"))
        #expect(try created.string("meta.version") == created.header("ETag"))
        #expect(try created.string("userName") == "linus" && created.string("name.givenName") == "Linus")
        #expect(try created.string("emails.0.value") == "linus@example.com" && created.string("locale") == "fi")
        #expect(try created.value("active") as? Bool == true && created.value("password") == nil)
        #expect(try await server.call("GET", "/scim2/Users/\(id)", token: admin).string("meta.version") == created.header("ETag"))
        // The password works at once, and the address an administrator set is not taken as verified.
        let tokens = try await server.userTokens(username: "linus", password: Self.strongPassword)
        #expect(try await server.userinfo(tokens.accessToken).json()["email_verified"] as? Bool == false)

        // Without a password: nobody can sign in with one until the owner sets one (recovery).
        let passwordless = try await server.call("POST", "/scim2/Users", token: admin, json: Self.newUser("margaret"))
        #expect(passwordless.status == 201, "\(passwordless.text)")
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        for guess in ["", "!", "margaret"] {
            let attempt = try await server.submitLogin(browser, page: page, username: "margaret", password: guess)
            #expect(attempt.status != 303, "no password signs in to an account without one")
        }
        // Created disabled.
        let disabled = try await server.call(
            "POST", "/scim2/Users", token: admin, json: Self.newUser("dennis", password: Self.strongPassword, extra: ["active": false]))
        #expect(disabled.status == 201, "\(disabled.text)")
        #expect(try disabled.value("active") as? Bool == false)
        let refused = try await server.submitLogin(browser, page: page, username: "dennis", password: Self.strongPassword)
        #expect(refused.status == 403)
    }

    @Test func creationRefusesTakenAndInvalidValues() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        func create(_ body: [String: Any]) async throws -> HTTPResult { try await server.call("POST", "/scim2/Users", token: admin, json: body) }
        #expect(
            try SCIMTests.expectError(try await create(Self.newUser("ADA@example.com", email: "new@example.com")), 409, "uniqueness").contains(
                "userName"))
        #expect(try SCIMTests.expectError(try await create(Self.newUser("someone", email: "Ada@Example.com")), 409, "uniqueness").contains("emails"))
        try SCIMTests.expectError(try await create(Self.newUser("a-user", email: "not-an-address")), 400, "invalidValue")
        try SCIMTests.expectError(try await create(["schemas": [Self.userURN], "userName": "no-email"]), 400, "invalidValue")
        try SCIMTests.expectError(try await create(["emails": [["value": "x@example.com"]]]), 400, "invalidValue")
        try SCIMTests.expectError(try await create(Self.newUser("shorty", password: "short")), 400, "invalidValue")
        try SCIMTests.expectError(try await create(Self.newUser("same", password: "same")), 400, "invalidValue")
        try SCIMTests.expectError(try await create(Self.newUser("numeric", extra: ["password": 12_345_678])), 400, "invalidValue")
        try SCIMTests.expectError(try await create(Self.newUser("bad-role", extra: ["roles": [["value": "two words"]]])), 400, "invalidValue")
        try SCIMTests.expectError(try await create(["schemas": ["urn:example:other"], "userName": "x"]), 400, "invalidSyntax")
        // Nothing of the refused ones was created.
        let list = try await server.call("GET", Self.filter("userName eq \"shorty\""), token: admin)
        #expect(try list.value("totalResults") as? Int == 0)
    }

    @Test func onlyAdministratorsCreate() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let body = Self.newUser("eve", password: Self.strongPassword)
        let user = try await server.userTokens().accessToken  // the admin user, without the scope
        try SCIMTests.expectError(try await server.call("POST", "/scim2/Users", token: user, json: body), 403, nil)
        let graceWithScope = try await server.userTokens(
            username: "grace+ops@example.com", password: "grace's compiler password", scope: "openid profile scim.admin"
        ).accessToken
        try SCIMTests.expectError(try await server.call("POST", "/scim2/Users", token: graceWithScope, json: body), 403, nil)
        try SCIMTests.expectError(try await server.call("POST", "/scim2/Users", token: nil, json: body), 401, nil)
        let clientWithoutScope = try await server.clientToken(scope: "api.read")
        try SCIMTests.expectError(try await server.call("POST", "/scim2/Users", token: clientWithoutScope, json: body), 403, nil)
        // A user with the admin role and the scope may.
        let userAdmin = try await server.userTokens(scope: "openid profile scim.admin").accessToken
        #expect(try await server.call("POST", "/scim2/Users", token: userAdmin, json: body).status == 201)
    }

    @Test func anInvitationTellsTheNewAddressHowToChooseAPassword() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        let created = try await server.call("POST", "/scim2/Users?invite=latchkey-demo", token: admin, json: Self.newUser("barbara"))
        #expect(created.status == 201, "\(created.text)")
        let mail = try #require(try await server.server.outboxMessages(recipient: "barbara@example.com").first)
        #expect(mail.subject == "An account was created for you")
        #expect(mail.body.contains("barbara") && mail.body.contains("Latchkey Demo") && mail.body.contains("Forgot password?"))
        #expect(mail.code == nil, "no code or secret in an invitation")
        // In the language the administrator's request asked for.
        _ = try await server.call(
            "POST", "/scim2/Users?invite=latchkey-demo", token: admin, json: Self.newUser("frances"), headers: ["Accept-Language": "fr"])
        #expect(try await server.server.outboxMessages(recipient: "frances@example.com").first?.subject == "Un compte a été créé pour vous")

        // An unknown application is refused before anything is created.
        let unknown = try await server.call("POST", "/scim2/Users?invite=nope", token: admin, json: Self.newUser("hedy"))
        try SCIMTests.expectError(unknown, 400, "invalidValue")
        #expect(try await server.call("GET", Self.filter("userName eq \"hedy\""), token: admin).value("totalResults") as? Int == 0)
        #expect(try await server.server.outboxMessages(recipient: "hedy@example.com").isEmpty)
        // No invitation unless asked.
        _ = try await server.call("POST", "/scim2/Users", token: admin, json: Self.newUser("radia"))
        #expect(try await server.server.outboxMessages(recipient: "radia@example.com").isEmpty)
    }

    @Test func deletionRevokesEverythingTheAccountHeld() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        let ada = try await server.call("GET", Self.filter("userName eq \"ada@example.com\""), token: admin)
        let adaId = try #require(try ada.string("Resources.0.id"))
        let adaTokens = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        #expect(try await server.call("GET", "/scim2/Me", token: adaTokens.accessToken).status == 200)
        let browser = TestBrowser()
        _ = try await server.signIn(browser, username: "ada@example.com", password: TestServer.adaPassword)

        // Not by a user without the role, nor an administrator on itself.
        let graceWithScope = try await server.userTokens(
            username: "grace+ops@example.com", password: "grace's compiler password", scope: "openid profile scim.admin"
        ).accessToken
        try SCIMTests.expectError(try await server.call("DELETE", "/scim2/Users/\(adaId)", token: graceWithScope), 403, nil)
        try SCIMTests.expectError(try await server.call("DELETE", "/scim2/Users/\(adaId)", token: adaTokens.accessToken), 403, nil)
        let userAdmin = try await server.userTokens(scope: "openid profile scim.admin").accessToken
        let demoId = try #require(try await server.verifiedClaims(userAdmin)["sub"]?.stringValue)
        let selfDelete = try await server.call("DELETE", "/scim2/Users/\(demoId)", token: userAdmin)
        #expect(try SCIMTests.expectError(selfDelete, 403, nil).contains("own account"))

        let deleted = try await server.call("DELETE", "/scim2/Users/\(adaId)", token: admin)
        #expect(deleted.status == 204 && deleted.body.isEmpty, "\(deleted.text)")
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Users/\(adaId)", token: admin), 404, nil)
        try SCIMTests.expectError(try await server.call("DELETE", "/scim2/Users/\(adaId)", token: admin), 404, nil)
        // Her access token, refresh token and browser session are dead.
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Me", token: adaTokens.accessToken), 401, nil)
        #expect(try await server.userinfo(adaTokens.accessToken).status == 401)
        let refreshed = try await server.refresh(try #require(adaTokens.refreshToken))
        #expect(refreshed.status == 400, "\(refreshed.text)")
        #expect(try refreshed.json()["error"] as? String == "invalid_grant")
        var silent = AuthorizeOptions()
        silent.prompt = "none"
        let again = try await browser.get(server.authorizeURL(silent))
        #expect(again.location?.contains("error=login_required") == true, "the SSO session ended: \(again.location ?? "")")
        // The name is free again, and a new account under it is a new account.
        let recreated = try await server.call(
            "POST", "/scim2/Users", token: admin, json: Self.newUser("ada@example.com", email: "ada@example.com", password: Self.strongPassword))
        #expect(recreated.status == 201, "\(recreated.text)")
        #expect(try recreated.string("id") != adaId)
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Me", token: adaTokens.accessToken), 401, nil)
    }

    @Test func activeFalseDisablesAndTrueEnables() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        let created = try await server.call("POST", "/scim2/Users", token: admin, json: Self.newUser("alan", password: Self.strongPassword))
        let id = try #require(try created.string("id"))
        let tokens = try await server.userTokens(username: "alan", password: Self.strongPassword)
        let off = try await server.call("PUT", "/scim2/Users/\(id)", token: admin, json: Self.newUser("alan", extra: ["active": false]))
        #expect(off.status == 200, "\(off.text)")
        #expect(try off.value("active") as? Bool == false)
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Me", token: tokens.accessToken), 401, nil)
        #expect(try await server.refresh(try #require(tokens.refreshToken)).status == 400)
        // The seeded disabled@example.com and now Alan.
        let inactive = try await server.call("GET", Self.filter("active eq false"), token: admin)
        let inactiveNames = try #require(try inactive.value("Resources") as? [[String: Any]]).compactMap { $0["userName"] as? String }
        #expect(inactiveNames == ["disabled@example.com", "alan"], "\(inactive.text)")
        let on = try await server.call(
            "PATCH", "/scim2/Users/\(id)", token: admin, json: SCIMTests.patch([["op": "replace", "value": ["active": true]]]))
        #expect(try on.value("active") as? Bool == true)
        _ = try await server.userTokens(username: "alan", password: Self.strongPassword)
        #expect(try await server.call("GET", Self.filter("active eq false"), token: admin).value("totalResults") as? Int == 1)

        // An administrator does not lock itself out.
        let userAdmin = try await server.userTokens(scope: "openid profile scim.admin").accessToken
        let demoId = try #require(try await server.verifiedClaims(userAdmin)["sub"]?.stringValue)
        let selfOff = try await server.call(
            "PATCH", "/scim2/Users/\(demoId)", token: userAdmin, json: SCIMTests.patch([["op": "replace", "path": "active", "value": false]]))
        try SCIMTests.expectError(selfOff, 403, nil)
        #expect(try await server.call("GET", "/scim2/Users/\(demoId)", token: userAdmin).value("active") as? Bool == true)
    }

    @Test func filtersSelectAccounts() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        var ids: [String: String] = [:]
        for name in ["u1", "u2", "u3"] {
            let created = try await server.call(
                "POST", "/scim2/Users", token: admin, json: Self.newUser(name, email: "\(name.uppercased())@Example.com"))
            ids[name] = try created.string("id")
        }
        func total(_ filter: String) async throws -> Int? {
            let result = try await server.call("GET", Self.filter(filter), token: admin)
            #expect(result.status == 200, "\(filter): \(result.text)")
            return try result.value("totalResults") as? Int
        }
        #expect(try await total("emails.value eq \"u2@example.com\"") == 1)
        #expect(try await total("emails eq \"U2@EXAMPLE.COM\"") == 1)
        #expect(try await total("userName eq \"U3\"") == 1)
        #expect(try await total("id eq \"\(ids["u1"] ?? "")\"") == 1)
        #expect(try await total("active eq true and userName eq \"u1\"") == 1)
        #expect(try await total("active eq false and userName eq \"u1\"") == 0)
        #expect(try await total("urn:ietf:params:scim:schemas:core:2.0:User:userName eq \"u1\"") == 1)

        // meta.lastModified, at the whole seconds it shows.
        let u3 = try await server.call("GET", "/scim2/Users/\(ids["u3"] ?? "")", token: admin)
        let stamp = try #require(try u3.string("meta.lastModified"))
        #expect(try await total("meta.lastModified ge \"\(stamp)\" and userName eq \"u3\"") == 1)
        #expect(try await total("meta.lastModified gt \"\(stamp)\" and userName eq \"u3\"") == 0)
        #expect(try await total("meta.lastModified le \"\(stamp)\" and userName eq \"u3\"") == 1)
        #expect(try await total("meta.lastModified lt \"\(stamp)\" and userName eq \"u3\"") == 0)
        #expect(try await total("meta.lastModified gt \"2999-01-01T00:00:00Z\"") == 0)
        #expect(try await total("meta.lastModified gt \"2000-01-01T00:00:00.250+02:00\" and userName eq \"u3\"") == 1)
        // A change moves it forward.
        let later = Date().addingTimeInterval(-1).formatted(.iso8601)
        _ = try await server.call(
            "PATCH", "/scim2/Users/\(ids["u1"] ?? "")", token: admin, json: SCIMTests.patch([["op": "replace", "path": "locale", "value": "de"]]))
        #expect(try await total("meta.lastModified ge \"\(later)\" and userName eq \"u1\"") == 1)

        for bad in [
            "userName co \"u\"", "userName eq \"u1\" or userName eq \"u2\"", "name.givenName eq \"x\"", "active gt true",
            "meta.lastModified eq \"\(stamp)\"", "meta.lastModified gt \"yesterday\"", "meta.lastModified gt 5", "(userName eq \"u1\")",
            "userName pr", "userName eq 42", "active eq \"maybe\"", "emails[value eq \"u1@example.com\"]", "userName eq \"a\u{0}\""
        ] {
            let result = try await server.call("GET", Self.filter(bad), token: admin)
            try SCIMTests.expectError(result, 400, "invalidFilter")
        }
    }

    @Test func pagesCoverEveryAccountOnceInAStableOrder() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        for index in 1...5 {
            _ = try await server.call("POST", "/scim2/Users", token: admin, json: Self.newUser("page\(index)"))
        }
        let everything = try await server.call("GET", "/scim2/Users", token: admin)
        #expect(everything.status == 200, "\(everything.text)")
        let total = try #require(try everything.value("totalResults") as? Int)
        let all = try #require(try everything.value("Resources") as? [[String: Any]]).compactMap { $0["userName"] as? String }
        #expect(all.count == total && total >= 8)
        #expect(Array(all.suffix(5)) == ["page1", "page2", "page3", "page4", "page5"], "in the order they were created")
        #expect(try everything.value("startIndex") as? Int == 1 && everything.value("itemsPerPage") as? Int == total)

        var paged: [String] = []
        var start = 1
        while start <= total {
            let page = try await server.call("GET", "/scim2/Users?startIndex=\(start)&count=3", token: admin)
            #expect(try page.value("totalResults") as? Int == total && page.value("startIndex") as? Int == start)
            let names = try #require(try page.value("Resources") as? [[String: Any]]).compactMap { $0["userName"] as? String }
            #expect(try page.value("itemsPerPage") as? Int == names.count && names.count == min(3, total - start + 1))
            paged += names
            start += 3
        }
        #expect(paged == all, "every account once, in the same order")

        func page(_ query: String) async throws -> HTTPResult {
            let result = try await server.call("GET", "/scim2/Users?" + query, token: admin)
            #expect(result.status == 200, "\(query): \(result.text)")
            return result
        }
        let beyond = try await page("startIndex=\(total + 1)")
        #expect(try beyond.value("totalResults") as? Int == total && beyond.value("itemsPerPage") as? Int == 0)
        let countZero = try await page("count=0")
        #expect(try countZero.value("totalResults") as? Int == total && countZero.value("itemsPerPage") as? Int == 0)
        let negative = try await page("count=-4&startIndex=-3")
        #expect(try negative.value("itemsPerPage") as? Int == 0 && negative.value("startIndex") as? Int == 1)
        let capped = try await page("count=100000")
        #expect(try capped.value("itemsPerPage") as? Int == total, "at most 100")
        let filtered = try await page(
            "filter=" + "userName eq \"page4\"".addingPercentEncoding(withAllowedCharacters: .alphanumerics)! + "&startIndex=1&count=1")
        #expect(try filtered.value("totalResults") as? Int == 1 && filtered.string("Resources.0.userName") == "page4")
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Users?count=ten", token: admin), 400, "invalidValue")
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Users?startIndex=1.5", token: admin), 400, "invalidValue")
        let user = try await server.userTokens().accessToken
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Users?count=1", token: user), 403, nil)
    }

    @Test func rolesAreReadAndGrantedByAdministratorsOnly() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        let demo = try await server.call("GET", Self.filter("userName eq \"demo@example.com\""), token: admin)
        #expect(try demo.string("Resources.0.roles.0.value") == "admin", "\(demo.text)")
        let demoId = try #require(try demo.string("Resources.0.id"))
        // Users do not see roles in /Me, and cannot grant themselves any.
        let demoToken = try await server.userTokens().accessToken
        #expect(try await server.call("GET", "/scim2/Me", token: demoToken).value("roles") == nil)
        let graceScope = "openid profile scim.admin"
        let grace = try await server.userTokens(username: "grace+ops@example.com", password: "grace's compiler password", scope: graceScope)
        let selfGrant = try await server.call(
            "PATCH", "/scim2/Me", token: grace.accessToken, json: SCIMTests.patch([["op": "add", "path": "roles", "value": [["value": "admin"]]]]))
        try SCIMTests.expectError(selfGrant, 400, "mutability")
        let selfPut = try await server.call(
            "PUT", "/scim2/Me", token: grace.accessToken,
            json: Self.newUser("grace+ops@example.com", email: "grace+ops@example.com", extra: ["roles": [["value": "admin"]]]))
        try SCIMTests.expectError(selfPut, 400, "mutability")
        let pathless = try await server.call(
            "PATCH", "/scim2/Me", token: grace.accessToken, json: SCIMTests.patch([["op": "replace", "value": ["roles": [["value": "admin"]]]]]))
        try SCIMTests.expectError(pathless, 400, "mutability")
        let graceId = try #require(try await server.verifiedClaims(grace.accessToken)["sub"]?.stringValue)
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Users/\(graceId)", token: grace.accessToken), 403, nil)
        // A user's PATCH of /Users is refused before roles are looked at.
        try SCIMTests.expectError(
            try await server.call(
                "PATCH", "/scim2/Users/\(graceId)", token: grace.accessToken,
                json: SCIMTests.patch([["op": "add", "path": "roles", "value": [["value": "admin"]]]])), 403, nil)

        // An administrator grants the role: Grace's token with the scope now administers.
        let granted = try await server.call(
            "PATCH", "/scim2/Users/\(graceId)", token: admin,
            json: SCIMTests.patch([["op": "add", "path": "roles", "value": [["value": "admin"], ["value": "auditor"]]]]))
        #expect(granted.status == 200, "\(granted.text)")
        let roles = try #require(try granted.value("roles") as? [[String: Any]]).compactMap { $0["value"] as? String }
        #expect(roles == ["admin", "auditor"])
        #expect(try await server.call("GET", "/scim2/Users/\(demoId)", token: grace.accessToken).status == 200)
        // A PUT that leaves roles out keeps them.
        let put = try await server.call(
            "PUT", "/scim2/Users/\(graceId)", token: admin, json: Self.newUser("grace+ops@example.com", email: "grace+ops@example.com"))
        #expect(try put.value("roles") as? [[String: Any]] != nil, "\(put.text)")
        // And takes it away again.
        let revoked = try await server.call(
            "PATCH", "/scim2/Users/\(graceId)", token: admin, json: SCIMTests.patch([["op": "remove", "path": "roles[value eq \"admin\"]"]]))
        #expect(try revoked.string("roles.0.value") == "auditor" && revoked.value("roles.1") == nil, "\(revoked.text)")
        try SCIMTests.expectError(try await server.call("GET", "/scim2/Users/\(demoId)", token: grace.accessToken), 403, nil)
        let cleared = try await server.call(
            "PUT", "/scim2/Users/\(graceId)", token: admin,
            json: Self.newUser("grace+ops@example.com", email: "grace+ops@example.com", extra: ["roles": []]))
        #expect(try cleared.value("roles") == nil, "\(cleared.text)")

        // An administrator keeps its own admin role; roles are checked.
        let userAdmin = try await server.userTokens(scope: graceScope).accessToken
        let demote = try await server.call(
            "PATCH", "/scim2/Users/\(demoId)", token: userAdmin, json: SCIMTests.patch([["op": "remove", "path": "roles"]]))
        try SCIMTests.expectError(demote, 403, nil)
        let badRole = try await server.call(
            "PATCH", "/scim2/Users/\(graceId)", token: admin, json: SCIMTests.patch([["op": "add", "path": "roles", "value": [["value": "a b"]]]]))
        try SCIMTests.expectError(badRole, 400, "invalidValue")
        let badShape = try await server.call(
            "PATCH", "/scim2/Users/\(graceId)", token: admin, json: SCIMTests.patch([["op": "add", "path": "roles", "value": "admin"]]))
        try SCIMTests.expectError(badShape, 400, "invalidValue")
        // Created with roles.
        let created = try await server.call(
            "POST", "/scim2/Users", token: admin, json: Self.newUser("joan", extra: ["roles": [["value": "auditor", "primary": true]]]))
        #expect(try created.string("roles.0.value") == "auditor", "\(created.text)")
    }
}
