import LatchkeyTestSupport
import Foundation
import Testing

/// SCIM 2.0 over real HTTP: representation checked against RFC 7643 §4.1 names and URNs, PUT and PATCH (RFC 7644
/// §3.5), errors (§3.12), authorization.
@Suite("SCIM 2.0 /scim2")
struct SCIMTests {
    static let userURN = "urn:ietf:params:scim:schemas:core:2.0:User"
    static let errorURN = "urn:ietf:params:scim:api:messages:2.0:Error"
    static let patchURN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
    static let listURN = "urn:ietf:params:scim:api:messages:2.0:ListResponse"

    static func patch(_ operations: [[String: Any]]) -> [String: Any] { ["schemas": [patchURN], "Operations": operations] }

    /// Asserts an RFC 7644 §3.12 error and returns its detail.
    @discardableResult
    static func expectError(_ result: HTTPResult, _ status: Int, _ scimType: String?, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> String
    {
        #expect(result.status == status, "\(result.text)", sourceLocation: sourceLocation)
        #expect(result.header("Content-Type")?.hasPrefix("application/scim+json") == true, sourceLocation: sourceLocation)
        #expect(try result.value("schemas") as? [String] == [errorURN], sourceLocation: sourceLocation)
        #expect(try result.string("status") == String(status), "status is a string in SCIM errors", sourceLocation: sourceLocation)
        #expect(try result.string("scimType") == scimType, sourceLocation: sourceLocation)
        return try result.string("detail") ?? ""
    }

    @Test func meIsACoreUserResource() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let sub = try #require(try await server.verifiedClaims(token)["sub"]?.stringValue)

        let me = try await server.call("GET", "/scim2/Me", token: token, headers: ["Accept": "application/scim+json"])
        #expect(me.status == 200)
        #expect(me.header("Content-Type")?.hasPrefix("application/scim+json") == true)
        #expect(try me.value("schemas") as? [String] == [Self.userURN])
        #expect(try me.string("id") == sub)
        #expect(try me.string("userName") == "demo@example.com")
        #expect(try me.string("name.givenName") == "Demo" && me.string("name.familyName") == "User")
        #expect(try me.string("name.formatted") == "Demo User" && me.string("displayName") == "Demo User")
        #expect(try me.string("emails.0.value") == "demo@example.com")
        #expect(try me.string("emails.0.type") == "work" && me.value("emails.0.primary") as? Bool == true)
        #expect(try me.string("locale") == "en-US")
        #expect(try me.value("active") as? Bool == true)
        #expect(try me.value("password") == nil && me.value("phoneNumbers") == nil)
        #expect(try me.string("meta.resourceType") == "User")
        let location = server.issuer + "/scim2/Users/" + sub
        #expect(try me.string("meta.location") == location)
        #expect(me.header("Location") == location)
        let version = try #require(try me.string("meta.version"))
        #expect(version.hasPrefix("W/\"") && me.header("ETag") == version)
        for stamp in ["meta.created", "meta.lastModified"] {
            #expect(try me.string(stamp).flatMap { try? Date($0, strategy: .iso8601) } != nil, "\(stamp) is an xsd:dateTime")
        }
        #expect(me.header("Cache-Control") == "no-store")
    }

    @Test func putReplacesTheMutableAttributes() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let before = try await server.call("GET", "/scim2/Me", token: token)
        let put = try await server.call(
            "PUT", "/scim2/Me", token: token,
            json: [
                "schemas": [Self.userURN], "id": "ignored", "userName": "demo@example.com", "externalId": "crm-1",
                "name": ["givenName": "Grace", "familyName": "Hopper"],
                "emails": [["value": "grace@example.com", "type": "work", "primary": true]]
            ])
        #expect(put.status == 200, "\(put.text)")
        #expect(try put.string("id") == before.string("id"), "id is read-only")
        // A new address waits for its code: the old one stays until then.
        #expect(try put.string("name.givenName") == "Grace" && put.string("emails.0.value") == "demo@example.com")
        #expect(try put.value("locale") == nil && put.value("displayName") == nil, "omitted attributes are cleared")
        #expect(try put.value("active") as? Bool == true, "active is kept when omitted")
        #expect(try put.string("meta.version") != before.string("meta.version"))
        #expect(try put.string("meta.created") == before.string("meta.created"))
        _ = try await server.verifyPendingEmail("grace@example.com", token: token)
        #expect(try await server.call("GET", "/scim2/Me", token: token).string("emails.0.value") == "grace@example.com")

        let noUserName = try await server.call("PUT", "/scim2/Me", token: token, json: ["schemas": [Self.userURN], "name": ["givenName": "X"]])
        try Self.expectError(noUserName, 400, "invalidValue")
        let twoEmails = try await server.call(
            "PUT", "/scim2/Me", token: token,
            json: [
                "userName": "demo@example.com", "emails": [["value": "a@example.com"], ["value": "b@example.com"]]
            ])
        try Self.expectError(twoEmails, 400, "invalidValue")
        let password = try await server.call("PUT", "/scim2/Me", token: token, json: ["userName": "demo@example.com", "password": "new password 1"])
        try Self.expectError(password, 400, "mutability")
    }

    @Test func patchAppliesTheRFCOperations() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let before = try await server.call("GET", "/scim2/Me", token: token)
        let patched = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: Self.patch([
                ["op": "add", "path": "phoneNumbers", "value": [["value": "+1 555 0100", "type": "mobile"]]],
                ["op": "replace", "path": "name.givenName", "value": "Ada"],
                ["op": "replace", "value": ["displayName": "Ada L.", "locale": "fr", "\(Self.userURN):name.familyName": "King"]],
                ["op": "replace", "path": "emails[type eq \"work\"].value", "value": "demo2@example.com"],
                ["op": "Add", "path": "photos", "value": [["value": "https://example.com/ada.png", "type": "photo"]]],
                ["op": "remove", "path": "name.familyName"]
            ]), contentType: "application/json")
        #expect(patched.status == 200, "\(patched.text)")
        #expect(try patched.string("phoneNumbers.0.value") == "+1 555 0100" && patched.string("phoneNumbers.0.type") == "mobile")
        #expect(try patched.string("name.givenName") == "Ada")
        #expect(try patched.value("name.familyName") == nil, "removed after being replaced: operations apply in order")
        #expect(try patched.string("displayName") == "Ada L." && patched.string("name.formatted") == "Ada L.")
        #expect(try patched.string("locale") == "fr")
        #expect(try patched.string("emails.0.value") == "demo@example.com", "a new address waits for its code")
        #expect(try patched.string("photos.0.value") == "https://example.com/ada.png")
        #expect(try patched.string("meta.version") != before.string("meta.version"))

        #expect(try await server.userinfo(token).json()["email"] as? String == "demo@example.com", "not applied before verification")
        _ = try await server.verifyPendingEmail("demo2@example.com", token: token)
        let stored = try await server.call("GET", "/scim2/Me", token: token)
        #expect(try stored.string("emails.0.value") == "demo2@example.com" && stored.string("name.givenName") == "Ada")
        #expect(try await server.userinfo(token).json()["email_verified"] as? Bool == true, "applied by its code, so verified")

        let removed = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: Self.patch([
                ["op": "remove", "path": "phoneNumbers[type eq \"mobile\"]"],
                ["op": "remove", "path": "photos[value eq \"https://example.com/ada.png\"]"]
            ]))
        #expect(removed.status == 200, "\(removed.text)")
        #expect(try removed.value("phoneNumbers") == nil && removed.value("photos") == nil)

        // Microsoft Entra ID style: capitalized ops, a string boolean, no-op values.
        let entra = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: Self.patch([
                ["op": "Replace", "path": "active", "value": "True"],
                ["op": "Replace", "path": "emails[type eq \"work\"].primary", "value": true]
            ]))
        #expect(entra.status == 200, "\(entra.text)")
        #expect(try entra.string("meta.version") == removed.string("meta.version"), "nothing changed, nothing saved")
    }

    @Test func patchErrorsAreAtomicAndTyped() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        func patch(_ operations: [[String: Any]]) async throws -> HTTPResult {
            try await server.call("PATCH", "/scim2/Me", token: token, json: Self.patch(operations))
        }
        let badEmail = try await patch([
            ["op": "replace", "path": "name.givenName", "value": "Changed"],
            ["op": "replace", "path": "emails[type eq \"work\"].value", "value": "not-an-address"]
        ])
        let detail = try Self.expectError(badEmail, 400, "invalidValue")
        #expect(detail.contains("emails"), "the problem is named by its SCIM path: \(detail)")
        #expect(try await server.call("GET", "/scim2/Me", token: token).string("name.givenName") == "Demo", "all or nothing")

        try Self.expectError(try await patch([["op": "replace", "path": "nickName", "value": "x"]]), 400, "invalidPath")
        try Self.expectError(
            try await patch([
                [
                    "op": "replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
                    "value": "x"
                ]
            ]), 400, "invalidPath")
        try Self.expectError(try await patch([["op": "replace", "value": ["title": "x"]]]), 400, "invalidPath")
        try Self.expectError(try await patch([["op": "remove"]]), 400, "noTarget")
        try Self.expectError(
            try await patch([["op": "replace", "path": "emails[value eq \"nobody@example.com\"].value", "value": "a@example.com"]]),
            400, "noTarget")
        try Self.expectError(
            try await patch([["op": "replace", "path": "emails[display co \"x\"].value", "value": "a@example.com"]]),
            400, "invalidFilter")
        try Self.expectError(try await patch([["op": "replace", "path": "id", "value": "x"]]), 400, "mutability")
        try Self.expectError(try await patch([["op": "replace", "path": "active", "value": false]]), 400, "mutability")
        try Self.expectError(try await patch([["op": "replace", "path": "locale", "value": 42]]), 400, "invalidValue")
        try Self.expectError(try await patch([["op": "move", "path": "locale"]]), 400, "invalidSyntax")
        let wrongSchema = try await server.call("PATCH", "/scim2/Me", token: token, json: ["schemas": [Self.userURN], "Operations": []])
        try Self.expectError(wrongSchema, 400, "invalidSyntax")
        let notJSON = try await server.call("PATCH", "/scim2/Me", token: token, body: Data("{".utf8))
        try Self.expectError(notJSON, 400, "invalidSyntax")
        let wrongType = try await server.call("PATCH", "/scim2/Me", token: token, json: Self.patch([]), contentType: "text/plain")
        try Self.expectError(wrongType, 415, nil)
        #expect(try await server.call("GET", "/scim2/Nope", token: token).status == 404)
        try Self.expectError(try await server.call("GET", "/scim2/Nope", token: token), 404, nil)
    }

    @Test func uniquenessIsAConflict() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let userName = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: Self.patch([
                ["op": "replace", "path": "userName", "value": "Ada@Example.com"]
            ]))
        #expect(try Self.expectError(userName, 409, "uniqueness").contains("userName"))
        let email = try await server.call(
            "PATCH", "/scim2/Me", token: token,
            json: Self.patch([
                ["op": "replace", "path": "emails", "value": [["value": "ADA@example.com", "type": "work"]]]
            ]))
        #expect(try Self.expectError(email, 409, "uniqueness").contains("emails"))
    }

    @Test func versionsGuardWrites() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let version = try #require(try await server.call("GET", "/scim2/Me", token: token).header("ETag"))
        let unchanged = try await server.call("GET", "/scim2/Me", token: token, headers: ["If-None-Match": version])
        #expect(unchanged.status == 304)

        let change = Self.patch([["op": "replace", "path": "locale", "value": "de"]])
        let first = try await server.call("PATCH", "/scim2/Me", token: token, json: change, headers: ["If-Match": version])
        #expect(first.status == 200)
        let stale = try await server.call(
            "PATCH", "/scim2/Me", token: token, json: Self.patch([["op": "replace", "path": "locale", "value": "it"]]),
            headers: ["If-Match": version])
        try Self.expectError(stale, 412, nil)
        #expect(try await server.call("GET", "/scim2/Me", token: token).string("locale") == "de", "the stale write was not applied")
        let fresh = try #require(first.header("ETag"))
        let put = try await server.call(
            "PUT", "/scim2/Me", token: token, json: ["userName": "demo@example.com", "emails": [["value": "demo@example.com"]]],
            headers: ["If-Match": fresh])
        #expect(put.status == 200, "\(put.text)")
    }

    @Test func tokensThatAreNotUserAccessTokensAreRefused() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let none = try await server.call("GET", "/scim2/Me", token: nil)
        try Self.expectError(none, 401, nil)
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        guard let idToken = tokens.idToken else { Issue.record("no ID token"); return }
        try Self.expectError(try await server.call("GET", "/scim2/Me", token: idToken), 401, nil)
        let client = try await server.call("GET", "/scim2/Me", token: try await server.clientToken(scope: "scim.admin"))
        try Self.expectError(client, 403, nil)

        #expect(try await server.call("GET", "/scim2/Me", token: tokens.accessToken).status == 200)
        try await server.revoke(tokens.accessToken)
        let revoked = try await server.call(
            "PATCH", "/scim2/Me", token: tokens.accessToken, json: Self.patch([["op": "replace", "path": "locale", "value": "fr"]]))
        #expect(try Self.expectError(revoked, 401, nil).contains("revoked"))
    }

    @Test func usersNeedTheAdminScope() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let admin = try await server.clientToken(scope: "scim.admin")
        let query = try await server.call("GET", "/scim2/Users?filter=userName%20eq%20%22ada%40example.com%22", token: admin)
        #expect(query.status == 200, "\(query.text)")
        #expect(try query.value("schemas") as? [String] == [Self.listURN])
        #expect(try query.value("totalResults") as? Int == 1 && query.value("itemsPerPage") as? Int == 1 && query.value("startIndex") as? Int == 1)
        #expect(try query.string("Resources.0.userName") == "ada@example.com")
        let adaId = try #require(try query.string("Resources.0.id"))

        // Form-style spaces, and a literal + inside the quoted value.
        let plus = try await server.call("GET", "/scim2/Users?filter=emails.value+eq+\"GRACE+ops@example.com\"", token: admin)
        #expect(try plus.string("Resources.0.userName") == "grace+ops@example.com", "\(plus.text)")
        #expect(try await server.call("GET", "/scim2/Users?filter=userName%20eq%20%22nobody%22", token: admin).value("totalResults") as? Int == 0)
        #expect(try await server.call("GET", "/scim2/Users", token: admin).value("totalResults") as? Int ?? 0 >= 3, "every account, paged")
        try Self.expectError(try await server.call("GET", "/scim2/Users?filter=userName%20co%20%22a%22", token: admin), 400, "invalidFilter")
        try Self.expectError(try await server.call("GET", "/scim2/Users/no-such-id", token: admin), 404, nil)

        // An ordinary user's token may not read or change other accounts.
        let user = try await server.userTokens().accessToken
        try Self.expectError(try await server.call("GET", "/scim2/Users/\(adaId)", token: user), 403, nil)
        try Self.expectError(try await server.call("GET", "/scim2/Users?filter=userName%20eq%20%22ada%40example.com%22", token: user), 403, nil)
        try Self.expectError(
            try await server.call(
                "PATCH", "/scim2/Users/\(adaId)", token: user,
                json: Self.patch([["op": "replace", "path": "locale", "value": "fr"]])), 403, nil)

        // A user with the admin role whose token carries scim.admin may.
        let userAdmin = try await server.userTokens(scope: "openid profile scim.admin").accessToken
        #expect(try await server.call("GET", "/scim2/Users/\(adaId)", token: userAdmin).string("userName") == "ada@example.com")
        // The scope alone is not an entitlement. Grace may ask the same client for scim.admin and gets it in her
        // token, but without the role she administers nothing.
        let graceWithScope = try await server.userTokens(
            username: "grace+ops@example.com", password: "grace's compiler password",
            scope: "openid profile scim.admin"
        ).accessToken
        #expect(try await server.verifiedClaims(graceWithScope)["scope"]?.stringValue?.contains("scim.admin") == true)
        try Self.expectError(try await server.call("GET", "/scim2/Users/\(adaId)", token: graceWithScope), 403, nil)
        try Self.expectError(
            try await server.call(
                "PATCH", "/scim2/Users/\(adaId)", token: graceWithScope,
                json: Self.patch([["op": "replace", "path": "emails", "value": [["value": "grace@evil.example"]]]])),
            403, nil)

        // The administrator disables Ada: her token stops working and she cannot sign in.
        let adaTokens = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        let adaToken = adaTokens.accessToken
        let disabled = try await server.call(
            "PATCH", "/scim2/Users/\(adaId)", token: admin,
            json: Self.patch([["op": "replace", "path": "active", "value": false]]))
        #expect(disabled.status == 200, "\(disabled.text)")
        #expect(try disabled.value("active") as? Bool == false)
        try Self.expectError(try await server.call("GET", "/scim2/Me", token: adaToken), 401, nil)
        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        #expect(try await server.submitLogin(browser, page: page, username: "ada@example.com", password: TestServer.adaPassword).status == 403)

        let put = try await server.call(
            "PUT", "/scim2/Users/\(adaId)", token: admin,
            json: [
                "schemas": [Self.userURN], "userName": "ada@example.com", "active": true, "displayName": "Countess of Lovelace",
                "emails": [["value": "ada@example.com", "type": "work", "primary": true]]
            ])
        #expect(put.status == 200, "\(put.text)")
        #expect(try put.value("active") as? Bool == true && put.string("displayName") == "Countess of Lovelace")
        _ = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)
        // Disabling revoked what she held; enabling the account again does not bring those tokens back.
        #expect(try await server.refresh(try #require(adaTokens.refreshToken)).status == 400)
        try Self.expectError(try await server.call("GET", "/scim2/Me", token: adaToken), 401, nil)
    }

    @Test func discoveryDescribesTheService() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let config = try await server.call("GET", "/scim2/ServiceProviderConfig", token: nil)
        #expect(config.status == 200)
        #expect(try config.value("schemas") as? [String] == ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"])
        #expect(try config.value("patch.supported") as? Bool == true && config.value("bulk.supported") as? Bool == false)
        #expect(try config.value("etag.supported") as? Bool == true && config.string("authenticationSchemes.0.type") == "oauthbearertoken")

        let types = try await server.call("GET", "/scim2/ResourceTypes", token: nil)
        #expect(try types.string("Resources.0.endpoint") == "/Users" && types.string("Resources.0.schema") == Self.userURN)
        let schemas = try await server.call("GET", "/scim2/Schemas", token: nil)
        #expect(try schemas.string("Resources.0.id") == Self.userURN)
        let names = try #require(try schemas.value("Resources.0.attributes") as? [[String: Any]]).compactMap { $0["name"] as? String }
        #expect(
            Set(names) == ["userName", "name", "displayName", "emails", "phoneNumbers", "photos", "locale", "active", "password", "roles"])
        #expect(try config.value("filter.supported") as? Bool == true && config.value("filter.maxResults") as? Int == 100)
        let one = try await server.call("GET", "/scim2/Schemas/\(Self.userURN)", token: nil)
        #expect(try one.string("name") == "User")
    }
}
