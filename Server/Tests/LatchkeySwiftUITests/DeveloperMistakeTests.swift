import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyServer
import LatchkeySwiftUI
import Logging
import Testing

/// The set-up mistakes a developer makes on day one, each against the real server: the person reads a message in
/// their language (never the SDK's technical English), the developer gets what to fix in `LatchkeyState.diagnosis`
/// and exactly one log line however often the mistake repeats, and a closed error page is not a cancel.
@MainActor
@Suite("SwiftUI: set-up mistakes say what to fix")
struct DeveloperMistakeTests {
    /// A state over the server with `adjust` applied to its configuration, logging into `log`, in `locale`.
    private func state(
        _ server: TestServer, log: CapturedLog, locale: String = "en", http: any HTTPClient = productionHTTPClient(),
        userAgent: (any AuthorizationUserAgent)? = nil, adjust: (inout LatchkeyConfig) -> Void = { _ in }
    ) -> LatchkeyState {
        var config = server.sdkConfig()
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        adjust(&config)
        let client = userAgent.map { LatchkeyClient(http: http, userAgent: $0) } ?? LatchkeyClient(http: http)
        return LatchkeyState(
            config: config, client: client, i18n: LatchkeyI18n(locale: locale, store: InMemoryLocaleStore()), logger: log.logger)
    }

    @Test("a call before initialize: the person reads the generic text, the log says to initialize first, once")
    func calledBeforeInitialize() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        let client = LatchkeyClient(http: productionHTTPClient())
        let state = LatchkeyState(client: client, i18n: LatchkeyI18n(locale: "fr", store: InMemoryLocaleStore()), logger: log.logger)
        let model = AuthFlowModel(state: state)
        await model.start()
        await model.restart()
        #expect(model.error == UIStrings.text(.genericError, language: "fr"), "not \"call initialize(config:storage:) first\"")
        #expect(state.diagnosis?.kind == .notInitialized)
        #expect(log.errors.count == 1, "the same mistake twice is logged once: \(log.errors)")
        #expect(log.errors.first?.contains("initialize(config:storage:)") == true)
        #expect(log.errors.first?.contains(".latchkeyProvider(config:)") == true)
    }

    @Test("a failed initialize is the cause the log names when a form then finds the client uninitialized")
    func initializationFailureIsTheCause() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        // A device pointed at a development machine's LAN address over plain http.
        let state = state(server, log: log) { $0.baseUrl = "http://192.168.1.20:8090" }
        await state.start()
        #expect(state.isInitialized && state.diagnosis?.kind == .invalidConfiguration)
        #expect(state.error == UIStrings.text(.genericError, language: "en"))
        let model = AuthFlowModel(state: state)
        await model.start()
        #expect(model.error == UIStrings.text(.genericError, language: "en"))
        #expect(state.diagnosis?.kind == .invalidConfiguration, "the root cause stays, not \"not initialized\"")
        #expect(log.errors.count == 1 && log.errors.first?.contains("HTTPS") == true, "\(log.errors)")
    }

    @Test("a redirect URI without a scheme is refused at initialize, with the fix")
    func missingURLScheme() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        let state = state(server, log: log) { $0.afterSignInUrl = "callback" }
        await state.start()
        #expect(state.lastError?.code == .invalidRedirectUri && state.diagnosis?.kind == .redirectUriScheme)
        #expect(state.error == UIStrings.text(.genericError, language: "en"))
        #expect(log.errors.count == 1 && log.errors.first?.contains("com.example.myapp:/callback") == true, "\(log.errors)")
    }

    @Test("a server that is not running: the person is told to check the connection, the developer where to look")
    func serverUnreachable() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        let http = ProgrammableHTTPClient()
        _ = http.rewriteRequests { $0.toClosedPort }
        let state = state(server, log: log, locale: "de", http: http)
        await state.start()
        let button = SignInButtonModel(state: state)
        await button.signInWithBrowser()
        await button.signInWithBrowser()
        #expect(state.error == UIStrings.text(.networkError, language: "de"))
        #expect(state.diagnosis?.kind == .serverUnreachable)
        #expect(log.errors.count == 1, "\(log.errors)")
        #expect(log.errors.first?.contains("simulator") == true && log.errors.first?.contains(server.issuer) == true)
    }

    @Test("an unknown client id: refused at the pushed request; the developer is told to register it")
    func unknownClientId() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        let state = state(server, log: log) { $0.clientId = "my-new-app" }
        await state.start()
        await SignInButtonModel(state: state).signInWithBrowser()
        #expect(state.error == UIStrings.text(.genericError, language: "en"))
        #expect(state.diagnosis?.kind == .unknownClient, "\(String(describing: state.lastError))")
        #expect(log.errors.count == 1 && log.errors.first?.contains("'my-new-app'") == true, "\(log.errors)")
    }

    @Test("an unknown application id in the app-native form: the server's words for the person, the fix in the log")
    func unknownApplicationId() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        let state = state(server, log: log, locale: "fr")
        await state.start()
        let model = AuthFlowModel(state: state, applicationId: "my-new-app")
        await model.start()
        #expect(model.phase == .failed && model.canRestart)
        #expect(model.error == MessageCatalog.text("flows.errors.invalid_app", locale: .fr), "the server's words, not its description")
        #expect(state.diagnosis?.kind == .unknownClient)
        #expect(log.errors.count == 1, "\(log.errors)")
    }

    @Test("a redirect URI spelled differently from the registered one: refused at the pushed request, the spelling named")
    func unregisteredRedirectURI() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        let state = state(server, log: log, userAgent: ClosingUserAgent()) { $0.afterSignInUrl = "io.latchkey.demo://callback" }
        await state.start()
        await SignInButtonModel(state: state).signInWithBrowser()
        #expect(state.error == UIStrings.text(.genericError, language: "en"))
        #expect(state.diagnosis?.kind == .redirectUriNotRegistered, "\(String(describing: state.lastError))")
        #expect(log.errors.count == 1 && log.errors.first?.contains("':/' and '://' differ") == true, "\(log.errors)")
    }

    @Test("a closed error page is not a cancel (a provider without pushed requests); a closed sign-in page is")
    func closedErrorPage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // A provider that does not offer pushed authorization requests (in neither discovery document): the browser
        // carries the whole request, and the provider shows its error page for a redirect URI it does not know.
        let http = ProgrammableHTTPClient()
        _ = http.rewriteResponses(where: { $0.url.path.contains("/.well-known/") }) { _, response in
            var response = response
            if var document = try JSONSerialization.jsonObject(with: response.body) as? [String: Any] {
                document["pushed_authorization_request_endpoint"] = nil
                document["require_pushed_authorization_requests"] = nil
                response.body = try JSONSerialization.data(withJSONObject: document)
            }
            return response
        }
        let closes = ClosingUserAgent()
        let log = CapturedLog()
        let wrong = state(server, log: log, http: http, userAgent: closes) { $0.afterSignInUrl = "io.latchkey.demo://callback" }
        await wrong.start()
        await SignInButtonModel(state: wrong).signInWithBrowser()
        #expect(
            closes.shown.count == 1 && closes.shown.first?.contains("redirect_uri=") == true, "not pushed: \(String(describing: wrong.lastError))")
        #expect(wrong.lastError?.code == .invalidConfiguration && wrong.lastError?.statusCode == 400)
        #expect(wrong.error == UIStrings.text(.genericError, language: "en"), "shown, not swallowed as a cancel")
        #expect(wrong.diagnosis?.kind == .redirectUriNotRegistered, "\(String(describing: wrong.lastError))")
        #expect(log.errors.count == 1, "\(log.errors)")

        // The same sheet closed on a sign-in page that works is the person changing their mind: nothing to say.
        let quiet = CapturedLog()
        let right = state(server, log: quiet, http: http, userAgent: closes)
        await right.start()
        await SignInButtonModel(state: right).signInWithBrowser()
        #expect(closes.shown.count == 2)
        #expect(right.error == nil && right.lastError == nil && right.diagnosis == nil && quiet.errors.isEmpty)
    }

    @Test("a passkey domain the app is not associated with: the SDK's words for the person, the entitlement in the log")
    func passkeyDomainNotAssociated() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let log = CapturedLog()
        var config = server.sdkConfig()
        config.tokenValidation = TokenValidation(clockTolerance: 3600)
        let client = LatchkeyClient(http: productionHTTPClient(), credentialProvider: nil, passkeyAuthenticator: NotAssociatedAuthenticator())
        let state = LatchkeyState(
            config: config, client: client, i18n: LatchkeyI18n(locale: "ja", store: InMemoryLocaleStore()), logger: log.logger)
        let model = await AuthFlowModel.started(state)
        let passkey = try #require(model.passkeyAction)
        await model.perform(actionId: passkey.ref)
        await model.submitPasskey()
        await model.submitPasskey()
        #expect(model.errorCode == LatchkeyError.Code.passkeyDomainNotAssociated)
        #expect(model.error == PasskeyErrorMessages.message(for: .passkeyDomainNotAssociated, language: "ja"))
        #expect(state.diagnosis?.kind == .passkeyDomainNotAssociated)
        #expect(log.errors.count == 1 && log.errors.first?.contains("webcredentials:") == true, "\(log.errors)")
    }

    @Test("every kind of mistake has a fix, and no other failure is called a set-up mistake")
    func diagnosisTable() {
        let config = LatchkeyConfig(baseUrl: "https://id.example.com", clientId: "app", afterSignInUrl: "com.example.app:/callback")
        let cases: [(LatchkeyError, LatchkeyDiagnosis.Kind?)] = [
            (LatchkeyError(.sdkNotInitialized, "call initialize(config:storage:) first"), .notInitialized),
            (LatchkeyError(.invalidRedirectUri, "afterSignInUrl \"x\" is not a URL"), .redirectUriScheme),
            (LatchkeyError(.invalidConfiguration, "afterSignInUrl (the redirect URI) is not set"), .redirectUriScheme),
            (
                LatchkeyError(.invalidConfiguration, "invalid_client: client authentication failed", statusCode: 401, serverCode: "invalid_client"),
                .unknownClient
            ),
            (
                LatchkeyError(
                    .invalidConfiguration, "invalid_request: redirect_uri is missing or not registered for this client", statusCode: 400,
                    serverCode: "invalid_request"), .redirectUriNotRegistered
            ),
            (LatchkeyError(.networkError, "GET /.well-known/openid-configuration: Could not connect to the server."), .serverUnreachable),
            (
                LatchkeyError(
                    .networkError,
                    "The resource could not be loaded because the App Transport Security policy requires the use of a secure connection."),
                .appTransportSecurity
            ),
            // By the system's error, whatever the language of its description.
            (
                LatchkeyError(
                    .networkError, "GET id.example.com/.well-known/openid-configuration: Die Ressource konnte nicht geladen werden.",
                    underlying: URLError(.appTransportSecurityRequiresSecureConnection)), .appTransportSecurity
            ),
            // A certificate the device does not trust is not App Transport Security, though its text names a secure connection.
            (
                LatchkeyError(
                    .networkError, "An SSL error has occurred and a secure connection to the server cannot be made.",
                    underlying: URLError(.secureConnectionFailed)), .serverUnreachable
            ),
            (LatchkeyError(.passkeyDomainNotAssociated, "the app is not associated with id.example.com"), .passkeyDomainNotAssociated),
            (
                LatchkeyError(.passkeyFailed, "ASAuthorizationError 1004 (check that the app's associated domains include webcredentials:x)"),
                .passkeyDomainNotAssociated
            ),
            (LatchkeyError(.passkeyFailed, "the authenticator failed"), nil),
            (
                LatchkeyError(.invalidConfiguration, "baseUrl must use HTTPS (plain http is allowed only for loopback hosts)"),
                .invalidConfiguration
            ),
            (LatchkeyError(.authenticationFailed, "invalid credentials"), nil),
            (LatchkeyError(.canceled, "the user closed the sign-in page"), nil),
            (LatchkeyError(.sessionExpired, "the provider ended the session"), nil),
            (LatchkeyError(.serverError, "the server answered HTTP 503"), nil),
            (LatchkeyError(.passkeyCanceled, "cancelled"), nil)
        ]
        for (error, kind) in cases {
            let diagnosis = LatchkeyDiagnosis(error, config: config)
            #expect(diagnosis?.kind == kind, "\(error)")
            if let diagnosis { #expect(!diagnosis.fix.isEmpty && diagnosis.description.contains(diagnosis.fix)) }
        }
        #expect(Set(cases.compactMap(\.1)) == Set(LatchkeyDiagnosis.Kind.allCases), "a test case per kind")
    }
}

/// A user agent that shows the page and whose person closes it (the system reports that as a cancel).
final class ClosingUserAgent: AuthorizationUserAgent, @unchecked Sendable {
    private let lock = NSLock()
    private var urls: [String] = []
    var shown: [String] { lock.withLock { urls } }
    func prepareRedirectURI() async throws -> String? { nil }
    func authorize(url: URL) async throws -> URL {
        lock.withLock { urls.append(url.absoluteString) }
        throw LatchkeyError(.canceled, "the user closed the sign-in page")
    }
}

/// The system's answer for an app whose associated domains lack `webcredentials:` for the relying party.
struct NotAssociatedAuthenticator: PasskeyAuthenticator {
    func createCredential(
        for options: PublicKeyCredentialCreationOptions, origin: String, anchor: PresentationAnchorBox?
    ) async throws -> RegistrationCredential {
        throw LatchkeyError(.passkeyDomainNotAssociated, "the app is not associated with \(origin)")
    }

    func getAssertion(
        for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode, anchor: PresentationAnchorBox?
    ) async throws -> AssertionCredential {
        throw LatchkeyError(.passkeyDomainNotAssociated, "the app is not associated with \(origin)")
    }

    func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool { true }
}

/// What a `LatchkeyState` logged, in order.
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [(Logger.Level, String)] = []

    var logger: Logger { Logger(label: "test") { _ in CapturingLogHandler(log: self) } }
    /// The messages logged at error level or above.
    var errors: [String] { lock.withLock { lines.filter { $0.0 >= .error }.map(\.1) } }
    func append(_ level: Logger.Level, _ message: String) { lock.withLock { lines.append((level, message)) } }
}

struct CapturingLogHandler: LogHandler {
    let log: CapturedLog
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { log.append(event.level, "\(event.message)") }
}
