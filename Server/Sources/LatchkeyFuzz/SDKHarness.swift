import Crypto
import Foundation
@_spi(Fuzzing) import Latchkey
import Logging

/// SDK decoders, reached through the SDK's public API with a scripted provider behind its HTTP seam: the fuzzed bytes
/// arrive where a provider's answer (or a browser's redirect) would.
enum SDKHarness {
    static let redirectURI = "http://127.0.0.1:53682/callback"
    static let state = "fuzz-state"
    static let nonce = "fuzz-nonce"

    // MARK: ID tokens

    static let validator = IDTokenValidator(jwks: JWKSCache(url: URL(string: Fixtures.issuer + "/oauth2/jwks")!, http: ScriptedProvider.shared))

    /// The bytes are an ID token's payload; the harness signs them (ES256 for an even length, EdDSA for an odd one) so
    /// that the claim checks run, then `IDTokenValidator` takes the token as it would from a token response.
    static func idToken(_ payload: Data) {
        let edDSA = payload.count % 2 == 1
        let header = edDSA ? #"{"alg":"EdDSA","kid":"fuzz-eddsa","typ":"JWT"}"# : #"{"alg":"ES256","kid":"fuzz-es256","typ":"JWT"}"#
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(payload)
        let signature: Data
        do {
            signature =
                edDSA
                ? try Fixtures.keys.edDSA.signature(for: Data(input.utf8))
                : try Fixtures.keys.es256.signature(for: Data(input.utf8)).rawRepresentation
        } catch {
            fatalError("fixture key cannot sign: \(error)")
        }
        let token = input + "." + Base64URL.encode(signature)
        let expectations = IDTokenValidator.Expectations(
            issuer: Fixtures.issuer, clientId: Fixtures.clientId, nonce: nonce,
            accessToken: "fuzz-access-token", maxAge: 3600, leeway: 60,
            now: Date(timeIntervalSince1970: 1_750_000_000))
        blocking { await verbose("id-token") { _ = try await validator.validate(token, expectations) } }
    }

    // MARK: Redirect callbacks

    static let callbackAgent = ScriptedUserAgent()
    static let callbackClient: LatchkeyClient = {
        let client = LatchkeyClient(http: ScriptedProvider.shared, userAgent: callbackAgent, logger: quietLogger)
        blocking {
            do {
                try await client.initialize(
                    config: LatchkeyConfig(
                        baseUrl: Fixtures.issuer, clientId: Fixtures.clientId,
                        afterSignInUrl: "com.example.app:/callback"))
            } catch {
                fatalError("the callback harness's client does not initialize: \(error)")
            }
        }
        return client
    }()

    /// Bytes that start like an HTTP request go to the loopback listener first (`GET /callback?… HTTP/1.1`), and the
    /// URL it accepts is the callback; any other bytes are a callback URL an app hands to the SDK (a custom scheme's
    /// redirect). Either way the SDK then completes a sign-in it started with state `fuzz-state`: `state`, the
    /// endpoint, `iss`, `error` and `code` are checked, and the code goes to the (scripted) token endpoint.
    static func callback(_ data: Data) {
        let callback: URL?
        let redirect: String?
        if data.starts(with: Data("GET ".utf8)) {
            callback = LatchkeyFuzzEntryPoints.loopbackCallback(data, port: 53682, expectedState: state)
            redirect = redirectURI
        } else {
            callback = URL(string: String(decoding: data, as: UTF8.self))
            redirect = nil
        }
        guard let callback else { return }
        callbackAgent.next = (redirect, callback)
        let client = callbackClient
        blocking { await verbose("callback \(callback)") { _ = try await client.webviewLogin(WebviewLoginRequest(state: state, nonce: nonce)) } }
    }

    // MARK: Flow answers

    /// The bytes are the body of a `/flow/execute` answer: once with 200 (a flow step), once with 400 (a flow error).
    /// A fresh client each time, so flows left in progress do not pile up across inputs.
    static func flowResponse(_ data: Data) {
        blocking {
            for status in [200, 400] {
                let provider = ScriptedProvider(flowAnswer: HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: data))
                let client = LatchkeyClient(http: provider, userAgent: ScriptedUserAgent(), logger: quietLogger)
                guard
                    (try? await client.initialize(
                        config: LatchkeyConfig(
                            baseUrl: Fixtures.issuer, clientId: Fixtures.clientId,
                            applicationId: "fuzz-app"))) != nil
                else {
                    fatalError("the flow harness's client does not initialize")
                }
                await verbose("flow \(status)") {
                    let step = try await client.signIn(
                        payload: EmbeddedSignInPayload(), request: EmbeddedFlowRequestConfig(flowType: .authentication))
                    if isVerbose { print("flow \(status): \(step)") }
                }
            }
        }
    }

    /// `LATCHKEY_FUZZ_VERBOSE=1`: replay prints what each SDK call threw, to see how far an input gets.
    static let isVerbose = ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_VERBOSE"] == "1"

    static func verbose(_ label: String, _ body: () async throws -> Void) async {
        do { try await body() } catch {
            if isVerbose { print("\(label): \(error)") }
        }
    }

    static let quietLogger = Logger(label: "latchkey-fuzz") { _ in SwiftLogNoOpLogHandler() }
}

/// A provider that answers like Latchkey's server: discovery, JWKS, a token endpoint that refuses every grant, flow
/// metadata, and `/flow/execute` with the answer under test.
final class ScriptedProvider: HTTPClient, @unchecked Sendable {
    static let shared = ScriptedProvider(flowAnswer: nil)
    let flowAnswer: HTTPResponse?

    init(flowAnswer: HTTPResponse?) { self.flowAnswer = flowAnswer }

    static let discovery = Data(
        """
        {"issuer":"\(Fixtures.issuer)","authorization_endpoint":"\(Fixtures.issuer)/oauth2/authorize",
         "token_endpoint":"\(Fixtures.issuer)/oauth2/token","jwks_uri":"\(Fixtures.issuer)/oauth2/jwks",
         "authorization_response_iss_parameter_supported":false}
        """.utf8)
    static let flowMeta = Data(
        """
        {"isRegistrationFlowEnabled":true,"isRecoveryFlowEnabled":false,"application":{"id":"fuzz-app","name":"Fuzz"},
         "i18n":{"languages":["en","fr"],"language":"en","translations":{"signin":{"title":"Sign in","username":"Username"}}}}
        """.utf8)

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        func json(_ status: Int, _ body: Data) -> HTTPResponse {
            HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
        }
        switch request.url.path {
        case "/.well-known/openid-configuration": return json(200, Self.discovery)
        case "/oauth2/jwks": return json(200, Data(Fixtures.jwksJSON.utf8))
        case "/oauth2/token": return json(400, Data(#"{"error":"invalid_grant","error_description":"scripted"}"#.utf8))
        case "/flow/meta": return json(200, Self.flowMeta)
        case "/flow/execute": if let flowAnswer { return flowAnswer }
        default: break
        }
        return json(404, Data(#"{"error":"not_found"}"#.utf8))
    }
}

/// A user agent whose "browser" comes back with the callback under test.
final class ScriptedUserAgent: AuthorizationUserAgent, @unchecked Sendable {
    private let lock = NSLock()
    private var _next: (redirect: String?, callback: URL)?
    var next: (redirect: String?, callback: URL)? {
        get { lock.withLock { _next } }
        set { lock.withLock { _next = newValue } }
    }

    func prepareRedirectURI() async throws -> String? { next?.redirect }

    func authorize(url: URL) async throws -> URL {
        guard let callback = next?.callback else { throw CancellationError() }
        return callback
    }
}
