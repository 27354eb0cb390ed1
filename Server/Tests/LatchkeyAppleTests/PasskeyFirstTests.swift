import LatchkeyTestSupport
import AppleFrameworkStandIns
import Foundation
import Latchkey
@testable import LatchkeyApple
@testable import LatchkeyServer
import Testing

/// Passkey-first (issue 42) through the `ASAuthorizationController` stand-in, against the real server: the system's
/// failures told apart (with the person's words), AutoFill-assisted sign-in and its one-request-at-a-time rule, and
/// the silent passkey upgrade after a password sign-in.
@Suite("LatchkeyApple: passkey-first — errors, AutoFill, upgrade")
struct PasskeyFirstTests {
    let device = StandInDevice()

    /// What a sheet asked for, copied out of the stand-in's main-actor objects.
    struct SeenSheet: Sendable, Equatable {
        var autoFill: Bool
        var requests: [String]
        var conditional: Bool
    }

    /// `behaviour`, recording every sheet it is asked to answer.
    static func recording(_ seen: LockedBox<[SeenSheet]>, _ behaviour: AuthorizationBehaviour) -> AuthorizationBehaviour {
        AuthorizationBehaviour { sheet in
            let registration = sheet.request(ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest.self)
            seen.set(
                seen.value + [
                    SeenSheet(
                        autoFill: sheet.autoFill, requests: sheet.requests.map { String(describing: type(of: $0)) },
                        conditional: registration?.requestStyle == .conditional)
                ])
            return await behaviour.respond(sheet)
        }
    }

    static let assertionRequest = "ASAuthorizationPlatformPublicKeyCredentialAssertionRequest"
    static let registrationRequest = "ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest"

    /// Signs the demo user in with the saved password (through the sheet) and returns the token.
    func passwordSignIn(_ client: LatchkeyClient) async throws -> AuthToken {
        try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Password], display: .Always)
    }

    /// An account with a passkey in `keychain`, made through the registration sheet; returns its subject.
    func signUp(_ server: TestServer, keychain: SoftwareAuthenticator) async throws -> String {
        device.authorization = ScriptedPlatform.behaviour(passkeys: keychain)
        let client = try await server.appleClient()
        let token = try await client.signup(
            withRequest: PasskeySignupRequest(passkeyPofile: ProfilePasskeySignupRequest(email: "ada@example.com"), friendlyName: "iPhone"))
        return try #require(token.user?.id)
    }

    // MARK: Errors

    /// One row of the mapping: the system's error, the ceremony, and the code the SDK must give.
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let error: @Sendable () -> ASAuthorizationError
        let ceremony: AuthorizationErrors.Ceremony
        let immediateOnly: Bool
        let passkeyOnly: Bool
        let expected: LatchkeyError.Code
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "canceled, passkey sheet → passkeyCanceled", error: { ASAuthorizationError(.canceled) }, ceremony: .passkeyRegistration,
            immediateOnly: false, passkeyOnly: false, expected: .passkeyCanceled),
        Row(
            name: "canceled, sign-in sheet → canceled", error: { ASAuthorizationError(.canceled) }, ceremony: .signIn, immediateOnly: false,
            passkeyOnly: true, expected: .canceled),
        Row(
            name: "canceled, immediate passkey → passkeyNoCredential", error: { ASAuthorizationError(.canceled) }, ceremony: .passkeyAssertion,
            immediateOnly: true, passkeyOnly: false, expected: .passkeyNoCredential),
        Row(
            name: "notInteractive, immediate sign-in → canceled", error: { ASAuthorizationError(.notInteractive) }, ceremony: .signIn,
            immediateOnly: true, passkeyOnly: false, expected: .canceled),
        Row(
            name: "canceled, AutoFill → canceled", error: { ASAuthorizationError(.canceled) }, ceremony: .autoFill, immediateOnly: false,
            passkeyOnly: false, expected: .canceled),
        Row(
            name: "matchedExcludedCredential → passkeyAlreadyRegistered", error: { ASAuthorizationError(.matchedExcludedCredential) },
            ceremony: .passkeyRegistration, immediateOnly: false, passkeyOnly: false, expected: .passkeyAlreadyRegistered),
        Row(
            name: "failed, not associated (reason and underlying) → passkeyDomainNotAssociated",
            error: { ScriptedPlatform.notAssociated(with: "localhost") }, ceremony: .passkeyAssertion, immediateOnly: false,
            passkeyOnly: false, expected: .passkeyDomainNotAssociated),
        Row(
            name: "failed, not associated (underlying error only), password sheet → passkeyDomainNotAssociated",
            error: {
                ASAuthorizationError(
                    .failed,
                    userInfo: [
                        NSUnderlyingErrorKey: NSError(
                            domain: "com.apple.AuthenticationServicesCore.AuthorizationError", code: 7,
                            userInfo: [NSLocalizedDescriptionKey: "Application with identifier X.y is not associated with domain localhost"])
                    ])
            }, ceremony: .signIn, immediateOnly: false, passkeyOnly: false, expected: .passkeyDomainNotAssociated),
        Row(
            name: "failed, already in progress → passkeyRequestInProgress", error: { ScriptedPlatform.requestInProgress }, ceremony: .signIn,
            immediateOnly: false, passkeyOnly: false, expected: .passkeyRequestInProgress),
        Row(
            name: "failed without words, passkey → passkeyFailed", error: { ASAuthorizationError(.failed) }, ceremony: .passkeyAssertion,
            immediateOnly: false, passkeyOnly: false, expected: .passkeyFailed),
        Row(
            name: "failed without words, password sheet → unknownError", error: { ASAuthorizationError(.failed) }, ceremony: .signIn,
            immediateOnly: false, passkeyOnly: false, expected: .unknownError),
        Row(
            name: "unknown, registration → passkeyFailed", error: { ASAuthorizationError(.unknown) }, ceremony: .passkeyRegistration,
            immediateOnly: false, passkeyOnly: false, expected: .passkeyFailed)
    ]

    @Test("each ASAuthorizationError maps to its LatchkeyError code, the system's error kept underneath", arguments: rows)
    func errorMapping(_ row: Row) throws {
        let system = row.error()
        let mapped = AuthorizationErrors.map(
            system, ceremony: row.ceremony, immediateOnly: row.immediateOnly, rpId: "localhost", passkeyOnly: row.passkeyOnly)
        let error = try #require(mapped as? LatchkeyError)
        #expect(error.code == row.expected)
        #expect((error.underlying as? ASAuthorizationError)?.code == system.code)
        if PasskeyErrorMessages.codes.contains(row.expected) {
            #expect(error.userMessage?.isEmpty == false && error.errorUserMsg == error.userMessage, "the person's words come with it")
        }
        if row.expected == .passkeyDomainNotAssociated {
            #expect(error.message.contains("webcredentials:localhost") && error.message.contains("https://localhost/.well-known/"))
            #expect(error.category == .technicalError)
        }
        // Not an ASAuthorizationError: passed through untouched.
        #expect(AuthorizationErrors.map(CancellationError(), ceremony: row.ceremony, immediateOnly: false, rpId: nil) is CancellationError)
    }

    @Test(
        "through the client: the app not associated with the RP ID, another request in progress, a passkey already here — each with the person's words in the client's language"
    )
    func systemFailuresThroughTheClient() async throws {
        try await device.withAppleServer { server in
            let client = try await server.appleClient()
            try client.setPreferredLanguages(["de-AT"])
            device.authorization = .fails(ScriptedPlatform.notAssociated(with: "localhost"))
            await #expect {
                try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .passkeyDomainNotAssociated && e.message.contains("webcredentials:localhost")
                    && e.userMessage == PasskeyErrorMessages.message(for: .passkeyDomainNotAssociated, language: "de")
                    && e.errorDescription == e.userMessage && e.category == .technicalError
            }
            device.authorization = .fails(ScriptedPlatform.requestInProgress)
            await #expect {
                try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey, .Password], display: .Always)
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .passkeyRequestInProgress
                    && e.userMessage == PasskeyErrorMessages.message(for: .passkeyRequestInProgress, language: "de")
            }

            // A second passkey for the account on the device that already holds one: the server excludes it, the system says so.
            let keychain = SoftwareAuthenticator()
            device.authorization = ScriptedPlatform.behaviour(
                passkeys: keychain, password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            let token = try await passwordSignIn(client)
            try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "iPhone"), authToken: token)
            await #expect {
                try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "iPhone again"), authToken: token)
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .passkeyAlreadyRegistered && e.category == .requestError
                    && e.userMessage == PasskeyErrorMessages.message(for: .passkeyAlreadyRegistered, language: "de")
            }
            #expect(try await keychain.credentials().count == 1)
        }
    }

    // MARK: AutoFill

    @Test("AutoFill: the passkey assertion request alone, in the keyboard's suggestions; the pick signs in and stores the session")
    func autoFillSignsIn() async throws {
        try await device.withAppleServer { server in
            let keychain = SoftwareAuthenticator()
            let sub = try await signUp(server, keychain: keychain)
            let seen = LockedBox<[SeenSheet]>([])
            device.authorization = Self.recording(seen, ScriptedPlatform.behaviour(passkeys: keychain))
            let client = try await server.appleClient()
            let before = device.log.events.count
            let token = try await client.beginAutoFillAssistedPasskeyLogin(withRequest: NativeLoginRequest(anchor: await ASPresentationAnchor()))
            #expect(token.user?.id == sub)
            #expect(try await client.isSignedIn() && client.isLoading() == false)
            #expect(try await client.getUser().sub == sub, "the session is stored like any sign-in's")
            #expect(seen.value == [SeenSheet(autoFill: true, requests: [Self.assertionRequest], conditional: false)])
            #expect(device.log.events.dropFirst(before).contains(.authorizationAutoFillRequested(requests: [Self.assertionRequest])))
            #expect(!device.log.events.dropFirst(before).contains { if case .authorizationRequested = $0 { true } else { false } })
        }
    }

    @Test("one request at a time: a modal sign-in while AutoFill waits ends AutoFill as superseded, and the modal one signs in")
    func modalSupersedesAutoFill() async throws {
        try await device.withAppleServer { server in
            let keychain = SoftwareAuthenticator()
            let sub = try await signUp(server, keychain: keychain)
            device.authorization = ScriptedPlatform.autoFillWaits(modal: ScriptedPlatform.behaviour(passkeys: keychain))
            let client = try await server.appleClient()
            let before = device.log.events.count
            let autoFill = Task { try await client.beginAutoFillAssistedPasskeyLogin(withRequest: NativeLoginRequest()) }
            #expect(await device.log.waitFor(since: before) { if case .authorizationAutoFillRequested = $0 { true } else { false } })
            #expect(!client.isLoading(), "waiting in the keyboard is not loading")

            let token = try await client.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
            #expect(token.user?.id == sub)
            await #expect {
                try await autoFill.value
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .canceled && e.isSuperseded && e.category == .authCanceled && e.underlying is CredentialRequestSuperseded
            }
            // The AutoFill controller was cancelled before the sheet was performed.
            let events = Array(device.log.events.dropFirst(before))
            let canceled = try #require(events.firstIndex(of: .authorizationCanceledByApp))
            let sheet = try #require(events.firstIndex(of: .authorizationRequested(requests: [Self.assertionRequest])))
            #expect(canceled < sheet)
            #expect(!client.isLoading())
        }
    }

    @Test("one request at a time: a registration, and a second AutoFill, supersede an AutoFill request too")
    func otherRequestsSupersedeAutoFill() async throws {
        try await device.withAppleServer { server in
            let keychain = SoftwareAuthenticator()
            device.authorization = ScriptedPlatform.autoFillWaits(
                modal: ScriptedPlatform.behaviour(passkeys: keychain, password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword)))
            let client = try await server.appleClient()
            let token = try await passwordSignIn(client)

            var before = device.log.events.count
            let first = Task { try await client.beginAutoFillAssistedPasskeyLogin(withRequest: NativeLoginRequest()) }
            #expect(await device.log.waitFor(since: before) { if case .authorizationAutoFillRequested = $0 { true } else { false } })
            before = device.log.events.count
            let second = Task { try await client.beginAutoFillAssistedPasskeyLogin(withRequest: NativeLoginRequest()) }
            #expect(await device.log.waitFor(since: before) { if case .authorizationAutoFillRequested = $0 { true } else { false } })
            await #expect { try await first.value } throws: { ($0 as? LatchkeyError)?.isSuperseded == true }

            try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: "iPhone"), authToken: token)
            await #expect { try await second.value } throws: { ($0 as? LatchkeyError)?.isSuperseded == true }
            #expect(try await keychain.credentials().count == 1)
        }
    }

    @Test("AutoFill ends when the calling task is cancelled: the controller is cancelled, the call throws as any cancelled sign-in")
    func autoFillCancelledWithTheTask() async throws {
        try await device.withAppleServer { server in
            device.authorization = .neverCompletes
            let client = try await server.appleClient()
            let before = device.log.events.count
            let call = Task { try await client.beginAutoFillAssistedPasskeyLogin(withRequest: NativeLoginRequest()) }
            #expect(await device.log.waitFor(since: before) { if case .authorizationAutoFillRequested = $0 { true } else { false } })
            call.cancel()
            await #expect { try await call.value } throws: { error in
                guard let e = error as? LatchkeyError else { return false }
                return e.code == .unknownError && e.underlying is CancellationError && !e.isSuperseded
            }
            #expect(await device.log.waitFor(.authorizationCanceledByApp, since: before))
            #expect(!client.isLoading())
            #expect(try await client.isSignedIn() == false)
        }
    }

    // MARK: Upgrade

    @Test("upgrade after a password sign-in: a conditional request without UI registers a passkey (how: upgrade) that then signs in")
    func upgradeRegistersWithoutUI() async throws {
        try await device.withAppleServer { server in
            let keychain = SoftwareAuthenticator()
            let seen = LockedBox<[SeenSheet]>([])
            device.authorization = Self.recording(
                seen, ScriptedPlatform.behaviour(passkeys: keychain, password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword)))
            let http = ProgrammableHTTPClient()
            let client = try await server.appleClient(http: http)
            let token = try await passwordSignIn(client)
            let sheetsBefore = device.log.events.filter { if case .authorizationSheetShown = $0 { true } else { false } }.count

            #expect(try await client.upgradeToPasskey(authToken: token, friendlyName: "This iPhone") == .registered)
            #expect(seen.value.last == SeenSheet(autoFill: false, requests: [Self.registrationRequest], conditional: true))
            #expect(device.log.events.contains(.authorizationAnsweredWithoutUI(requests: [Self.registrationRequest])))
            let sheetsAfter = device.log.events.filter { if case .authorizationSheetShown = $0 { true } else { false } }.count
            #expect(sheetsAfter == sheetsBefore, "nothing was shown")
            #expect(try await keychain.credentials().first?.userName == DevelopmentDefaults.demoUsername, "saved under the account's name")

            let registration = try #require(http.requests(pathEndingWith: "/identity/v1/webauthn/registration").last)
            #expect(registration.method == "POST")
            let body = try #require(try JSONSerialization.jsonObject(with: registration.body ?? Data()) as? [String: Any])
            #expect(body["how"] as? String == "upgrade")
            #expect(body["friendly_name"] as? String == "This iPhone" && body["response"] is [String: Any])
            #expect(try await client.listWebAuthnCredentials(authToken: token).map(\.friendlyName) == ["This iPhone"])
            // The server audits it as an upgrade.
            let added = try await server.server.store.auditEvents(AuditQuery(types: [.passkeyAdded], limit: 5))
            #expect(added.map { $0.details["how"] } == ["upgrade"])

            // The new passkey signs the account in.
            let again = try await server.appleClient()
            let signedIn = try await again.login(withRequest: NativeLoginRequest(), usingModalAuthorizationFor: [.Passkey], display: .Always)
            #expect(signedIn.user?.id == token.user?.id)
        }
    }

    @Test(
        "upgrade on an OS without conditional registration: nothing shown, nothing asked, .notOffered(.unsupportedOS); insisting throws passkeyNotSupported"
    )
    func upgradeOnAnOlderOS() async throws {
        try await device.withAppleServer { server in
            device.authorization = ScriptedPlatform.behaviour(
                passkeys: SoftwareAuthenticator(), password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            device.hasConditionalPasskeyRegistration = false
            let http = ProgrammableHTTPClient()
            let client = try await server.appleClient(http: http)
            let token = try await passwordSignIn(client)
            let before = device.log.events.count

            #expect(try await client.upgradeToPasskey(authToken: token) == .notOffered(.unsupportedOS))
            #expect(device.log.events.count == before, "no request reached the system")
            #expect(http.requests(pathEndingWith: "/registration-options").isEmpty, "nor the server")

            try client.setPreferredLanguages(["ja"])
            await #expect {
                try await client.upgradeToPasskey(authToken: token, throwsIfUnsupported: true)
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .passkeyNotSupported && e.userMessage == PasskeyErrorMessages.message(for: .passkeyNotSupported, language: "ja")
            }
            #expect(device.log.events.count == before)
        }
    }

    @Test(
        "upgrade that the credential manager declines (no password saved for this account), or a device that has one: not offered, nothing shown, nothing stored"
    )
    func upgradeDeclined() async throws {
        try await device.withAppleServer { server in
            let keychain = SoftwareAuthenticator()
            device.authorization = ScriptedPlatform.behaviour(
                passkeys: keychain, password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            let http = ProgrammableHTTPClient()
            let client = try await server.appleClient(http: http)
            let token = try await passwordSignIn(client)

            // The keychain's password is for another account name: the credential manager declines without UI.
            device.authorization = ScriptedPlatform.behaviour(passkeys: keychain, password: ("someone-else@example.com", "x"))
            let before = device.log.events.count
            #expect(try await client.upgradeToPasskey(authToken: token) == .notOffered(.declined))
            #expect(device.log.events.dropFirst(before).contains(.authorizationAnsweredWithoutUI(requests: [Self.registrationRequest])))
            #expect(!device.log.events.dropFirst(before).contains { if case .authorizationSheetShown = $0 { true } else { false } })
            #expect(http.requests(pathEndingWith: "/identity/v1/webauthn/registration").isEmpty)
            #expect(try await keychain.credentials().isEmpty)

            // Registered once; a second upgrade finds the device already holds it.
            device.authorization = ScriptedPlatform.behaviour(
                passkeys: keychain, password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            #expect(try await client.upgradeToPasskey(authToken: token) == .registered)
            #expect(try await client.upgradeToPasskey(authToken: token) == .notOffered(.alreadyRegistered))
            #expect(try await keychain.credentials().count == 1)
            #expect(http.requests(pathEndingWith: "/identity/v1/webauthn/registration").count == 1)
        }
    }

    @Test("upgrade for an app not associated with the RP ID throws passkeyDomainNotAssociated: the one failure a developer must see")
    func upgradeNotAssociated() async throws {
        try await device.withAppleServer { server in
            device.authorization = ScriptedPlatform.behaviour(
                passkeys: SoftwareAuthenticator(), password: (DevelopmentDefaults.demoUsername, DevelopmentDefaults.demoPassword))
            let client = try await server.appleClient()
            let token = try await passwordSignIn(client)
            device.authorization = .fails(ScriptedPlatform.notAssociated(with: "localhost"))
            await #expect {
                try await client.upgradeToPasskey(authToken: token)
            } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .passkeyDomainNotAssociated && e.message.contains("localhost") && e.userMessage != nil
            }
        }
    }
}
