import LatchkeyTestSupport
import Crypto
import Foundation
@testable import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// DPoP (RFC 9449) end to end: the SDK binds its session to a key, the server binds the tokens (`cnf.jkt`, token type
/// `DPoP`, a public client's refresh token), and every rule of the proof has a negative test over loopback HTTP.
@Suite("DPoP: sender-constrained tokens (RFC 9449)")
struct DPoPTests {
    /// A DPoP-bound SDK session of the demo user, and its stored tokens.
    struct Session {
        let client: LatchkeyClient
        let storage: InMemoryStorageAdapter
        let http: ProgrammableHTTPClient

        var tokens: Latchkey.TokenSet {
            get async throws {
                let data = try #require(await storage.get("latchkey.session.default"))
                return try StoredSession.decode(data)
            }
        }
    }

    static func signIn(_ server: TestServer, dpop: Bool = true) async throws -> Session {
        let storage = InMemoryStorageAdapter()
        let http = ProgrammableHTTPClient()
        let client = LatchkeyClient(http: http)
        var config = server.sdkConfig()
        config.useDPoP = dpop
        try await client.initialize(config: config, storage: storage)
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        return Session(client: client, storage: storage, http: http)
    }

    /// A proof made by hand, each claim replaceable, to break one rule at a time.
    static func proof(
        _ key: SigningKey, method: String = "GET", url: String, accessToken: String? = nil, iat: Date = Date(),
        jti: String = UUID().uuidString, nonce: String? = nil, type: String = "dpop+jwt"
    ) throws -> String {
        var claims: [String: JSONValue] = [
            "jti": .string(jti), "htm": .string(method), "htu": .string(url),
            "iat": .number(Double(Int(iat.timeIntervalSince1970)))
        ]
        if let accessToken { claims["ath"] = .string(Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8))))) }
        if let nonce { claims["nonce"] = .string(nonce) }
        var jwk = try key.publicJWK()
        jwk.kid = nil
        let input = try CompactJWS.signingInput(header: JWSHeader(alg: key.algorithm.rawValue, typ: type, jwk: jwk), claims: claims)
        return input + "." + Base64URL.encode(try key.sign(Data(input.utf8)))
    }

    @Test("the SDK's session is bound: token type DPoP, cnf.jkt of its key, userinfo and SCIM with proofs, discovery and introspection say so")
    func boundSession() async throws {
        // backend introspects the session's access token as the operator's resource server (review 3, R3-9).
        let server = try await TestServer.start { $0.makeIntrospector("backend") }
        defer { Task { await server.stop() } }
        let session = try await Self.signIn(server)
        let tokens = try await session.tokens
        #expect(tokens.tokenType == "DPoP" && tokens.dpopKey != nil)
        let claims = try CompactJWS(parsing: tokens.accessToken).claims(as: [String: JSONValue].self)
        guard case .object(let cnf)? = claims["cnf"], let jkt = cnf["jkt"]?.stringValue else { Issue.record("no cnf.jkt"); return }
        let key = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        #expect(jkt == (try key.publicJWK()).thumbprint())

        #expect(try await session.client.getUser(options: ["source": "userinfo"]).email == "demo@example.com")
        #expect(try await session.client.getUserProfile().userName == "demo@example.com")
        // reachFive's identity API (passkey management) with the session's AuthToken: presented as DPoP too.
        #expect(try await session.client.listWebAuthnCredentials(authToken: try await session.client.authToken()).isEmpty)
        let headers = try await session.client.authorizationHeaders(method: "GET", url: URL(string: server.issuer + "/oauth2/userinfo")!)
        #expect(headers["Authorization"]?.hasPrefix("DPoP ") == true && headers["DPoP"] != nil)
        let viaHelper = try await session.client.sendAuthorized(HTTPRequest(url: URL(string: server.issuer + "/oauth2/userinfo")!))
        #expect(viaHelper.status == 200)

        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["dpop_signing_alg_values_supported"] as? [String] == ["ES256", "EdDSA"])
        let introspection = try await TestBrowser().postForm(
            server.base + "/oauth2/introspect", ["token": tokens.accessToken],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        let body = try introspection.json()
        #expect(body["active"] as? Bool == true && body["token_type"] as? String == "DPoP")
        #expect((body["cnf"] as? [String: Any])?["jkt"] as? String == jkt)

        try await session.client.signOut()
        #expect(await session.storage.get("latchkey.session.default") == nil, "the key is forgotten with the tokens")
        // The SDK revoked the bound refresh token with a proof by its key: it is dead even for the key's holder.
        let tokenURL = server.issuer + "/oauth2/token"
        let afterSignOut = try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            ["grant_type": "refresh_token", "refresh_token": try #require(tokens.refreshToken), "client_id": "latchkey-demo"],
            headers: ["DPoP": try Self.proof(key, method: "POST", url: tokenURL)])
        #expect(try afterSignOut.status == 400 && afterSignOut.json()["error"] as? String == "invalid_grant")
        #expect(session.http.statuses(pathEndingWith: "/oauth2/revoke") == [200, 200], "the refresh token, then the access token")
    }

    @Test("a bound access token at a resource: refused as Bearer, without a proof, and with a proof that breaks any rule")
    func resourceRules() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await Self.signIn(server).tokens
        let key = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        let other = try SigningKey.generate(.es256)
        let url = server.issuer + "/oauth2/userinfo"
        let browser = TestBrowser()
        func call(_ headers: [String: String]) async throws -> HTTPResult {
            try await browser.get(server.base + "/oauth2/userinfo", headers: headers)
        }
        let dpop = "DPoP \(tokens.accessToken)"

        let good = try await call(["Authorization": dpop, "DPoP": try Self.proof(key, url: url, accessToken: tokens.accessToken)])
        #expect(good.status == 200)

        let asBearer = try await call(["Authorization": "Bearer \(tokens.accessToken)"])
        #expect(asBearer.status == 401 && asBearer.header("WWW-Authenticate")?.hasPrefix("DPoP error=\"invalid_token\"") == true)
        #expect(asBearer.header("WWW-Authenticate")?.contains("algs=\"ES256 EdDSA\"") == true)
        // The thunderID self-service endpoint gives the same challenge (it answered a Bearer one before), in its own body.
        let profile = try await browser.get(server.base + "/users/me", headers: ["Authorization": "Bearer \(tokens.accessToken)"])
        #expect(try profile.status == 401 && (profile.json()["code"] as? String) == "AUTH-4010")
        #expect(profile.header("WWW-Authenticate")?.hasPrefix("DPoP error=\"invalid_token\"") == true)
        let noProof = try await call(["Authorization": dpop])
        #expect(noProof.status == 401 && noProof.header("WWW-Authenticate")?.contains("invalid_dpop_proof") == true)

        let reused = try Self.proof(key, url: url, accessToken: tokens.accessToken)
        let broken: [(String, String)] = [
            ("another key", try Self.proof(other, url: url, accessToken: tokens.accessToken)),
            ("wrong method", try Self.proof(key, method: "POST", url: url, accessToken: tokens.accessToken)),
            ("wrong URL", try Self.proof(key, url: server.issuer + "/oauth2/token", accessToken: tokens.accessToken)),
            ("stale iat", try Self.proof(key, url: url, accessToken: tokens.accessToken, iat: Date().addingTimeInterval(-600))),
            ("future iat", try Self.proof(key, url: url, accessToken: tokens.accessToken, iat: Date().addingTimeInterval(600))),
            ("wrong ath", try Self.proof(key, url: url, accessToken: "another token")),
            ("no ath", try Self.proof(key, url: url)),
            ("wrong typ", try Self.proof(key, url: url, accessToken: tokens.accessToken, type: "JWT")),
            ("not a JWS", "not.a.proof"),
            ("tampered", String(try Self.proof(key, url: url, accessToken: tokens.accessToken).dropLast(3)) + "AAA"),
            ("private key in jwk", try Self.privateKeyProof(url: url, accessToken: tokens.accessToken)),
            ("alg none", Self.unsignedProof(url: url, jwk: try key.publicJWK()))
        ]
        for (why, proof) in broken {
            let refused = try await call(["Authorization": dpop, "DPoP": proof])
            #expect(refused.status == 401 && refused.header("WWW-Authenticate")?.hasPrefix("DPoP error=\"invalid_dpop_proof\"") == true, "\(why)")
        }
        #expect(try await call(["Authorization": dpop, "DPoP": reused]).status == 200)
        #expect(try await call(["Authorization": dpop, "DPoP": reused]).status == 401, "a jti is single use")
        let twoProofs = try await browser.send(
            server.base + "/oauth2/userinfo", method: "GET", body: nil,
            headers: ["Authorization": dpop, "DPoP": "\(try Self.proof(key, url: url, accessToken: tokens.accessToken)), x"])
        #expect(twoProofs.status == 401)

        // An unbound token is not accepted under the DPoP scheme.
        let bearerTokens = try await Self.signIn(server, dpop: false).tokens
        #expect(bearerTokens.tokenType == "Bearer" && bearerTokens.dpopKey == nil)
        let unbound = try await call([
            "Authorization": "DPoP \(bearerTokens.accessToken)",
            "DPoP": try Self.proof(other, url: url, accessToken: bearerTokens.accessToken)
        ])
        #expect(unbound.status == 401)
        #expect(try await call(["Authorization": "Bearer \(bearerTokens.accessToken)"]).status == 200)
    }

    @Test("a public client's refresh token is bound: refused without a proof or with another key's, and still usable by its owner")
    func boundRefreshToken() async throws {
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }
        defer { Task { await server.stop() } }
        let session = try await Self.signIn(server)
        let tokens = try await session.tokens
        let refreshToken = try #require(tokens.refreshToken)
        let tokenURL = server.issuer + "/oauth2/token"
        let form = ["grant_type": "refresh_token", "refresh_token": refreshToken, "client_id": "latchkey-demo"]
        let browser = TestBrowser()
        let noProof = try await browser.postForm(server.base + "/oauth2/token", form)
        #expect(try noProof.status == 400 && (try noProof.json()["error"] as? String) == "invalid_dpop_proof")
        let thief = try await browser.postForm(
            server.base + "/oauth2/token", form,
            headers: ["DPoP": try Self.proof(try SigningKey.generate(.es256), method: "POST", url: tokenURL)])
        #expect(try thief.status == 400 && (try thief.json()["error"] as? String) == "invalid_grant")

        // Nor can a thief revoke it (the family would die with it): without a proof by its key the request is ignored.
        let revoked = try await browser.postForm(
            server.base + "/oauth2/revoke",
            [
                "token": refreshToken, "token_type_hint": "refresh_token",
                "client_id": "latchkey-demo"
            ])
        #expect(revoked.status == 200)
        // Neither attempt spent it: the owner refreshes with its key (access tokens live 10 s, inside the SDK's refresh
        // margin), and the new tokens stay bound to it.
        _ = try await session.client.getAccessToken()
        let refreshed = try await session.tokens
        #expect(session.http.refreshCount == 1)
        #expect(refreshed.tokenType == "DPoP" && refreshed.dpopKey == tokens.dpopKey && refreshed.refreshToken != refreshToken)

        // The holder of the key can revoke it: then it is dead.
        let owner = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        let current = try #require(refreshed.refreshToken)
        let revocation = try await browser.postForm(
            server.base + "/oauth2/revoke", ["token": current, "client_id": "latchkey-demo"],
            headers: ["DPoP": try Self.proof(owner, method: "POST", url: server.issuer + "/oauth2/revoke")])
        #expect(revocation.status == 200)
        let dead = try await browser.postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": current, "client_id": "latchkey-demo"],
            headers: ["DPoP": try Self.proof(owner, method: "POST", url: tokenURL)])
        #expect(try dead.status == 400 && dead.json()["error"] as? String == "invalid_grant")
    }

    @Test("nonces: a proof without the server's nonce is answered use_dpop_nonce with one; the SDK retries once, then reuses it")
    func nonces() async throws {
        let server = try await TestServer.start { $0.dpop.requireNonce = true }
        defer { Task { await server.stop() } }
        let session = try await Self.signIn(server)
        #expect(session.http.statuses(pathEndingWith: "/oauth2/token") == [400, 200], "one retry with the nonce")
        #expect(try await session.client.getUser(options: ["source": "userinfo"]).email == "demo@example.com")
        #expect(session.http.statuses(pathEndingWith: "/oauth2/userinfo") == [200], "the nonce the token endpoint sent is reused")

        let tokenURL = server.issuer + "/oauth2/token"
        let raw = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": "x", "client_id": "latchkey-demo"],
            headers: ["DPoP": try Self.proof(try SigningKey.generate(.es256), method: "POST", url: tokenURL)])
        #expect(try raw.status == 400 && (try raw.json()["error"] as? String) == "use_dpop_nonce" && raw.header("DPoP-Nonce") != nil)
        let stale = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": "x", "client_id": "latchkey-demo"],
            headers: ["DPoP": try Self.proof(try SigningKey.generate(.es256), method: "POST", url: tokenURL, nonce: "made-up")])
        #expect((try stale.json()["error"] as? String) == "use_dpop_nonce")

        // /users/me asks for the nonce as userinfo does, so a DPoP client can retry there too.
        let tokens = try await session.tokens
        let key = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        let profileURL = server.issuer + "/users/me"
        let withoutNonce = try await TestBrowser().get(
            server.base + "/users/me",
            headers: [
                "Authorization": "DPoP \(tokens.accessToken)", "DPoP": try Self.proof(key, url: profileURL, accessToken: tokens.accessToken)
            ])
        #expect(withoutNonce.status == 401 && withoutNonce.header("WWW-Authenticate")?.contains("use_dpop_nonce") == true)
        let nonce = try #require(withoutNonce.header("DPoP-Nonce"))
        let retried = try await TestBrowser().get(
            server.base + "/users/me",
            headers: [
                "Authorization": "DPoP \(tokens.accessToken)",
                "DPoP": try Self.proof(key, url: profileURL, accessToken: tokens.accessToken, nonce: nonce)
            ])
        #expect(retried.status == 200)
    }

    @Test("an application that requires DPoP refuses token requests without a proof; a bound token is exchanged only with its key")
    func requiredAndExchange() async throws {
        let server = try await TestServer.start { config in
            config.clients = config.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.requireDPoP = true; client.grantTypes.append(.tokenExchange) }
                return client
            }
        }
        defer { Task { await server.stop() } }
        await #expect { _ = try await Self.signIn(server, dpop: false) } throws: { ($0 as? LatchkeyError)?.serverCode == "invalid_dpop_proof" }
        let session = try await Self.signIn(server)
        let tokens = try await session.tokens
        let exchange = [
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "client_id": "latchkey-demo",
            "subject_token": tokens.accessToken, "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"
        ]
        let tokenURL = server.issuer + "/oauth2/token"
        let stranger = try await TestBrowser().postForm(
            server.base + "/oauth2/token", exchange,
            headers: ["DPoP": try Self.proof(try SigningKey.generate(.es256), method: "POST", url: tokenURL)])
        #expect(try stranger.status == 400 && (try stranger.json()["error"] as? String) == "invalid_grant")
        let owner = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        let allowed = try await TestBrowser().postForm(
            server.base + "/oauth2/token", exchange,
            headers: ["DPoP": try Self.proof(owner, method: "POST", url: tokenURL)])
        #expect(try allowed.status == 200 && (try allowed.json()["token_type"] as? String) == "DPoP")
        // The SDK exchanges its own bound token with the session's proof; the result is bound to the same key.
        let exchanged = try await session.client.exchangeToken(config: .init())
        #expect(exchanged.tokenType == "DPoP")
        let exchangedClaims = try CompactJWS(parsing: exchanged.accessToken).claims(as: [String: JSONValue].self)
        #expect(exchangedClaims["cnf"] == .object(["jkt": .string(try owner.publicJWK().thumbprint())]))
    }
}

extension DPoPTests {
    @Test("a public client that starts using DPoP at a refresh gets a bound refresh token from then on (RFC 9449 §5)")
    func bindingStartsAtRefresh() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let unbound = try #require(try await Self.signIn(server, dpop: false).tokens.refreshToken)
        let key = try SigningKey.generate(.es256)
        let tokenURL = server.issuer + "/oauth2/token"
        let browser = TestBrowser()
        let first = try await browser.postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": unbound, "client_id": "latchkey-demo"],
            headers: ["DPoP": try Self.proof(key, method: "POST", url: tokenURL)])
        let body = try first.json()
        #expect(first.status == 200 && body["token_type"] as? String == "DPoP")
        let bound = try #require(body["refresh_token"] as? String)
        let withoutProof = try await browser.postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": bound, "client_id": "latchkey-demo"])
        #expect(try withoutProof.status == 400 && withoutProof.json()["error"] as? String == "invalid_dpop_proof")
    }

    @Test("app-native flows: the assertion is exchanged for bound tokens; the SIGNOUT flow proves the key, a bound token as Bearer is refused")
    func flows() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        let client = LatchkeyClient(http: productionHTTPClient())
        var config = server.sdkConfig()
        config.useDPoP = true
        try await client.initialize(config: config, storage: storage)
        let signIn = EmbeddedFlowRequestConfig(flowType: .authentication)
        let first = try await client.signIn(payload: .init(), request: signIn)
        let done = try await client.signIn(
            payload: .init(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": "correct horse battery staple"]), request: signIn)
        #expect(done.flowStatus == .complete)
        let data = try #require(await storage.get("latchkey.session.default"))
        let tokens = try StoredSession.decode(data)
        #expect(tokens.tokenType == "DPoP" && tokens.dpopKey != nil)

        let asBearer = try await TestBrowser().postJSON(
            server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "SIGNOUT"],
            headers: ["Authorization": "Bearer \(tokens.accessToken)"])
        #expect(try asBearer.status == 401 && (asBearer.json()["code"] as? String) == "AUTH-4010", "a thunderID body on /flow")
        #expect(asBearer.header("WWW-Authenticate")?.hasPrefix("DPoP error=\"invalid_token\"") == true)
        let key = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        let flowURL = server.issuer + "/flow/execute"
        let anotherKey = try await TestBrowser().postJSON(
            server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "SIGNOUT"],
            headers: [
                "Authorization": "DPoP \(tokens.accessToken)",
                "DPoP": try Self.proof(try SigningKey.generate(.es256), method: "POST", url: flowURL, accessToken: tokens.accessToken)
            ])
        #expect(anotherKey.status == 401, "a live bound token needs a proof by its own key")
        let out = try await client.signIn(payload: .init(), request: .init(flowType: .signOut))
        let stillSignedIn = try await client.isSignedIn()
        #expect(out.flowStatus == .complete && !stillSignedIn)
        #expect(
            try await TestBrowser().get(
                server.base + "/oauth2/userinfo",
                headers: [
                    "Authorization": "DPoP \(tokens.accessToken)",
                    "DPoP": try Self.proof(key, url: server.issuer + "/oauth2/userinfo", accessToken: tokens.accessToken)
                ]
            ).status == 401,
            "the SIGNOUT flow ended the session's tokens")
    }

    @Test("a proof may be dated 30 s ahead of the server's clock at most, and 5 minutes back")
    func futureDatedProofs() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await Self.signIn(server).tokens
        // From here the server's clock stands still: each proof is dated against it, however long the machine takes
        // between them. (The SDK's sign-in above dated its proofs by real time.)
        server.freezeClock()
        let key = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        let url = server.issuer + "/oauth2/userinfo"
        func userinfo(iat: Date) async throws -> Int {
            try await TestBrowser().get(
                url,
                headers: [
                    "Authorization": "DPoP \(tokens.accessToken)",
                    "DPoP": try Self.proof(key, url: url, accessToken: tokens.accessToken, iat: iat)
                ]
            ).status
        }
        let now = server.clock.now
        #expect(try await userinfo(iat: now.addingTimeInterval(20)) == 200, "a clock a little ahead")
        #expect(try await userinfo(iat: now.addingTimeInterval(-290)) == 200, "a proof made almost five minutes ago")
        #expect(try await userinfo(iat: now.addingTimeInterval(60)) == 401, "made to be used later: refused")
        #expect(try await userinfo(iat: now.addingTimeInterval(299)) == 401, "the review's proof, dated 299 s ahead")
    }

    @Test("token requests with a proof that fail are limited per address; each one records at most one id, and nothing is deleted on the way")
    func failedProofBearingTokenRequestsAreThrottled() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxStartsPerAddress = 5 }
        defer { Task { await server.stop() } }
        let url = server.issuer + "/oauth2/token"
        let key = try SigningKey.generate(.es256)
        func failing() async throws -> Int {
            try await TestBrowser().postForm(
                url,
                [
                    "grant_type": "authorization_code", "code": "nope-\(UUID().uuidString)",
                    "client_id": "latchkey-demo", "redirect_uri": "http://127.0.0.1:7777/callback",
                    "code_verifier": String(repeating: "v", count: 43)
                ],
                headers: ["DPoP": try Self.proof(key, method: "POST", url: url)]
            ).status
        }
        let before = try await server.rowCount("consumed_token_ids")
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await failing()) }
        #expect(try await server.rowCount("consumed_token_ids") - before == 4, "one id per proof")
        // A token request with a proof that succeeds gives its place back.
        let session = try await Self.signIn(server)
        #expect(try await session.tokens.dpopKey != nil)
        let afterSignIn = try await server.rowCount("consumed_token_ids")
        for _ in 0..<4 { statuses.append(try await failing()) }
        #expect(statuses == [400, 400, 400, 400, 400, 429, 429, 429], "\(statuses)")
        #expect(try await server.rowCount("consumed_token_ids") - afterSignIn == 1, "a refused request records nothing")
    }

    @Test("a confidential client whose session began with DPoP cannot drop it at a refresh; it may change keys")
    func confidentialClientsKeepDPoP() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.clientId = "backend"
        options.redirectUri = "https://backend.example/callback"
        options.scope = "openid profile"
        let url = server.issuer + "/oauth2/token"
        let authorization = ["Authorization": basicAuth("backend", "backend-secret-0123456789")]
        func token(_ form: [String: String], key: SigningKey?) async throws -> HTTPResult {
            var headers = authorization
            if let key { headers["DPoP"] = try Self.proof(key, method: "POST", url: url) }
            return try await TestBrowser().postForm(url, form, headers: headers)
        }
        func codeGrant(_ key: SigningKey?) async throws -> [String: Any] {
            let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
            var form = ["grant_type": "authorization_code", "code": code, "redirect_uri": options.redirectUri]
            form["code_verifier"] = options.pkce?.verifier
            let response = try await token(form, key: key)
            #expect(response.status == 200, "\(response.text)")
            return try response.json()
        }
        let started = try await codeGrant(try SigningKey.generate(.es256))
        #expect(started["token_type"] as? String == "DPoP")
        let refreshToken = try #require(started["refresh_token"] as? String)
        let bare = try await token(["grant_type": "refresh_token", "refresh_token": refreshToken], key: nil)
        #expect(try bare.status == 400 && (bare.json()["error"] as? String) == "invalid_dpop_proof", "no Bearer downgrade: \(bare.text)")
        let rotated = try await token(["grant_type": "refresh_token", "refresh_token": refreshToken], key: try SigningKey.generate(.es256))
        #expect(try rotated.status == 200 && (rotated.json()["token_type"] as? String) == "DPoP", "another key is fine: \(rotated.text)")

        // A session that never used DPoP refreshes as before.
        let plain = try await codeGrant(nil)
        #expect(plain["token_type"] as? String == "Bearer")
        let refreshed = try await token(["grant_type": "refresh_token", "refresh_token": try #require(plain["refresh_token"] as? String)], key: nil)
        #expect(try refreshed.status == 200 && (refreshed.json()["token_type"] as? String) == "Bearer", "\(refreshed.text)")
    }

    @Test("a bound session whose access token expired still signs out: a dead token is nothing to end, not a refusal")
    func expiredBoundTokenSignsOut() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let tokens = try await Self.signIn(server).tokens
        let key = try SigningKey(algorithm: .es256, pem: try #require(tokens.dpopKey))
        server.advanceClock(3700)  // past the access token's hour
        let later = server.server.clock.now  // the proof is made on the server's (advanced) clock
        let out = try await TestBrowser().postJSON(
            server.base + "/flow/execute", ["applicationId": "latchkey-demo", "flowType": "SIGNOUT"],
            headers: [
                "Authorization": "DPoP \(tokens.accessToken)",
                "DPoP": try Self.proof(key, method: "POST", url: server.issuer + "/flow/execute", accessToken: tokens.accessToken, iat: later)
            ])
        #expect(try out.status == 200 && out.json()["flowStatus"] as? String == "COMPLETE", "\(out.text)")
    }

    static func privateKeyProof(url: String, accessToken: String) throws -> String {
        // A header whose jwk carries `d`: built by hand, since the JWK type has no private members.
        let key = try SigningKey.generate(.es256)
        let jwk = try key.publicJWK()
        let header = #"{"alg":"ES256","jwk":{"crv":"P-256","d":"AAAA","kty":"EC","x":"\#(jwk.x ?? "")","y":"\#(jwk.y ?? "")"},"typ":"dpop+jwt"}"#
        let claims =
            #"{"ath":"\#(Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8)))))","htm":"GET","htu":"\#(url)","iat":\#(Int(Date().timeIntervalSince1970)),"jti":"\#(UUID().uuidString)"}"#
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        return input + "." + Base64URL.encode(try key.sign(Data(input.utf8)))
    }

    static func unsignedProof(url: String, jwk: JWK) -> String {
        let header = #"{"alg":"none","jwk":{"crv":"P-256","kty":"EC","x":"\#(jwk.x ?? "")","y":"\#(jwk.y ?? "")"},"typ":"dpop+jwt"}"#
        let claims = #"{"htm":"GET","htu":"\#(url)","iat":\#(Int(Date().timeIntervalSince1970)),"jti":"\#(UUID().uuidString)"}"#
        return Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8)) + "."
    }
}
