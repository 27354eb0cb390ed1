import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing
import X509

/// `webauthn.attestation: required` makes the trust anchors decide which authenticators may register (`none`,
/// self attestation and foreign chains refused), and an application with `require_mfa` accepts a passkey only with
/// user verification, which then counts as multi-factor in `amr`.
@Suite("Passkeys: attestation required mode; user verification for require_mfa applications")
struct PasskeyAttestationAndVerificationTests {
    typealias F = WebAuthnFixture

    static func strictRP(anchors: [X509.Certificate]) -> WebAuthnRelyingParty {
        var rp = WebAuthnRelyingParty(rpId: TestAuthenticator.rpId, allowedOrigins: [TestAuthenticator.origin], trustAnchors: anchors)
        rp.requireTrustedAttestation = true
        return rp
    }

    static func expectUntrusted(_ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected the registration to be refused")
        } catch WebAuthnError.untrustedAttestation {
        } catch {
            Issue.record("expected untrustedAttestation, got \(error)")
        }
    }

    @Test("attestation required: none and self attestation are refused, a chain to an anchor is accepted, another root is not")
    func attestationRequired() async throws {
        let pki = try TestPKI()
        let rp = Self.strictRP(anchors: [pki.root])
        let authenticator = try TestAuthenticator()
        await Self.expectUntrusted { _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .none), rp: rp) }
        await Self.expectUntrusted {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedSelf()), rp: rp)
        }
        await Self.expectUntrusted {
            _ = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedX5C(try TestPKI())), rp: rp)
        }
        let trusted = try await F.register(try authenticator.register(challenge: F.challenge, attestation: .packedX5C(pki)), rp: rp)
        #expect(trusted.attestationType == .basic(trustedChain: true))
        // Without the mode, the same anchors still let `none` through (the previous behaviour, kept as the default).
        var lenient = rp
        lenient.requireTrustedAttestation = false
        #expect(try await F.register(try authenticator.register(challenge: F.challenge, attestation: .none), rp: lenient).attestationType == .none)
    }

    @Test("configuration: attestation must be optional or required, and required needs trust anchors")
    func configuration() throws {
        func load(_ json: String) throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-config-\(UUID().uuidString).json").path
            try Data(json.utf8).write(to: URL(fileURLWithPath: path))
            var c = DevelopmentDefaults.configuration()
            try ConfigurationFile.load(path: path).apply(to: &c)
            try c.validate()  // as `IdentityServer.open` does at start-up
        }
        #expect(throws: ConfigurationError.self) { try load(#"{"webauthn": {"attestation": "required"}}"#) }
        #expect(throws: ConfigurationError.self) { try load(#"{"webauthn": {"attestation": "sometimes"}}"#) }
        try load(#"{"webauthn": {"attestation": "optional"}}"#)
        var c = DevelopmentDefaults.configuration()
        c.webAuthn.attestationRequired = true
        #expect(throws: ConfigurationError.self) { try c.validate() }
    }

    struct Context { let server: TestServer; var origin: String { server.base } }

    @Test("over HTTP, attestation required: a passkey sign-up with `none` attestation is refused and creates no account")
    func attestationRequiredOverHTTP() async throws {
        let pki = try TestPKI()
        let rootDER = try TestPKI.der(pki.root)
        let server = try await TestServer.start { config in
            config.webAuthn.trustAnchorsDER = [rootDER]
            config.webAuthn.attestationRequired = true
        }
        defer { Task { await server.stop() } }
        let c = Context(server: server)
        let options = try await post(
            c, "/identity/v1/webauthn/signup-options",
            .object([
                "client_id": .string("latchkey-demo"), "origin": .string(c.origin), "profile": .object(["email": .string("eve@example.com")])
            ]))
        #expect(options.status == 200, "\(options.text)")
        #expect(
            (try options.json()["options"] as? [String: Any]).flatMap { $0["public_key"] as? [String: Any] }?["attestation"] as? String == "direct")
        let parsed = try RegistrationOptions(json: options.body)
        let credential = try await SoftwareAuthenticator().createCredential(for: parsed.options, origin: c.origin)
        let signup = try await post(
            c, "/identity/v1/webauthn/signup",
            .object([
                "webauthn_id": .string(parsed.options.user.encodedId), "public_key_credential": credential.reachFiveJSON
            ]))
        #expect(signup.status == 401, "\(signup.text)")
        #expect(try signup.json()["tkn"] == nil)
        #expect(try await server.server.store.user(username: "eve@example.com") == nil)
    }

    func post(_ c: Context, _ path: String, _ body: JSONValue) async throws -> HTTPResult {
        try await c.server.call("POST", path, token: nil, body: try JSONEncoder().encode(body), contentType: "application/json")
    }

    @Test("require_mfa: sign-in options demand user verification; an assertion without UV is refused, with UV it signs in as mfa")
    func userVerificationForRequireMFA() async throws {
        let server = try await TestServer.startRequiringMFA()
        defer { Task { await server.stop() } }
        let c = Context(server: server)
        let keys = InMemoryPasskeyKeyStore()
        let withoutUV = SoftwareAuthenticator(store: keys, userVerified: false)
        let withUV = SoftwareAuthenticator(store: keys, userVerified: true)
        // Sign-up (the global setting, preferred, applies to registration).
        let options = try await post(
            c, "/identity/v1/webauthn/signup-options",
            .object([
                "client_id": .string("latchkey-demo"), "origin": .string(c.origin), "profile": .object(["email": .string("ada@example.com")])
            ]))
        #expect(options.status == 200, "\(options.text)")
        let parsed = try RegistrationOptions(json: options.body)
        let credential = try await withoutUV.createCredential(for: parsed.options, origin: c.origin)
        let signup = try await post(
            c, "/identity/v1/webauthn/signup",
            .object([
                "webauthn_id": .string(parsed.options.user.encodedId), "public_key_credential": credential.reachFiveJSON
            ]))
        #expect(signup.status == 200, "\(signup.text)")
        // A sign-up ticket is one factor: /authorize refuses it on a require_mfa app.
        var o = AuthorizeOptions()
        o.extra = ["tkn": try #require(try signup.json()["tkn"] as? String)]
        let refusedSignup = try await TestBrowser().get(
            server.authorizeURL(o).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
        #expect(refusedSignup.locationQuery["error"] == "access_denied")
        #expect(refusedSignup.locationQuery["code"] == nil)

        func signIn(_ authenticator: SoftwareAuthenticator) async throws -> HTTPResult {
            let options = try await post(
                c, "/identity/v1/webauthn/authentication-options",
                .object(["client_id": .string("latchkey-demo"), "origin": .string(c.origin)]))
            let publicKey = try #require(try options.json()["public_key"] as? [String: Any])
            #expect(publicKey["user_verification"] as? String == "required")
            let parsed = try PublicKeyCredentialRequestOptions(json: options.body, style: .reachFive)
            let assertion = try await authenticator.getAssertion(for: parsed, origin: c.origin)
            return try await post(c, "/identity/v1/webauthn/authentication", assertion.reachFiveJSON)
        }
        let refused = try await signIn(withoutUV)
        #expect(refused.status == 401, "\(refused.text)")
        #expect(try refused.json()["tkn"] == nil)

        let accepted = try await signIn(withUV)
        #expect(accepted.status == 200, "\(accepted.text)")
        var signedIn = AuthorizeOptions()
        signedIn.extra = ["tkn": try #require(try accepted.json()["tkn"] as? String)]
        let redirect = try await TestBrowser().get(
            server.authorizeURL(signedIn).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
        let code = try #require(redirect.locationQuery["code"], "\(redirect.location ?? "")")
        let tokens = try await server.exchangeCode(code, signedIn)
        let id = try await server.verifiedClaims(try #require(try tokens.json()["id_token"] as? String))
        guard case .array(let amr)? = id["amr"] else { Issue.record("no amr"); return }
        let methods = amr.compactMap(\.stringValue)
        #expect(methods.contains("user") && methods.contains("mfa"))
        #expect(methods.contains("hwk") || methods.contains("swk"))
        #expect(id["acr"]?.stringValue == AuthenticationMethods.multiFactorACR)
    }
}
