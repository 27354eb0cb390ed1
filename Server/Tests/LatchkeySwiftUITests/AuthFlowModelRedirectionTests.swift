import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeySwiftUI
import Testing

/// The flow view model through a federated provider, on a scripted `/flow/execute` (the server's FEDERATED actions are
/// covered end to end separately): choosing the provider, following its page through the client's user agent, and
/// what a refusal or a closed page shows.
@MainActor
@Suite("SwiftUI view models: a sign-in through an identity provider")
struct AuthFlowModelRedirectionTests {
    nonisolated static let issuer = "https://id.example.com"
    nonisolated static let redirect = "com.example.app:/callback"
    nonisolated static let page = "https://corp.example.com/authorize?state=up"

    /// A user agent whose person answers each page with `answer` (a callback URL, or an error for a closed page).
    final class Browser: AuthorizationUserAgent, @unchecked Sendable {
        private let lock = NSLock()
        private var answer: Result<String, LatchkeyError> = .failure(LatchkeyError(.canceled, "closed"))
        private var _shown: [String] = []
        var shown: [String] { lock.withLock { _shown } }
        func answer(with result: Result<String, LatchkeyError>) { lock.withLock { answer = result } }
        func prepareRedirectURI() async throws -> String? { nil }
        func authorize(url: URL) async throws -> URL { throw LatchkeyError(.invalidConfiguration, "needs a presentation") }
        func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL {
            let answer = lock.withLock {
                _shown.append(url.absoluteString)
                return self.answer
            }
            return try #require(URL(string: try answer.get()))
        }
    }

    nonisolated static func json(_ body: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
    }

    /// A started model over a scripted flow: a password step with "Continue with Corp SSO", then the provider's
    /// redirection, then a code step.
    func started(_ browser: Browser) async throws -> (AuthFlowModel, ProgrammableHTTPClient) {
        let http = ProgrammableHTTPClient(upstream: nil)
        http.answer("POST", path: "/flow/execute") { request in
            let body = (try? JSONDecoder().decode([String: JSONValue].self, from: request.body ?? Data())) ?? [:]
            switch body["action"]?.stringValue {
            case nil:
                return Self.json(
                    #"{"executionId":"e","flowStatus":"INCOMPLETE","type":"VIEW","challengeToken":"c1","data":{"inputs":[{"identifier":"username","type":"TEXT_INPUT","required":true}],"actions":[{"ref":"action_submit","type":"SUBMIT"},{"ref":"action_idp_corp","type":"FEDERATED"}]}}"#
                )
            case "action_idp_corp":
                return Self.json(
                    #"{"executionId":"e","flowStatus":"INCOMPLETE","type":"REDIRECTION","challengeToken":"c2","data":{"redirectURL":"\#(Self.page)","inputs":[{"identifier":"code","type":"TEXT_INPUT","required":true},{"identifier":"state","type":"TEXT_INPUT","required":true}],"actions":[{"ref":"action_idp_continue","type":"SUBMIT"}],"additionalData":{"idpName":"Corp SSO"}}}"#
                )
            default:
                return Self.json(
                    #"{"executionId":"e","flowStatus":"INCOMPLETE","type":"VIEW","challengeToken":"c3","data":{"inputs":[{"identifier":"otp","type":"OTP_INPUT","required":true}],"actions":[{"ref":"action_otp","type":"SUBMIT"}]}}"#
                )
            }
        }
        let client = LatchkeyClient(http: http, userAgent: browser)
        try await client.initialize(config: LatchkeyConfig(baseUrl: Self.issuer, clientId: "app", afterSignInUrl: Self.redirect))
        let model = AuthFlowModel(client: client, i18n: LatchkeyI18n(locale: "en", store: InMemoryLocaleStore()))
        await model.start()
        return (model, http)
    }

    static func bodies(_ http: ProgrammableHTTPClient) -> [[String: JSONValue]] {
        http.requests(pathEndingWith: "/flow/execute").compactMap { try? JSONDecoder().decode([String: JSONValue].self, from: $0.body ?? Data()) }
    }

    @Test("choosing the provider, its page through the user agent, then the next step")
    func followsTheProvider() async throws {
        let browser = Browser()
        let (model, http) = try await started(browser)
        await model.perform(actionId: "action_idp_corp")
        #expect(Self.bodies(http).last?["inputs"] == .object(["redirect_uri": .string(Self.redirect)]))
        #expect(model.redirectURL?.absoluteString == Self.page && model.redirectionProviderName == "Corp SSO")
        #expect(model.visibleInputs.isEmpty, "the browser fills the code and state, not the person")

        // Closed: the step stays, without an error.
        await model.followRedirection()
        #expect(model.phase == .step && model.redirectURL != nil && model.error == nil && browser.shown == [Self.page])

        browser.answer(with: .success("\(Self.redirect)?code=handoff&state=s"))
        await model.followRedirection()
        #expect(model.phase == .step && model.inputIdentifiers == ["otp"] && model.redirectURL == nil)
        #expect(Self.bodies(http).last?["inputs"] == .object(["code": .string("handoff"), "state": .string("s")]))
        #expect(Self.bodies(http).last?["action"] == .string("action_idp_continue"))
    }

    @Test("a provider's refusal ends the flow with its message; start over begins again")
    func refusalEndsTheFlow() async throws {
        let browser = Browser()
        let (model, http) = try await started(browser)
        await model.perform(actionId: "action_idp_corp")
        let sent = Self.bodies(http).count
        await model.continueRedirect(
            callback: try #require(URL(string: "\(Self.redirect)?error=access_denied&error_description=You%20said%20no&state=s")))
        #expect(model.phase == .failed && model.canRestart)
        // `error_description` is for developers (RFC 6749 §4.1.2.1): the person reads the table's words.
        #expect(model.error == UIStrings.text(.genericError, language: "en") && model.errorCode == .authenticationFailed)
        #expect(Self.bodies(http).count == sent)
        await model.restart()
        #expect(model.phase == .step && model.inputIdentifiers == ["username"])
        // A provider that words the refusal for the person (`error_user_msg`) is shown as it said it.
        await model.perform(actionId: "action_idp_corp")
        await model.continueRedirect(
            callback: try #require(
                URL(string: "\(Self.redirect)?error=access_denied&error_description=denied&error_user_msg=You%20said%20no&state=s")))
        #expect(model.phase == .failed && model.error == "You said no")
    }
}
