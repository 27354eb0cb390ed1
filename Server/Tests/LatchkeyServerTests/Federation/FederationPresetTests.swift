import Crypto
import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The presets' quirks, each against a double that has them; and native ID tokens from a provider's own SDK.
@Suite("Federation presets and native ID tokens")
struct FederationPresetTests {
    @Test func gitHubIsOAuthWithAUserAPIAndTheVerifiedPrimaryAddress() async throws {
        let fixture = try await FederationFixture.start(.github, id: "github")
        defer { Task { await fixture.stop() } }
        let tokens = try await fixture.tokens()
        #expect(tokens.id["idp"]?.stringValue == "github")
        #expect(tokens.id["email"]?.stringValue == "octo@upstream.example", "the primary verified address, not the noreply one")
        #expect(tokens.id["email_verified"]?.boolValue == true)
        #expect(fixture.upstream.lastAuthorizationQuery["nonce"] == nil, "GitHub is not OpenID")
        let link = try await fixture.server.server.store.federatedIdentity(provider: "github", subject: "12345")
        #expect(link != nil, "the numeric id is the subject")
    }

    @Test func appleAnswersWithAFormPostAndTakesAJWTClientSecret() async throws {
        let fixture = try await FederationFixture.start(FederationFixture.appleFlavor, id: "apple-web")
        defer { Task { await fixture.stop() } }
        let tokens = try await fixture.tokens()
        #expect(fixture.upstream.lastAuthorizationQuery["response_mode"] == "form_post")
        #expect(tokens.id["idp"]?.stringValue == "apple-web")
        #expect(tokens.id["given_name"]?.stringValue == "Ada", "the name Apple sends once, beside the code")
        #expect(tokens.id["email_verified"]?.boolValue == true, "Apple's string \"true\"")
        let secret = try #require(fixture.upstream.lastTokenForm["client_secret"])
        #expect(secret.split(separator: ".").count == 3, "a JWT")
    }

    @Test func microsoftsMultiTenantIssuerIsTheTokensOwnTenant() async throws {
        let fixture = try await FederationFixture.start(.microsoft(tenantId: "9188040d-6c67-4c5b-b112-36a304b66dad"), id: "microsoft")
        defer { Task { await fixture.stop() } }
        let tokens = try await fixture.tokens()
        #expect(tokens.id["idp"]?.stringValue == "microsoft")
        // A token whose iss names another tenant than its tid is refused.
        fixture.upstream.setBehavior { $0.wrongIssuer = true }
        let refused = try await fixture.signIn()
        #expect(refused.status == 401 && refused.locationQuery["code"] == nil)
    }

    @Test func aNativeGoogleIDTokenSignsIn() async throws {
        let fixture = try await FederationFixture.start(.google, id: "google") { provider in provider.nativeClientIds = ["ios-client-id"] }
        defer { Task { await fixture.stop() } }
        func exchange(_ token: String, nonce: String) async throws -> HTTPResult {
            var options = AuthorizeOptions()
            options.extra = ["provider": "google", "id_token": token, "nonce": nonce]
            return try await TestBrowser().get(
                fixture.server.base + "/oauth/authorize?" + (fixture.server.authorizeURL(options).split(separator: "?").last ?? ""))
        }
        // The server's nonce (R3-3): the app's own client id (Google's iOS client) as the audience, the nonce as sent.
        let nonce = try await fixture.server.nativeNonce()
        let native = try await exchange(try fixture.upstream.idToken(audience: "ios-client-id", nonce: nonce), nonce: nonce)
        #expect(native.status == 302 && native.locationQuery["code"] != nil, "\(native.status) \(native.location ?? native.text)")
        // Or its SHA-256 (as Apple does it); each nonce signs in once.
        let second = try await fixture.server.nativeNonce()
        let hashed = Base64URL.encode(Data(SHA256.hash(data: Data(second.utf8))))
        let viaHash = try await exchange(try fixture.upstream.idToken(audience: fixture.upstream.clientId, nonce: hashed), nonce: second)
        #expect(viaHash.locationQuery["code"] != nil)
        // Another audience, or another nonce: refused.
        let third = try await fixture.server.nativeNonce()
        let otherAudience = try await exchange(try fixture.upstream.idToken(audience: "someone-else", nonce: third), nonce: third)
        #expect(otherAudience.locationQuery["error"] == "access_denied")
        #expect(otherAudience.locationQuery["error_user_msg"]?.contains("Google") == true, "the provider named, not a placeholder")
        let otherNonce = try await exchange(try fixture.upstream.idToken(audience: "ios-client-id", nonce: "another"), nonce: third)
        #expect(otherNonce.locationQuery["error"] == "access_denied")
        // A provider the application does not offer.
        var options = AuthorizeOptions()
        options.extra = ["provider": "facebook", "id_token": "x.y.z", "nonce": nonce]
        let unknown = try await TestBrowser().get(fixture.server.authorizeURL(options))
        #expect(unknown.locationQuery["error"] == "invalid_request")
    }

    @Test func theProvidersListNamesTheApplicationsProviders() async throws {
        let fixture = try await FederationFixture.start()
        defer { Task { await fixture.stop() } }
        for path in ["/identity/v1/providers", "/api/v1/providers"] {
            let list = try await TestBrowser().get(fixture.server.base + path + "?client_id=latchkey-demo")
            #expect(list.status == 200)
            let items = try #require(try list.json()["items"] as? [[String: Any]])
            #expect(items.count == 1 && items[0]["provider"] as? String == "corp" && items[0]["name"] as? String == "Corp SSO")
        }
        let unknown = try await TestBrowser().get(fixture.server.base + "/api/v1/providers?client_id=nobody")
        #expect(unknown.status == 400)
    }

    @Test func configurationIsCheckedAndSecretsComeFromTheEnvironment() throws {
        let file = IdentityProviderFile(
            id: "corp", type: "oidc", issuer: "https://sso.example.com", clientId: "latchkey", clientSecretEnv: "CORP_SSO_SECRET")
        #expect(throws: ConfigurationError.self) { try file.configuration(environment: [:]) }
        let configured = try file.configuration(environment: ["CORP_SSO_SECRET": "s3cret"])
        #expect(configured.clientSecret == "s3cret" && configured.scopes == ["openid", "email", "profile"])
        try configured.validate()
        var plainHTTP = configured
        plainHTTP.issuer = "http://sso.example.com"
        #expect(throws: ConfigurationError.self) { try plainHTTP.validate() }
        var badId = configured
        badId.id = "Corp SSO"
        #expect(throws: ConfigurationError.self) { try badId.validate() }
        var unknownType = file
        unknownType.type = "facebook"
        #expect(throws: ConfigurationError.self) { try unknownType.configuration(environment: ["CORP_SSO_SECRET": "x"]) }
        // An application naming a provider that does not exist.
        var server = DevelopmentDefaults.configuration(port: 0, databasePath: ":memory:", host: "127.0.0.1")
        server.identityProviders = [configured]
        server.clients[0].identityProviders = ["nope"]
        #expect(throws: ConfigurationError.self) { try server.validate() }
    }
}
