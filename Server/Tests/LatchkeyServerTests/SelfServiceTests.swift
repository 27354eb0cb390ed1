import LatchkeyTestSupport
import Foundation
import Testing

@Suite("Self-service /users/me (thunderID dialect)")
struct SelfServiceTests {
    @Test func readAndReplaceTheProfile() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let sub = try #require(try await server.verifiedClaims(tokens.accessToken)["sub"]?.stringValue)

        let me = try await server.call("GET", "/users/me", token: tokens.accessToken)
        #expect(me.status == 200)
        #expect(me.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(try me.string("id") == sub)
        #expect(try me.string("type") == "default")
        #expect(try me.string("attributes.username") == "demo@example.com")
        #expect(try me.string("attributes.given_name") == "Demo")
        #expect(try me.value("attributes.email_verified") as? Bool == true, "verification flags are booleans")
        #expect(try me.value("attributes.password") == nil)

        // Send back what was read, changed: a first name, a new locale; family_name left out is removed.
        var attributes = try #require(try me.value("attributes") as? [String: Any])
        attributes["given_name"] = "Dee"
        attributes["locale"] = "fr"
        attributes["family_name"] = nil
        let put = try await server.call(
            "PUT", "/users/me", token: tokens.accessToken, json: ["attributes": attributes], contentType: "application/json")
        #expect(put.status == 200, "\(put.text)")
        #expect(try put.string("attributes.given_name") == "Dee")
        #expect(try put.value("attributes.family_name") == nil)
        #expect(try put.value("attributes.email_verified") as? Bool == true, "the email did not change, so it stays verified")

        let again = try await server.call("GET", "/users/me", token: tokens.accessToken)
        #expect(try again.string("attributes.locale") == "fr" && again.value("attributes.family_name") == nil)
        let userinfo = try await server.userinfo(tokens.accessToken).json()
        #expect(userinfo["given_name"] as? String == "Dee", "one store: the ID-token claims follow the profile")
    }

    @Test func validationConflictsAndBadBodies() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        func put(_ attributes: [String: Any]) async throws -> HTTPResult {
            try await server.call("PUT", "/users/me", token: token, json: ["attributes": attributes], contentType: "application/json")
        }
        let valid: [String: Any] = ["username": "demo@example.com", "email": "demo@example.com", "given_name": "Demo"]

        var badEmail = valid
        badEmail["email"] = "not an address"
        badEmail["locale"] = "?!"
        let invalid = try await put(badEmail)
        #expect(invalid.status == 400)
        #expect(try invalid.string("code") == "USR-1019")
        let description = try #require(try invalid.string("description.defaultValue"))
        #expect(description.contains("email:") && description.contains("locale:"), "every attribute's problem is listed: \(description)")

        var noUsername = valid
        noUsername["username"] = nil
        let missing = try await put(noUsername)
        #expect(try missing.status == 400 && (missing.string("description.defaultValue"))?.contains("username") == true)

        var taken = valid
        taken["email"] = "ADA@example.com"
        let conflict = try await put(taken)
        #expect(conflict.status == 409)
        #expect(try conflict.string("code") == "USR-1014")

        var withPassword = valid
        withPassword["password"] = "a new password 123"
        #expect(try await put(withPassword).status == 400)
        #expect(try await put(withPassword).string("code") == "USR-1001")

        let notJSON = try await server.call("PUT", "/users/me", token: token, body: Data("attributes=1".utf8), contentType: "application/json")
        #expect(try notJSON.status == 400 && (notJSON.string("code")) == "USR-1001")
        let noAttributes = try await server.call("PUT", "/users/me", token: token, json: ["given_name": "x"], contentType: "application/json")
        #expect(try noAttributes.string("code") == "USR-1001")
        var nested = valid
        nested["given_name"] = ["first": "x"]
        #expect(try await put(nested).string("code") == "USR-1019")

        // Nothing above was saved; a new address waits for its code and echoing the flag back does not verify it.
        var newEmail = valid
        newEmail["email"] = "demo.new@example.com"
        newEmail["email_verified"] = true  // echoed back: not a way to verify the new address
        let changed = try await put(newEmail)
        #expect(changed.status == 200, "\(changed.text)")
        #expect(try changed.string("attributes.email") == "demo@example.com" && changed.string("pendingEmail") == "demo.new@example.com")
        let verified = try await server.verifyPendingEmail("demo.new@example.com", token: token)
        #expect(try verified.string("attributes.email") == "demo.new@example.com")
        #expect(try verified.value("attributes.email_verified") as? Bool == true)
    }

    @Test func metaPublishesTheUserSchema() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        let meta = try await server.call("GET", "/users/me/meta", token: token)
        #expect(meta.status == 200)
        #expect(try meta.string("schema.type") == "object")
        #expect(try meta.string("schema.properties.email.format") == "email")
        #expect(try meta.value("schema.properties.username.unique") as? Bool == true)
        let required = try #require(try meta.value("schema.required") as? [String])
        #expect(Set(required) == ["username", "email"])
    }

    @Test func onlyUserAccessTokensAreAccepted() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()

        let none = try await server.call("GET", "/users/me", token: nil)
        #expect(none.status == 401)
        #expect(try none.string("code") == "AUTH-4010")
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)

        guard let idTokenValue = tokens.idToken else { Issue.record("no ID token"); return }
        let idToken = try await server.call("GET", "/users/me", token: idTokenValue)
        #expect(idToken.status == 401, "an ID token is not an access token")
        #expect(try await server.call("GET", "/users/me", token: "not.a.token").status == 401)

        let client = try await server.call("GET", "/users/me", token: try await server.clientToken(scope: "api.read"))
        #expect(client.status == 403, "a client's own token has no user")
        #expect(try client.string("code") == "AUTH-4030")

        // A token exchanged for another API's audience is not for this server.
        let exchanged = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": tokens.accessToken,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "audience": "https://api.example"
            ], headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        let foreign = try #require(try exchanged.json()["access_token"] as? String)
        #expect(try await server.call("GET", "/users/me", token: foreign).status == 401)

        #expect(try await server.call("GET", "/users/me", token: tokens.accessToken).status == 200)
        try await server.revoke(tokens.accessToken)
        let revoked = try await server.call(
            "PUT", "/users/me", token: tokens.accessToken, json: ["attributes": ["given_name": "x"]],
            contentType: "application/json")
        #expect(revoked.status == 401)
        #expect(try revoked.string("code") == "AUTH-4010")
    }

    @Test func updateCredentialsNeedsTheCurrentPassword() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword).accessToken
        func change(_ attributes: [String: String]) async throws -> HTTPResult {
            try await server.call(
                "POST", "/users/me/update-credentials", token: token, json: ["attributes": attributes],
                contentType: "application/json")
        }
        let newPassword = "the engine weaves algebra"

        let missingCurrent = try await change(["password": newPassword])
        #expect(try missingCurrent.status == 400 && (missingCurrent.string("code")) == "USR-1017")
        let wrongCurrent = try await change(["password": newPassword, "currentPassword": "a wrong guess"])
        #expect(wrongCurrent.status == 400)
        #expect(try wrongCurrent.string("code") == "USR-1017")
        #expect(try wrongCurrent.string("message.key") == "error.userservice.invalid_current_password")
        let tooShort = try await change(["password": "short", "currentPassword": TestServer.adaPassword])
        #expect(try tooShort.status == 400 && (tooShort.string("description.defaultValue"))?.contains("at least") == true)
        #expect(!tooShort.text.contains(TestServer.adaPassword), "no password is ever echoed")

        // Nothing changed yet: the old password still signs in.
        _ = try await server.userTokens(username: "ada@example.com", password: TestServer.adaPassword)

        let done = try await change(["password": newPassword, "currentPassword": TestServer.adaPassword])
        #expect(done.status == 204)
        #expect(done.body.isEmpty)

        let browser = TestBrowser()
        let page = try await server.openLoginPage(browser, AuthorizeOptions())
        let old = try await server.submitLogin(browser, page: page, username: "ada@example.com", password: TestServer.adaPassword)
        #expect(old.status != 303, "the old password no longer signs in")
        let fresh = try await server.userTokens(username: "ada@example.com", password: newPassword)
        #expect(try await server.call("GET", "/users/me", token: fresh.accessToken).string("attributes.username") == "ada@example.com")
    }
}
