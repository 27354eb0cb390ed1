import LatchkeyTestSupport
import Foundation
import Testing
@testable import LatchkeyServer

/// The server answers people in their language, over real loopback HTTP: flows (thunderID dialect), the reachFive
/// dialect, `/users/me`, the hosted pages and the emails.
@Suite("Localized responses: flows, reachFive errors, self-service, hosted pages, emails")
struct LocalizedResponsesTests {
    /// The wrong-password message as the catalog has it, written out so a change to the catalog is seen here.
    static let wrongPassword: [(acceptLanguage: String, text: String, fieldRequired: String, title: String)] = [
        ("fr-FR, fr;q=0.9, en;q=0.5", "L'adresse e-mail ou le mot de passe est incorrect.", "Ce champ est obligatoire", "Se connecter"),
        ("ja", "メールアドレスまたはパスワードが正しくありません。", "この項目は必須です", "サインイン"),
        ("zh-HK, en;q=0.1", "電子郵件或密碼不正確。", "此欄位為必填", "登入"),
        ("ar", "البريد الإلكتروني أو كلمة المرور غير صحيحة.", "هذا الحقل مطلوب", "تسجيل الدخول")
    ]

    static func member(_ object: Any?, _ path: String...) -> Any? {
        path.reduce(object) { ($0 as? [String: Any])?[$1] }
    }

    func flow(_ server: TestServer, _ body: [String: Any], language: String? = nil) async throws -> HTTPResult {
        try await TestBrowser().postJSON(server.base + "/flow/execute", body, headers: language.map { ["Accept-Language": $0] } ?? [:])
    }

    @Test(arguments: wrongPassword)
    func flowWrongPasswordAndFieldErrorsInTheUsersLanguage(_ expected: (acceptLanguage: String, text: String, fieldRequired: String, title: String))
        async throws
    {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let start = try await flow(
            server, ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION", "verbose": true],
            language: expected.acceptLanguage)
        let startBody = try start.json()
        // The component labels' texts travel with the step, in the execution's language.
        let translations = Self.member(startBody, "data", "meta", "translations", "signin") as? [String: String]
        #expect(translations?["forms.credentials.title"] == expected.title)
        let executionId = try #require(startBody["executionId"] as? String)
        var challenge = try #require(startBody["challengeToken"] as? String)

        // Empty inputs: per-field problems, localized.
        let empty = try await flow(
            server,
            [
                "executionId": executionId, "challengeToken": challenge, "action": "action_001",
                "inputs": ["username": "", "password": ""]
            ], language: expected.acceptLanguage)
        let emptyBody = try empty.json()
        let fieldErrors = try #require(Self.member(emptyBody, "data", "fieldErrors") as? [[String: Any]])
        #expect(fieldErrors.count == 2 && fieldErrors.allSatisfy { $0["message"] as? String == expected.fieldRequired })
        challenge = try #require(emptyBody["challengeToken"] as? String)

        let wrong = try await flow(
            server,
            [
                "executionId": executionId, "challengeToken": challenge, "action": "action_001",
                "inputs": ["username": "demo@example.com", "password": "not the password"]
            ],
            language: expected.acceptLanguage)
        let body = try wrong.json()
        #expect(body["flowStatus"] as? String == "INCOMPLETE")
        #expect(Self.member(body, "error", "code") as? String == "FET-1005")
        #expect(Self.member(body, "error", "message", "key") as? String == "login.invalid_credentials")
        #expect(Self.member(body, "error", "message", "defaultValue") as? String == expected.text)
        #expect(Self.member(body, "error", "description", "defaultValue") as? String == "invalid credentials", "the description stays English")
    }

    @Test func explicitFlowLocaleWinsAndTheExecutionKeepsItsLanguage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let start = try await flow(server, ["applicationId": "latchkey-demo", "flowType": "AUTHENTICATION", "locale": "de-CH"], language: "fr")
        let startBody = try start.json()
        let executionId = try #require(startBody["executionId"] as? String)
        // The next request comes with another Accept-Language and no locale: the execution stays German.
        let wrong = try await flow(
            server,
            [
                "executionId": executionId, "challengeToken": try #require(startBody["challengeToken"] as? String),
                "action": "action_001", "inputs": ["username": "demo@example.com", "password": "nope nope"]
            ],
            language: "ja")
        #expect(Self.member(try wrong.json(), "error", "message", "defaultValue") as? String == "E-Mail-Adresse oder Passwort ist falsch.")
        // A stale challenge is answered in the request's language.
        let stale = try await flow(server, ["executionId": executionId, "challengeToken": "stale", "locale": "ko"])
        #expect(Self.member(try stale.json(), "error", "message", "defaultValue") as? String == "이 단계는 이미 제출되었습니다. 다시 시도해 주세요.")
    }

    @Test func httpFlowErrorsAreLocalizedAndKeepTheirTechnicalDescription() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let unknownApp = try await flow(server, ["applicationId": "nope", "flowType": "AUTHENTICATION"], language: "zh-TW")
        let body = try unknownApp.json()
        #expect(unknownApp.status == 400 && body["code"] as? String == "FES-1003")
        #expect(Self.member(body, "message", "defaultValue") as? String == "無法識別此應用程式。")
        #expect(Self.member(body, "description", "defaultValue") as? String == "applicationId does not name a registered application")
        // An explicit locale in the body wins over the header for errors answered over HTTP too.
        let explicit = try await flow(server, ["applicationId": "nope", "flowType": "AUTHENTICATION", "locale": "ru"], language: "zh-TW")
        #expect(Self.member(try explicit.json(), "message", "defaultValue") as? String == "Это приложение неизвестно.")
    }

    @Test func flowMetaServesTheRequestedLanguage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let ja = try await browser.get(server.base + "/flow/meta?type=APP&id=latchkey-demo&language=jp", headers: ["Accept-Language": "ko"])
        let i18n = try #require(Self.member(try ja.json(), "i18n") as? [String: Any])
        #expect(i18n["language"] as? String == "ja")
        #expect((i18n["languages"] as? [String])?.count == 15)
        #expect(Self.member(i18n, "translations", "signin") as? [String: String] != nil)
        #expect((Self.member(i18n, "translations", "signin") as? [String: String])?["forms.credentials.title"] == "サインイン")
        #expect((Self.member(i18n, "translations", "user") as? [String: String])?["attributes.email.label"] == "メールアドレス")
        #expect((Self.member(i18n, "translations", "recovery") as? [String: String])?["forms.code.resend.label"] == "新しいコードを送信")
        let ko = try await browser.get(server.base + "/flow/meta?type=APP&id=latchkey-demo", headers: ["Accept-Language": "ko-KR"])
        #expect(Self.member(try ko.json(), "i18n", "language") as? String == "ko")
        let discovery = try await browser.get(server.base + "/.well-known/openid-configuration")
        #expect((try discovery.json()["ui_locales_supported"] as? [String])?.contains("zh-Hant") == true)
    }

    @Test func reachFiveErrorUserMessageIsLocalizedAndTheDescriptionStaysEnglish() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let body: [String: Any] = [
            "grant_type": "authorization_code", "code": "not-a-code", "redirect_uri": "http://127.0.0.1:7777/callback",
            "client_id": "latchkey-demo", "code_verifier": TestPKCE().verifier
        ]
        let english = try await TestBrowser().postJSON(server.base + "/oauth/token", body).json()
        let japanese = try await TestBrowser().postJSON(server.base + "/oauth/token", body, headers: ["Accept-Language": "ja-JP"]).json()
        #expect(japanese["error"] as? String == "invalid_grant")
        #expect(japanese["error_message_key"] as? String == "oauth.invalid_grant")
        #expect(japanese["error_user_msg"] as? String == "サインインの有効期限が切れました。もう一度サインインしてください。")
        #expect(english["error_user_msg"] as? String == "Your sign-in has expired. Please sign in again.")
        #expect(japanese["error_description"] as? String == english["error_description"] as? String)
        #expect((japanese["error_description"] as? String)?.allSatisfy(\.isASCII) == true)
    }

    @Test func selfServiceFieldProblemsAreLocalized() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let tokens = try await server.userTokens()
        let me = try await server.call("GET", "/users/me", token: tokens.accessToken)
        var attributes = try #require(try me.value("attributes") as? [String: Any])
        attributes["email"] = "not-an-email"
        let put = try await server.call(
            "PUT", "/users/me", token: tokens.accessToken, json: ["attributes": attributes],
            contentType: "application/json", headers: ["Accept-Language": "es"])
        #expect(put.status == 400)
        #expect(try put.string("code") == "USR-1019")
        #expect(try put.string("message.defaultValue") == "Algunos datos no son válidos")
        #expect(try put.string("fieldErrors.0.field") == "email")
        #expect(try put.string("fieldErrors.0.code") == "validation.email.invalid")
        #expect(try put.string("fieldErrors.0.message") == "Correo electrónico no es un correo electrónico válido")
        #expect(try put.string("description.defaultValue")?.contains("Email address is not a valid email") == true, "technical stays English")
    }

    // MARK: Hosted pages

    func loginPage(_ server: TestServer, _ browser: TestBrowser, uiLocales: String? = nil, acceptLanguage: String?) async throws -> HTTPResult {
        var options = AuthorizeOptions()
        if let uiLocales { options.extra["ui_locales"] = uiLocales }
        let headers = acceptLanguage.map { ["Accept-Language": $0] } ?? [:]
        let authorize = try await browser.get(server.authorizeURL(options), headers: headers)
        let location = try #require(authorize.location)
        return try await browser.get(server.base + location, headers: headers)
    }

    @Test func hostedLoginPageInArabicIsRightToLeftAndSaysWhatWentWrongInArabic() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await loginPage(server, browser, acceptLanguage: "ar-SA,ar;q=0.9,en;q=0.8")
        #expect(page.text.contains("<html lang=\"ar\" dir=\"rtl\">"))
        #expect(page.text.contains("<h1>تسجيل الدخول</h1>"))
        #expect(page.text.contains(">البريد الإلكتروني أو اسم المستخدم</label>") && page.text.contains(">كلمة المرور</label>"))
        #expect(page.header("Content-Language") == "ar")
        #expect(!page.text.contains("margin-left") && !page.text.contains("text-align: left"), "logical CSS only")
        let request = try #require(TestBrowser.hiddenField("request", in: page.text))
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        let failed = try await browser.postForm(
            server.base + "/login",
            [
                "request": request, "csrf": csrf, "username": "demo@example.com",
                "password": "wrong"
            ], headers: ["Accept-Language": "ar"])
        #expect(failed.status == 401)
        #expect(failed.text.contains("البريد الإلكتروني أو كلمة المرور غير صحيحة."))
        let empty = try await browser.postForm(
            server.base + "/login",
            [
                "request": request, "csrf": try #require(TestBrowser.hiddenField("csrf", in: failed.text)),
                "username": "", "password": ""
            ], headers: ["Accept-Language": "ar"])
        #expect(empty.text.contains("أدخل بريدك الإلكتروني أو اسم المستخدم وكلمة المرور."))
    }

    @Test func uiLocalesIsRememberedWithThePendingLoginAndBeatsTheBrowser() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let page = try await loginPage(server, browser, uiLocales: "tlh ja", acceptLanguage: "ar")
        #expect(page.text.contains("<html lang=\"ja\" dir=\"ltr\">") && page.text.contains("<h1>サインイン</h1>"))
        // The POST carries no ui_locales (and the browser still says Arabic): the remembered request decides.
        let failed = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong")
        #expect(failed.text.contains("<html lang=\"ja\"") && failed.text.contains("メールアドレスまたはパスワードが正しくありません。"))
    }

    /// A locked account is not announced on the sign-in page (no enumeration): the localized wrong-password text.
    /// (The localized lock duration is for the account's owner, `EnumerationTests.ownerIsToldOfTheLock`.)
    @Test func lockedAccountGetsTheLocalizedWrongPasswordText() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxFailuresPerAccount = 2 }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        var page = try await loginPage(server, browser, uiLocales: "ru", acceptLanguage: nil)
        for attempt in 1...3 { page = try await server.submitLogin(browser, page: page, username: "demo@example.com", password: "wrong \(attempt)") }
        #expect(page.status == 401)
        let expected = try #require(MessageCatalog.text("login.invalid_credentials", locale: .ru))
        #expect(page.text.contains(expected))
        #expect(!page.text.contains("заблокирована"))
    }

    @Test func messagePagesAreLocalized() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let expired = try await browser.get(server.base + "/login?request=nope", headers: ["Accept-Language": "de"])
        #expect(expired.status == 400 && expired.text.contains("Anmeldelink abgelaufen") && expired.text.contains("lang=\"de\""))
        let unknownClient = try await browser.get(server.base + "/oauth2/authorize?client_id=nope&ui_locales=pt-BR")
        #expect(unknownClient.text.contains("A aplicação que o enviou para aqui não está registada."))
        let notFound = try await browser.get(server.base + "/nowhere", headers: ["Accept-Language": "it"])
        #expect(notFound.status == 404 && notFound.text.contains("Pagina non trovata"))
        // The CSRF page, in the language of the pending login.
        let page = try await loginPage(server, browser, uiLocales: "sk", acceptLanguage: nil)
        let forged = try await TestBrowser().postForm(
            server.base + "/login",
            [
                "request": try #require(TestBrowser.hiddenField("request", in: page.text)),
                "csrf": "forged", "username": "a", "password": "b"
            ])
        #expect(forged.status == 403 && forged.text.contains("Platnosť prihlasovacieho formulára vypršala"))
    }

    @Test func signOutConfirmationIsLocalized() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        _ = try await server.signIn(browser)
        let confirm = try await browser.get(server.base + "/oauth2/logout", headers: ["Accept-Language": "nl"])
        #expect(confirm.text.contains("<h1>Afmelden?</h1>") && confirm.text.contains("Je wordt in deze browser afgemeld bij Latchkey."))
    }

    @Test func recoveryEmailIsWrittenInTheExecutionsLanguage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let start = try await flow(
            server, ["applicationId": "latchkey-demo", "flowType": "RECOVERY", "inputs": ["username": "demo@example.com"]],
            language: "fr")
        #expect(start.status == 200)
        let message = try #require(try await server.server.outboxMessages(recipient: "demo@example.com").first)
        #expect(message.subject == "Votre code de réinitialisation du mot de passe")
        let code = try #require(message.code)
        #expect(
            message.body == "\(code) est votre code de réinitialisation du mot de passe pour Latchkey Demo. Il expire dans 10 minutes. "
                + "Si vous ne l'avez pas demandé, ignorez ce message.")
    }
}
