import Crypto
import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The implicit and hybrid response types (OpenID Connect Core §3.2 and §3.3) over loopback HTTP, as the conformance
/// suite's implicit and hybrid plans run them (`oidcc-server`, `oidcc-ensure-request-without-nonce-fails`,
/// `oidcc-response-type-missing`, `oidcc-idtoken-signature`, `oidcc-codereuse`): off unless an application lists them,
/// the tokens in the fragment (or a form post) with `nonce`, `at_hash` and `c_hash`, never in the query; refused for
/// FAPI 2.0 and public applications; offered in discovery only when an application may use them.
@Suite("Authorization: implicit and hybrid response types")
struct ImplicitAndHybridTests {
    static let clientId = "hybrid-rp"
    static let secret = "a-hybrid-relying-party-secret"
    static let redirect = "http://127.0.0.1:7777/callback"

    /// A confidential application that lists every response type.
    static func hybridClient() -> ClientConfiguration {
        var client = ClientConfiguration(
            clientId: clientId, clientSecret: secret, redirectUris: [redirect],
            grantTypes: [.authorizationCode, .implicit, .refreshToken], scopes: ["openid", "profile", "email", "offline_access"],
            requirePKCE: false)
        client.responseTypes = ResponseType.allCases
        return client
    }

    static func start(_ more: (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        let client = hybridClient()
        return try await TestServer.start { configuration in
            configuration.clients.append(client)
            more(&configuration)
        }
    }

    static func options(_ type: String, mode: String? = nil) -> AuthorizeOptions {
        var o = AuthorizeOptions()
        o.clientId = clientId
        o.redirectUri = redirect
        o.scope = "openid profile email"
        o.pkce = nil
        o.extra = ["response_type": type]
        if let mode { o.extra["response_mode"] = mode }
        return o
    }

    /// The parameters in a redirect's fragment (form-encoded, Multiple Response Type Encoding Practices §2.1).
    static func fragment(_ location: String?) -> [String: String] {
        guard let location, let hash = location.firstIndex(of: "#") else { return [:] }
        let items = URLComponents(string: "x:?" + location[location.index(after: hash)...])?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
    }

    static func halfHash(_ value: String) -> String { Base64URL.encode(Data(SHA256.hash(data: Data(value.utf8))).prefix(16)) }

    /// Signs the demo user in through the hosted page with `o`; returns the redirect back to the application.
    static func signIn(_ server: TestServer, _ browser: TestBrowser, _ o: AuthorizeOptions) async throws -> HTTPResult {
        let page = try await server.openLoginPage(browser, o)
        return try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "correct horse battery staple")
    }

    /// oidcc-server in the implicit and hybrid plans: each response type's answer, its tokens verified, the code of the
    /// hybrid types redeemed once (oidcc-codereuse), SSO answering the same way.
    @Test(arguments: ["id_token", "id_token token", "code id_token", "code token", "code id_token token"])
    func oidccServer(_ type: String) async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let o = Self.options(type)
        let done = try await Self.signIn(server, browser, o)
        #expect(done.status == 303, "\(done.status) \(done.text.prefix(300))")
        let location = try #require(done.location)
        #expect(location.hasPrefix(Self.redirect + "#"), "tokens travel in the fragment, never the query: \(location)")
        #expect(!location.contains("?"))
        let answer = Self.fragment(location)
        #expect(answer["state"] == o.state && answer["iss"] == server.issuer)
        let parts = Set(type.split(separator: " ").map(String.init))
        #expect((answer["code"] != nil) == parts.contains("code"))
        #expect((answer["access_token"] != nil) == parts.contains("token"))
        #expect((answer["id_token"] != nil) == parts.contains("id_token"))

        if let access = answer["access_token"] {
            #expect(answer["token_type"] == "Bearer" && answer["expires_in"] == "3600" && answer["scope"] == o.scope)
            let userinfo = try await server.userinfo(access)
            #expect(try userinfo.status == 200 && (userinfo.json()["sub"] as? String) != nil, "\(userinfo.text)")
        }
        if let idToken = answer["id_token"] {
            let claims = try await server.verifiedClaims(idToken)
            #expect(claims["nonce"]?.stringValue == o.nonce && claims["aud"]?.stringValue == Self.clientId)
            #expect(claims["sid"]?.stringValue != nil && claims["auth_time"]?.doubleValue != nil)
            #expect(claims["email"]?.stringValue == "demo@example.com", "without an access token the claims come in the ID token")
            #expect(claims["at_hash"]?.stringValue == answer["access_token"].map(Self.halfHash))
            #expect(claims["c_hash"]?.stringValue == answer["code"].map(Self.halfHash))
        }
        if let code = answer["code"] {
            let form = ["grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect]
            let headers = ["Authorization": basicAuth(Self.clientId, Self.secret)]
            let tokens = try await TestBrowser().postForm(server.base + "/oauth2/token", form, headers: headers)
            #expect(tokens.status == 200, "\(tokens.text)")
            let idToken = try await server.verifiedClaims(try #require(try tokens.json()["id_token"] as? String))
            #expect(idToken["nonce"]?.stringValue == o.nonce, "the token endpoint's ID token carries the nonce too")
            let reused = try await TestBrowser().postForm(server.base + "/oauth2/token", form, headers: headers)
            #expect(try reused.status == 400 && reused.json()["error"] as? String == "invalid_grant")
        }

        // Single sign-on answers a second request the same way, without the page.
        let again = try await browser.get(server.authorizeURL(Self.options(type)))
        #expect(again.status == 302 && again.location?.hasPrefix(Self.redirect + "#") == true, "\(again.location ?? "")")
        #expect(Self.fragment(again.location)["state"] != nil)
    }

    /// oidcc-ensure-request-without-nonce-fails, oidcc-response-type-missing and the refusals around them: each error
    /// goes back in the fragment (or the query when that was asked for), never with a token.
    @Test func refusals() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        func answer(_ o: AuthorizeOptions) async throws -> (status: Int, query: [String: String], fragment: [String: String]) {
            let result = try await TestBrowser().get(server.authorizeURL(o))
            return (result.status, result.locationQuery, Self.fragment(result.location))
        }
        var withoutNonce = Self.options("id_token")
        withoutNonce.nonce = nil
        let noNonce = try await answer(withoutNonce)
        #expect(noNonce.status == 302 && noNonce.fragment["error"] == "invalid_request", "\(noNonce)")
        #expect(noNonce.fragment["error_description"]?.contains("nonce") == true && noNonce.fragment["state"] == withoutNonce.state)

        let inQuery = try await answer(Self.options("code id_token", mode: "query"))
        #expect(inQuery.query["error"] == "invalid_request" && inQuery.fragment.isEmpty, "tokens never go in the query")

        let noType = try await TestBrowser().get(
            server.base + "/oauth2/authorize?"
                + TestBrowser.formEncode([
                    "client_id": Self.clientId, "redirect_uri": Self.redirect, "scope": "openid", "state": "s", "nonce": "n"
                ]))
        #expect(noType.locationQuery["error"] == "invalid_request" && noType.locationQuery["state"] == "s", "\(noType.location ?? "")")

        let bareToken = try await answer(Self.options("token"))
        #expect(bareToken.query["error"] == "unsupported_response_type", "OAuth's implicit grant without OpenID Connect is not offered")

        var withoutOpenID = Self.options("id_token token")
        withoutOpenID.scope = "profile"
        #expect(try await answer(withoutOpenID).fragment["error"] == "invalid_request")

        // An application that does not list a response type cannot use it (the demo application: code only).
        var demo = AuthorizeOptions()
        demo.extra = ["response_type": "code id_token"]
        let notListed = try await answer(demo)
        #expect(notListed.fragment["error"] == "unauthorized_client" && notListed.fragment["access_token"] == nil, "\(notListed)")

        // The token endpoint has no implicit grant.
        let grant = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "implicit"], headers: ["Authorization": basicAuth(Self.clientId, Self.secret)])
        #expect(try grant.status == 400 && grant.json()["error"] as? String == "unsupported_grant_type")
    }

    /// Form Post with the implicit and hybrid types: the tokens are the page's hidden fields.
    @Test func formPostCarriesTheTokens() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let page = try await Self.signIn(server, TestBrowser(), Self.options("code id_token token", mode: "form_post"))
        #expect(page.status == 200 && page.location == nil)
        for name in ["code", "id_token", "access_token", "token_type", "state", "iss"] {
            #expect(TestBrowser.hiddenField(name, in: page.text) != nil, "\(name)")
        }
    }

    /// Discovery lists a response type only when an application may use it (OpenID Connect Discovery §3), with the
    /// `implicit` grant and the `fragment` mode beside the front-channel ones.
    @Test func discoveryListsWhatApplicationsMayUse() async throws {
        let plain = try await TestServer.start()
        let plainDocument = try await TestBrowser().get(plain.base + "/.well-known/openid-configuration").json()
        await plain.stop()
        #expect(plainDocument["response_types_supported"] as? [String] == ["code"])
        #expect((plainDocument["grant_types_supported"] as? [String])?.contains("implicit") == false)
        #expect(plainDocument["response_modes_supported"] as? [String] == ["query", "form_post"])

        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let document = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(document["response_types_supported"] as? [String] == ResponseType.allCases.map(\.rawValue))
        #expect((document["grant_types_supported"] as? [String])?.contains("implicit") == true)
        #expect(document["response_modes_supported"] as? [String] == ["query", "fragment", "form_post"])
        #expect((document["claims_supported"] as? [String])?.contains("c_hash") == true)

        // Registration's ceiling counts too (what the Dynamic plan's discovery check reads).
        let dynamic = try await TestServer.start { $0.clientRegistration.responseTypes = [.code, .idToken, .idTokenToken] }
        defer { Task { await dynamic.stop() } }
        let dynamicDocument = try await TestBrowser().get(dynamic.base + "/.well-known/openid-configuration").json()
        #expect(dynamicDocument["response_types_supported"] as? [String] == ["code", "id_token", "id_token token"])
    }

    /// Start-up refuses what the response types cannot be: a front-channel type without the `implicit` grant (or the
    /// grant without one), an access token in the front channel beside `require_dpop`, FAPI 2.0, and a public
    /// application unless the operator allows it.
    @Test func configurationRules() throws {
        func configuration(_ client: ClientConfiguration) -> ServerConfiguration {
            var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: TestServer.newSQLitePath(), host: "127.0.0.1")
            configuration.clients.append(client)
            return configuration
        }
        try configuration(Self.hybridClient()).validate()

        var noGrant = Self.hybridClient()
        noGrant.grantTypes = [.authorizationCode]
        #expect(throws: ConfigurationError.self) { try configuration(noGrant).validate() }
        var grantAlone = Self.hybridClient()
        grantAlone.responseTypes = [.code]
        #expect(throws: ConfigurationError.self) { try configuration(grantAlone).validate() }
        var dpop = Self.hybridClient()
        dpop.requireDPoP = true
        #expect(throws: ConfigurationError.self) { try configuration(dpop).validate() }
        dpop.responseTypes = [.code, .idToken, .codeIdToken]
        try configuration(dpop).validate()

        // FAPI 2.0: code only, whatever the grants say.
        var fapi = try FAPI2ProfileTests.bank(try FAPI2ProfileTests.Key.es256())
        fapi.grantTypes += [.implicit]
        fapi.responseTypes += [.codeIdToken]
        #expect { try fapi.validate() } throws: { "\($0)".contains("grant type implicit is not allowed") }

        var publicClient = Self.hybridClient()
        publicClient.clientSecret = nil
        publicClient.tokenEndpointAuthMethod = .none
        var publicConfiguration = configuration(publicClient)
        #expect(throws: ConfigurationError.self) { try publicConfiguration.validate() }
        publicConfiguration.allowImplicitForPublicClients = true
        try publicConfiguration.validate()

        // The file: values as a set in any order; a type this server does not offer is refused by name.
        let json = """
            {"client_id": "rp", "client_secret": "\(Self.secret)", "redirect_uris": ["\(Self.redirect)"],
             "grant_types": ["authorization_code", "implicit"], "response_types": ["code", "token id_token", "id_token code"]}
            """
        let decoded = try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8))
        #expect(decoded.responseTypes == [.code, .idTokenToken, .codeIdToken])
        let unknown = json.replacingOccurrences(of: "\"token id_token\"", with: "\"token\"")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ClientConfiguration.self, from: Data(unknown.utf8)) }
        let plain = try JSONDecoder().decode(
            ClientConfiguration.self, from: Data(#"{"client_id": "plain", "redirect_uris": ["http://127.0.0.1/cb"]}"#.utf8))
        #expect(plain.responseTypes == [.code])
    }

    /// The Dynamic plan as the suite sends it: registrations without PKCE or extra members, some asking for the implicit
    /// and hybrid types. With `pkce_optional_for_confidential` a confidential application registered without
    /// `latchkey_require_pkce` signs in without PKCE; a public one still needs it; response types come only from the
    /// policy's ceiling, with their grant, and never to a public application unless the operator allows it.
    @Test func dynamicRegistrationWithoutPKCEAndWithResponseTypes() async throws {
        let server = try await ClientRegistrationTests.start {
            $0.open = true
            $0.pkceOptionalForConfidential = true
            $0.responseTypes = [.code, .idToken, .codeIdToken]
        }
        defer { Task { await server.stop() } }
        let confidential: [String: Any] = ["redirect_uris": [Self.redirect], "client_name": "Suite RP"]
        let registered = try await ClientRegistrationTests.register(server, confidential, token: nil)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(try registered.value("latchkey_require_pkce") as? Bool == false)
        #expect(try registered.value("response_types") as? [String] == ["code"])
        let id = try #require(try registered.string("client_id"))
        let secret = try #require(try registered.string("client_secret"))
        var o = try ClientRegistrationTests.options(registered)
        o.pkce = nil
        let query = try await server.signIn(TestBrowser(), o)
        let code = try #require(query["code"], "\(query)")
        let tokens = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect],
            headers: ["Authorization": basicAuth(id, secret)])
        #expect(tokens.status == 200, "\(tokens.text)")

        // Asked for, PKCE stays required; a public application always needs it.
        var strict = confidential
        strict["latchkey_require_pkce"] = true
        #expect(try await ClientRegistrationTests.register(server, strict, token: nil).value("latchkey_require_pkce") as? Bool == true)
        var publicApp = confidential
        publicApp["token_endpoint_auth_method"] = "none"
        #expect(try await ClientRegistrationTests.register(server, publicApp, token: nil).value("latchkey_require_pkce") as? Bool == true)

        // Response types within the ceiling bring their grant; others, and a public application's, are refused.
        var implicit = confidential
        implicit["response_types"] = ["id_token"]
        let implicitApp = try await ClientRegistrationTests.register(server, implicit, token: nil)
        #expect(implicitApp.status == 201, "\(implicitApp.text)")
        #expect(try implicitApp.value("grant_types") as? [String] == ["implicit"])
        var hybrid = confidential
        hybrid["response_types"] = ["code id_token"]
        hybrid["grant_types"] = ["authorization_code", "implicit"]
        #expect(try await ClientRegistrationTests.register(server, hybrid, token: nil).status == 201)
        var beyond = confidential
        beyond["response_types"] = ["code id_token token"]
        let refused = try await ClientRegistrationTests.register(server, beyond, token: nil)
        #expect(try refused.status == 400 && refused.string("error") == "invalid_client_metadata")
        var mismatched = confidential
        mismatched["response_types"] = ["id_token"]
        mismatched["grant_types"] = ["authorization_code"]
        #expect(try await ClientRegistrationTests.register(server, mismatched, token: nil).status == 400)
        var publicImplicit = implicit
        publicImplicit["token_endpoint_auth_method"] = "none"
        #expect(try await ClientRegistrationTests.register(server, publicImplicit, token: nil).status == 400)
    }

    @Test("a third-party application's tokens-only answer waits for consent, and its ID token names a pairwise subject")
    func tokensOnlyWaitForConsent() async throws {
        let server = try await Self.start { configuration in
            configuration.changeClient(Self.clientId) { client in
                client.thirdParty = true
                client.subjectType = .pairwise
            }
        }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let o = Self.options("id_token")
        let asked = try await Self.signIn(server, browser, o)
        let consent = try #require(asked.location)
        #expect(consent.hasPrefix("/consent?request="), "no token before the person allows the application: \(consent)")
        let done = try await server.allowConsent(browser, at: consent)
        let answer = Self.fragment(done.location)
        let idToken = try #require(answer["id_token"], "\(done.location ?? "")")
        let sub = try await server.verifiedClaims(idToken)["sub"]?.stringValue
        let account = try #require(try await server.server.store.user(username: "demo@example.com")).id
        #expect(sub != nil && sub != account, "pairwise through the front channel too")
    }
}
