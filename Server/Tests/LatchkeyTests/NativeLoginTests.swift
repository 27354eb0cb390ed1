import Crypto
import Foundation
@testable import Latchkey
import LatchkeySDKTestSupport
import Testing

/// A scripted identity provider on the programmable double (`http`, scripted only, which records every request): it
/// answers discovery, JWKS, `/oauth/authorize` (302 with a code) and `/oauth/token` (checking the PKCE verifier,
/// issuing an ES256 ID token with the request's nonce) like a provider would, and the `/identity/v1/…` calls from
/// per-test canned answers (404 without one). The real-server end-to-end tests are written against `LatchkeyServer`
/// separately; this double pins the SDK's side of the wire.
final class ScriptedIdentityServer: Sendable {
    static let issuer = "https://id.example.com"
    typealias Route = @Sendable (HTTPRequest) throws -> HTTPResponse

    /// What the SDK is given as its HTTP client.
    let http = ProgrammableHTTPClient(upstream: nil)
    private let provider = Provider()

    /// The provider's own state: its key, the codes it issued, a forged `state`.
    private final class Provider: @unchecked Sendable {
        private let lock = NSLock()
        let key = try! SigningKey.generate(.es256)
        private var codes: [String: (challenge: String, nonce: String?)] = [:]
        private var _forgedState: String?
        var forgedState: String? {
            get { lock.withLock { _forgedState } }
            set { lock.withLock { _forgedState = newValue } }
        }
        private var _secondFactorTicket: String?
        /// When set, `/oauth/authorize` answers that the account's second factor is owed, with this `mfa_pending` ticket.
        var secondFactorTicket: String? {
            get { lock.withLock { _secondFactorTicket } }
            set { lock.withLock { _secondFactorTicket = newValue } }
        }
        /// Records the code's PKCE challenge and nonce; returns the `state` to send back.
        func issue(_ code: String, challenge: String, nonce: String?, state: String?) -> String {
            lock.withLock {
                codes[code] = (challenge, nonce)
                return _forgedState ?? state ?? ""
            }
        }
        func redeem(_ code: String) -> (challenge: String, nonce: String?)? { lock.withLock { codes.removeValue(forKey: code) } }
    }

    init() {
        let iss = Self.issuer
        let provider = provider
        http.answer(path: "/.well-known/openid-configuration") { _ in
            Self.json(
                200,
                """
                {"issuer":"\(iss)","authorization_endpoint":"\(iss)/oauth/authorize","token_endpoint":"\(iss)/oauth/token",
                 "jwks_uri":"\(iss)/oauth2/jwks","authorization_response_iss_parameter_supported":true}
                """)
        }
        http.answer(path: "/oauth2/jwks") { _ in
            HTTPResponse(status: 200, headers: [:], body: try JSONEncoder().encode(JWKSet(keys: [provider.key.publicJWK()])))
        }
        http.answer(path: "/oauth/authorize") { request in
            let q = Dictionary(
                (URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
                uniquingKeysWith: { a, _ in a })
            let code = UUID().uuidString
            let state = provider.issue(code, challenge: q["code_challenge"] ?? "", nonce: q["nonce"], state: q["state"])
            let answer =
                provider.secondFactorTicket.map { "error=interaction_required&mfa_required=true&tkn=\(FormCoding.escape($0))" } ?? "code=\(code)"
            let location = "\(q["redirect_uri"] ?? "")?\(answer)&state=\(FormCoding.escape(state))&iss=\(FormCoding.escape(iss))"
            return HTTPResponse(status: 302, headers: ["Location": location], body: Data())
        }
        http.answer(path: "/oauth/token") { request in
            let form = Dictionary(
                String(decoding: request.body ?? Data(), as: UTF8.self).split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { a, _ in a })
            guard let pending = provider.redeem(form["code"] ?? ""),
                PKCEPair(verifier: form["code_verifier"] ?? "").challenge == pending.challenge
            else {
                return Self.json(400, #"{"error":"invalid_grant"}"#)
            }
            let now = Date().timeIntervalSince1970
            var claims: [String: JSONValue] = [
                "iss": .string(iss), "sub": .string("user-1"), "aud": .string("app"), "azp": .string("app"),
                "exp": .number(now + 300), "iat": .number(now), "email": .string("ada@example.com")
            ]
            if let nonce = pending.nonce { claims["nonce"] = .string(nonce) }
            let idToken = try provider.key.sign(claims: claims)
            return Self.json(
                200,
                #"{"access_token":"AT-\#(UUID().uuidString)","token_type":"Bearer","expires_in":3600,"refresh_token":"RT","id_token":"\#(idToken)"}"#)
        }
    }

    /// Rewrites the `state` of the 302 (to test that a forged callback is refused).
    var forgedState: String? {
        get { provider.forgedState }
        set { provider.forgedState = newValue }
    }

    /// Makes `/oauth/authorize` answer that the account's second factor is owed (`interaction_required`, `mfa_required`,
    /// this ticket).
    var secondFactorTicket: String? {
        get { provider.secondFactorTicket }
        set { provider.secondFactorTicket = newValue }
    }

    var requests: [HTTPRequest] { http.requests }
    /// "METHOD path" of every request after discovery and JWKS.
    var calls: [String] {
        requests.filter { !$0.url.path.hasPrefix("/.well-known") && !$0.url.path.hasSuffix("/jwks") }.map { "\($0.method) \($0.url.path)" }
    }
    func reset() { http.forgetRecords() }

    func route(_ method: String, _ path: String, _ answer: @escaping Route) { http.answer(method, path: path) { try answer($0) } }
    func route(_ method: String, _ path: String, status: Int = 200, json: String) {
        route(method, path) { _ in HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Data(json.utf8)) }
    }

    func body(of path: String) throws -> [String: JSONValue] {
        let request = try #require(requests.last { $0.url.path == path && $0.body != nil })
        return try JSONDecoder().decode([String: JSONValue].self, from: try #require(request.body))
    }
    func query(of path: String) throws -> [String: String] {
        let request = try #require(requests.last { $0.url.path == path })
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
    }

    static func json(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
    }
}

/// A provider that never answers until its task is cancelled, and says when it has been asked.
struct HangingCredentialProvider: CredentialProvider {
    private let asked = AsyncStream<Void>.makeStream()

    /// Returns once the SDK has asked for a credential (the sheet is "showing").
    func waitUntilAsked() async {
        for await _ in asked.stream { return }
    }

    func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
        asked.continuation.yield()
        // Only cancellation ends this wait (an hour stands for "never"): what is under test is how it is reported.
        try await Task.sleep(for: .seconds(3600))
        throw LatchkeyError(.canceled, "unreachable")
    }
}

/// Records the nonce Sign in with Apple was asked to carry.
final class NonceBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ v: String) { lock.withLock { value = v } }
    func get() -> String? { lock.withLock { value } }
}

@Suite("Native login against a scripted identity API")
struct NativeLoginTests {
    static let origin = "https://id.example.com"

    func client(_ server: ScriptedIdentityServer, provider: (any CredentialProvider)?, authenticator: (any PasskeyAuthenticator)? = nil) async throws
        -> LatchkeyClient
    {
        let client = LatchkeyClient(http: server.http, credentialProvider: provider, passkeyAuthenticator: authenticator)
        try await client.initialize(
            config: LatchkeyConfig(
                baseUrl: ScriptedIdentityServer.issuer, clientId: "app",
                scopes: ["openid", "profile", "email", "offline_access"],
                afterSignInUrl: "com.example.app:/callback"))
        server.reset()
        return client
    }

    /// An authenticator holding one discoverable passkey for id.example.com.
    func authenticatorWithPasskey() async throws -> (SoftwareAuthenticator, RegistrationCredential) {
        let authenticator = SoftwareAuthenticator()
        let credential = try await authenticator.createCredential(
            for: PublicKeyCredentialCreationOptions(
                rp: .init(id: "id.example.com", name: "Example"), user: .init(id: Data("user-1".utf8), name: "ada", displayName: "Ada"),
                challenge: Data([1, 2, 3])), origin: Self.origin)
        return (authenticator, credential)
    }

    static let authenticationOptions =
        #"{"public_key":{"challenge":"bG9naW4tY2hhbGxlbmdl","timeout":60000,"rp_id":"id.example.com","user_verification":"preferred"}}"#

    @Test func discoverablePasskeyLoginEndsInAStoredSession() async throws {
        let server = ScriptedIdentityServer()
        let (authenticator, credential) = try await authenticatorWithPasskey()
        server.route("POST", "/identity/v1/webauthn/authentication-options", json: Self.authenticationOptions)
        server.route("POST", "/identity/v1/webauthn/authentication", json: #"{"tkn":"one-time"}"#)
        let client = try await client(server, provider: SoftwareCredentialProvider(authenticator: authenticator))

        let token = try await client.login(
            withRequest: NativeLoginRequest(anchor: nil, origin: "app-launch"),
            usingModalAuthorizationFor: [.Passkey, .Password], display: .Always)
        #expect(
            server.calls == [
                "POST /identity/v1/webauthn/authentication-options", "POST /identity/v1/webauthn/authentication",
                "GET /oauth/authorize", "POST /oauth/token"
            ])
        let options = try server.body(of: "/identity/v1/webauthn/authentication-options")
        #expect(options == ["client_id": .string("app"), "origin": .string(Self.origin), "scope": .string("openid profile email offline_access")])
        let assertion = try server.body(of: "/identity/v1/webauthn/authentication")
        #expect(
            assertion["id"] == .string(credential.id) && assertion["raw_id"] == .string(credential.id) && assertion["type"] == .string("public-key"))
        guard case .object(let response)? = assertion["response"] else { Issue.record("no response"); return }
        #expect(Set(response.keys) == ["authenticator_data", "client_data_json", "signature", "user_handle"])
        #expect(response["user_handle"] == .string(Base64URL.encode(Data("user-1".utf8))))
        let authorize = try server.query(of: "/oauth/authorize")
        #expect(authorize["tkn"] == "one-time" && authorize["origin"] == "app-launch" && authorize["code_challenge_method"] == "S256")
        #expect(authorize["response_type"] == "code" && authorize["redirect_uri"] == "com.example.app:/callback" && authorize["state"] != nil)
        #expect(token.user?.id == "user-1" && token.refreshToken == "RT")
        #expect(try await client.getAccessToken() == token.accessToken)
        #expect(try await client.getUser().email == "ada@example.com")
    }

    @Test func passwordLoginClassifiesTheUsername() async throws {
        let server = ScriptedIdentityServer()
        server.route("POST", "/identity/v1/password/login", json: #"{"tkn":"pw-tkn"}"#)
        let provider = SoftwareCredentialProvider(passwords: [.init(username: "ada@example.com", password: "secret words")])
        let client = try await client(server, provider: provider)
        let token = try await client.login(
            withRequest: NativeLoginRequest(scopes: ["openid", "email"]),
            usingModalAuthorizationFor: [.Passkey, .Password], display: .IfImmediatelyAvailableCredentials)
        // The passkey options call fails (no route: 404), so .Passkey is dropped and the password is offered alone.
        #expect(
            server.calls == [
                "POST /identity/v1/webauthn/authentication-options", "POST /identity/v1/password/login",
                "GET /oauth/authorize", "POST /oauth/token"
            ])
        let body = try server.body(of: "/identity/v1/password/login")
        #expect(
            body == [
                "email": .string("ada@example.com"), "password": .string("secret words"), "grant_type": .string("password"),
                "client_id": .string("app"), "scope": .string("openid email")
            ])
        #expect(try server.query(of: "/oauth/authorize")["tkn"] == "pw-tkn")
        #expect(token.user?.email == "ada@example.com")
        #expect(Username.classify("+33 6 12 34 56 78") == "phone_number" && Username.classify("ada") == "username")
        #expect(Username.classify("ada@example.com") == "email" && Username.classify("42abc") == "username")
    }

    @Test func passwordLoginWithMFAThrowsMfaRequiredWithTheStepUp() async throws {
        let server = ScriptedIdentityServer()
        server.route("POST", "/identity/v1/password/login", json: #"{"tkn":"pw-tkn","mfa_required":true}"#)
        server.route("POST", "/identity/v1/mfa/stepup", json: #"{"amr":["email","totp"],"token":"step-up-token"}"#)
        let client = try await client(server, provider: SoftwareCredentialProvider(passwords: [.init(username: "ada", password: "pw")]))
        await #expect {
            try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        } throws: { error in
            guard let e = error as? LatchkeyError else { return false }
            return e.code == .mfaRequired && e.mfaStepUp?.token == "step-up-token" && e.mfaStepUp?.amr == ["email", "totp"]
                && !e.description.contains("step-up-token") && e.mfaStepUp?.codeVerifier != nil
        }
        #expect(server.calls == ["POST /identity/v1/password/login", "POST /identity/v1/mfa/stepup"])
        #expect(try server.body(of: "/identity/v1/password/login")["username"] == .string("ada"))
        let stepUp = try server.body(of: "/identity/v1/mfa/stepup")
        #expect(stepUp["tkn"] == .string("pw-tkn") && stepUp["response_type"] == .string("code") && stepUp["client_id"] == .string("app"))
        #expect(stepUp["code_challenge_method"] == .string("S256") && stepUp["redirect_uri"] == .string("com.example.app:/callback"))
        #expect(stepUp["code_challenge"]?.stringValue?.count == 43)
        #expect(try await client.isSignedIn() == false)
    }

    @Test func signInWithAppleSendsTheServersNonceAndAppleGetsItsSHA256() async throws {
        let server = ScriptedIdentityServer()
        server.route("POST", "/identity/v1/native-nonce", json: #"{"nonce":"lkn1.scripted-server-nonce","expires_in":600}"#)
        let appleNonce = NonceBox()
        let provider = SoftwareCredentialProvider(appleIDToken: { nonce, scopes in
            appleNonce.set(nonce)
            #expect(scopes == [.email, .fullName])
            return ("apple.jwt.token", "Ada", "Lovelace")
        })
        let client = try await client(server, provider: provider)
        let token = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
        #expect(server.calls == ["POST /identity/v1/native-nonce", "GET /oauth/authorize", "POST /oauth/token"])
        #expect(try server.body(of: "/identity/v1/native-nonce")["client_id"] == .string("app"))
        let q = try server.query(of: "/oauth/authorize")
        let verifier = try #require(q["nonce"])
        #expect(verifier == "lkn1.scripted-server-nonce", "the server's nonce, not one the app made up")
        #expect(PKCEPair(verifier: verifier).challenge == appleNonce.get())
        #expect(q["provider"] == "apple" && q["id_token"] == "apple.jwt.token" && q["given_name"] == "Ada" && q["family_name"] == "Lovelace")
        #expect(q["code_challenge"] != appleNonce.get())  // the code exchange has its own PKCE pair
        #expect(token.user?.id == "user-1")
        let claims = try CompactJWS(parsing: try #require(token.idToken)).claims(as: [String: JSONValue].self)
        #expect(claims["nonce"] == .string(verifier))
    }

    @Test func aProviderExchangeThatOwesTheSecondFactorThrowsMfaRequiredWithTheStepUp() async throws {
        let server = ScriptedIdentityServer()
        server.secondFactorTicket = "mfa-pending-tkn"
        server.route("POST", "/identity/v1/mfa/stepup", json: #"{"amr":["email"],"token":"step-up-token"}"#)
        let client = try await client(server, provider: nil)
        await #expect {
            try await client.login(withProvider: "google", idToken: "jwt", nonce: "lkn1.server-nonce")
        } throws: { error in
            guard let e = error as? LatchkeyError else { return false }
            return e.code == .mfaRequired && e.mfaStepUp?.token == "step-up-token" && e.mfaStepUp?.amr == ["email"]
                && e.mfaStepUp?.codeVerifier != nil
        }
        #expect(server.calls == ["GET /oauth/authorize", "POST /identity/v1/mfa/stepup"])
        #expect(try server.body(of: "/identity/v1/mfa/stepup")["tkn"] == .string("mfa-pending-tkn"))
        // The same answer with another sign-in's state starts nothing: the callback is checked first.
        server.reset()
        server.forgedState = "someone-elses-state"
        await #expect {
            try await client.login(withProvider: "google", idToken: "jwt", nonce: "lkn1.server-nonce")
        } throws: { ($0 as? LatchkeyError)?.code == .invalidGrant }
        #expect(server.calls == ["GET /oauth/authorize"])
        #expect(try await client.isSignedIn() == false)
    }

    @Test func loginWithProviderExchangesAnIDToken() async throws {
        let server = ScriptedIdentityServer()
        let client = try await client(server, provider: nil)
        let pkce = PKCEPair()
        _ = try await client.login(
            withProvider: "apple", idToken: "jwt", nonce: pkce.verifier, scope: ["openid"], origin: "tag",
            givenName: nil, familyName: nil)
        let q = try server.query(of: "/oauth/authorize")
        #expect(q["provider"] == "apple" && q["nonce"] == pkce.verifier && q["scope"] == "openid" && q["origin"] == "tag" && q["given_name"] == nil)
    }

    @Test func immediateModeWithNothingAvailableIsCanceledWithoutNetwork() async throws {
        let server = ScriptedIdentityServer()
        let client = try await client(server, provider: SoftwareCredentialProvider(authenticator: SoftwareAuthenticator()))
        await #expect {
            try await client.login(
                withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password, .SignInWithApple],
                display: .IfImmediatelyAvailableCredentials)
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .canceled && e?.category == .authCanceled
        }
        // Only the server's nonce is asked for (Apple's request needs it before the sheet); this server has none to
        // give, so Sign in with Apple is dropped and the password alone is offered.
        #expect(server.calls == ["POST /identity/v1/native-nonce"])
        server.reset()
        // With .Passkey only the options call is made.
        server.route("POST", "/identity/v1/webauthn/authentication-options", json: Self.authenticationOptions)
        await #expect {
            try await client.login(
                withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .IfImmediatelyAvailableCredentials)
        } throws: { ($0 as? LatchkeyError)?.code == .canceled }
        #expect(server.calls == ["POST /identity/v1/webauthn/authentication-options"])
    }

    @Test func alwaysModeWithoutAPasskeyIsNoCredential() async throws {
        let server = ScriptedIdentityServer()
        server.route("POST", "/identity/v1/webauthn/authentication-options", json: Self.authenticationOptions)
        let client = try await client(server, provider: SoftwareCredentialProvider(authenticator: SoftwareAuthenticator()))
        await #expect {
            try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .passkeyNoCredential && e?.category == .authFailure
        }
    }

    @Test func emptyTypeListAndMissingProviderAreClearErrors() async throws {
        let server = ScriptedIdentityServer()
        let client = try await client(server, provider: nil)
        await #expect { try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [], display: .Always) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidInput
        }
        await #expect {
            try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyNotSupported }
        #expect(server.calls.isEmpty)
    }

    @Test func aCancelledCallingTaskIsNotReportedAsCanceled() async throws {
        let server = ScriptedIdentityServer()
        let provider = HangingCredentialProvider()
        let client = try await client(server, provider: provider)
        let task = Task { try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always) }
        await provider.waitUntilAsked()
        task.cancel()
        let result = await task.result
        guard case .failure(let error) = result, let e = error as? LatchkeyError else { Issue.record("expected a LatchkeyError"); return }
        #expect(e.code != .canceled && e.category == .technicalError && e.message.contains("calling task was canceled"))
    }

    @Test func aForgedStateInTheRedirectIsRefused() async throws {
        let server = ScriptedIdentityServer()
        server.forgedState = "attacker-state"
        server.route("POST", "/identity/v1/password/login", json: #"{"tkn":"pw-tkn"}"#)
        let client = try await client(server, provider: SoftwareCredentialProvider(passwords: [.init(username: "ada", password: "pw")]))
        await #expect {
            try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        } throws: { ($0 as? LatchkeyError)?.code == .invalidGrant }
        #expect(!server.calls.contains("POST /oauth/token"))
        #expect(try await client.isSignedIn() == false)
    }

    @Test func usernameFirstPasskeyLogin() async throws {
        let server = ScriptedIdentityServer()
        let (authenticator, credential) = try await authenticatorWithPasskey()
        server.route(
            "POST", "/identity/v1/webauthn/authentication-options",
            json:
                #"{"public_key":{"challenge":"AAEC","rp_id":"id.example.com","allow_credentials":[{"type":"public-key","id":"\#(credential.id)"}],"user_verification":"preferred"}}"#
        )
        server.route("POST", "/identity/v1/webauthn/authentication", json: #"{"tkn":"t"}"#)
        let client = try await client(server, provider: nil, authenticator: authenticator)
        _ = try await client.login(
            withNonDiscoverableUsername: .Unspecified("+33612345678"), forRequest: NativeLoginRequest(),
            usingModalAuthorizationFor: [.Passkey], display: .Always)
        #expect(try server.body(of: "/identity/v1/webauthn/authentication-options")["phone_number"] == .string("+33612345678"))
        #expect(try server.body(of: "/identity/v1/webauthn/authentication")["id"] == .string(credential.id))
        // No allow list (a Latchkey server names no credential ids for a typed name): the authenticator offers its
        // discoverable passkey and the server, which bound the ceremony to the account, decides.
        server.route(
            "POST", "/identity/v1/webauthn/authentication-options",
            json: #"{"public_key":{"challenge":"AAEC","rp_id":"id.example.com","user_verification":"preferred"}}"#)
        _ = try await client.login(
            withNonDiscoverableUsername: .Email("x@example.com"), forRequest: NativeLoginRequest(),
            usingModalAuthorizationFor: [.Passkey], display: .Always)
        #expect(try server.body(of: "/identity/v1/webauthn/authentication")["id"] == .string(credential.id))
        // No passkey on the device: no credential.
        let bare = try await self.client(server, provider: nil, authenticator: SoftwareAuthenticator())
        await #expect {
            try await bare.login(
                withNonDiscoverableUsername: .Email("x@example.com"), forRequest: NativeLoginRequest(),
                usingModalAuthorizationFor: [.Passkey], display: .Always)
        } throws: { ($0 as? LatchkeyError)?.code == .passkeyNoCredential }
    }

    static let registrationOptions =
        #"{"friendly_name":"phone","options":{"public_key":{"rp":{"id":"id.example.com","name":"Example"},"user":{"id":"d2ViYXV0aG4taWQ","name":"ada","display_name":"Ada"},"challenge":"c2lnbnVw","pub_key_cred_params":[{"alg":-7,"type":"public-key"}],"attestation":"none"}}}"#

    @Test func passkeySignupCreatesTheAccountAndSignsIn() async throws {
        let server = ScriptedIdentityServer()
        server.route("POST", "/identity/v1/webauthn/signup-options", json: Self.registrationOptions)
        server.route("POST", "/identity/v1/webauthn/signup", json: #"{"tkn":"signup-tkn"}"#)
        let authenticator = SoftwareAuthenticator()
        let client = try await client(server, provider: nil, authenticator: authenticator)
        let profile = ProfilePasskeySignupRequest(
            email: "ada@example.com", givenName: "Ada", familyName: "Lovelace", profileURL: "https://ada.example")
        let token = try await client.signup(withRequest: PasskeySignupRequest(passkeyPofile: profile, friendlyName: "Ada's laptop"))
        #expect(
            server.calls == [
                "POST /identity/v1/webauthn/signup-options", "POST /identity/v1/webauthn/signup", "GET /oauth/authorize", "POST /oauth/token"
            ])
        let options = try server.body(of: "/identity/v1/webauthn/signup-options")
        #expect(
            options["origin"] == .string(Self.origin) && options["friendly_name"] == .string("Ada's laptop") && options["client_id"] == .string("app")
        )
        #expect(
            options["profile"]
                == .object([
                    "email": .string("ada@example.com"), "given_name": .string("Ada"), "family_name": .string("Lovelace"),
                    "profile_url": .string("https://ada.example")
                ]))
        let signup = try server.body(of: "/identity/v1/webauthn/signup")
        #expect(signup["webauthn_id"] == .string("d2ViYXV0aG4taWQ"))
        guard case .object(let credential)? = signup["public_key_credential"], case .object(let response)? = credential["response"] else {
            Issue.record("no credential"); return
        }
        #expect(Set(response.keys) == ["attestation_object", "client_data_json"] && credential["type"] == .string("public-key"))
        #expect(try server.query(of: "/oauth/authorize")["tkn"] == "signup-tkn")
        #expect(token.user?.id == "user-1")
        let stored = try await authenticator.credentials()
        #expect(stored.count == 1 && stored[0].userName == "Ada's laptop" && stored[0].userHandle == Data("webauthn-id".utf8))
    }

    @Test func signupRefusesABadOriginBeforeAnyNetworkCall() async throws {
        let server = ScriptedIdentityServer()
        let client = try await client(server, provider: nil, authenticator: SoftwareAuthenticator())
        await #expect {
            try await client.signup(
                withRequest: PasskeySignupRequest(
                    passkeyProfile: .init(email: "a@b.c"), friendlyName: "x",
                    originWebAuthn: "http://evil.example"))
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .invalidConfiguration && e?.category == .technicalError
        }
        #expect(server.calls.isEmpty)
    }

    @Test func passkeyManagementUsesTheBearerToken() async throws {
        let server = ScriptedIdentityServer()
        server.route("POST", "/identity/v1/password/login", json: #"{"tkn":"t"}"#)
        server.route("POST", "/identity/v1/webauthn/registration-options", json: Self.registrationOptions)
        server.route("POST", "/identity/v1/webauthn/registration") { _ in HTTPResponse(status: 204, headers: [:], body: Data()) }
        server.route(
            "GET", "/identity/v1/webauthn/registration",
            json: #"[{"id":"reg-1","friendly_name":"phone","created_at":"2026-01-01T00:00:00Z"},{"id":"reg 2","friendly_name":"key"}]"#)
        server.route("DELETE", "/identity/v1/webauthn/registration/reg 2") { _ in HTTPResponse(status: 204, headers: [:], body: Data()) }
        server.route("PATCH", "/identity/v1/webauthn/registration/reg-1", json: #"{"id":"reg-1","friendly_name":"work phone"}"#)
        let client = try await client(
            server, provider: SoftwareCredentialProvider(passwords: [.init(username: "ada", password: "pw")]),
            authenticator: SoftwareAuthenticator())
        let token = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        server.reset()

        try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "phone"), authToken: token)
        let list = try await client.listWebAuthnCredentials(authToken: token)
        #expect(
            list == [
                DeviceCredential(friendlyName: "phone", id: "reg-1", createdAt: "2026-01-01T00:00:00Z"),
                DeviceCredential(friendlyName: "key", id: "reg 2")
            ])
        #expect(list.first?.createdDate == Date(timeIntervalSince1970: 1_767_225_600) && list.first?.lastUsedDate == nil)
        // The server's times with or without fractional seconds; anything else is no date.
        let used = DeviceCredential(friendlyName: "p", id: "r", createdAt: "yesterday", lastUsedAt: "2026-01-01T00:00:00.250Z")
        #expect(used.createdDate == nil && used.lastUsedDate == Date(timeIntervalSince1970: 1_767_225_600.25))
        try await client.deleteWebAuthnRegistration(id: "reg 2", authToken: token)
        #expect(try await client.renameWebAuthnRegistration(id: "reg-1", friendlyName: "work phone", authToken: token).friendlyName == "work phone")
        #expect(
            server.calls == [
                "POST /identity/v1/webauthn/registration-options", "POST /identity/v1/webauthn/registration",
                "GET /identity/v1/webauthn/registration", "DELETE /identity/v1/webauthn/registration/reg 2",
                "PATCH /identity/v1/webauthn/registration/reg-1"
            ])
        #expect(server.requests.allSatisfy { $0.headers["Authorization"] == "Bearer \(token.accessToken)" })
        #expect(
            try server.body(of: "/identity/v1/webauthn/registration-options") == ["origin": .string(Self.origin), "friendly_name": .string("phone")])
        let registration = try server.body(of: "/identity/v1/webauthn/registration")
        #expect(Set(registration.keys) == ["id", "raw_id", "type", "response"])
        #expect(try await client.authToken().accessToken == token.accessToken)
    }
}
