import Crypto
import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

/// The upstream provider double the federation tests sign in against, checked on its own over loopback: each
/// flavor's discovery, authorization and token endpoints, its quirks and its failure switches.
@Suite("Upstream provider double")
struct UpstreamProviderDoubleTests {
    static let redirectURI = "http://127.0.0.1:7777/federation/corp/callback"

    /// A code flow's first leg: the authorization request and the double's answer.
    private func authorize(
        _ upstream: UpstreamProviderDouble, _ browser: TestBrowser, endpoint: String? = nil, pkce: TestPKCE? = TestPKCE(),
        scope: String = "openid email profile", nonce: String? = "nonce-1", extra: [String: String] = [:]
    ) async throws -> HTTPResult {
        var query = ["client_id": upstream.clientId, "redirect_uri": Self.redirectURI, "response_type": "code", "scope": scope, "state": "st-1"]
        if let pkce {
            query["code_challenge"] = pkce.challenge
            query["code_challenge_method"] = "S256"
        }
        query["nonce"] = nonce
        query.merge(extra) { _, new in new }
        query = query.filter { !$0.value.isEmpty }  // an empty extra value leaves the parameter out
        return try await browser.get((endpoint ?? upstream.authorizationEndpoint) + "?" + TestBrowser.formEncode(query))
    }

    private func redeem(
        _ upstream: UpstreamProviderDouble, _ browser: TestBrowser, code: String, pkce: TestPKCE?, basic: Bool = false,
        secret: String? = nil, form extra: [String: String] = [:], headers: [String: String] = [:]
    ) async throws -> HTTPResult {
        var form = ["grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirectURI, "client_id": upstream.clientId]
        form["code_verifier"] = pkce?.verifier
        var headers = headers
        if basic {
            headers["Authorization"] = "Basic " + Data("\(upstream.clientId):\(secret ?? upstream.clientSecret)".utf8).base64EncodedString()
        } else {
            form["client_secret"] = secret ?? upstream.clientSecret
        }
        form.merge(extra) { _, new in new }
        return try await browser.postForm(upstream.tokenEndpoint, form, headers: headers)
    }

    private func keys(_ browser: TestBrowser, _ jwksURI: String?) async throws -> JWKSet {
        try JSONDecoder().decode(JWKSet.self, from: try await browser.get(try #require(jwksURI)).body)
    }

    /// The verified claims of an ID token.
    private func verifiedClaims(_ token: String, _ keys: JWKSet) throws -> [String: JSONValue] {
        let jws = try CompactJWS(parsing: token)
        try jws.verify(with: keys)
        return try jws.claimsObject()
    }

    // MARK: OpenID

    @Test func openIDProviderRunsACodeFlowWithPKCEAndSignsVerifiableIDTokens() async throws {
        let upstream = try await UpstreamProviderDouble.start(.oidc, redirectURI: Self.redirectURI)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        let metadata = try await browser.get(try #require(upstream.discoveryURL)).json()
        #expect(metadata["issuer"] as? String == upstream.base)
        #expect(metadata["authorization_endpoint"] as? String == upstream.base + "/authorize")
        #expect(metadata["token_endpoint"] as? String == upstream.base + "/token")
        #expect(metadata["jwks_uri"] as? String == upstream.base + "/jwks")
        #expect(metadata["userinfo_endpoint"] as? String == upstream.base + "/userinfo")
        #expect(metadata["code_challenge_methods_supported"] as? [String] == ["S256"])
        #expect(metadata["authorization_response_iss_parameter_supported"] as? Bool == true)

        let pkce = TestPKCE()
        let redirect = try await authorize(upstream, browser, pkce: pkce)
        #expect(redirect.status == 302)
        #expect(redirect.location?.hasPrefix(Self.redirectURI + "?") == true)
        #expect(redirect.locationQuery["state"] == "st-1")
        #expect(redirect.locationQuery["iss"] == upstream.base)
        let code = try #require(redirect.locationQuery["code"])
        #expect(upstream.lastAuthorizationQuery["code_challenge_method"] == "S256")
        #expect(upstream.lastAuthorizationQuery["scope"] == "openid email profile")
        #expect(upstream.lastAuthorizationQuery["nonce"] == "nonce-1")

        let answer = try await redeem(upstream, browser, code: code, pkce: pkce, basic: true)
        #expect(answer.status == 200)
        let tokens = try answer.json()
        #expect(tokens["token_type"] as? String == "Bearer")
        let access = try #require(tokens["access_token"] as? String)
        let idToken = try #require(tokens["id_token"] as? String)
        let header = try CompactJWS(parsing: idToken).header
        #expect(header.alg == "RS256" && header.kid == upstream.signingKeyId)
        let claims = try verifiedClaims(idToken, try await keys(browser, metadata["jwks_uri"] as? String))
        #expect(claims["iss"]?.stringValue == upstream.base)
        #expect(claims["sub"]?.stringValue == "upstream-user-1")
        #expect(claims["aud"]?.stringValue == upstream.clientId)
        #expect(claims["nonce"]?.stringValue == "nonce-1")
        #expect(claims["email"]?.stringValue == "ada@upstream.example")
        #expect(claims["email_verified"]?.boolValue == true)
        #expect(claims["name"]?.stringValue == "Ada Lovelace")
        #expect(claims["given_name"]?.stringValue == "Ada" && claims["family_name"]?.stringValue == "Lovelace")
        #expect(claims["amr"] == nil)
        #expect((claims["exp"]?.doubleValue ?? 0) > Date().timeIntervalSince1970)
        #expect(upstream.lastTokenClientAuthentication == "client_secret_basic")
        #expect(upstream.lastTokenForm["code_verifier"] == pkce.verifier)
        #expect(upstream.tokenRequests == 1)

        let info = try await browser.get(upstream.base + "/userinfo", headers: ["Authorization": "Bearer \(access)"])
        #expect(try info.json()["email"] as? String == "ada@upstream.example")
        #expect(try await browser.get(upstream.base + "/userinfo", headers: ["Authorization": "Bearer nope"]).status == 401)

        // A code is good once.
        let replay = try await redeem(upstream, browser, code: code, pkce: pkce)
        #expect(replay.status == 400)
        #expect(try replay.json()["error"] as? String == "invalid_grant")
        #expect(upstream.tokenRequests == 2)
    }

    @Test func tokenEndpointChecksTheClientTheVerifierAndTheRedirectURI() async throws {
        let upstream = try await UpstreamProviderDouble.start(.oidc)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        func code(_ pkce: TestPKCE?) async throws -> String {
            try #require(try await authorize(upstream, browser, pkce: pkce).locationQuery["code"])
        }
        let pkce = TestPKCE()

        let post = try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce)
        #expect(post.status == 200)
        #expect(upstream.lastTokenClientAuthentication == "client_secret_post")

        #expect(try await redeem(upstream, browser, code: try await code(pkce), pkce: TestPKCE()).json()["error"] as? String == "invalid_grant")
        #expect(try await redeem(upstream, browser, code: try await code(pkce), pkce: nil).json()["error"] as? String == "invalid_grant")
        #expect(try await redeem(upstream, browser, code: try await code(nil), pkce: pkce).json()["error"] as? String == "invalid_grant")
        #expect(try await redeem(upstream, browser, code: try await code(nil), pkce: nil).status == 200)
        let otherRedirect = try await redeem(
            upstream, browser, code: try await code(pkce), pkce: pkce, form: ["redirect_uri": "http://127.0.0.1:7777/elsewhere"])
        #expect(try otherRedirect.json()["error"] as? String == "invalid_grant")

        let badSecret = try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce, basic: true, secret: "wrong")
        #expect(badSecret.status == 401)
        #expect(try badSecret.json()["error"] as? String == "invalid_client")
        #expect(badSecret.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
        let both = try await redeem(
            upstream, browser, code: try await code(pkce), pkce: pkce, basic: true, form: ["client_secret": upstream.clientSecret])
        #expect(both.status == 401)

        upstream.setBehavior { $0.tokenEndpointAuthMethods = ["client_secret_basic"] }
        let metadata = try await browser.get(try #require(upstream.discoveryURL)).json()
        #expect(metadata["token_endpoint_auth_methods_supported"] as? [String] == ["client_secret_basic"])
        #expect(try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce).status == 401)
        #expect(try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce, basic: true).status == 200)

        upstream.setBehavior { $0.tokenEndpointFails = true }
        #expect(try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce, basic: true).status == 500)
    }

    @Test func authorizationEndpointRefusesBadRequests() async throws {
        let upstream = try await UpstreamProviderDouble.start(.oidc, redirectURI: Self.redirectURI)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()

        let unknownClient = try await authorize(upstream, browser, extra: ["client_id": "someone"])
        #expect(unknownClient.status == 400 && unknownClient.location == nil)
        let unregistered = try await authorize(upstream, browser, extra: ["redirect_uri": "http://127.0.0.1:7777/elsewhere"])
        #expect(unregistered.status == 400 && unregistered.location == nil)
        #expect(try await authorize(upstream, browser, extra: ["code_challenge_method": "plain"]).locationQuery["error"] == "invalid_request")
        #expect(try await authorize(upstream, browser, scope: "email profile").locationQuery["error"] == "invalid_scope")
        #expect(try await authorize(upstream, browser, extra: ["response_type": "token"]).locationQuery["error"] == "unsupported_response_type")
        #expect(upstream.authorizationRequests == 5)
    }

    @Test func failureSwitchesBreakWhatTheySay() async throws {
        let upstream = try await UpstreamProviderDouble.start(.oidc)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        let keys = try await keys(browser, upstream.jwksURI)
        func claims(_ change: (inout UpstreamProviderDouble.Behavior) -> Void) async throws -> [String: JSONValue] {
            upstream.setBehavior { $0 = UpstreamProviderDouble.Behavior(for: upstream.flavor) }
            upstream.setBehavior(change)
            let pkce = TestPKCE()
            let code = try #require(try await authorize(upstream, browser, pkce: pkce).locationQuery["code"])
            let token = try #require(try await redeem(upstream, browser, code: code, pkce: pkce).json()["id_token"] as? String)
            return try verifiedClaims(token, keys)
        }

        #expect(try await claims { $0.wrongNonce = true }["nonce"]?.stringValue != "nonce-1")
        #expect(try await claims { $0.wrongAudience = true }["aud"]?.stringValue == "someone-else")
        #expect(try await claims { $0.wrongIssuer = true }["iss"]?.stringValue != upstream.base)
        #expect((try await claims { $0.expired = true }["exp"]?.doubleValue ?? .infinity) < Date().timeIntervalSince1970)
        await #expect(throws: JOSEError.badSignature) { try await claims { $0.badSignature = true } }

        upstream.setUser(UpstreamProviderDouble.User(sub: "mfa-user", amr: ["pwd", "mfa"]))
        let withAMR = try await claims { _ in }
        #expect(withAMR["sub"]?.stringValue == "mfa-user")
        #expect(withAMR["amr"]?.stringArray == ["pwd", "mfa"])

        upstream.setBehavior { $0.denyConsent = true }
        let denied = try await authorize(upstream, browser).locationQuery
        #expect(denied["error"] == "access_denied" && denied["state"] == "st-1" && denied["error_description"] != nil)
        #expect(denied["code"] == nil)

        upstream.setBehavior {
            $0.denyConsent = false
            $0.wrongIssParameter = true
        }
        let impostor = try await authorize(upstream, browser).locationQuery
        #expect(impostor["code"] != nil && impostor["iss"] != nil && impostor["iss"] != upstream.base)
        upstream.setBehavior {
            $0.wrongIssParameter = false
            $0.sendsIss = false
        }
        #expect(try await authorize(upstream, browser).locationQuery["iss"] == nil)
    }

    @Test func nativeIDTokensAreMintedForAnyAudience() async throws {
        let upstream = try await UpstreamProviderDouble.start(.google)
        defer { Task { await upstream.stop() } }
        let token = try upstream.idToken(audience: "ios-client-id", nonce: "hashed-nonce")
        let claims = try verifiedClaims(token, try await keys(TestBrowser(), upstream.jwksURI))
        #expect(claims["aud"]?.stringValue == "ios-client-id")
        #expect(claims["nonce"]?.stringValue == "hashed-nonce")
        #expect(claims["iss"]?.stringValue == upstream.base)
    }

    @Test func googleKeepsTheOpenIDLayoutWithItsExtraParameters() async throws {
        let upstream = try await UpstreamProviderDouble.start(.google)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        let metadata = try await browser.get(upstream.base + "/.well-known/openid-configuration").json()
        #expect(metadata["issuer"] as? String == upstream.base)
        let pkce = TestPKCE()
        let redirect = try await authorize(upstream, browser, endpoint: metadata["authorization_endpoint"] as? String, pkce: pkce).locationQuery
        #expect(redirect["iss"] == upstream.base && redirect["authuser"] == "0" && redirect["scope"] == "openid email profile")
        let tokens = try await redeem(upstream, browser, code: try #require(redirect["code"]), pkce: pkce).json()
        let claims = try verifiedClaims(try #require(tokens["id_token"] as? String), try await keys(browser, metadata["jwks_uri"] as? String))
        #expect(claims["azp"]?.stringValue == upstream.clientId)
    }

    // MARK: Microsoft

    @Test func microsoftServesItsTenantsWithTheIssuerTemplate() async throws {
        let tenantId = "9188040d-6c67-4c5b-b112-36a304b66dad"
        let upstream = try await UpstreamProviderDouble.start(.microsoft(tenantId: tenantId))
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        for tenant in ["common", "organizations"] {
            let metadata = try await browser.get(upstream.base + "/\(tenant)/v2.0/.well-known/openid-configuration").json()
            #expect(metadata["issuer"] as? String == upstream.base + "/{tenantid}/v2.0")
            #expect(metadata["authorization_endpoint"] as? String == upstream.base + "/\(tenant)/oauth2/v2.0/authorize")
        }
        let own = try await browser.get(upstream.base + "/\(tenantId)/v2.0/.well-known/openid-configuration").json()
        #expect(own["issuer"] as? String == upstream.base + "/\(tenantId)/v2.0")
        #expect(upstream.issuer == upstream.base + "/\(tenantId)/v2.0")
        #expect(try await browser.get(upstream.base + "/contoso/v2.0/.well-known/openid-configuration").status == 400)

        let metadata = try await browser.get(try #require(upstream.discoveryURL)).json()
        let keys = try await keys(browser, metadata["jwks_uri"] as? String)
        let pkce = TestPKCE()
        let redirect = try await authorize(upstream, browser, endpoint: metadata["authorization_endpoint"] as? String, pkce: pkce)
        #expect(redirect.status == 302)
        #expect(redirect.locationQuery["iss"] == nil)
        let answer = try await browser.postForm(
            try #require(metadata["token_endpoint"] as? String),
            [
                "grant_type": "authorization_code", "code": try #require(redirect.locationQuery["code"]), "redirect_uri": Self.redirectURI,
                "client_id": upstream.clientId, "client_secret": upstream.clientSecret, "code_verifier": pkce.verifier
            ])
        let claims = try verifiedClaims(try #require(try answer.json()["id_token"] as? String), keys)
        #expect(claims["iss"]?.stringValue == upstream.base + "/\(tenantId)/v2.0")
        #expect(claims["tid"]?.stringValue == tenantId)
        #expect(claims["nonce"]?.stringValue == "nonce-1")

        upstream.setBehavior { $0.wrongIssuer = true }
        let forged = try verifiedClaims(try upstream.idToken(nonce: nil), keys)
        #expect(forged["tid"]?.stringValue == tenantId)
        #expect(forged["iss"]?.stringValue != upstream.issuer)
    }

    // MARK: GitHub

    @Test func gitHubAnswersItsOwnWayAndServesTheUserAPI() async throws {
        let upstream = try await UpstreamProviderDouble.start(.github, redirectURI: Self.redirectURI)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        let endpoint = upstream.base + "/login/oauth/authorize"
        #expect(upstream.authorizationEndpoint == endpoint)
        func code(_ pkce: TestPKCE?, scope: String = "read:user user:email") async throws -> String {
            let redirect = try await authorize(upstream, browser, pkce: pkce, scope: scope, nonce: nil, extra: ["response_type": ""])
            #expect(redirect.locationQuery["iss"] == nil)
            return try #require(redirect.locationQuery["code"])
        }
        let pkce = TestPKCE()
        let form = try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce)
        #expect(form.status == 200)
        #expect(form.header("Content-Type")?.hasPrefix("application/x-www-form-urlencoded") == true)
        #expect(form.text.hasPrefix("access_token=gho_"))

        let json = ["Accept": "application/json"]
        let answer = try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce, headers: json)
        #expect(answer.status == 200)
        let tokens = try answer.json()
        #expect(tokens["id_token"] == nil && tokens["token_type"] as? String == "bearer")
        let access = try #require(tokens["access_token"] as? String)

        let badCode = try await redeem(upstream, browser, code: "nope", pkce: pkce, headers: json)
        #expect(badCode.status == 200)
        #expect(try badCode.json()["error"] as? String == "bad_verification_code")
        let badVerifier = try await redeem(upstream, browser, code: try await code(pkce), pkce: TestPKCE(), headers: json)
        #expect(badVerifier.status == 200)
        #expect(try badVerifier.json()["error"] as? String == "bad_verification_code")
        let badSecret = try await redeem(upstream, browser, code: try await code(pkce), pkce: pkce, secret: "wrong", headers: json)
        #expect(badSecret.status == 200)
        #expect(try badSecret.json()["error"] as? String == "incorrect_client_credentials")

        let api = ["Authorization": "Bearer \(access)", "User-Agent": "latchkey-tests", "Accept": "application/vnd.github+json"]
        let user = try await browser.get(upstream.apiBase + "/user", headers: api)
        #expect(user.status == 200)
        #expect(user.text.contains("\"id\":12345,"), "the id is a JSON number")
        let profile = try user.json()
        #expect(profile["login"] as? String == "octo" && profile["name"] as? String == "Octo Cat")
        #expect(profile["email"] is NSNull)
        let emails = try #require(
            try JSONSerialization.jsonObject(with: try await browser.get(upstream.apiBase + "/user/emails", headers: api).body) as? [[String: Any]])
        let primary = try #require(emails.first { $0["primary"] as? Bool == true })
        #expect(primary["email"] as? String == "octo@upstream.example" && primary["verified"] as? Bool == true)
        #expect(upstream.userInfoRequests == 2)

        #expect(try await browser.get(upstream.apiBase + "/user", headers: ["Authorization": "Bearer \(access)"]).status == 403)
        #expect(try await browser.get(upstream.apiBase + "/user", headers: ["Authorization": "token nope", "User-Agent": "t"]).status == 401)
        let narrow = try await redeem(upstream, browser, code: try await code(pkce, scope: "read:user"), pkce: pkce, headers: json)
        let narrowAPI = ["Authorization": "token \(try #require(try narrow.json()["access_token"] as? String))", "User-Agent": "t"]
        #expect(try await browser.get(upstream.apiBase + "/user", headers: narrowAPI).status == 200)
        #expect(try await browser.get(upstream.apiBase + "/user/emails", headers: narrowAPI).status == 404)
    }

    // MARK: Apple

    @Test func appleAnswersWithAFormPostAndWantsItsClientSecretJWT() async throws {
        let (teamKey, pem) = UpstreamProviderDouble.appleTeamKey()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let (teamId, keyId, clientId) = ("TEAM123456", "KEY1234567", "com.example.web")
        let upstream = try await UpstreamProviderDouble.start(
            .apple(teamId: teamId, keyId: keyId, publicKey: teamKey.publicKey), clientId: clientId, redirectURI: Self.redirectURI)
        defer { Task { await upstream.stop() } }
        let browser = TestBrowser()
        #expect(upstream.authorizationEndpoint == upstream.base + "/auth/authorize")
        let scope = "name email"

        let query = try await authorize(upstream, browser, scope: scope)
        #expect(query.status == 400, "name and email need response_mode=form_post")

        let pkce = TestPKCE()
        let page = try await authorize(upstream, browser, pkce: pkce, scope: scope, extra: ["response_mode": "form_post"])
        #expect(page.status == 200)
        let post = try #require(UpstreamProviderDouble.formPost(in: page.text))
        #expect(post.action == Self.redirectURI)
        #expect(post.fields["state"] == "st-1")
        let code = try #require(post.fields["code"])
        let userField = try #require(post.fields["user"])
        let user = try #require(try JSONSerialization.jsonObject(with: Data(userField.utf8)) as? [String: Any])
        #expect((user["name"] as? [String: String]) == ["firstName": "Ada", "lastName": "Lovelace"])
        #expect(user["email"] as? String == "ada@upstream.example")

        let again = try #require(
            UpstreamProviderDouble.formPost(in: try await authorize(upstream, browser, scope: scope, extra: ["response_mode": "form_post"]).text))
        #expect(again.fields["code"] != nil && again.fields["user"] == nil, "the user is posted on the first authorization only")

        // Refused secrets leave the code unused.
        func secret(
            key: P256.Signing.PrivateKey = teamKey, team: String = teamId, kid: String = keyId, client: String = clientId,
            audience: String = "https://appleid.apple.com", issuedAt: Date = Date()
        ) throws -> String {
            try UpstreamProviderDouble.appleClientSecret(
                privateKey: key, teamId: team, keyId: kid, clientId: client, audience: audience, issuedAt: issuedAt)
        }
        let refused = [
            try secret(key: P256.Signing.PrivateKey()), try secret(team: "OTHERTEAM1"), try secret(kid: "OTHERKEY12"),
            try secret(client: "com.example.other"), try secret(audience: "https://example.com"),
            try secret(issuedAt: Date().addingTimeInterval(-7200)), upstream.clientSecret
        ]
        for bad in refused {
            let answer = try await redeem(upstream, browser, code: code, pkce: pkce, secret: bad)
            #expect(answer.status == 400)
            #expect(try answer.json()["error"] as? String == "invalid_client")
        }
        let answer = try await redeem(upstream, browser, code: code, pkce: pkce, secret: try secret())
        #expect(answer.status == 200)
        let tokens = try answer.json()
        #expect(tokens["refresh_token"] is String)
        let claims = try verifiedClaims(try #require(tokens["id_token"] as? String), try await keys(browser, upstream.jwksURI))
        #expect(upstream.jwksURI == upstream.base + "/auth/keys")
        #expect(claims["iss"]?.stringValue == upstream.base && claims["aud"]?.stringValue == clientId)
        #expect(claims["email_verified"]?.stringValue == "true")
        #expect(claims["is_private_email"]?.stringValue == "false")
        #expect(claims["name"] == nil && claims["nonce"]?.stringValue == "nonce-1")

        upstream.setBehavior { $0.denyConsent = true }
        let denied = try #require(
            UpstreamProviderDouble.formPost(in: try await authorize(upstream, browser, scope: scope, extra: ["response_mode": "form_post"]).text))
        #expect(denied.fields["error"] == "user_cancelled_authorize" && denied.fields["state"] == "st-1" && denied.fields["code"] == nil)
    }
}
