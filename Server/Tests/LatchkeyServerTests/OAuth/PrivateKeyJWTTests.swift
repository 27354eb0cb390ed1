import Crypto
import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// `private_key_jwt` client authentication (RFC 7523 §2.2 and §3, OpenID Connect Core §9) over loopback HTTP against
/// the in-process server: a client that registered public keys signs a short-lived assertion per request; every rule
/// of the assertion has a refusal (401 `invalid_client`, audited with its reason), and its `jti` is spent once.
///
/// The cases follow the OpenID conformance suite: the `private_key_jwt` variants of `oidcc-server` (sign-in, code,
/// refresh with an assertion) and FAPI 2.0's `fapi2-security-profile-final-ensure-client-assertion-*` modules, named
/// at each case.
@Suite("private_key_jwt client authentication (RFC 7523, OpenID Connect Core §9)")
struct PrivateKeyJWTTests {
    static let clientId = "signer"
    static let redirect = "http://127.0.0.1:7777/callback"
    static let assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// A key a client signs its assertions with: P-256 or RSA (`SigningKey`) or Ed25519 (its 32 raw bytes).
    struct AssertionKey: Sendable {
        enum Material: Sendable {
            case signing(SigningKey)
            case ed25519(Data)
        }
        let material: Material
        /// The public half as registered (`kid` as given).
        let jwk: JWK
        let alg: String

        static func es256(kid: String? = "es-1") throws -> AssertionKey { try make(.es256, kid: kid) }
        static func rs256(kid: String? = "rs-1") throws -> AssertionKey { try make(.rs256, kid: kid) }

        private static func make(_ algorithm: JWSAlgorithm, kid: String?) throws -> AssertionKey {
            let key = try SigningKey.generate(algorithm)
            var jwk = try key.publicJWK()
            jwk.kid = kid
            return AssertionKey(material: .signing(key), jwk: jwk, alg: algorithm.rawValue)
        }

        static func ed25519(kid: String? = "ed-1") -> AssertionKey {
            let key = Curve25519.Signing.PrivateKey()
            let jwk = JWK(kty: "OKP", kid: kid, use: "sig", crv: "Ed25519", x: Base64URL.encode(key.publicKey.rawRepresentation))
            return AssertionKey(material: .ed25519(key.rawRepresentation), jwk: jwk, alg: "EdDSA")
        }

        func sign(_ input: Data) throws -> Data {
            switch material {
            case .signing(let key): return try key.sign(input)
            case .ed25519(let raw): return try Curve25519.Signing.PrivateKey(rawRepresentation: raw).signature(for: input)
            }
        }

        /// A compact JWS of `claims`, with this key's `kid` unless `header` says otherwise.
        func assertion(_ claims: [String: JSONValue], header: JWSHeader? = nil) throws -> String {
            let input = try CompactJWS.signingInput(header: header ?? JWSHeader(alg: alg, kid: jwk.kid), claims: claims)
            return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
        }
    }

    /// The claims of a valid assertion of `client` for `server`'s token endpoint, made now for `lifetime` seconds.
    static func claims(
        _ server: TestServer, client: String = clientId, aud: JSONValue? = nil, now: Date = Date(), lifetime: TimeInterval = 120
    ) -> [String: JSONValue] {
        let issuedAt = Double(Int(now.timeIntervalSince1970))
        return [
            "iss": .string(client), "sub": .string(client), "aud": aud ?? .string(server.issuer + "/oauth2/token"),
            "jti": .string(UUID().uuidString), "iat": .number(issuedAt), "exp": .number(issuedAt + lifetime)
        ]
    }

    /// The `private_key_jwt` client `signer` with `keys` (client credentials, the code flow with refresh, the device
    /// grant), beside the test server's usual clients.
    static func client(_ keys: [JWK], id: String = clientId, alg: JWSAlgorithm? = nil) -> ClientConfiguration {
        var client = ClientConfiguration(
            clientId: id, name: "Signer", tokenEndpointAuthMethod: .privateKeyJWT, redirectUris: [redirect],
            grantTypes: [.clientCredentials, .authorizationCode, .refreshToken, .deviceCode],
            scopes: ["openid", "profile", "email", "offline_access", "api.read"])
        client.jwks = JWKSet(keys: keys)
        client.tokenEndpointAuthSigningAlg = alg
        return client
    }

    static func start(keys: [JWK], alg: JWSAlgorithm? = nil, more: [ClientConfiguration] = []) async throws -> TestServer {
        let signer = client(keys, alg: alg)
        return try await TestServer.start { configuration in configuration.clients += [signer] + more }
    }

    /// A token request (client credentials for `api.read` unless `form` says otherwise) authenticated by `assertion`.
    static func token(
        _ server: TestServer, assertion: String?, form: [String: String] = ["grant_type": "client_credentials", "scope": "api.read"],
        type: String? = assertionType, path: String = "/oauth2/token", headers: [String: String] = [:]
    ) async throws -> HTTPResult {
        var body = form
        if let assertion { body["client_assertion"] = assertion }
        if let type { body["client_assertion_type"] = type }
        return try await TestBrowser().postForm(server.base + path, body, headers: headers)
    }

    /// The last `client.authentication_failed` event.
    static func lastRefusal(_ server: TestServer) async throws -> AuditEvent {
        try #require(try await server.server.store.auditEvents(AuditQuery(types: [.clientAuthenticationFailed], limit: 1)).first)
    }

    static func expectRefused(_ answer: HTTPResult, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(answer.status == 401, "\(answer.text)", sourceLocation: sourceLocation)
        let body = try answer.json()
        #expect(body["error"] as? String == "invalid_client", sourceLocation: sourceLocation)
        let description = body["error_description"] as? String ?? ""
        #expect(description.contains(fragment), "\(description)", sourceLocation: sourceLocation)
    }

    // MARK: Accepted

    @Test(
        "fapi2-security-profile-final-ensure-client-assertion-with-iss-aud-succeeds: client credentials with the token endpoint, the issuer or a list naming either as aud"
    )
    func validAssertionsAuthenticate() async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let audiences: [JSONValue] = [
            .string(server.issuer + "/oauth2/token"), .string(server.issuer),
            .array([.string("https://elsewhere.example"), .string(server.issuer)])
        ]
        for aud in audiences {
            let answer = try await Self.token(server, assertion: try key.assertion(Self.claims(server, aud: aud)))
            #expect(answer.status == 200, "aud \(aud): \(answer.text)")
            let token = try #require(try answer.json()["access_token"] as? String)
            let claims = try await server.verifiedClaims(token)
            #expect(claims["sub"]?.stringValue == Self.clientId && claims["client_id"]?.stringValue == Self.clientId)
        }
        // client_id may be sent too (RFC 7523 §3): then it must be the assertion's; typ JWT or client-authentication+jwt.
        var form = ["grant_type": "client_credentials", "client_id": Self.clientId]
        let typed = try key.assertion(Self.claims(server), header: JWSHeader(alg: "ES256", kid: "es-1", typ: "client-authentication+jwt"))
        #expect(try await Self.token(server, assertion: typed, form: form).status == 200)
        form["client_id"] = "backend"
        let mismatched = try await Self.token(server, assertion: try key.assertion(Self.claims(server)), form: form)
        #expect(mismatched.status == 401, "client_id names another client than the assertion's sub")
    }

    @Test("oidcc-server, private_key_jwt variant: a sign-in's code redeemed and its refresh token used with assertions")
    func codeFlowAndRefreshWithAssertions() async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        var options = AuthorizeOptions()
        options.clientId = Self.clientId
        options.redirectUri = Self.redirect
        let code = try #require(try await server.signIn(TestBrowser(), options)["code"])
        let exchanged = try await Self.token(
            server, assertion: try key.assertion(Self.claims(server)),
            form: [
                "grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect,
                "code_verifier": try #require(options.pkce?.verifier)
            ])
        #expect(exchanged.status == 200, "\(exchanged.text)")
        let body = try exchanged.json()
        let idToken = try await server.verifiedClaims(try #require(body["id_token"] as? String))
        #expect(idToken["aud"]?.stringArray == [Self.clientId])
        let refreshToken = try #require(body["refresh_token"] as? String)

        // The refresh needs the client's authentication too: a bare client_id is the wrong method.
        let bare = try await server.refresh(refreshToken, clientId: Self.clientId)
        try Self.expectRefused(bare, "must authenticate with private_key_jwt")
        let refreshed = try await Self.token(
            server, assertion: try key.assertion(Self.claims(server)), form: ["grant_type": "refresh_token", "refresh_token": refreshToken])
        #expect(refreshed.status == 200, "\(refreshed.text)")
    }

    @Test("each key found by kid, or without kid tried by its algorithm: ES256, RS256 and EdDSA; a kid naming a key of another alg is refused")
    func keysByKidAndByAlgorithm() async throws {
        let es = try AssertionKey.es256(), rs = try AssertionKey.rs256(), ed = AssertionKey.ed25519()
        let server = try await Self.start(keys: [es.jwk, rs.jwk, ed.jwk])
        defer { Task { await server.stop() } }
        for key in [es, rs, ed] {
            let byKid = try await Self.token(server, assertion: try key.assertion(Self.claims(server)))
            #expect(byKid.status == 200, "\(key.alg) by kid: \(byKid.text)")
            let byTrial = try await Self.token(server, assertion: try key.assertion(Self.claims(server), header: JWSHeader(alg: key.alg)))
            #expect(byTrial.status == 200, "\(key.alg) without kid: \(byTrial.text)")
        }
        let confused = try es.assertion(Self.claims(server), header: JWSHeader(alg: "ES256", kid: "rs-1"))
        try Self.expectRefused(try await Self.token(server, assertion: confused), "is not for its alg")
    }

    @Test("token_endpoint_auth_signing_alg pins the algorithm: an assertion by the client's other key is refused")
    func registeredAlgorithmIsTheOnlyOne() async throws {
        let es = try AssertionKey.es256(), rs = try AssertionKey.rs256()
        let server = try await Self.start(keys: [es.jwk, rs.jwk], alg: .es256)
        defer { Task { await server.stop() } }
        #expect(try await Self.token(server, assertion: try es.assertion(Self.claims(server))).status == 200)
        try Self.expectRefused(try await Self.token(server, assertion: try rs.assertion(Self.claims(server))), "alg RS256 is not accepted (ES256)")
        #expect(try await Self.lastRefusal(server).details["reason"] == "assertion_signature")
    }

    @Test("every endpoint that authenticates clients takes an assertion: revocation, introspection, PAR, device authorization (aud its own URL)")
    func everyEndpointTakesAssertions() async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let issued = try await Self.token(server, assertion: try key.assertion(Self.claims(server)))
        let accessToken = try #require(try issued.json()["access_token"] as? String)
        func assertion(for endpoint: String) throws -> String {
            try key.assertion(Self.claims(server, aud: .string(server.issuer + "/oauth2/" + endpoint)))
        }
        let introspected = try await Self.token(
            server, assertion: try assertion(for: "introspect"), form: ["token": accessToken], path: "/oauth2/introspect")
        #expect(try introspected.status == 200 && (introspected.json()["active"] as? Bool) == true, "\(introspected.text)")
        var options = AuthorizeOptions()
        options.clientId = Self.clientId
        options.redirectUri = Self.redirect
        var pushedForm = PushedAuthorizationTests.form(options)
        pushedForm["client_id"] = nil
        let pushed = try await Self.token(server, assertion: try assertion(for: "par"), form: pushedForm, path: "/oauth2/par")
        #expect(pushed.status == 201, "\(pushed.text)")
        let device = try await Self.token(
            server, assertion: try assertion(for: "device_authorization"), form: ["scope": "openid"], path: "/oauth2/device_authorization")
        #expect(try device.status == 200 && (device.json()["device_code"] as? String) != nil, "\(device.text)")
        let revoked = try await Self.token(server, assertion: try assertion(for: "revoke"), form: ["token": accessToken], path: "/oauth2/revoke")
        #expect(revoked.status == 200, "\(revoked.text)")
        let after = try await Self.token(
            server, assertion: try assertion(for: "introspect"), form: ["token": accessToken], path: "/oauth2/introspect")
        #expect((try after.json()["active"] as? Bool) == false)
    }

    @Test("discovery: private_key_jwt at the token, revocation and introspection endpoints, with the algorithms verified")
    func discoveryNamesTheMethod() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let metadata = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        for member in ["token", "revocation", "introspection"] {
            #expect((metadata["\(member)_endpoint_auth_methods_supported"] as? [String])?.contains("private_key_jwt") == true, "\(member)")
            #expect(metadata["\(member)_endpoint_auth_signing_alg_values_supported"] as? [String] == ["ES256", "RS256", "EdDSA"], "\(member)")
        }
    }

    // MARK: Refused

    /// One broken assertion (or request) each; all are 401 `invalid_client`.
    enum Broken: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// fapi2-security-profile-final-ensure-client-assertion-with-no-exp-fails
        case noExp
        /// fapi2-security-profile-final-ensure-client-assertion-with-wrong-aud-fails
        case wrongAud
        /// fapi2-security-profile-final-ensure-client-assertion-with-wrong-iss-fails
        case wrongIss
        /// fapi2-security-profile-final-ensure-client-assertion-with-wrong-sub-fails (client_id names the client)
        case wrongSub
        /// The same without client_id: the client is the one `sub` names, here none.
        case subNamingNoClient
        /// fapi2-security-profile-final-ensure-client-assertion-invalid-signature-fails
        case invalidSignature
        /// fapi2-security-profile-final-ensure-client-assertion-alg-none-fails (no signature at all)
        case algNone
        /// The client id as an HMAC secret (HS256): no HMAC algorithm exists here.
        case hs256WithClientIdAsSecret
        /// Signed by a key the client did not register, without `kid` (every key tried) …
        case unregisteredKey
        /// … and with its own `kid`.
        case unregisteredKid
        case noJti
        /// Valid for two hours.
        case tooLongLifetime
        case notYetValid
        case issuedInTheFuture
        /// Another JWT type (a DPoP proof's) signed by the client's key.
        case wrongType
        case wrongAssertionType
        case notAJWS

        var testDescription: String {
            switch self {
            case .noExp: "fapi2-…-ensure-client-assertion-with-no-exp-fails"
            case .wrongAud: "fapi2-…-ensure-client-assertion-with-wrong-aud-fails"
            case .wrongIss: "fapi2-…-ensure-client-assertion-with-wrong-iss-fails"
            case .wrongSub: "fapi2-…-ensure-client-assertion-with-wrong-sub-fails"
            case .invalidSignature: "fapi2-…-ensure-client-assertion-invalid-signature-fails"
            case .algNone: "fapi2-…-ensure-client-assertion-alg-none-fails"
            default: rawValue
            }
        }

        /// The request, the `error_description` fragment, the audit reason and whether the audit names the client.
        func attempt(_ server: TestServer, _ key: AssertionKey) async throws -> (HTTPResult, String, String, Bool) {
            var claims = PrivateKeyJWTTests.claims(server)
            let now = Double(Int(Date().timeIntervalSince1970))
            func send(_ assertion: String, form: [String: String] = ["grant_type": "client_credentials"], type: String? = assertionType)
                async throws -> HTTPResult
            {
                try await PrivateKeyJWTTests.token(server, assertion: assertion, form: form, type: type)
            }
            switch self {
            case .noExp:
                claims["exp"] = nil
                return (try await send(try key.assertion(claims)), "has no exp", "assertion_claims", true)
            case .wrongAud:
                claims["aud"] = .string("https://other-server.example/oauth2/token")
                return (try await send(try key.assertion(claims)), "aud must name this server", "assertion_claims", true)
            case .wrongIss:
                claims["iss"] = .string("someone-else")
                return (try await send(try key.assertion(claims)), "iss must be the client id", "assertion_claims", true)
            case .wrongSub:
                claims["sub"] = .string("someone-else")
                let form = ["grant_type": "client_credentials", "client_id": clientId]
                return (try await send(try key.assertion(claims), form: form), "does not match the client assertion's sub", "assertion_claims", true)
            case .subNamingNoClient:
                claims["sub"] = .string("someone-else")
                return (try await send(try key.assertion(claims)), "unknown client", "unknown_client", false)
            case .invalidSignature:
                let parts = try key.assertion(claims).split(separator: ".").map(String.init)
                var signature = try #require(Base64URL.decode(parts[2]))
                signature[5] ^= 0x01
                let tampered = parts[0] + "." + parts[1] + "." + Base64URL.encode(signature)
                return (try await send(tampered), "signature does not verify", "assertion_signature", true)
            case .algNone:
                let input = try CompactJWS.signingInput(header: JWSHeader(alg: "none"), claims: claims)
                return (try await send(input + "."), "alg none is not accepted", "assertion_signature", true)
            case .hs256WithClientIdAsSecret:
                let input = try CompactJWS.signingInput(header: JWSHeader(alg: "HS256"), claims: claims)
                let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(clientId.utf8)))
                return (try await send(input + "." + Base64URL.encode(Data(mac))), "alg HS256 is not accepted", "assertion_signature", true)
            case .unregisteredKey:
                let stranger = try AssertionKey.es256(kid: nil)
                return (try await send(try stranger.assertion(claims)), "signature does not verify", "assertion_signature", true)
            case .unregisteredKid:
                let stranger = try AssertionKey.es256(kid: "stranger")
                return (try await send(try stranger.assertion(claims)), "no registered key", "assertion_signature", true)
            case .noJti:
                claims["jti"] = nil
                return (try await send(try key.assertion(claims)), "needs a jti", "assertion_claims", true)
            case .tooLongLifetime:
                claims["exp"] = .number(now + 7200)
                return (try await send(try key.assertion(claims)), "valid for longer than 3600 s", "assertion_claims", true)
            case .notYetValid:
                claims["nbf"] = .number(now + 600)
                return (try await send(try key.assertion(claims)), "not valid yet", "assertion_claims", true)
            case .issuedInTheFuture:
                claims["iat"] = .number(now + 600)
                claims["exp"] = .number(now + 700)
                return (try await send(try key.assertion(claims)), "iat", "assertion_claims", true)
            case .wrongType:
                let proof = try key.assertion(claims, header: JWSHeader(alg: "ES256", kid: key.jwk.kid, typ: "dpop+jwt"))
                return (try await send(proof), "typ must be JWT", "assertion_signature", true)
            case .wrongAssertionType:
                let saml = "urn:ietf:params:oauth:client-assertion-type:saml2-bearer"
                return (try await send(try key.assertion(claims), type: saml), "client_assertion_type must be", "malformed_credentials", false)
            case .notAJWS:
                return (try await send("not-a-jws"), "not a JWS", "malformed_credentials", false)
            }
        }
    }

    @Test("a broken assertion is 401 invalid_client, saying why, audited with a reason from the closed set", arguments: Broken.allCases)
    func brokenAssertionsAreRefused(_ broken: Broken) async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let (answer, fragment, reason, namesClient) = try await broken.attempt(server, key)
        try Self.expectRefused(answer, fragment)
        let event = try await Self.lastRefusal(server)
        #expect(event.details == ["reason": reason, "endpoint": "token"])
        #expect(event.clientId == (namesClient ? Self.clientId : nil) && event.outcome == .failure)
        // The client itself is fine: a valid assertion still works.
        #expect(try await Self.token(server, assertion: try key.assertion(Self.claims(server))).status == 200)
    }

    @Test("fapi2-security-profile-final-ensure-client-assertion-with-expired-exp-fails: past exp plus 60 s of leeway, refused")
    func expiredAssertionIsRefused() async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        // Within the leeway: exp 30 s ago on the server's clock is still accepted (the client's clock may be behind).
        let lenient = try key.assertion(Self.claims(server, lifetime: 30))
        server.advanceClock(60)
        #expect(try await Self.token(server, assertion: lenient).status == 200)
        let expiring = try key.assertion(Self.claims(server, now: Date().addingTimeInterval(60), lifetime: 120))
        server.advanceClock(120 + 61)
        try Self.expectRefused(try await Self.token(server, assertion: expiring), "has expired")
        #expect(try await Self.lastRefusal(server).details["reason"] == "assertion_expired")
    }

    @Test(
        "fapi2-security-profile-final-ensure-client-assertion-with-reused-jti-fails: a jti is spent once, at any endpoint; another client's jti is its own"
    )
    func replayedAssertionIsRefused() async throws {
        let key = try AssertionKey.es256()
        let otherKey = try AssertionKey.es256()
        let other = Self.client([otherKey.jwk], id: "signer-two")
        let server = try await Self.start(keys: [key.jwk], more: [other])
        defer { Task { await server.stop() } }
        let claims = Self.claims(server)
        let assertion = try key.assertion(claims)
        #expect(try await Self.token(server, assertion: assertion).status == 200)
        try Self.expectRefused(try await Self.token(server, assertion: assertion), "already used")
        #expect(try await Self.lastRefusal(server).details == ["reason": "assertion_replayed", "endpoint": "token"])

        // A new assertion with the same jti (another exp, another aud) is a replay too.
        var again = claims
        again["exp"] = .number((claims["exp"]?.doubleValue ?? 0) + 30)
        again["aud"] = .string(server.issuer + "/oauth2/introspect")
        let replayed = try await Self.token(server, assertion: try key.assertion(again), form: ["token": "x"], path: "/oauth2/introspect")
        try Self.expectRefused(replayed, "already used")

        // Another client may happen to pick the same jti.
        var theirs = Self.claims(server, client: "signer-two")
        theirs["jti"] = claims["jti"]
        #expect(try await Self.token(server, assertion: try otherKey.assertion(theirs)).status == 200)
    }

    @Test("one credential per request: an assertion with a Basic header or a client_secret is invalid_request")
    func anAssertionComesAlone() async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        let withBasic = try await Self.token(
            server, assertion: try key.assertion(Self.claims(server)), headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(try withBasic.status == 400 && (withBasic.json()["error"] as? String) == "invalid_request", "\(withBasic.text)")
        let withSecret = try await Self.token(
            server, assertion: try key.assertion(Self.claims(server)),
            form: ["grant_type": "client_credentials", "client_id": Self.clientId, "client_secret": "anything-at-all-1234"])
        #expect(try withSecret.status == 400 && (withSecret.json()["error"] as? String) == "invalid_request", "\(withSecret.text)")
        // A type without an assertion is no authentication either.
        try Self.expectRefused(try await Self.token(server, assertion: nil), "client_assertion is missing")
    }

    @Test("one method per client: a client_secret_basic client's assertion and a private_key_jwt client's secret are refused")
    func theRegisteredMethodOnly() async throws {
        let key = try AssertionKey.es256()
        let server = try await Self.start(keys: [key.jwk])
        defer { Task { await server.stop() } }
        // `backend` registered client_secret_basic; an assertion in its name, however well made, is the wrong method.
        let claims = Self.claims(server, client: "backend")
        try Self.expectRefused(try await Self.token(server, assertion: try key.assertion(claims)), "must authenticate with client_secret_basic")
        let event = try await Self.lastRefusal(server)
        #expect(event.details["reason"] == "wrong_method" && event.clientId == "backend")
        let basic = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "client_credentials"],
            headers: ["Authorization": basicAuth(Self.clientId, "guessed-secret-1234")])
        try Self.expectRefused(basic, "must authenticate with private_key_jwt")
    }

    // MARK: Configuration and registration

    @Test("the configuration file: jwks and token_endpoint_auth_signing_alg are read; private, symmetric or unusable keys are refused at start")
    func configuredKeysAreChecked() throws {
        let key = try AssertionKey.es256()
        let x = try #require(key.jwk.x), y = try #require(key.jwk.y)
        func decode(_ jwks: String, extra: String = "") throws -> ClientConfiguration {
            let json =
                #"{"client_id": "signer", "token_endpoint_auth_method": "private_key_jwt", "grant_types": ["client_credentials"], "jwks": \#(jwks)\#(extra)}"#
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("pkjwt-\(UUID().uuidString).json").path
            try Data(#"{"clients": [\#(json)]}"#.utf8).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: ":memory:", host: "127.0.0.1")
            try ConfigurationFile.load(path: path).apply(to: &configuration)
            return try #require(configuration.clients.first { $0.clientId == "signer" })
        }
        let ec = #"{"kty": "EC", "crv": "P-256", "x": "\#(x)", "y": "\#(y)", "kid": "k1"}"#
        let good = try decode(#"{"keys": [\#(ec)]}"#, extra: #", "token_endpoint_auth_signing_alg": "ES256""#)
        try good.validate()
        #expect(good.jwks?.keys.first?.kid == "k1" && good.tokenEndpointAuthSigningAlg == .es256)

        func refusedAtLoad(_ jwks: String, extra: String = "", _ fragment: String) {
            #expect { try decode(jwks, extra: extra) } throws: {
                "\($0)".contains(fragment)
            }
        }
        refusedAtLoad(#"{"keys": [{"kty": "EC", "crv": "P-256", "x": "\#(x)", "y": "\#(y)", "d": "c2VjcmV0"}]}"#, "private member d")
        refusedAtLoad(#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#, "private member k")
        refusedAtLoad(#"[\#(ec)]"#, "JWK Set")
        refusedAtLoad(#"{"keys": [\#(ec)]}"#, extra: #", "token_endpoint_auth_signing_alg": "HS256""#, "token_endpoint_auth_signing_alg")
        refusedAtLoad(#"{"keys": [\#(ec)]}"#, extra: #", "token_endpoint_auth_signing_alg": "PS256""#, "token_endpoint_auth_signing_alg")
        refusedAtLoad(#"{"keys": [\#(ec)]}"#, extra: #", "token_endpoint_auth_signing_alg": "none""#, "token_endpoint_auth_signing_alg")

        func refusedAtValidation(_ change: (inout ClientConfiguration) -> Void, _ fragment: String) {
            var client = good
            change(&client)
            #expect { try client.validate() } throws: {
                ($0 as? ConfigurationError)?.description.contains(fragment) == true
            }
        }
        refusedAtValidation({ $0.jwks = nil }, "register its public keys as jwks")
        refusedAtValidation({ $0.clientSecret = "a-secret-of-enough-length" }, "has no client_secret")
        refusedAtValidation({ $0.jwks = JWKSet(keys: [key.jwk, key.jwk]) }, "kid is used by another key")
        refusedAtValidation({ client in client.jwks?.keys[0].use = "enc" }, "no key for signatures")
        refusedAtValidation({ $0.tokenEndpointAuthSigningAlg = .rs256 }, "no key for signatures with RS256")
        refusedAtValidation({ client in client.jwks?.keys[0].crv = "P-384" }, "cannot verify signatures here")
        refusedAtValidation({ client in client.jwks?.keys[0].alg = "PS256" }, "cannot verify signatures here")
        refusedAtValidation(
            {
                $0.tokenEndpointAuthMethod = .clientSecretBasic; $0.clientSecret = "a-secret-of-enough-length"
                $0.tokenEndpointAuthSigningAlg = .es256
            }, "token_endpoint_auth_signing_alg is for token_endpoint_auth_method private_key_jwt")
        // Keys alone are any client's (its request objects are verified with them); it still authenticates its own way.
        var withKeys = good
        withKeys.tokenEndpointAuthMethod = .clientSecretBasic
        withKeys.clientSecret = "a-secret-of-enough-length"
        withKeys.tokenEndpointAuthSigningAlg = nil
        #expect(throws: Never.self) { try withKeys.validate() }
    }

    /// The registration test server, allowing client credentials and `api.read`.
    static func startForRegistration() async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.clientRegistration.grantTypes.append(.clientCredentials)
            configuration.clientRegistration.scopes.append("api.read")
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "backend" { client.scopes.append("registration") }
                return client
            }
        }
    }

    static func registration(_ key: AssertionKey) -> [String: Any] {
        [
            "client_name": "Batch job", "grant_types": ["client_credentials"], "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "ES256", "scope": "api.read", "jwks": ["keys": [Self.jsonObject(key.jwk)]]
        ]
    }

    static func jsonObject(_ jwk: JWK) -> [String: Any] {
        var object: [String: Any] = ["kty": jwk.kty]
        for (name, value) in [("kid", jwk.kid), ("use", jwk.use), ("alg", jwk.alg), ("crv", jwk.crv), ("x", jwk.x), ("y", jwk.y)] {
            if let value { object[name] = value }
        }
        return object
    }

    @Test("dynamic registration (RFC 7591): a private_key_jwt client with jwks, no secret; usable at once; its keys replaced by an update")
    func registeredClientAuthenticatesWithItsKeys() async throws {
        let server = try await Self.startForRegistration()
        defer { Task { await server.stop() } }
        let initial = try await server.clientToken(scope: "registration")
        let key = try AssertionKey.es256()
        let registered = try await ClientRegistrationTests.register(server, Self.registration(key), token: initial)
        #expect(registered.status == 201, "\(registered.text)")
        let id = try #require(try registered.string("client_id"))
        #expect(try registered.string("token_endpoint_auth_method") == "private_key_jwt")
        #expect(try registered.value("client_secret") == nil && registered.value("client_secret_expires_at") == nil)
        #expect(try registered.string("jwks.keys.0.x") == key.jwk.x && registered.string("token_endpoint_auth_signing_alg") == "ES256")

        let answer = try await Self.token(server, assertion: try key.assertion(Self.claims(server, client: id)))
        #expect(answer.status == 200, "\(answer.text)")
        let read = try await ClientRegistrationTests.manage(server, "GET", registered)
        #expect(try read.string("jwks.keys.0.kid") == "es-1")
        // No secret to rotate.
        let rotate = try await ClientRegistrationTests.manage(server, "POST", registered, json: [String: Any](), path: "/secret")
        #expect(rotate.status == 400 && rotate.text.contains("has no secret to rotate"), "\(rotate.text)")

        // Key rotation by update: the new key works at once, the old one no longer.
        let newKey = try AssertionKey.es256(kid: "es-2")
        var replacement = Self.registration(newKey)
        replacement["client_id"] = id
        let updated = try await ClientRegistrationTests.manage(server, "PUT", registered, json: replacement)
        #expect(try updated.status == 200 && updated.value("client_secret") == nil, "\(updated.text)")
        #expect(try await Self.token(server, assertion: try newKey.assertion(Self.claims(server, client: id))).status == 200)
        try Self.expectRefused(try await Self.token(server, assertion: try key.assertion(Self.claims(server, client: id))), "no registered key")
    }

    @Test(
        "dynamic registration refuses an http jwks_uri, jwks with jwks_uri, private keys, no keys, keys with another method, HMAC or PS256 algorithms"
    )
    func registrationRefusesWhatCannotAuthenticate() async throws {
        let server = try await Self.startForRegistration()
        defer { Task { await server.stop() } }
        let initial = try await server.clientToken(scope: "registration")
        let key = try AssertionKey.es256()
        var withPrivate = Self.jsonObject(key.jwk)
        withPrivate["d"] = "c2VjcmV0"
        let cases: [(String, (inout [String: Any]) -> Void, String)] = [
            (
                "http jwks_uri",
                {
                    $0["jwks"] = nil; $0["jwks_uri"] = "http://signer.example/jwks.json"
                }, "jwks_uri: http://signer.example/jwks.json must be an https URL"
            ),
            ("jwks and jwks_uri", { $0["jwks_uri"] = "https://signer.example/jwks.json" }, "register jwks or jwks_uri, not both"),
            ("private key", { $0["jwks"] = ["keys": [withPrivate]] }, "private member d"),
            ("no keys", { $0["jwks"] = nil }, "register its public keys as jwks"),
            ("empty set", { $0["jwks"] = ["keys": [[String: Any]]()] }, "1 to 10 keys"),
            (
                "assertion algorithm with another method",
                {
                    $0["token_endpoint_auth_method"] = "client_secret_basic"; $0["token_endpoint_auth_signing_alg"] = "ES256"
                }, "token_endpoint_auth_signing_alg is for token_endpoint_auth_method private_key_jwt"
            ),
            ("HS256", { $0["token_endpoint_auth_signing_alg"] = "HS256" }, "token_endpoint_auth_signing_alg must be one of ES256, RS256, EdDSA"),
            ("PS256", { $0["token_endpoint_auth_signing_alg"] = "PS256" }, "token_endpoint_auth_signing_alg must be one of")
        ]
        for (name, change, fragment) in cases {
            var body = Self.registration(key)
            change(&body)
            let answer = try await ClientRegistrationTests.register(server, body, token: initial)
            #expect(answer.status == 400, "\(name): \(answer.text)")
            #expect(try answer.string("error") == "invalid_client_metadata", "\(name)")
            #expect((try answer.string("error_description") ?? "").contains(fragment), "\(name): \(answer.text)")
        }
    }
}
