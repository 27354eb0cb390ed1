import LatchkeyTestSupport
import Foundation
import HummingbirdOTP
import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// Seeds 002 and 004 against the real server over loopback HTTP: passkey sign-up, discoverable and username-first
/// passkey sign-in, password and Sign in with Apple through `login(withRequest:usingModalAuthorizationFor:display:)`,
/// the account's passkeys, and the thunderID flow's passkey steps. The authenticator is the SDK's software one.
@Suite("SDK ↔ server: passkeys, native login, Sign in with Apple")
struct SDKPasskeyTests {
    static let bundleId = "io.latchkey.demo"

    static func start(apple: AppleStandIn? = nil) async throws -> TestServer {
        try await TestServer.startForNativeLogin(bundleId: bundleId, apple: apple)
    }

    func client(
        _ server: TestServer, provider: (any CredentialProvider)? = nil, authenticator: (any PasskeyAuthenticator)? = nil,
        http: any HTTPClient = productionHTTPClient()
    ) async throws -> LatchkeyClient {
        let client = LatchkeyClient(
            http: http, credentialProvider: provider ?? authenticator.map { SoftwareCredentialProvider(authenticator: $0) },
            passkeyAuthenticator: authenticator)
        try await client.initialize(config: server.sdkConfig())
        return client
    }

    static let profile = ProfilePasskeySignupRequest(email: "ada@example.com", givenName: "Ada", familyName: "Lovelace")

    @Test("passkey sign-up → tokens; then discoverable and username-first sign-in as the same user on a fresh client")
    func signupThenLogin() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let authenticator = SoftwareAuthenticator()
        let first = try await client(server, authenticator: authenticator)
        let token = try await first.signup(withRequest: PasskeySignupRequest(passkeyProfile: Self.profile, friendlyName: "Ada's laptop"))
        #expect(token.user?.email == "ada@example.com")
        #expect(token.user?.givenName == "Ada")
        let sub = try #require(token.user?.id)
        #expect(try await first.isSignedIn())
        #expect(try await first.listWebAuthnCredentials(authToken: token).map(\.friendlyName) == ["Ada's laptop"])
        #expect(try await authenticator.credentials().count == 1)

        let second = try await client(server, authenticator: authenticator)
        let discoverable = try await second.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
        #expect(discoverable.user?.id == sub)
        let third = try await client(server, authenticator: authenticator)
        let usernameFirst = try await third.login(
            withNonDiscoverableUsername: .Email("ada@example.com"), forRequest: NativeLoginRequest(),
            usingModalAuthorizationFor: [.Passkey], display: .Always)
        #expect(usernameFirst.user?.id == sub)
        #expect(try await third.getAccessToken().isEmpty == false)

        // The counter moved on the server with each sign-in.
        let stored = try #require(try await server.server.store.passkeys(userId: sub).first)
        #expect(stored.signCount == 2)
    }

    @Test("sign-up with an email already used is a request error carrying the field; the seed's misspelt label works too")
    func signupDuplicateEmail() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let client = try await client(server, authenticator: SoftwareAuthenticator())
        let taken = ProfilePasskeySignupRequest(email: "demo@example.com")
        let error = try await #require(throws: LatchkeyError.self) {
            try await client.signup(withRequest: PasskeySignupRequest(passkeyPofile: taken, friendlyName: "x"))
        }
        #expect(error.category == .requestError)
        #expect(error.code == .userAlreadyExists)
        #expect(error.apiError?.errorMessageKey == "signup.identifier_taken")
        #expect(error.apiError?.errorDetails?.first?.field == "email")
    }

    @Test("add, rename and delete passkeys of the signed-in account; a deleted passkey no longer signs in")
    func manageAndDelete() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let laptop = SoftwareAuthenticator()
        let phone = SoftwareAuthenticator(attestation: .packed)
        let client = try await client(server, authenticator: laptop)
        let token = try await client.signup(withRequest: PasskeySignupRequest(passkeyProfile: Self.profile, friendlyName: "Laptop"))
        client.passkeyAuthenticator = phone
        try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "Phone"), authToken: token)
        var list = try await client.listWebAuthnCredentials(authToken: token)
        #expect(list.map(\.friendlyName) == ["Laptop", "Phone"])
        let phoneId = try #require(list.last?.id)
        let renamed = try await client.renameWebAuthnRegistration(id: phoneId, friendlyName: "Work phone", authToken: token)
        #expect(renamed.friendlyName == "Work phone")
        // Registering the same authenticator again is refused by the authenticator (excludeCredentials).
        await #expect(throws: LatchkeyError.self) {
            try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "Phone again"), authToken: token)
        }
        try await client.deleteWebAuthnRegistration(id: phoneId, authToken: token)
        list = try await client.listWebAuthnCredentials(authToken: token)
        #expect(list.map(\.friendlyName) == ["Laptop"])
        let deletedAgain = try await #require(throws: LatchkeyError.self) {
            try await client.deleteWebAuthnRegistration(id: phoneId, authToken: token)
        }
        #expect(deletedAgain.statusCode == 404)

        let fresh = try await self.client(server, authenticator: phone)
        let refused = try await #require(throws: LatchkeyError.self) {
            try await fresh.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
        }
        #expect(refused.apiError?.errorMessageKey == "passkey.unknown")
        #expect(refused.category == .authFailure)
    }

    @Test("password through the modal: a saved password signs in; a wrong one is an auth failure with the server's message")
    func passwordModal() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let right = SoftwareCredentialProvider(passwords: [.init(username: "demo@example.com", password: "correct horse battery staple")])
        let token = try await client(server, provider: right).login(
            withRequest: NativeLoginRequest(),
            usingModalAuthorizationFor: [.Passkey, .Password], display: .Always)
        #expect(token.user?.email == "demo@example.com")
        let wrong = SoftwareCredentialProvider(passwords: [.init(username: "demo@example.com", password: "not it")])
        let error = try await #require(throws: LatchkeyError.self) {
            try await client(server, provider: wrong).login(
                withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        }
        #expect(error.code == .authenticationFailed)
        #expect(error.category == .authFailure)
        #expect(error.apiError?.errorMessageKey == "login.invalid_credentials")
        #expect(error.errorUserMsg?.isEmpty == false)
    }

    @Test("the SDK's languages reach the identity endpoints: a refused passkey sign-up explains itself in Japanese")
    func localizedNativeError() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient(), credentialProvider: nil, passkeyAuthenticator: SoftwareAuthenticator())
        var config = server.sdkConfig()
        config.preferredLanguages = ["ja-JP"]
        try await client.initialize(config: config)
        let error = try await #require(throws: LatchkeyError.self) {
            try await client.signup(withRequest: PasskeySignupRequest(passkeyProfile: .init(email: "demo@example.com"), friendlyName: "x"))
        }
        let expected = try #require(
            MessageCatalog.text(
                "signup.identifier_taken", locale: .ja,
                arguments: UserSchema.fieldArguments("email", display: "Email address")))
        #expect(error.userMessage == expected)
        #expect(error.errorDescription == expected)
        #expect(error.apiError?.errorDetails?.first?.message == expected)
    }

    @Test("password with a second factor enrolled surfaces MFA_REQUIRED with the step-up token and factors")
    func passwordMFA() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        _ = try await server.server.enrollTOTP(userId: user.id)
        let provider = SoftwareCredentialProvider(passwords: [.init(username: "demo@example.com", password: "correct horse battery staple")])
        let error = try await #require(throws: LatchkeyError.self) {
            try await client(server, provider: provider).login(
                withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
        }
        #expect(error.code == .mfaRequired)
        #expect(error.mfaStepUp?.amr == ["otp"])
        #expect(error.mfaStepUp?.token.isEmpty == false)
    }

    @Test("MFA step-up to the end: TOTP wrong then right, and an emailed code; each challenge and step-up is single use")
    func passwordMFAContinued() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let user = try #require(try await server.server.user(username: "demo@example.com"))
        let (secret, _) = try await server.server.enrollTOTP(userId: user.id)
        try await server.server.enrollEmailOTP(userId: user.id)
        let provider = SoftwareCredentialProvider(passwords: [.init(username: "demo@example.com", password: "correct horse battery staple")])
        let client = try await client(server, provider: provider)
        func stepUp() async throws -> MfaStepUp {
            let error = try await #require(throws: LatchkeyError.self) {
                try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
            }
            return try #require(error.mfaStepUp)
        }
        let first = try await stepUp()
        #expect(Set(first.amr) == ["otp", "email"])
        let otp = try await client.mfaStart(stepUp: first, authType: "otp")
        let wrong = try await #require(throws: LatchkeyError.self) { try await otp.verify(code: "000000") }
        #expect(wrong.code == .confirmationCodeInvalid)
        let code = server.totpCode(secret)
        let token = try await otp.verify(code: code)
        #expect(token.user?.email == "demo@example.com")
        #expect(try await client.isSignedIn())
        let again = try await #require(throws: LatchkeyError.self) { try await otp.verify(code: code) }
        #expect(again.code == .confirmationCodeExpired)

        // Emailed code: read from the development outbox.
        let second = try await stepUp()
        let email = try await client.mfaStart(stepUp: second, authType: "email")
        let sent = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first?.code)
        #expect(try await email.verify(code: sent).user?.email == "demo@example.com")
        // The same step-up cannot mint a second code through another challenge, even with a right code: one of the
        // next time step (the first TOTP code is spent, so it would be refused as a replay before this check).
        server.advanceClock(30)
        let replay = try await client.mfaStart(stepUp: second, authType: "otp")
        let refused = try await #require(throws: LatchkeyError.self) {
            try await replay.verify(code: server.totpCode(secret))
        }
        #expect(refused.code == .confirmationCodeExpired)
    }

    /// A credential provider whose Apple answer carries Apple's `authorizationCode`, as the system sheet's does.
    struct AppleWithCode: CredentialProvider {
        let issuer: AppleStandIn
        let code: String
        func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
            let nonce = try #require(request.appleNonce)
            return .appleID(
                identityToken: try issuer.identityToken(sub: "apple-grace", bundleId: SDKPasskeyTests.bundleId, nonceClaim: nonce, email: nil),
                givenName: nil, familyName: nil, authorizationCode: code)
        }
    }

    @Test("Sign in with Apple sends the credential's authorization code; deleting the account then revokes the app at Apple")
    func appleCodeLetsTheDeletionRevoke() async throws {
        let issuer = try await AppleStandIn.start()
        let (teamKey, pem) = UpstreamProviderDouble.appleTeamKey()
        let upstream = try await UpstreamProviderDouble.start(.apple(teamId: "TEAM123456", keyId: "KEY1234567", publicKey: teamKey.publicKey))
        upstream.setBehavior { $0.appleNativeClientIds = [Self.bundleId] }
        let server = try await TestServer.startForNativeLogin(bundleId: Self.bundleId, apple: issuer) { configuration in
            configuration.identityProviders = [
                IdentityProviderConfiguration(
                    id: "apple", kind: .apple, authority: upstream.base, clientId: upstream.clientId, teamId: "TEAM123456",
                    keyId: "KEY1234567", privateKeyPEM: pem)
            ]
        }
        defer {
            Task {
                await server.stop(); await issuer.stop(); await upstream.stop()
            }
        }
        let code = upstream.nativeAuthorizationCode(bundleId: Self.bundleId)
        let client = try await client(server, provider: AppleWithCode(issuer: issuer, code: code))
        _ = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
        #expect(upstream.lastTokenForm["code"] == code, "the server redeemed the app's code at Apple")
        #expect(upstream.lastTokenForm["client_id"] == Self.bundleId)
        let issued = try #require(upstream.liveRefreshTokens.first)

        let deletion = try await client.deleteAccount()
        #expect(deletion.isDeleted)
        #expect(upstream.revokedTokens == [issued])
    }

    @Test("Sign in with Apple through the modal: the nonce round-trips, a new account is created, and a wrong audience is refused")
    func appleModal() async throws {
        let issuer = try await AppleStandIn.start()
        let server = try await Self.start(apple: issuer)
        defer {
            Task {
                await server.stop(); await issuer.stop()
            }
        }
        let good = SoftwareCredentialProvider(appleIDToken: { nonce, _ in
            // The stand-in puts the nonce the SDK asked for into the token, as Apple does.
            (try issuer.identityToken(sub: "apple-ada", bundleId: Self.bundleId, nonceClaim: nonce, email: "ada@icloud.example"), "Ada", "Lovelace")
        })
        let token = try await client(server, provider: good).login(
            withRequest: NativeLoginRequest(),
            usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
        #expect(token.user?.email == "ada@icloud.example")
        #expect(token.user?.name == "Ada Lovelace")

        let wrongAudience = SoftwareCredentialProvider(appleIDToken: { nonce, _ in
            (try issuer.identityToken(sub: "apple-ada", bundleId: "com.other.app", nonceClaim: nonce, email: nil), nil, nil)
        })
        let refused = try await #require(throws: LatchkeyError.self) {
            try await client(server, provider: wrongAudience).login(
                withRequest: NativeLoginRequest(),
                usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
        }
        #expect(refused.code == .authenticationFailed)
        #expect(refused.apiError?.errorMessageKey == "apple.failed")
        #expect(refused.userMessage?.isEmpty == false)
        let replayedNonce = SoftwareCredentialProvider(appleIDToken: { _, _ in
            (try issuer.identityToken(sub: "apple-ada", bundleId: Self.bundleId, nonceClaim: "not-the-nonce", email: nil), nil, nil)
        })
        await #expect(throws: LatchkeyError.self) {
            try await client(server, provider: replayedNonce).login(
                withRequest: NativeLoginRequest(),
                usingModalAuthorizationFor: [.SignInWithApple], display: .Always)
        }
    }

    @Test("display: immediate mode with no passkey ends canceled; .Always with none is PASSKEY_NO_CREDENTIAL")
    func displayModes() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let empty = SoftwareAuthenticator()
        let immediate = try await #require(throws: LatchkeyError.self) {
            try await client(server, authenticator: empty).login(
                withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey],
                display: .IfImmediatelyAvailableCredentials)
        }
        #expect(immediate.category == .authCanceled)
        let always = try await #require(throws: LatchkeyError.self) {
            try await client(server, authenticator: empty).login(
                withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
        }
        #expect(always.code == .passkeyNoCredential)
    }

    // MARK: thunderID flows

    @Test("thunderID dialect: registration with a passkey instead of a password, then passkey sign-in (discoverable and username-first)")
    func flowPasskeys() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let authenticator = SoftwareAuthenticator()
        let client = try await client(server, authenticator: authenticator)
        let signUp = EmbeddedFlowRequestConfig(flowType: .registration)
        let start = try await client.signUp(payload: .init(), request: signUp)
        #expect(start.actions.map(\.ref).contains("action_passkey"))
        let challenge = try await client.signUp(
            payload: .init(flowId: start.flowId, actionId: "action_passkey", inputs: ["username": "grace"]),
            request: signUp)
        #expect(challenge.additionalData["passkeyCreationOptions"] != nil, "\(challenge)")
        let inputs = try await client.passkeyInputs(for: challenge, credentialName: "Grace's key")
        let attributes = try await client.signUp(
            payload: .init(flowId: start.flowId, actionId: "action_register_passkey", inputs: inputs),
            request: signUp)
        #expect(attributes.inputs.map(\.identifier).contains("email"), "the required attributes come after the passkey: \(attributes)")
        let done = try await client.signUp(
            payload: .init(flowId: start.flowId, actionId: "action_attributes", inputs: ["email": "grace@example.com"]),
            request: signUp)
        #expect(done.flowStatus == .complete, "\(done)")
        let grace = try #require(try await server.server.user(username: "grace"))
        #expect(try await server.server.store.passkeys(userId: grace.id).map(\.friendlyName) == ["Grace's key"])

        for username in [nil, "grace"] as [String?] {
            let signer = try await self.client(server, authenticator: authenticator)
            let signIn = EmbeddedFlowRequestConfig(flowType: .authentication)
            let first = try await signer.signIn(payload: .init(), request: signIn)
            let ask = try await signer.signIn(
                payload: .init(
                    flowId: first.flowId, actionId: "action_passkey",
                    inputs: username.map { ["username": $0] } ?? [:]), request: signIn)
            let options = try #require(ask.additionalData["passkeyChallenge"])
            #expect(options.contains("allowCredentials"))
            let assertion = try await signer.passkeyInputs(for: ask)
            let complete = try await signer.signIn(
                payload: .init(flowId: first.flowId, actionId: "action_assertion", inputs: assertion), request: signIn)
            #expect(complete.flowStatus == .complete, "\(complete)")
            #expect(try await signer.getUser().sub == grace.id)
        }
    }

    @Test("thunderID dialect: a bad assertion returns FET-1019 with a fresh challenge at the same step")
    func flowBadAssertion() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let authenticator = SoftwareAuthenticator()
        let client = try await client(server, authenticator: authenticator)
        _ = try await client.signup(withRequest: PasskeySignupRequest(passkeyProfile: Self.profile, friendlyName: "key"))
        let signIn = EmbeddedFlowRequestConfig(flowType: .authentication)
        let first = try await client.signIn(payload: .init(), request: signIn)
        let ask = try await client.signIn(payload: .init(flowId: first.flowId, actionId: "action_passkey", inputs: [:]), request: signIn)
        var inputs = try await client.passkeyInputs(for: ask)
        let encoded = try #require(inputs["signature"])
        var signature = try #require(Base64URL.decode(encoded))
        signature[signature.count - 1] ^= 0x01
        inputs["signature"] = Base64URL.encode(signature)
        let refused = try await client.signIn(payload: .init(flowId: first.flowId, actionId: "action_assertion", inputs: inputs), request: signIn)
        #expect(refused.flowStatus == .promptOnly)
        #expect(refused.error?.serverCode == "FET-1019")
        #expect(refused.additionalData["passkeyChallenge"] != ask.additionalData["passkeyChallenge"])
    }
}
