import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// Pairwise subject identifiers (OpenID Connect Core §8.1) over loopback HTTP: one value per account and sector, the
/// same wherever the application reads it (ID token, access token, userinfo, introspection, `/users/me`, `/scim2/Me`,
/// a refreshed ID token, a back-channel logout token, an ID-token hint at logout), never the account id; and the
/// `sector_identifier_uri` rules of registration (the conformance suite's `oidcc-registration-sector-uri` and
/// `oidcc-registration-sector-bad` modules).
@Suite("Subjects: pairwise identifiers")
struct PairwiseSubjectTests {
    static let sectorURI = "https://sector.example/redirect_uris.json"

    /// Three public applications of pairwise subjects: `pw-a` and `pw-b` of one sector (named by the same
    /// `sector_identifier_uri`), `pw-c` of its own (its redirect URI's host).
    static func pairwiseClient(_ id: String, redirect: String, sector: String?) -> ClientConfiguration {
        var client = ClientConfiguration(clientId: id, redirectUris: [redirect], scopes: ["openid", "profile", "email", "offline_access"])
        client.subjectType = .pairwise
        client.sectorIdentifierURI = sector
        client.postLogoutRedirectUris = [redirect.replacingOccurrences(of: "/cb", with: "/bye")]
        return client
    }

    static func start(_ more: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.clients += [
                pairwiseClient("pw-a", redirect: "https://a.example/cb", sector: sectorURI),
                pairwiseClient("pw-b", redirect: "https://b.example/cb", sector: sectorURI),
                pairwiseClient("pw-c", redirect: "https://c.example/cb", sector: nil)
            ]
            configuration.users.append(UserSeed(username: "ada@example.com", password: TestServer.adaPassword, claims: ["email": "ada@example.com"]))
            more(&configuration)
        }
    }

    static func options(_ clientId: String) -> AuthorizeOptions {
        var o = AuthorizeOptions()
        o.clientId = clientId
        o.redirectUri = "https://\(clientId.dropFirst(3)).example/cb"
        return o
    }

    static func accountId(_ server: TestServer) async throws -> String {
        try #require(try await server.server.store.user(username: "demo@example.com")).id
    }

    @Test("one subject per sector, the same in the ID token, access token, userinfo, introspection, /users/me, /scim2/Me and after a refresh")
    func oneSubjectEverywhere() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let account = try await Self.accountId(server)
        let tokens = try await server.tokens(TestBrowser(), Self.options("pw-a"))
        let idToken = try #require(tokens.idToken)
        let sub = try #require(try await server.verifiedClaims(idToken)["sub"]?.stringValue)
        #expect(sub != account && !sub.contains(account), "a pairwise subject is not the account id")
        #expect(sub.count == 43, "base64url of 32 bytes: \(sub)")
        #expect(try await server.verifiedClaims(tokens.accessToken)["sub"]?.stringValue == sub, "the access token names the same subject")

        let userinfo = try await server.userinfo(tokens.accessToken)
        let userinfoSub = try userinfo.string("sub")
        #expect(userinfo.status == 200 && userinfoSub == sub, "\(userinfo.text)")
        let me = try await server.call("GET", "/users/me", token: tokens.accessToken)
        let meId = try me.string("id")
        #expect(me.status == 200 && meId == sub, "\(me.text)")
        let scimMe = try await server.call("GET", "/scim2/Me", token: tokens.accessToken)
        let scimId = try scimMe.string("id")
        #expect(scimMe.status == 200 && scimId == sub, "\(scimMe.text)")
        #expect(try scimMe.string("meta.location") == server.issuer + "/scim2/Me")
        #expect(!scimMe.text.contains(account), "the account id appears nowhere")

        // Introspection by the application itself: the same subject, and no username beside it (the correlator the
        // pairwise subject withholds).
        for token in [tokens.accessToken, try #require(tokens.refreshToken)] {
            let answer = try await TestBrowser().postForm(server.base + "/oauth2/introspect", ["token": token, "client_id": "pw-a"]).json()
            #expect(answer["active"] as? Bool == true)
            #expect(answer["sub"] as? String == sub, "\(answer)")
            #expect(answer["username"] == nil, "\(answer)")
        }

        // A refreshed ID token names the same subject (the SDK refuses one that does not, OpenID Connect Core §12.2).
        let refreshed = try await server.refresh(try #require(tokens.refreshToken), clientId: "pw-a").json()
        let refreshedID = try #require(refreshed["id_token"] as? String)
        #expect(try await server.verifiedClaims(refreshedID)["sub"]?.stringValue == sub)
        #expect(try await server.verifiedClaims(try #require(refreshed["access_token"] as? String))["sub"]?.stringValue == sub)

        // The same account signing in again: the same subject.
        let again = try await server.tokens(TestBrowser(), Self.options("pw-a"))
        #expect(try await server.verifiedClaims(try #require(again.idToken))["sub"]?.stringValue == sub)
    }

    @Test("applications of one sector share the subject; another sector's differs; a public application reads the account id")
    func sectorsDecide() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let account = try await Self.accountId(server)
        func subject(_ clientId: String) async throws -> String? {
            let tokens = try await server.tokens(TestBrowser(), clientId == "latchkey-demo" ? AuthorizeOptions() : Self.options(clientId))
            return try await server.verifiedClaims(try #require(tokens.idToken))["sub"]?.stringValue
        }
        let a = try await subject("pw-a")
        let b = try await subject("pw-b")
        let c = try await subject("pw-c")
        #expect(a != nil && a == b, "one sector (the sector_identifier_uri's host), one subject")
        #expect(c != nil && c != a && c != account, "another sector, another subject")
        #expect(try await subject("latchkey-demo") == account, "public subjects are the account id")
        // Another user of the same sector: another subject.
        let ada = try await server.tokens(TestBrowser(), Self.options("pw-a"), username: "ada@example.com", password: TestServer.adaPassword)
        #expect(try await server.verifiedClaims(try #require(ada.idToken))["sub"]?.stringValue != a)
    }

    @Test("logout: an ID-token hint with a pairwise subject confirms the browser's session, and the logout token names that subject")
    func logoutSpeaksPairwise() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.start { $0.changeClient("pw-a") { $0.backchannelLogoutUri = receiver.base + "/hooks/pw-a" } }
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser, Self.options("pw-a"))
        let idToken = try #require(tokens.idToken)
        let sub = try #require(try await server.verifiedClaims(idToken)["sub"]?.stringValue)
        let out = try await browser.get(
            server.base + "/oauth2/logout?"
                + TestBrowser.formEncode(["id_token_hint": idToken, "post_logout_redirect_uri": "https://a.example/bye", "state": "s"]))
        // Without the hint recognized as the session's user the server would ask for confirmation (a 200 page).
        #expect(out.status == 302, "\(out.status) \(out.text.prefix(200))")
        #expect(out.location?.hasPrefix("https://a.example/bye") == true, "\(out.location ?? "")")
        await server.server.deliverBackChannelLogouts()
        let sent = receiver.received(at: "/hooks/pw-a")
        try #require(sent.count == 1)
        let (_, claims) = try await LogoutChannelsTests.logoutToken(sent[0], server)
        #expect(claims["sub"]?.stringValue == sub)
    }

    @Test("a token exchanged by a pairwise application names the account as that application knows it")
    func exchangedTokensNameTheExchangersSubject() async throws {
        let server = try await Self.start { $0.changeClient("pw-c") { $0.grantTypes.append(.tokenExchange) } }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens(TestBrowser(), Self.options("pw-c"))
        let sub = try await server.verifiedClaims(try #require(tokens.idToken))["sub"]?.stringValue
        let exchanged = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": GrantType.tokenExchange.rawValue, "client_id": "pw-c", "subject_token": tokens.accessToken,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"
            ])
        #expect(exchanged.status == 200, "\(exchanged.text)")
        let token = try #require(try exchanged.json()["access_token"] as? String)
        #expect(try await server.verifiedClaims(token)["sub"]?.stringValue == sub)
        #expect(try await server.userinfo(token).string("sub") == sub)
    }

    @Test("discovery offers both subject types")
    func discovery() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let metadata = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(metadata["subject_types_supported"] as? [String] == ["public", "pairwise"])
    }

    @Test("the configuration file: third-party applications default to pairwise; several redirect hosts need a sector_identifier_uri")
    func configurationRules() throws {
        func decode(_ json: String) throws -> ClientConfiguration { try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8)) }
        #expect(try decode(#"{"client_id": "x"}"#).subjectType == .public)
        #expect(try decode(#"{"client_id": "x", "third_party": true}"#).subjectType == .pairwise)
        #expect(try decode(#"{"client_id": "x", "third_party": true, "subject_type": "public"}"#).subjectType == .public)
        #expect(throws: DecodingError.self) { try decode(#"{"client_id": "x", "subject_type": "secret"}"#) }
        // Written out and read back (a registered application's row): the subject type stays what it was.
        var registered = ClientConfiguration(clientId: "lk-1", redirectUris: ["https://a.example/cb"])
        registered.subjectType = .pairwise
        #expect(try JSONDecoder().decode(ClientConfiguration.self, from: JSONEncoder().encode(registered)).subjectType == .pairwise)

        var two = Self.pairwiseClient("two", redirect: "https://a.example/cb", sector: nil)
        two.redirectUris.append("https://b.example/cb")
        #expect(throws: ConfigurationError.self) { try two.validate() }
        two.sectorIdentifierURI = Self.sectorURI
        try two.validate()
        #expect(two.sectorIdentifier == "sector.example")
        // Loopback redirect URIs are every native application's: they name no sector, and an application with only
        // those is its own.
        var loopback = Self.pairwiseClient("cli", redirect: "http://127.0.0.1:7777/cb", sector: nil)
        #expect(loopback.sectorIdentifier == "client:cli")
        loopback.redirectUris.append("com.example.app:/cb")
        #expect(loopback.sectorIdentifier == "com.example.app", "a private-use scheme is its sector")
        try loopback.validate()
        two.sectorIdentifierURI = "http://sector.example/uris.json"
        #expect(throws: ConfigurationError.self) { try two.validate() }
    }
}

/// `subject_type` and `sector_identifier_uri` through registration (RFC 7591, OpenID Connect Registration §2, §5).
@Suite("Subjects: pairwise identifiers through registration")
struct PairwiseRegistrationTests {
    struct Unreachable: Error {}

    /// A registration server whose `sector_identifier_uri` documents are `documents` (URL → the URIs listed); any
    /// other URL cannot be fetched.
    static func start(documents: [String: [String]]) async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.sectorDocuments = SectorDocuments { url, _ in
                guard let uris = documents[url.absoluteString] else { throw Unreachable() }
                return try JSONSerialization.data(withJSONObject: uris)
            }
            configuration.changeClient("backend") { $0.scopes.append("registration") }
        }
    }

    static func app(_ redirects: [String], _ more: [String: Any] = [:]) -> [String: Any] {
        var body = ClientRegistrationTests.publicApp
        body["redirect_uris"] = redirects
        body.merge(more) { _, new in new }
        return body
    }

    /// The subject the demo user's sign-in to the registered application `info` gives.
    static func subject(_ server: TestServer, _ info: HTTPResult, redirect: String) async throws -> String? {
        var options = AuthorizeOptions()
        options.clientId = try #require(try info.string("client_id"))
        options.redirectUri = redirect
        let tokens = try await server.tokens(TestBrowser(), options)
        return try await server.verifiedClaims(try #require(tokens.idToken))["sub"]?.stringValue
    }

    @Test("oidcc-registration-sector-uri: pairwise by default, public on request, one sector's applications share subjects")
    func registeredSubjects() async throws {
        let sector = "https://sector.example/uris.json"
        let server = try await Self.start(documents: [sector: ["https://a.example/cb", "https://b.example/cb", "https://b.example/other"]])
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        let account = try #require(try await server.server.store.user(username: "demo@example.com")).id

        let plain = try await ClientRegistrationTests.register(server, Self.app(["https://a.example/cb"]), token: registrar)
        #expect(plain.status == 201, "\(plain.text)")
        #expect(try plain.string("subject_type") == "pairwise", "a registered application is a third party: pairwise unless it asks")
        let plainSub = try await Self.subject(server, plain, redirect: "https://a.example/cb")
        #expect(plainSub != nil && plainSub != account)

        let open = try await ClientRegistrationTests.register(
            server, Self.app(["https://a.example/cb"], ["subject_type": "public"]), token: registrar)
        #expect(try open.string("subject_type") == "public")
        #expect(try await Self.subject(server, open, redirect: "https://a.example/cb") == account)

        // Two hosts, one sector document listing both: registered, and the sector is the document's host.
        let first = try await ClientRegistrationTests.register(
            server, Self.app(["https://a.example/cb", "https://b.example/cb"], ["sector_identifier_uri": sector]), token: registrar)
        #expect(first.status == 201, "\(first.text)")
        #expect(try first.string("sector_identifier_uri") == sector)
        let second = try await ClientRegistrationTests.register(
            server, Self.app(["https://b.example/other"], ["sector_identifier_uri": sector]), token: registrar)
        #expect(second.status == 201, "\(second.text)")
        let firstSub = try await Self.subject(server, first, redirect: "https://b.example/cb")
        #expect(firstSub != nil && firstSub != plainSub, "sector.example is not a.example")
        #expect(try await Self.subject(server, second, redirect: "https://b.example/other") == firstSub)
    }

    @Test("oidcc-registration-sector-bad and the other refusals: unlisted redirect URI, unreachable document, two hosts without one, bad values")
    func refusals() async throws {
        let sector = "https://sector.example/uris.json"
        let server = try await Self.start(documents: [sector: ["https://a.example/cb"], "https://sector.example/odd.json": []])
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        let cases: [(String, [String: Any], String)] = [
            (
                "a redirect URI the document does not list",
                Self.app(["https://a.example/cb", "https://b.example/cb"], ["sector_identifier_uri": sector]),
                "redirect URI https://b.example/cb is not listed at sector_identifier_uri"
            ),
            (
                "a document that cannot be fetched",
                Self.app(["https://a.example/cb"], ["sector_identifier_uri": "https://sector.example/gone.json"]),
                "sector_identifier_uri could not be fetched (see the server's log)"
            ),
            (
                "two hosts and no document", Self.app(["https://a.example/cb", "https://b.example/cb"]),
                "pairwise subjects need a sector_identifier_uri"
            ),
            (
                "an http document", Self.app(["https://a.example/cb"], ["sector_identifier_uri": "http://sector.example/uris.json"]),
                "sector_identifier_uri"
            ),
            ("an unknown subject type", Self.app(["https://a.example/cb"], ["subject_type": "secret"]), "subject_type must be public or pairwise"),
            ("a subject type of the wrong type", Self.app(["https://a.example/cb"], ["subject_type": 1]), "subject_type must be a string")
        ]
        for (name, body, message) in cases {
            let answer = try await ClientRegistrationTests.register(server, body, token: registrar)
            #expect(answer.status == 400, "\(name): \(answer.status) \(answer.text)")
            #expect(try answer.string("error") == "invalid_client_metadata", "\(name): \(answer.text)")
            #expect((try answer.string("error_description"))?.contains(message) == true, "\(name): \(answer.text)")
        }
        // Public subjects with two hosts need no sector.
        let publicTwo = try await ClientRegistrationTests.register(
            server, Self.app(["https://a.example/cb", "https://b.example/cb"], ["subject_type": "public"]), token: registrar)
        #expect(publicTwo.status == 201, "\(publicTwo.text)")
    }

    @Test("an update cannot move a pairwise application to another sector; one that keeps it is taken")
    func updatesKeepTheSector() async throws {
        let server = try await Self.start(documents: [:])
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        let registered = try await ClientRegistrationTests.register(server, Self.app(["https://a.example/cb"]), token: registrar)
        #expect(registered.status == 201, "\(registered.text)")
        var body = Self.app(["https://a.example/cb", "https://a.example/second"])
        body["client_id"] = try registered.string("client_id")
        let kept = try await ClientRegistrationTests.manage(server, "PUT", registered, json: body)
        #expect(kept.status == 200, "\(kept.text)")
        body["redirect_uris"] = ["https://elsewhere.example/cb"]
        let moved = try await ClientRegistrationTests.manage(server, "PUT", registered, json: body)
        #expect(moved.status == 400, "\(moved.text)")
        #expect((try moved.string("error_description"))?.contains("the sector of pairwise subjects cannot change") == true, "\(moved.text)")
    }

    @Test("without a stand-in, the document is fetched by the outbound client: a name that does not resolve is refused")
    func realFetchRefusesTheUnreachable() async throws {
        let server = try await TestServer.start { configuration in
            configuration.hostResolver = ScriptedResolver([:])
            configuration.changeClient("backend") { $0.scopes.append("registration") }
        }
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        let answer = try await ClientRegistrationTests.register(
            server, Self.app(["https://a.example/cb"], ["sector_identifier_uri": "https://sector.unknown.test/uris.json"]), token: registrar)
        #expect(answer.status == 400, "\(answer.text)")
        #expect(try answer.string("error_description") == "sector_identifier_uri could not be fetched (see the server's log)")
    }
}
