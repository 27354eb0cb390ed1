import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// Review 3, R3-9: introspection (RFC 7662) is not an oracle for every confidential application. A refresh token is
/// introspected only by its own client; an access token by its own client, a client its `aud` names, or an
/// application the operator marked as an introspector (`introspection: true` in the configuration file, which
/// registration can never grant). Anything else is `{"active": false}`, exactly as for a dead token.
@Suite("Introspection: who may ask about a token")
struct IntrospectionAudienceTests {
    /// A confidential application registered through the API with the automation's token (client credentials).
    static func registeredConfidential(_ server: TestServer) async throws -> (id: String, secret: String) {
        let registrar = try await server.clientToken(scope: "registration")
        let body: [String: Any] = [
            "client_name": "Resource server", "grant_types": ["client_credentials"], "token_endpoint_auth_method": "client_secret_basic",
            "scope": "api.read", "latchkey_introspection": true, "introspection": true
        ]
        let registered = try await ClientRegistrationTests.register(server, body, token: registrar)
        #expect(registered.status == 201, "\(registered.text)")
        return (try #require(try registered.string("client_id")), try #require(try registered.string("client_secret")))
    }

    /// `client_secret_basic`, or the form's `client_secret_post` when `inForm` (poster's method).
    static func introspect(_ server: TestServer, _ token: String, as client: (id: String, secret: String), inForm: Bool = false)
        async throws -> [String: Any]
    {
        let answer =
            inForm
            ? try await TestBrowser().postForm(
                server.base + "/oauth2/introspect", ["token": token, "client_id": client.id, "client_secret": client.secret])
            : try await TestBrowser().postForm(
                server.base + "/oauth2/introspect", ["token": token], headers: ["Authorization": basicAuth(client.id, client.secret)])
        #expect(answer.status == 200, "\(answer.text)")
        return try answer.json()
    }

    @Test("a registered confidential application introspecting another application's refresh token (or access token) gets {\"active\":false}")
    func registeredApplicationsLearnNothingOfOthersTokens() async throws {
        let server = try await PrivateKeyJWTTests.startForRegistration()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let refresh = try #require(tokens.refreshToken)
        let stranger = try await Self.registeredConfidential(server)

        let aboutRefresh = try await Self.introspect(server, refresh, as: stranger)
        #expect(aboutRefresh["active"] as? Bool == false, "\(aboutRefresh)")
        #expect(aboutRefresh.count == 1, "nothing else is revealed: \(aboutRefresh)")
        let aboutAccess = try await Self.introspect(server, tokens.accessToken, as: stranger)
        #expect(aboutAccess["active"] as? Bool == false, "\(aboutAccess)")
        #expect(aboutAccess.count == 1, "\(aboutAccess)")
        // Registration cannot make it an introspector: the member is not taken.
        let record = try #require(try await server.server.store.client(id: stranger.id))
        #expect(!record.configuration.introspection)

        // The refresh token is still good: the question spent nothing.
        #expect(try await server.refresh(refresh).status == 200)
    }

    @Test("the token's own client, and an operator-marked introspector for access tokens, still get the answer")
    func ownersAndIntrospectorsStillSee() async throws {
        let server = try await TestServer.start { $0.makeIntrospector("backend") }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let refresh = try #require(tokens.refreshToken)
        let backend = (id: "backend", secret: "backend-secret-0123456789")
        let poster = (id: "poster", secret: "poster-secret-0123456789")

        // backend, an introspector: access tokens yes, another application's refresh token no.
        #expect(try await Self.introspect(server, tokens.accessToken, as: backend)["active"] as? Bool == true)
        #expect(try await Self.introspect(server, refresh, as: backend)["active"] as? Bool == false)
        // poster, a confidential application that is no introspector: neither.
        #expect(try await Self.introspect(server, tokens.accessToken, as: poster, inForm: true)["active"] as? Bool == false)
        #expect(try await Self.introspect(server, refresh, as: poster, inForm: true)["active"] as? Bool == false)
        // The token's own (public) client: both.
        for token in [tokens.accessToken, refresh] {
            let own = try await TestBrowser().postForm(server.base + "/oauth2/introspect", ["token": token, "client_id": "latchkey-demo"]).json()
            #expect(own["active"] as? Bool == true, "\(own)")
        }
        // poster's own client-credentials token: poster sees it.
        let posterToken =
            try await TestBrowser().postForm(
                server.base + "/oauth2/token", ["grant_type": "client_credentials", "client_id": "poster", "client_secret": poster.secret]
            ).json()["access_token"] as? String
        #expect(try await Self.introspect(server, try #require(posterToken), as: poster, inForm: true)["active"] as? Bool == true)
    }

    @Test("introspection is read from the configuration file, refused for a public application, and never granted by registration")
    func theFlagIsTheOperators() throws {
        let json =
            #"{"client_id": "rs", "client_secret": "rs-secret-0123456789abc", "token_endpoint_auth_method": "client_secret_basic", "grant_types": ["client_credentials"], "introspection": true}"#
        let client = try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8))
        #expect(client.introspection)
        #expect(throws: Never.self) { try client.validate() }
        var publicClient = ClientConfiguration(clientId: "app", redirectUris: ["http://127.0.0.1/cb"])
        publicClient.introspection = true
        #expect(throws: ConfigurationError.self) { try publicClient.validate() }
        let plain = try JSONDecoder().decode(ClientConfiguration.self, from: Data(#"{"client_id": "x"}"#.utf8))
        #expect(!plain.introspection)
    }
}

extension ServerConfiguration {
    /// Marks the configured application `clientId` as an introspector (`introspection: true` in the file): a resource
    /// server the operator lets introspect other applications' access tokens.
    mutating func makeIntrospector(_ clientId: String) {
        changeClient(clientId) { $0.introspection = true }
    }
}
