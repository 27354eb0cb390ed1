import Foundation
import HummingbirdOTP
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The `claims` request parameter and `acr` (OpenID Connect Core §5.5, §5.5.1.1, §3.1.2.1), as the OpenID conformance
/// suite's Basic plan asks: `oidcc-claims-essential`, `oidcc-ensure-request-with-acr-values-succeeds`,
/// `oidcc-ensure-claims-request-with-essential-acr…` style checks and `oidcc-prompt-none-*` with an `acr` the session
/// cannot meet.
@Suite("OpenID Connect: claims parameter and acr")
struct ClaimsAndACRTests {
    static let mfa = AuthenticationMethods.multiFactorACR

    static func claims(_ token: String) throws -> [String: JSONValue] {
        try CompactJWS(parsing: token).claims(as: [String: JSONValue].self)
    }

    static func options(scope: String = "openid", extra: [String: String]) -> AuthorizeOptions {
        var o = AuthorizeOptions()
        o.scope = scope
        o.extra = extra
        return o
    }

    @Test func discoverySaysSo() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["claims_parameter_supported"] as? Bool == true)
        #expect(discovery["acr_values_supported"] as? [String] == [Self.mfa, AuthenticationMethods.singleFactorACR])
    }

    @Test func acrValuesGetTheAcrOfWhatWasDone() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // A password alone: the ID token says single factor instead of nothing.
        let single = try await server.tokens(TestBrowser(), Self.options(extra: ["acr_values": Self.mfa]))
        #expect(try Self.claims(try #require(single.idToken))["acr"] == .string(AuthenticationMethods.singleFactorACR))
        // Without acr_values a single-factor sign-in carries no acr (as before).
        let plain = try await server.tokens(TestBrowser(), Self.options(extra: [:]))
        #expect(try Self.claims(try #require(plain.idToken))["acr"] == nil)
        // An account with a second factor is asked for it, and the ID token says multi-factor.
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        let secret = try await server.server.enrollTOTP(userId: demo.id).secret
        let browser = TestBrowser()
        let o = Self.options(extra: ["acr_values": Self.mfa])
        let codePage = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, o), username: "demo@example.com", password: "correct horse battery staple")
        let done = try await HostedLoginSecondFactorTests.submitCode(
            server, browser, page: codePage, code: HostedLoginSecondFactorTests.currentCode(secret, server))
        let code = try #require(done.locationQuery["code"])
        let tokens = try await server.exchangeCode(code, o)
        #expect(try Self.claims(try #require(try tokens.json()["id_token"] as? String))["acr"] == .string(Self.mfa))
    }

    @Test func anEssentialMultiFactorAcrIsNeverMetByOneFactor() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let essential = #"{"id_token":{"acr":{"essential":true,"values":["\#(Self.mfa)"]}}}"#
        // An account without a second factor: the sign-in fails on the hosted page, no code.
        let browser = TestBrowser()
        let o = Self.options(extra: ["claims": essential])
        let refused = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, o), username: "demo@example.com", password: "correct horse battery staple")
        #expect(refused.status == 403 && refused.location == nil, "\(refused.status)")
        // A single-factor session does not answer silently for it.
        let sso = TestBrowser()
        _ = try await server.signIn(sso, Self.options(extra: [:]))
        var silent = Self.options(extra: ["claims": essential])
        silent.prompt = "none"
        let answer = try await sso.get(server.authorizeURL(silent))
        #expect(answer.location?.contains("error=login_required") == true, "\(answer.location ?? "")")
        let interactive = try await sso.get(server.authorizeURL(Self.options(extra: ["claims": essential])))
        #expect(interactive.location?.hasPrefix("/login?request=") == true, "the login page, not a code")
    }

    @Test func claimsAskedForByNameComeInTheIdTokenAndAtUserinfo() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let request = #"{"id_token":{"email":{"essential":true},"nickname":null},"userinfo":{"given_name":null,"email_verified":null}}"#
        let tokens = try await server.tokens(TestBrowser(), Self.options(scope: "openid", extra: ["claims": request]))
        let idToken = try Self.claims(try #require(tokens.idToken))
        #expect(idToken["email"] == .string("demo@example.com"), "released by the claims request, not by a scope")
        #expect(idToken["nickname"] == nil, "a claim the account does not have is left out")
        #expect(idToken["given_name"] == nil, "asked for userinfo only")
        let userinfo = try await server.userinfo(tokens.accessToken).json()
        #expect(userinfo["given_name"] as? String == "Demo" && userinfo["email_verified"] as? Bool == true)
        #expect(userinfo["email"] == nil, "asked for the ID token only")
        // Asking by name does not go around the application's scopes: a client without `phone` gets no phone number.
        let narrow = ClientConfiguration(
            clientId: "narrow", redirectUris: [AuthorizeOptions().redirectUri], scopes: ["openid", "profile"])
        try await server.server.store.upsertClient(ClientRecord(configuration: narrow, secretHash: nil))
        var narrowOptions = Self.options(scope: "openid", extra: ["claims": #"{"id_token":{"email":null,"name":null}}"#])
        narrowOptions.clientId = "narrow"
        let narrowTokens = try await server.tokens(TestBrowser(), narrowOptions)
        let narrowClaims = try Self.claims(try #require(narrowTokens.idToken))
        #expect(narrowClaims["email"] == nil && narrowClaims["name"] == .string("Demo User"))
        // A malformed claims parameter is refused.
        for bad in ["not json", #"{"id_token": 5}"#, #"{"id_token":{"acr":{"essential":"yes"}}}"#, "[]"] {
            let answer = try await TestBrowser().get(server.authorizeURL(Self.options(extra: ["claims": bad])))
            #expect(answer.location?.contains("error=invalid_request") == true, "\(bad)")
        }
    }
}
