import Crypto
import Foundation
import Hummingbird
import Latchkey
import LatchkeyJOSE
import LatchkeySDKTestSupport
import Logging
import NIOConcurrencyHelpers

/// An OpenID Provider double on a loopback port with the traits of widely used third-party providers that the SDK
/// must cope with, each one switchable:
/// - the issuer has a path (`/tenant`), so RFC 8414's metadata lives at `/.well-known/oauth-authorization-server/tenant`;
/// - revocation and introspection are published only there, not in the OpenID discovery document;
/// - `end_session_endpoint` is a browser page: a POST is refused (403, CSRF protection), a GET without the session's
///   cookie answers a confirmation page (200) and ends nothing; only the browser holding the cookie, with a valid
///   `id_token_hint`, ends the session and is redirected to the registered `post_logout_redirect_uri`;
/// - its clock runs `skew` seconds off the machine's: ID tokens are dated by it (and `skewedDateHTTPClient()` gives the
///   SDK the `Date` headers such a server sends: Hummingbird dates every answer itself).
/// One account, one client; the browser's session is the `op_session` cookie, which `prompt=none` consults.
package final class ProviderDouble: Sendable {
    package static let clientId = "double-app"
    package static let redirectURI = "http://127.0.0.1:7777/callback"
    package static let postLogoutRedirectURI = "http://127.0.0.1:7777/logout"
    package static let subject = "double-user-1"

    package let port: Int
    package let skew: TimeInterval
    private let service: GracefulService
    private let state: NIOLockedValueBox<State>
    private let key: SigningKey

    package var issuer: String { "http://127.0.0.1:\(port)/tenant" }
    package var base: String { "http://127.0.0.1:\(port)" }

    struct State {
        var sessions: Set<String> = []
        var codes: [String: (challenge: String, nonce: String?, session: String)] = [:]
        var activeAccess: Set<String> = []
        var activeRefresh: Set<String> = []
        var endSessionMethods: [String] = []
    }

    /// The methods `end_session_endpoint` was called with, in order.
    package var endSessionMethods: [String] { state.withLockedValue { $0.endSessionMethods } }
    /// Browser sessions still open.
    package var openSessions: Int { state.withLockedValue { $0.sessions.count } }

    package static func start(skew: TimeInterval = 0) async throws -> ProviderDouble {
        let key = try SigningKey.generate(.es256)
        let state = NIOLockedValueBox(State())
        let portBox = NIOLockedValueBox(0)
        let router = Router()
        Self.routes(router, key: key, state: state, skew: skew) { portBox.withLockedValue { $0 } }
        let (port, service) = try await GracefulService.serve(router, label: "the provider double")
        portBox.withLockedValue { $0 = port }
        return ProviderDouble(port: port, skew: skew, service: service, state: state, key: key)
    }

    private init(port: Int, skew: TimeInterval, service: GracefulService, state: NIOLockedValueBox<State>, key: SigningKey) {
        self.port = port; self.skew = skew; self.service = service; self.state = state; self.key = key
    }

    package func stop() async { await service.stop() }

    /// Whether the provider still honours `token` (RFC 7662 introspection, asked directly).
    package func isActive(_ token: String) -> Bool {
        state.withLockedValue { $0.activeAccess.contains(token) || $0.activeRefresh.contains(token) }
    }

    // MARK: Routes

    private static func routes(
        _ router: Router<BasicRequestContext>, key: SigningKey, state: NIOLockedValueBox<State>, skew: TimeInterval,
        port: @escaping @Sendable () -> Int
    ) {
        let issuer: @Sendable () -> String = { "http://127.0.0.1:\(port())/tenant" }
        router.get("/tenant/.well-known/openid-configuration") { _, _ in
            let i = issuer()
            return try json([
                "issuer": i, "authorization_endpoint": i + "/authorize", "token_endpoint": i + "/token", "jwks_uri": i + "/jwks",
                "userinfo_endpoint": i + "/userinfo", "end_session_endpoint": i + "/logout",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256"]
            ])
        }
        router.get("/.well-known/oauth-authorization-server/tenant") { _, _ in
            let i = issuer()
            return try json([
                "issuer": i, "authorization_endpoint": i + "/authorize", "token_endpoint": i + "/token",
                "revocation_endpoint": i + "/revoke", "introspection_endpoint": i + "/introspect"
            ])
        }
        router.get("/tenant/jwks") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(JWKSet(keys: [try key.publicJWK()])))))
        }
        router.get("/tenant/authorize") { request, _ in
            let q = request.uri.queryParameters
            guard let redirect = q["redirect_uri"].map(String.init), redirect == redirectURI, q["client_id"] == Substring(clientId),
                let challenge = q["code_challenge"].map(String.init), q["code_challenge_method"] == "S256"
            else {
                return Response(status: .badRequest)
            }
            let stateParam = q["state"].map(String.init) ?? ""
            var session = request.headers[.cookie].flatMap { cookie(named: "op_session", in: $0) }
            if let s = session, !state.withLockedValue({ $0.sessions.contains(s) }) { session = nil }
            if session == nil {
                if q["prompt"] == "none" {
                    return redirectTo(redirect + "?error=login_required&state=\(stateParam)&iss=\(escape(issuer()))")
                }
                session = randomToken()  // the person signs in (the double has one account and no form)
            }
            let sid = session ?? ""
            let code = randomToken()
            state.withLockedValue {
                $0.sessions.insert(sid)
                $0.codes[code] = (challenge, q["nonce"].map(String.init), sid)
            }
            var response = redirectTo(redirect + "?code=\(code)&state=\(stateParam)&iss=\(escape(issuer()))")
            response.headers[.setCookie] = "op_session=\(sid); Path=/; HttpOnly"
            return response
        }
        router.post("/tenant/token") { request, _ in
            let form = try await formBody(request)
            let now = Date().addingTimeInterval(skew)
            switch form["grant_type"] {
            case "authorization_code":
                guard let code = form["code"], let verifier = form["code_verifier"],
                    let grant = state.withLockedValue({ $0.codes.removeValue(forKey: code) }),
                    Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8)))) == grant.challenge,
                    form["redirect_uri"] == redirectURI
                else { return try oauthError("invalid_grant") }
                return try issue(key: key, state: state, issuer: issuer(), nonce: grant.nonce, sid: grant.session, now: now)
            case "refresh_token":
                guard let refresh = form["refresh_token"], state.withLockedValue({ $0.activeRefresh.remove(refresh) != nil }) else {
                    return try oauthError("invalid_grant")
                }
                return try issue(key: key, state: state, issuer: issuer(), nonce: nil, sid: nil, now: now)
            default:
                return try oauthError("unsupported_grant_type")
            }
        }
        router.get("/tenant/userinfo") { request, _ in
            guard let token = bearer(request), state.withLockedValue({ $0.activeAccess.contains(token) }) else {
                return Response(status: .unauthorized, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
            }
            return try json(["sub": subject, "email": "double@example.test"])
        }
        router.post("/tenant/revoke") { request, _ in
            let form = try await formBody(request)
            if let token = form["token"] {
                state.withLockedValue {
                    $0.activeAccess.remove(token)
                    $0.activeRefresh.remove(token)
                }
            }
            return Response(status: .ok)
        }
        router.post("/tenant/introspect") { request, _ in
            let form = try await formBody(request)
            let active =
                form["token"].map { token in state.withLockedValue { $0.activeAccess.contains(token) || $0.activeRefresh.contains(token) } } ?? false
            return try json(["active": active])
        }
        router.post("/tenant/logout") { _, _ in
            state.withLockedValue { $0.endSessionMethods.append("POST") }
            return Response(
                status: .forbidden, headers: [.contentType: "text/html"],
                body: .init(byteBuffer: ByteBuffer(string: "<p>CSRF check failed</p>")))
        }
        router.get("/tenant/logout") { request, _ in
            state.withLockedValue { $0.endSessionMethods.append("GET") }
            let q = request.uri.queryParameters
            let session = request.headers[.cookie].flatMap { cookie(named: "op_session", in: $0) }
            let keys = JWKSet(keys: [try key.publicJWK()])
            guard let session, state.withLockedValue({ $0.sessions.contains(session) }), let hint = q["id_token_hint"],
                let jws = try? CompactJWS(parsing: String(hint)), (try? jws.verify(with: keys)) != nil
            else {
                // No session cookie (a request from the app, not the browser): a page asking the person to confirm.
                return Response(
                    status: .ok, headers: [.contentType: "text/html"],
                    body: .init(byteBuffer: ByteBuffer(string: "<form method=post><button>Sign out?</button></form>")))
            }
            state.withLockedValue { _ = $0.sessions.remove(session) }
            guard let after = q["post_logout_redirect_uri"].map(String.init), after == postLogoutRedirectURI else {
                return Response(status: .ok, headers: [.contentType: "text/html"], body: .init(byteBuffer: ByteBuffer(string: "<p>Signed out</p>")))
            }
            var response = redirectTo(after + "?state=\(q["state"].map(String.init) ?? "")")
            response.headers[.setCookie] = "op_session=; Path=/; Max-Age=0"
            return response
        }
    }

    private static func issue(
        key: SigningKey, state: NIOLockedValueBox<State>, issuer: String, nonce: String?, sid: String?,
        now: Date
    ) throws -> Response {
        let access = randomToken(), refresh = randomToken()
        state.withLockedValue {
            $0.activeAccess.insert(access)
            $0.activeRefresh.insert(refresh)
        }
        struct Claims: Encodable {
            var iss: String; var sub: String; var aud: String; var iat: Int; var exp: Int; var nonce: String?; var sid: String?; var email: String
        }
        let iat = Int(now.timeIntervalSince1970)
        let idToken = try key.sign(
            claims: Claims(
                iss: issuer, sub: subject, aud: clientId, iat: iat, exp: iat + 600, nonce: nonce, sid: sid,
                email: "double@example.test"), type: nil)
        return try json(["access_token": access, "token_type": "Bearer", "expires_in": 300, "refresh_token": refresh, "id_token": idToken])
    }

    private static func json(_ object: [String: Any]) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))))
    }

    private static func oauthError(_ code: String) throws -> Response {
        var response = try json(["error": code])
        response.status = .badRequest
        return response
    }

    private static func redirectTo(_ location: String) -> Response {
        Response(status: .found, headers: [.location: location])
    }

    private static func formBody(_ request: Request) async throws -> [String: String] {
        let buffer = try await request.body.collect(upTo: 64 * 1024)
        let text = String(buffer: buffer)
        var form: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        return form
    }

    private static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        return String(header.dropFirst(7))
    }

    private static func cookie(named name: String, in header: String) -> String? {
        header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
            .flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    private static func randomToken() -> String {
        Base64URL.encode(Data((0..<24).map { _ in UInt8.random(in: 0...255) }))
    }
}

extension ProviderDouble {
    /// The SDK's real client, giving it the `Date` header a server whose clock runs `skew` seconds off would send on
    /// this double's answers (Hummingbird dates its answers by the machine's clock, and the double's clock is what is
    /// skewed).
    package func skewedDateHTTPClient() -> ProgrammableHTTPClient {
        let http = ProgrammableHTTPClient()
        http.rewriteResponses(where: { [port] in $0.url.port == port }) { [skew] _, response in
            var response = response
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE',' dd MMM yyyy HH':'mm':'ss 'GMT'"
            for name in response.headers.keys where name.lowercased() == "date" { response.headers[name] = nil }
            response.headers["Date"] = formatter.string(from: Date().addingTimeInterval(skew))
            return response
        }
        return http
    }
}

/// A user agent that is a test browser (cookies kept, redirects followed hop by hop) with a scripted person: it keeps
/// the provider's session like a real browser, so sign-out can end it there.
package struct ScriptedBrowserUserAgent: AuthorizationUserAgent {
    package let browser: TestBrowser
    /// Signs in on the provider's page at the URL and returns the callback URL.
    package let signIn: @Sendable (URL, TestBrowser) async throws -> URL
    /// What the person does on a sign-out page of the provider's own (given its URL): the next URL the browser goes
    /// to, or nil when they close the page.
    package var onSignOutPage: @Sendable (String, TestBrowser) async throws -> String? = { _, _ in nil }
    /// The app's `afterSignOutUrl`: a page to show that returns there is a sign-out.
    package var signOutRedirectURI = ProviderDouble.postLogoutRedirectURI

    package init(browser: TestBrowser, signIn: @escaping @Sendable (URL, TestBrowser) async throws -> URL) {
        self.browser = browser; self.signIn = signIn
    }

    package var keepsProviderSession: Bool { true }
    package func prepareRedirectURI() async throws -> String? { nil }
    package func authorize(url: URL) async throws -> URL { try await signIn(url, browser) }

    package func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL {
        guard presentation.redirectURI == signOutRedirectURI else { return try await signIn(url, browser) }
        // Sign-out: the browser opens the end-session URL and follows the provider until it comes back.
        var next = url.absoluteString
        for _ in 0..<5 {
            let answer = try await browser.get(next)
            guard let location = answer.location else {
                throw LatchkeyError(.canceled, "the provider showed a page (\(answer.status)) and the person left")
            }
            if location.hasPrefix(presentation.redirectURI), let back = URL(string: location) { return back }
            if location.hasPrefix(url.absoluteString.prefix(while: { $0 != "?" })) || location.contains("/authorize") {
                next = location
                continue
            }
            guard let after = try await onSignOutPage(location, browser) else {
                throw LatchkeyError(.canceled, "the person closed the provider's sign-out page")
            }
            next = after
        }
        throw LatchkeyError(.canceled, "too many redirects")
    }
}
