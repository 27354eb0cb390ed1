import Crypto
import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Security review 3, R3-1 and R3-3, replayed over loopback HTTP against the real server: the native provider
/// exchange (`/oauth/authorize?provider=…&id_token=…`, OpenID providers and Sign in with Apple) obeys the application's
/// native sign-in policy and the account's second factor, and an upstream ID token signs in only with a nonce the
/// server issued, once, and while it is fresh.
@Suite("Security: native provider sign-in (R3-1, R3-3)")
struct NativeProviderSignInAttackTests {
    static let bundleId = "io.latchkey.attack-tests"
    static let callback = "http://127.0.0.1:7777/callback"

    struct FixedVerifier: AttestationVerifier {
        func verify(_ token: String, applicationId: String) -> Bool { token == "genuine-app-\(applicationId)" }
    }

    /// The corp provider (native client id `corp-ios`) and Apple stand-in, the demo application (native) offering
    /// both, and a `browser` application `web` offering the same. `development: false` adds a `mobile` application
    /// `ios-app` and an attestation verifier.
    struct Native {
        let fixture: FederationFixture
        let apple: AppleStandIn
        var server: TestServer { fixture.server }

        static func start(development: Bool = true) async throws -> Native {
            let apple = try await AppleStandIn.start()
            let fixture = try await FederationFixture.start(adjust: { $0.nativeClientIds = ["corp-ios"] }) { config in
                config.apple.jwksURL = apple.jwksURL
                config.development = development
                if !development { config.attestationVerifier = FixedVerifier() }
                for index in config.clients.indices where config.clients[index].clientId == DevelopmentDefaults.demoClientId {
                    config.clients[index].appleBundleIds = [NativeProviderSignInAttackTests.bundleId]
                }
                var web = DevelopmentDefaults.demoClient()
                web.clientId = "web"
                web.appType = .browser
                web.identityProviders = ["corp"]
                web.appleBundleIds = [NativeProviderSignInAttackTests.bundleId]
                var mobile = web
                mobile.clientId = "ios-app"
                mobile.appType = .mobile
                var mfa = web
                mfa.clientId = "mfa-app"
                mfa.appType = .native
                mfa.requireMFA = true
                var other = web
                other.clientId = "other-app"
                other.appType = .native
                config.clients += [web, mobile, mfa, other]
            }
            return Native(fixture: fixture, apple: apple)
        }

        func stop() async {
            await fixture.stop()
            await apple.stop()
        }

        /// The demo account, with an emailed second factor and the upstream user's corp identity linked to it.
        func demoWithSecondFactorAndLinkedIdentity() async throws -> String {
            let demo = try #require(try await server.server.user(username: "demo@example.com")).id
            try await server.server.enrollEmailOTP(userId: demo)
            try await server.server.store.linkFederatedIdentity(
                FederatedIdentityRecord(provider: "corp", subject: "upstream-user-1", userId: demo, createdAt: Date()))
            return demo
        }

        /// A nonce from the server for `clientId` (nil when it issues none).
        func serverNonce(_ clientId: String = DevelopmentDefaults.demoClientId, attestation: String? = nil) async throws -> String? {
            let answer = try await TestBrowser().postJSON(
                server.base + "/identity/v1/native-nonce", ["client_id": clientId],
                headers: attestation.map { ["Attestation-Token": $0] } ?? [:])
            guard answer.status == 200 else { return nil }
            return try answer.json()["nonce"] as? String
        }

        /// The native exchange as an app (or an attacker) sends it to `/oauth/authorize`.
        func exchange(
            provider: String = "corp", idToken: String, nonce: String?, clientId: String = DevelopmentDefaults.demoClientId,
            options: AuthorizeOptions = AuthorizeOptions(), attestation: String? = nil
        ) async throws -> HTTPResult {
            var options = options
            options.clientId = clientId
            options.nonce = nonce
            options.extra["provider"] = provider
            options.extra["id_token"] = idToken
            let url = server.authorizeURL(options).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize")
            return try await TestBrowser().get(url, headers: attestation.map { ["Attestation-Token": $0] } ?? [:])
        }

        /// A corp ID token for the native client id whose `nonce` claim is `nonce`.
        func corpToken(nonce: String) throws -> String { try fixture.upstream.idToken(audience: "corp-ios", nonce: nonce) }

        /// A Sign in with Apple identity token for the demo account's verified address, its `nonce` S256 of `nonce`.
        func appleToken(nonce: String) throws -> String {
            try apple.identityToken(sub: "apple-demo", bundleId: NativeProviderSignInAttackTests.bundleId, verifier: nonce, email: "demo@example.com")
        }
    }

    static func hasCode(_ result: HTTPResult) -> Bool { result.locationQuery["code"] != nil }

    /// `access_denied` sent back, saying why (the refusal's description, not another check's), and no code.
    static func expectRefused(_ result: HTTPResult, because reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.locationQuery["error"] == "access_denied", "\(result.location ?? result.text)", sourceLocation: sourceLocation)
        #expect(
            result.locationQuery["error_description"]?.contains(reason) == true, "\(result.locationQuery["error_description"] ?? "")",
            sourceLocation: sourceLocation)
        #expect(!hasCode(result), sourceLocation: sourceLocation)
    }

    // MARK: R3-1

    @Test("R3-1: a browser application is refused a native provider exchange outright, OpenID provider and Apple alike")
    func browserApplicationIsRefusedOutright() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        // The attacker's own nonce (the review's `n-42`): the refusal comes before the token is even read.
        let viaCorp = try await native.exchange(idToken: try native.corpToken(nonce: "n-42"), nonce: "n-42", clientId: "web")
        #expect(viaCorp.status == 403, "\(viaCorp.status) \(viaCorp.location ?? viaCorp.text)")
        #expect(!Self.hasCode(viaCorp))
        let viaApple = try await native.exchange(
            provider: "apple", idToken: try native.appleToken(nonce: "n-42"), nonce: "n-42", clientId: "web")
        #expect(viaApple.status == 403, "\(viaApple.status) \(viaApple.location ?? viaApple.text)")
        #expect(!Self.hasCode(viaApple))
        // Nor does it get a nonce to try with.
        #expect(try await native.serverNonce("web") == nil)
    }

    @Test("R3-1: an account with a second factor gets no code from an OpenID provider's token, but the second-factor answer")
    func openIDProviderTokenOwesTheSecondFactor() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        _ = try await native.demoWithSecondFactorAndLinkedIdentity()
        let nonce = try #require(try await native.serverNonce())
        let answer = try await native.exchange(idToken: try native.corpToken(nonce: nonce), nonce: nonce)
        #expect(answer.status == 302, "\(answer.location ?? answer.text)")
        #expect(!Self.hasCode(answer))
        #expect(answer.locationQuery["error"] == "interaction_required")
        #expect(answer.locationQuery["mfa_required"] == "true" && answer.locationQuery["tkn"] != nil)
        // The ticket owes the factor: `/oauth/authorize` refuses it.
        let ticket = try #require(answer.locationQuery["tkn"])
        var options = AuthorizeOptions()
        options.extra["tkn"] = ticket
        let redeemed = try await TestBrowser().get(native.server.authorizeURL(options).replacingOccurrences(of: "/oauth2/", with: "/oauth/"))
        #expect(!Self.hasCode(redeemed))
        #expect(redeemed.locationQuery["error"] == "access_denied")
    }

    @Test("R3-1: the same for Sign in with Apple")
    func appleTokenOwesTheSecondFactor() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        _ = try await native.demoWithSecondFactorAndLinkedIdentity()
        let nonce = try #require(try await native.serverNonce())
        let answer = try await native.exchange(provider: "apple", idToken: try native.appleToken(nonce: nonce), nonce: nonce)
        #expect(answer.status == 302, "\(answer.location ?? answer.text)")
        #expect(!Self.hasCode(answer))
        #expect(answer.locationQuery["error"] == "interaction_required" && answer.locationQuery["tkn"] != nil)
    }

    @Test("R3-1: the second factor completed through the step-up gives tokens that say so")
    func secondFactorThroughTheStepUpGivesTokens() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        let demo = try await native.demoWithSecondFactorAndLinkedIdentity()
        let nonce = try #require(try await native.serverNonce())
        let answer = try await native.exchange(idToken: try native.corpToken(nonce: nonce), nonce: nonce)
        let ticket = try #require(answer.locationQuery["tkn"], "\(answer.location ?? answer.text)")
        let pkce = TestPKCE()
        let base = native.server.base
        let stepUp = try await TestBrowser().postJSON(
            base + "/identity/v1/mfa/stepup",
            [
                "client_id": DevelopmentDefaults.demoClientId, "redirect_uri": Self.callback, "code_challenge": pkce.challenge,
                "code_challenge_method": "S256", "scope": "openid profile email", "tkn": ticket
            ])
        #expect(stepUp.status == 200, "\(stepUp.text)")
        let stepUpToken = try #require(try stepUp.json()["token"] as? String)
        let start = try await TestBrowser().postJSON(base + "/identity/v1/passwordless/start", ["step_up": stepUpToken, "auth_type": "email"])
        let challenge = try #require(try start.json()["challenge_id"] as? String, "\(start.text)")
        let code = try #require(try await native.server.server.outboxMessages(recipient: "demo@example.com").last?.code)
        let verified = try await TestBrowser().postJSON(
            base + "/identity/v1/passwordless/verify", ["challenge_id": challenge, "verification_code": code])
        let authorizationCode = try #require(try verified.json()["code"] as? String, "\(verified.text)")
        var options = AuthorizeOptions()
        options.redirectUri = Self.callback
        let tokens = try await native.server.exchangeCode(authorizationCode, options, verifier: pkce.verifier)
        #expect(tokens.status == 200, "\(tokens.text)")
        let claims = try await native.server.verifiedClaims(try #require(try tokens.json()["id_token"] as? String))
        #expect(claims["sub"]?.stringValue == demo)
        let amr = claims["amr"]?.stringArray ?? []
        #expect(amr.contains("fed") && amr.contains("otp"), "\(amr)")
    }

    @Test("R3-1: a mobile application on a non-development server needs its attestation for a native provider exchange")
    func mobileApplicationNeedsAttestation() async throws {
        let native = try await Native.start(development: false)
        defer { Task { await native.stop() } }
        // A bot without the app's attestation, the attacker's own nonce: refused before the token is read.
        let bot = try await native.exchange(idToken: try native.corpToken(nonce: "n-42"), nonce: "n-42", clientId: "ios-app")
        #expect(bot.status == 401, "\(bot.status) \(bot.location ?? bot.text)")
        #expect(!Self.hasCode(bot))
        #expect(try await native.serverNonce("ios-app") == nil, "no nonce without the attestation either")
        // The genuine app: a nonce, then a code (the upstream user has no second factor here).
        let attestation = "genuine-app-ios-app"
        let nonce = try #require(try await native.serverNonce("ios-app", attestation: attestation))
        let genuine = try await native.exchange(
            idToken: try native.corpToken(nonce: nonce), nonce: nonce, clientId: "ios-app", attestation: attestation)
        #expect(Self.hasCode(genuine), "\(genuine.status) \(genuine.location ?? genuine.text)")
    }

    // MARK: R3-3

    @Test("R3-3: one upstream token signs in once; the positive control gets tokens")
    func theSameUpstreamTokenTwiceIsRefused() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        let nonce = try #require(try await native.serverNonce())
        let token = try native.corpToken(nonce: nonce)
        let options = AuthorizeOptions()
        let first = try await native.exchange(idToken: token, nonce: nonce, options: options)
        let code = try #require(first.locationQuery["code"], "an account without a second factor signs in: \(first.location ?? first.text)")
        let tokens = try await native.server.exchangeCode(code, options)
        let accessToken = try tokens.json()["access_token"] as? String
        #expect(tokens.status == 200 && accessToken != nil, "\(tokens.text)")
        let second = try await native.exchange(idToken: token, nonce: nonce)
        Self.expectRefused(second, because: "already used")
        // With another server nonce the token's own nonce no longer matches; still nothing.
        let fresh = try #require(try await native.serverNonce())
        let third = try await native.exchange(idToken: token, nonce: fresh)
        #expect(!Self.hasCode(third))
    }

    @Test("R3-3: a token whose nonce the server did not issue is refused on its first use", arguments: ["caller", "forged", "hashed"])
    func aNonceTheServerDidNotIssueIsRefused(_ kind: String) async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        let nonce: String =
            switch kind {
            case "caller": "nonce-from-the-token"  // the review's: the caller sends the token's own nonce back
            case "forged": "lkn1.AAAAAAAAAAAAAAAAAAAAAA.9999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            default: "caller-chosen-verifier"
            }
        let token =
            try kind == "hashed"
            ? native.corpToken(nonce: Base64URL.encode(Data(SHA256.hash(data: Data(nonce.utf8))))) : native.corpToken(nonce: nonce)
        let answer = try await native.exchange(idToken: token, nonce: nonce)
        Self.expectRefused(answer, because: "not issued by this server")
        let apple = try await native.exchange(provider: "apple", idToken: try native.appleToken(nonce: nonce), nonce: nonce)
        #expect(apple.locationQuery["error"] == "access_denied", "\(apple.location ?? apple.text)")
        #expect(!Self.hasCode(apple))
    }

    @Test("R3-3: a token issued more than five minutes ago is refused (the server's clock)")
    func anOldTokenIsRefused() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        let nonce = try #require(try await native.serverNonce())
        let token = try native.corpToken(nonce: nonce)
        let appleNonce = try #require(try await native.serverNonce())
        let appleToken = try native.appleToken(nonce: appleNonce)
        // Six minutes on: the tokens (ten-minute lifetimes) and nonces have not expired, but the tokens are stale.
        native.server.advanceClock(360)
        let answer = try await native.exchange(idToken: token, nonce: nonce)
        Self.expectRefused(answer, because: "issued more than 300 s ago")
        let apple = try await native.exchange(provider: "apple", idToken: appleToken, nonce: appleNonce)
        #expect(apple.locationQuery["error"] == "access_denied", "\(apple.location ?? apple.text)")
        #expect(!Self.hasCode(apple))
    }

    @Test("R3-3: a nonce is bound to the application it was issued to, and Apple's positive control signs in")
    func aNonceIsBoundToItsApplication() async throws {
        let native = try await Native.start()
        defer { Task { await native.stop() } }
        let nonce = try #require(try await native.serverNonce(DevelopmentDefaults.demoClientId))
        // Another native application like the demo one (no require_mfa), so only the nonce's binding can refuse it.
        let other = try await native.exchange(idToken: try native.corpToken(nonce: nonce), nonce: nonce, clientId: "other-app")
        Self.expectRefused(other, because: "not issued by this server to this application")
        // Apple, an account without a second factor (a new one: registration is open): a code.
        let appleNonce = try #require(try await native.serverNonce())
        let token = try native.apple.identityToken(
            sub: "apple-new", bundleId: Self.bundleId, verifier: appleNonce, email: "new-apple@example.com")
        let apple = try await native.exchange(provider: "apple", idToken: token, nonce: appleNonce)
        #expect(Self.hasCode(apple), "\(apple.location ?? apple.text)")
    }
}
