import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
import Testing

/// The SDK sends the user's languages and surfaces the server's localized messages.
@Suite("SDK localization: Accept-Language on every request, ui_locales, flow locale, localized errors")
struct SDKLocalizationTests {
    static let wrongPassword: [(languages: [String], text: String, label: String)] = [
        (["fr-CA", "en"], "L'adresse e-mail ou le mot de passe est incorrect.", "Nom d'utilisateur ou e-mail"),
        (["ja-JP"], "メールアドレスまたはパスワードが正しくありません。", "ユーザー名またはメールアドレス"),
        (["zh-HK"], "電子郵件或密碼不正確。", "使用者名稱或電子郵件"),
        (["ar"], "البريد الإلكتروني أو كلمة المرور غير صحيحة.", "اسم المستخدم أو البريد الإلكتروني")
    ]

    func client(_ server: TestServer, languages: [String]?, http: any HTTPClient = productionHTTPClient()) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: http)
        var config = server.sdkConfig()
        config.preferredLanguages = languages
        try await client.initialize(config: config)
        return client
    }

    @Test(arguments: wrongPassword)
    func wrongPasswordThroughTheSDKInTheUsersLanguage(_ expected: (languages: [String], text: String, label: String)) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server, languages: expected.languages)
        let request = EmbeddedFlowRequestConfig(flowType: .authentication)
        let first = try await client.signIn(payload: .init(), request: request)
        #expect(first.inputs.first?.label == expected.label, "labels in the execution's language")
        let empty = try await client.signIn(
            payload: .init(flowId: first.flowId, actionId: "action_001", inputs: ["username": "demo@example.com"]),
            request: request)
        #expect(empty.fieldErrors.map(\.identifier) == ["password"])
        #expect(empty.fieldErrors.first?.message != "This field is required", "field errors are localized too")
        let wrong = try await client.signIn(
            payload: .init(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": "wrong password"]), request: request)
        #expect(wrong.error?.code == .authenticationFailed && wrong.error?.serverCode == "FET-1005")
        #expect(wrong.error?.message == expected.text)
        #expect(wrong.error?.description == "invalid credentials")
    }

    @Test func acceptLanguageOnEveryRequestAndLocaleInTheFlowBody() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let client = try await client(server, languages: ["fr-CA", "en"], http: http)
        let request = EmbeddedFlowRequestConfig(flowType: .authentication)
        let first = try await client.signIn(payload: .init(), request: request)
        let done = try await client.signIn(
            payload: .init(
                flowId: first.flowId, actionId: "action_001",
                inputs: ["username": "demo@example.com", "password": "correct horse battery staple"]),
            request: request)
        #expect(done.flowStatus == .complete)
        _ = try await client.getUserProfile()
        try await client.signOut()
        let paths = http.requests.map(\.url.path)
        for expected in [
            "/.well-known/openid-configuration", "/flow/meta", "/flow/execute", "/oauth2/token", "/oauth2/jwks", "/scim2/Me",
            "/oauth2/revoke", "/oauth2/logout"
        ] {
            #expect(paths.contains(expected), "\(expected) in \(paths)")
        }
        for sent in http.requests {
            #expect(sent.headers["Accept-Language"] == "fr-CA, fr;q=0.9, en;q=0.8", "\(sent.method) \(sent.url.path)")
        }
        let flowBodies = http.requests.filter { $0.url.path == "/flow/execute" }.compactMap { $0.body }
            .compactMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        #expect(flowBodies.count == 2 && flowBodies.allSatisfy { $0["locale"] as? String == "fr-CA" })
    }

    @Test func emptyLanguageListSendsNothingAndACallersHeaderWins() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let client = try await client(server, languages: [], http: http)
        _ = try await client.signIn(payload: .init(), request: EmbeddedFlowRequestConfig(flowType: .authentication))
        #expect(!http.requests.isEmpty && http.requests.allSatisfy { $0.headers["Accept-Language"] == nil })
        #expect(try client.buildSignInURL().query?.contains("ui_locales") == false)

        // A header already on the request (set by SDK code or an app) is left alone, whatever its letter case.
        let recorder = ProgrammableHTTPClient()
        let wrapper = LanguageHTTPClient(base: recorder, acceptLanguage: "ja")
        let url = try #require(URL(string: server.base + "/flow/meta?type=APP&id=latchkey-demo"))
        _ = try await wrapper.send(HTTPRequest(url: url, headers: ["accept-language": "de"]))
        _ = try await wrapper.send(HTTPRequest(url: url))
        #expect(
            recorder.requests.map { $0.headers.filter { $0.key.lowercased() == "accept-language" } } == [
                ["accept-language": "de"], ["Accept-Language": "ja"]
            ])
    }

    @Test func uiLocalesOnTheAuthorizationURLReachesTheHostedPage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server, languages: ["ja-JP", "en-US"])
        let url = try client.buildSignInURL()
        let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "ui_locales" }?.value == "ja-JP en-US")
        // The browser (no Accept-Language of its own here) lands on a Japanese sign-in page.
        let browser = TestBrowser()
        let authorize = try await browser.get(url.absoluteString)
        let page = try await browser.get(server.base + (try #require(authorize.location)))
        #expect(page.text.contains("<html lang=\"ja\"") && page.text.contains("<h1>サインイン</h1>"))
        // An explicit ui_locales from the app wins.
        let custom = try client.buildSignInURL(options: SignInOptions(extra: ["ui_locales": "ko"]))
        #expect(URLComponents(url: custom, resolvingAgainstBaseURL: false)?.queryItems?.filter { $0.name == "ui_locales" }.map(\.value) == ["ko"])
    }

    @Test func latchkeyErrorCarriesTheLocalizedUserMessage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await client(server, languages: ["zh-HK"])
        await #expect { _ = try await client.signIn(payload: .init(), request: .init(applicationId: "nope", flowType: .authentication)) } throws: {
            error in
            guard let error = error as? LatchkeyError else { return false }
            return error.code == .invalidConfiguration && error.serverCode == "FES-1003" && error.userMessage == "無法識別此應用程式。"
                && error.errorDescription == "無法識別此應用程式。" && error.errorUserMsg == "無法識別此應用程式。"
                && error.message.contains("applicationId does not name a registered application")
        }
        // Without a user message (an SDK-side error), errorDescription is the technical message.
        let plain = LatchkeyError(.invalidConfiguration, "baseUrl must be an absolute URL")
        #expect(plain.userMessage == nil && plain.errorDescription == "baseUrl must be an absolute URL")
    }

    @Test func profileErrorsCarryTheLocalizedUserMessage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        var config = server.sdkConfig()
        config.preferredLanguages = ["fr"]
        config.dialect = .thunderID
        try await client.initialize(config: config)
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        await #expect { _ = try await client.updateUserProfile(payload: ["email": .string("not-an-email")]) } throws: { error in
            let error = error as? LatchkeyError
            return error?.userMessage == "Certaines informations ne sont pas valides" && error?.errorDescription == error?.userMessage
        }
    }

    @Test(arguments: [
        (["fr-CA", "en"], "fr-CA, fr;q=0.9, en;q=0.8"),
        (["fr_CA", "fr-CA", "en_US.UTF-8"], "fr-CA, fr;q=0.9, en-US;q=0.8, en;q=0.7"),
        (["ja"], "ja"),
        (["zh-Hant-HK", "zh-Hant", "en"], "zh-Hant-HK, zh-Hant;q=0.9, zh;q=0.8, en;q=0.7"),
        (["C", "POSIX", "x\r\nInjected: 1", "de"], "de")
    ])
    func acceptLanguageHeaderValue(_ languages: [String], _ expected: String) {
        #expect(LanguagePreferences.acceptLanguage(LanguagePreferences.tags(languages)) == expected)
    }
}
