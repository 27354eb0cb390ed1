import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// The reachFive passkey endpoints driven over loopback HTTP with the SDK's software authenticator, and every way a
/// response can be wrong: origin, replay, expiry, tampering, counter regression, user verification, unknown
/// credential, wrong ceremony, user handle.
@Suite("reachFive passkey endpoints: ceremonies and their negative cases")
struct PasskeyEndpointTests {
    struct Context {
        let server: TestServer
        var origin: String { server.base }
    }

    static func start(configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws -> Context {
        Context(server: try await TestServer.start(configure: configure))
    }

    func post(_ c: Context, _ path: String, _ body: JSONValue, token: String? = nil) async throws -> HTTPResult {
        try await c.server.call("POST", path, token: token, body: try JSONEncoder().encode(body), contentType: "application/json")
    }

    func json(_ object: [String: String]) -> JSONValue { .object(object.mapValues(JSONValue.string)) }

    /// signup-options → authenticator → signup; returns the `tkn` answer.
    func signUp(
        _ c: Context, _ authenticator: SoftwareAuthenticator, email: String = "ada@example.com",
        origin: String? = nil
    ) async throws -> HTTPResult {
        let options = try await post(
            c, "/identity/v1/webauthn/signup-options",
            .object([
                "client_id": .string("latchkey-demo"), "origin": .string(c.origin), "friendly_name": .string("key"),
                "profile": json(["email": email, "given_name": "Ada"])
            ]))
        #expect(options.status == 200, "\(options.text)")
        let parsed = try RegistrationOptions(json: options.body)
        let credential = try await authenticator.createCredential(for: parsed.options, origin: origin ?? c.origin)
        return try await post(
            c, "/identity/v1/webauthn/signup",
            .object([
                "webauthn_id": .string(parsed.options.user.encodedId), "public_key_credential": credential.reachFiveJSON
            ]))
    }

    func assertion(_ c: Context, _ authenticator: SoftwareAuthenticator, origin: String? = nil) async throws -> AssertionCredential {
        let options = try await post(
            c, "/identity/v1/webauthn/authentication-options",
            json(["client_id": "latchkey-demo", "origin": c.origin]))
        #expect(options.status == 200, "\(options.text)")
        let parsed = try PublicKeyCredentialRequestOptions(json: options.body, style: .reachFive)
        return try await authenticator.getAssertion(for: parsed, origin: origin ?? c.origin)
    }

    func authenticate(_ c: Context, _ body: JSONValue) async throws -> HTTPResult {
        try await post(c, "/identity/v1/webauthn/authentication", body)
    }

    func key(_ r: HTTPResult) throws -> String? { try r.json()["error_message_key"] as? String }

    @Test("sign-up and sign-in give tickets; the options have the RP, user handle, algorithms and resident-key requirement")
    func happyPath() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let offered = try await post(
            c, "/identity/v1/webauthn/signup-options",
            .object([
                "client_id": .string("latchkey-demo"), "origin": .string(c.origin), "profile": json(["email": "someone@example.com"])
            ]))
        let publicKey = try #require((try offered.json()["options"] as? [String: Any])?["public_key"] as? [String: Any])
        #expect((publicKey["rp"] as? [String: Any])?["id"] as? String == "127.0.0.1")
        #expect((publicKey["pub_key_cred_params"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int } == [-7, -8, -257])
        #expect((publicKey["authenticator_selection"] as? [String: Any])?["resident_key"] as? String == "required")
        #expect((publicKey["exclude_credentials"] as? [Any])?.isEmpty == true)
        #expect(publicKey["attestation"] as? String == "none")
        let handle = try #require((publicKey["user"] as? [String: Any])?["id"] as? String)
        #expect(
            Base64URL.decode(handle).flatMap { UUID(uuidString: String(decoding: $0, as: UTF8.self)) } != nil,
            "the user handle is the reserved account id, not the email")

        let authenticator = SoftwareAuthenticator()
        let signup = try await signUp(c, authenticator)
        #expect(signup.status == 200, "\(signup.text)")
        #expect(try signup.json()["tkn"] is String)
        let user = try #require(try await c.server.server.store.user(username: "ada@example.com"))
        #expect(user.claims["given_name"] == "Ada")
        #expect(user.passwordHash == PasswordHasher.noPassword)
        let assertion = try await assertion(c, authenticator)
        #expect(assertion.userHandle == Data(user.id.utf8))
        let signin = try await authenticate(c, assertion.reachFiveJSON)
        #expect(signin.status == 200, "\(signin.text)")
        // The passkey-only account has no password to guess.
        let password = try await post(
            c, "/identity/v1/password/login", json(["email": "ada@example.com", "password": "", "client_id": "latchkey-demo"]))
        #expect(password.status == 400)
    }

    @Test("one address gets a bounded number of challenges (429 login.throttled, localized)")
    func challengeRateLimit() async throws {
        let c = try await Self.start { $0.loginPolicy.maxChallengesPerAddress = 3 }
        defer { Task { await c.server.stop() } }
        for _ in 0..<3 {
            let ok = try await post(c, "/identity/v1/webauthn/authentication-options", json(["client_id": "latchkey-demo", "origin": c.origin]))
            #expect(ok.status == 200)
        }
        let limited = try await c.server.call(
            "POST", "/identity/v1/webauthn/signup-options", token: nil,
            body: try JSONEncoder().encode(json(["client_id": "latchkey-demo", "origin": c.origin])),
            contentType: "application/json", headers: ["Accept-Language": "fr"])
        #expect(limited.status == 429)
        #expect(try key(limited) == "login.throttled")
        #expect((try limited.json()["error_user_msg"] as? String)?.contains("minute") == true)
    }

    @Test("options for an origin the application does not allow are refused")
    func originNotAllowedAtOptions() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let response = try await post(
            c, "/identity/v1/webauthn/authentication-options",
            json(["client_id": "latchkey-demo", "origin": "https://evil.example"]))
        #expect(response.status == 400)
        #expect(try key(response) == "passkey.failed")
        #expect((try response.json()["error_description"] as? String)?.contains("evil.example") == true)
    }

    @Test("sign-up options refuse a username or email already in use, and an invalid profile, before any ceremony")
    func signupProfileChecks() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        func options(_ profile: [String: String]) async throws -> HTTPResult {
            try await post(
                c, "/identity/v1/webauthn/signup-options",
                .object([
                    "client_id": .string("latchkey-demo"), "origin": .string(c.origin), "profile": json(profile)
                ]))
        }
        let username = try await options(["email": "new@example.com", "username": "demo@example.com"])
        #expect(username.status == 400)
        #expect((try username.json()["error_details"] as? [[String: Any]])?.first?["field"] as? String == "username")
        let invalid = try await options(["email": "not-an-email"])
        #expect(invalid.status == 400)
        #expect((try invalid.json()["error_details"] as? [[String: Any]])?.first?["field"] as? String == "email")
        let none = try await options(["given_name": "Ada"])
        #expect(try key(none) == "signup.identifier_required")
    }

    @Test("a response made for another origin than the options were asked for is refused")
    func wrongOriginInClientData() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let authenticator = SoftwareAuthenticator()
        #expect(try await signUp(c, authenticator).status == 200)
        // The authenticator signs for a look-alike origin (same RP ID host, other port).
        let other = "http://127.0.0.1:1"
        let assertion = try await assertion(c, authenticator, origin: other)
        let response = try await authenticate(c, assertion.reachFiveJSON)
        #expect(response.status == 401)
        #expect(try key(response) == "passkey.failed")
        let signup = try await signUp(c, SoftwareAuthenticator(), email: "eve@example.com", origin: other)
        #expect(signup.status == 401)
    }

    @Test("a challenge answers once: the replayed assertion is refused; an expired one too")
    func replayAndExpiry() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let authenticator = SoftwareAuthenticator()
        #expect(try await signUp(c, authenticator).status == 200)
        let assertion = try await assertion(c, authenticator)
        #expect(try await authenticate(c, assertion.reachFiveJSON).status == 200)
        let replay = try await authenticate(c, assertion.reachFiveJSON)
        #expect(replay.status == 400)
        #expect(try key(replay) == "passkey.expired")
        let late = try await self.assertion(c, authenticator)
        c.server.advanceClock(301)
        let expired = try await authenticate(c, late.reachFiveJSON)
        #expect(try key(expired) == "passkey.expired")
    }

    @Test(
        "tampered signature, authenticator data, client data or user handle are refused",
        arguments: ["signature", "authData", "clientData", "userHandle"])
    func tampering(_ part: String) async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let authenticator = SoftwareAuthenticator()
        #expect(try await signUp(c, authenticator).status == 200)
        var a = try await assertion(c, authenticator)
        switch part {
        case "signature": a.signature[a.signature.count - 1] ^= 0x01
        case "authData": a.authenticatorData[33] ^= 0x01  // the sign counter's high byte
        case "clientData":
            // Same challenge (so the ceremony is found), other bytes: the signature no longer covers them.
            a.clientDataJSON = Data(
                String(decoding: a.clientDataJSON, as: UTF8.self).replacingOccurrences(of: "\"crossOrigin\":false", with: "\"crossOrigin\":false ")
                    .utf8)
        default: a.userHandle = Data("someone-else".utf8)
        }
        let response = try await authenticate(c, a.reachFiveJSON)
        #expect(response.status == 401, "\(part): \(response.text)")
        #expect(try key(response) == (part == "userHandle" ? "passkey.unknown" : "passkey.failed"))
    }

    @Test("a counter that does not move forward is refused (cloned authenticator)")
    func signCountRegression() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let authenticator = SoftwareAuthenticator()
        #expect(try await signUp(c, authenticator).status == 200)
        let older = try await assertion(c, authenticator)  // counter 1
        let newer = try await assertion(c, authenticator)  // counter 2
        #expect(try await authenticate(c, newer.reachFiveJSON).status == 200)
        let response = try await authenticate(c, older.reachFiveJSON)
        #expect(response.status == 401)
        #expect((try response.json()["error_description"] as? String)?.contains("sign") == true)
    }

    @Test("with user verification required, a response without the UV flag is refused")
    func userVerificationRequired() async throws {
        let c = try await Self.start { $0.webAuthn.userVerification = "required" }
        defer { Task { await c.server.stop() } }
        let refused = try await signUp(c, SoftwareAuthenticator(userVerified: false))
        #expect(refused.status == 401)
        #expect(try key(refused) == "passkey.failed")
        #expect(try await c.server.server.store.user(username: "ada@example.com") == nil, "no account without its passkey")
        let verified = SoftwareAuthenticator(userVerified: true)
        #expect(try await signUp(c, verified).status == 200)
    }

    @Test("a passkey the server does not know is refused; so is a registration answer sent to the sign-in endpoint")
    func unknownCredentialAndWrongCeremony() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let authenticator = SoftwareAuthenticator()
        #expect(try await signUp(c, authenticator).status == 200)
        let user = try #require(try await c.server.server.store.user(username: "ada@example.com"))
        for passkey in try await c.server.server.store.passkeys(userId: user.id) {
            _ = try await c.server.server.store.deletePasskey(id: passkey.id, userId: user.id)
        }
        let unknown = try await authenticate(c, try await assertion(c, authenticator).reachFiveJSON)
        #expect(unknown.status == 401)
        #expect(try key(unknown) == "passkey.unknown")

        // A sign-up ceremony's challenge answered at the sign-in endpoint.
        let options = try await post(
            c, "/identity/v1/webauthn/signup-options",
            .object([
                "client_id": .string("latchkey-demo"), "origin": .string(c.origin), "profile": json(["email": "bob@example.com"])
            ]))
        let parsed = try RegistrationOptions(json: options.body)
        let credential = try await SoftwareAuthenticator().createCredential(for: parsed.options, origin: c.origin)
        let crossed = AssertionCredential(
            rawId: credential.rawId, clientDataJSON: credential.clientDataJSON,
            authenticatorData: Data(repeating: 0, count: 37), signature: Data([0x30]), userHandle: nil)
        let wrong = try await authenticate(c, crossed.reachFiveJSON)
        #expect(wrong.status == 400)
        #expect(try key(wrong) == "passkey.failed")
    }

    @Test("a passkey added as an upgrade is audited how: upgrade, one asked for how: request; any other how is refused")
    func additionIsAudited() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let token = try await c.server.userTokens().accessToken
        func register(how: String?) async throws -> HTTPResult {
            let options = try await post(c, "/identity/v1/webauthn/registration-options", json(["origin": c.origin]), token: token)
            #expect(options.status == 200, "\(options.text)")
            let parsed = try RegistrationOptions(json: options.body)
            let credential = try await SoftwareAuthenticator().createCredential(for: parsed.options, origin: c.origin)
            var body: [String: JSONValue] = ["public_key_credential": credential.reachFiveJSON, "friendly_name": .string("Phone")]
            if let how { body["how"] = .string(how) }
            return try await post(c, "/identity/v1/webauthn/registration", .object(body), token: token)
        }
        let sideways = try await register(how: "sideways")
        #expect(sideways.status == 400, "\(sideways.text)")
        #expect(try await register(how: "upgrade").status == 204)
        #expect(try await register(how: nil).status == 204)
        let events = try await c.server.server.store.auditEvents(AuditQuery(types: [.passkeyAdded], limit: 10))
        #expect(events.map { $0.details["how"] ?? "-" }.sorted() == ["request", "upgrade"])
    }

    @Test("another account's passkey can be neither renamed nor deleted")
    func passkeysBelongToTheirAccount() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        #expect(try await signUp(c, SoftwareAuthenticator()).status == 200)
        let ada = try #require(try await c.server.server.store.user(username: "ada@example.com"))
        let passkey = try #require(try await c.server.server.store.passkeys(userId: ada.id).first)
        let demo = try await c.server.userTokens().accessToken
        let path = "/identity/v1/webauthn/registration/\(passkey.id)"
        let rename = try await c.server.call("PATCH", path, token: demo, json: ["friendly_name": "mine now"], contentType: "application/json")
        #expect(rename.status == 404)
        let delete = try await c.server.call("DELETE", path, token: demo)
        #expect(delete.status == 404)
        let list = try await c.server.call("GET", "/identity/v1/webauthn/registration", token: demo)
        #expect(try JSONSerialization.jsonObject(with: list.body) as? [Any] != nil)
        #expect((try JSONSerialization.jsonObject(with: list.body) as? [Any])?.isEmpty == true, "demo sees none of Ada's")
        #expect(try await c.server.server.store.passkey(id: passkey.id)?.friendlyName == "key")
    }

    @Test("malformed bodies are 400 ApiErrors, never 500; account endpoints need a bearer token")
    func malformedAndUnauthenticated() async throws {
        let c = try await Self.start()
        defer { Task { await c.server.stop() } }
        let garbage = try await c.server.call(
            "POST", "/identity/v1/webauthn/authentication", token: nil, body: Data("{".utf8),
            contentType: "application/json")
        #expect(garbage.status == 400)
        let noResponse = try await authenticate(c, .object(["id": .string("AAAA")]))
        #expect(noResponse.status == 400)
        let badCBOR = try await post(
            c, "/identity/v1/webauthn/signup",
            .object([
                "webauthn_id": .string("x"),
                "public_key_credential": .object([
                    "id": .string("AAAA"), "type": .string("public-key"),
                    "response": json(["attestation_object": "AAAA", "client_data_json": Base64URL.encode(Data("{}".utf8))])
                ])
            ]))
        #expect(badCBOR.status == 401)
        #expect(try key(badCBOR) == "passkey.failed")
        let list = try await c.server.call("GET", "/identity/v1/webauthn/registration", token: nil)
        #expect(list.status == 401)
        #expect(try key(list) == "oauth.invalid_token")
        let options = try await post(c, "/identity/v1/webauthn/registration-options", json(["origin": c.origin]), token: "not-a-token")
        #expect(options.status == 401)
    }
}
