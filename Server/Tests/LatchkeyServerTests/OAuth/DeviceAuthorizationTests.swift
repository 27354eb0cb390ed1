import LatchkeyTestSupport
import Foundation
import Latchkey
@testable import LatchkeyServer
import Testing

/// The device authorization grant (RFC 8628) over loopback HTTP: the device's request, the person's page (CSRF,
/// sign-in through the hosted login, the confirmation), every answer of the poll, and the SDK's polling loop.
@Suite("Device authorization grant (RFC 8628)")
struct DeviceAuthorizationTests {
    static let userCodePattern = #"^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$"#

    static func start(_ server: TestServer, clientId: String = "latchkey-demo") async throws -> [String: Any] {
        let answer = try await TestBrowser().postForm(
            server.base + "/oauth2/device_authorization", ["client_id": clientId, "scope": "openid email offline_access"])
        #expect(answer.status == 200, "\(answer.text)")
        return try answer.json()
    }

    static func poll(_ server: TestServer, _ deviceCode: String, clientId: String = "latchkey-demo") async throws -> HTTPResult {
        try await TestBrowser().postForm(
            server.base + "/oauth2/token",
            [
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": deviceCode, "client_id": clientId
            ])
    }

    static func error(_ result: HTTPResult) throws -> String? { try result.json()["error"] as? String }

    /// The person: opens the page, types the code, signs in on the hosted login if needed, and decides.
    static func decide(_ server: TestServer, userCode: String, approve: Bool, browser: TestBrowser = TestBrowser()) async throws -> HTTPResult {
        let entry = try await browser.get(server.base + "/device")
        #expect(entry.status == 200 && entry.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: entry.text))
        var page = try await browser.postForm(
            server.base + "/device", ["csrf": csrf, "user_code": userCode.lowercased().replacingOccurrences(of: "-", with: " ")])
        if page.status == 303, let location = page.location, location.hasPrefix("/login") {
            let login = try await browser.get(server.base + location)
            let done = try await server.submitLogin(browser, page: login, username: "demo@example.com", password: "correct horse battery staple")
            #expect(done.status == 303 && done.location?.hasPrefix("/device?user_code=") == true, "back to the device page")
            page = try await browser.get(server.base + (done.location ?? "/device"))
        }
        #expect(page.status == 200 && page.text.contains("id=\"approve\""), "the confirmation: \(page.text.prefix(400))")
        #expect(page.text.contains(userCode), "the page shows the code to compare with the device's")
        let confirmCSRF = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        return try await browser.postForm(
            server.base + "/device",
            [
                "csrf": confirmCSRF, "user_code": userCode,
                "decision": approve ? "approve" : "deny"
            ])
    }

    @Test("the whole grant: codes, pending, too fast, sign-in on the page, allowed, tokens once")
    func approved() async throws {
        // The clock moves only when told: the second poll is within the interval however slowly the first one ran.
        let server = try await TestServer.start(frozenClock: true)
        defer { Task { await server.stop() } }
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["device_authorization_endpoint"] as? String == server.issuer + "/oauth2/device_authorization")
        #expect((discovery["grant_types_supported"] as? [String])?.contains("urn:ietf:params:oauth:grant-type:device_code") == true)

        let codes = try await Self.start(server)
        let deviceCode = try #require(codes["device_code"] as? String)
        let userCode = try #require(codes["user_code"] as? String)
        #expect(userCode.range(of: Self.userCodePattern, options: .regularExpression) != nil, "\(userCode)")
        #expect(codes["verification_uri"] as? String == server.issuer + "/device")
        #expect(codes["verification_uri_complete"] == nil, "no link with the code in it unless the application allows one")
        #expect(codes["expires_in"] as? Int == 600 && codes["interval"] as? Int == 5)

        #expect(try Self.error(try await Self.poll(server, deviceCode)) == "authorization_pending")
        #expect(try Self.error(try await Self.poll(server, deviceCode)) == "slow_down", "polled again within the interval")
        server.advanceClock(11)  // the interval is now 10 s
        #expect(try Self.error(try await Self.poll(server, deviceCode)) == "authorization_pending")

        let decided = try await Self.decide(server, userCode: userCode, approve: true)
        #expect(decided.status == 200 && decided.text.contains("You can return to your device"))
        server.advanceClock(11)
        let tokens = try await Self.poll(server, deviceCode)
        #expect(tokens.status == 200, "\(tokens.text)")
        let body = try tokens.json()
        #expect(body["access_token"] != nil && body["refresh_token"] != nil && body["id_token"] != nil)
        let idToken = try #require(body["id_token"] as? String)
        #expect(try await server.verifiedClaims(idToken)["email"] == .string("demo@example.com"))
        server.advanceClock(11)
        #expect(try Self.error(try await Self.poll(server, deviceCode)) == "invalid_grant", "handed out once")
    }

    @Test("a link with a code does not lead to one-click approval, offline_access needs a fresh sign-in, the page says how old the request is")
    func phishingByLink() async throws {
        let server = try await TestServer.start { config in
            config.clients.append(ClientConfiguration(clientId: "qr-tv", grantTypes: [.deviceCode, .refreshToken], scopes: ["openid", "profile"]))
            config.clients[config.clients.count - 1].deviceVerificationURIComplete = true
        }
        defer { Task { await server.stop() } }
        // The victim has an ordinary SSO session; the attacker starts a request with offline_access and sends the link.
        let victim = TestBrowser()
        _ = try await server.tokens(victim)
        let codes = try await Self.start(server)
        let userCode = try #require(codes["user_code"] as? String)
        #expect(codes["verification_uri_complete"] == nil)
        let lure = try await victim.get(server.base + "/device?user_code=" + userCode)
        #expect(lure.status == 200 && !lure.text.contains("id=\"approve\""), "an entry page, not the confirmation")
        #expect(!lure.text.contains(userCode), "the code is not filled in: the person types what their device shows")
        // The proof that the code was typed on this server's page is keyed: one made up in a link vouches for nothing.
        let forged = try await victim.get(server.base + "/device?user_code=" + userCode + "&typed=" + String(repeating: "A", count: 43))
        #expect(forged.status == 200 && !forged.text.contains("id=\"approve\"") && !forged.text.contains(userCode))
        #expect(try Self.error(try await Self.poll(server, try #require(codes["device_code"] as? String))) == "authorization_pending")

        // Typed by the person, seven minutes after the request, with a session signed in before that: offline_access
        // asks for a fresh sign-in first; then the confirmation says how old the request is.
        server.advanceClock(7 * 60)
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: forged.text))  // every page sets a fresh CSRF cookie
        let typed = try await victim.postForm(server.base + "/device", ["csrf": csrf, "user_code": userCode])
        #expect(typed.status == 303 && typed.location?.hasPrefix("/login") == true, "signs in again: \(typed.status)")
        let login = try await victim.get(server.base + (typed.location ?? ""))
        let done = try await server.submitLogin(victim, page: login, username: "demo@example.com", password: "correct horse battery staple")
        let confirmation = try await victim.get(server.base + (done.location ?? "/device"))
        #expect(confirmation.text.contains("id=\"approve\""), "\(confirmation.text.prefix(300))")
        #expect(confirmation.text.contains("This request was made 7 minutes ago"), "\(confirmation.text)")

        // An application that shows a QR code may allow the link: then a fresh session goes straight to the confirmation.
        let qr = try await TestBrowser().postForm(server.base + "/oauth2/device_authorization", ["client_id": "qr-tv", "scope": "openid profile"])
            .json()
        let link = try #require(qr["verification_uri_complete"] as? String)
        let linked = try await victim.get(link.replacingOccurrences(of: server.issuer, with: server.base))
        #expect(linked.text.contains("id=\"approve\""), "\(linked.text.prefix(300))")
    }

    @Test("denied, expired, another client's code, a wrong code, no CSRF token, a client without the grant")
    func refusals() async throws {
        let server = try await TestServer.start { config in
            config.clients.append(ClientConfiguration(clientId: "tv-app", grantTypes: [.deviceCode, .refreshToken]))
            config.clients.append(ClientConfiguration(clientId: "web-only", redirectUris: ["https://web.example/cb"]))
        }
        defer { Task { await server.stop() } }
        let denied = try await Self.start(server)
        let deniedResult = try await Self.decide(server, userCode: try #require(denied["user_code"] as? String), approve: false)
        #expect(deniedResult.text.contains("denied"))
        let deniedCode = try #require(denied["device_code"] as? String)
        #expect(try Self.error(try await Self.poll(server, deniedCode)) == "access_denied")
        server.advanceClock(6)
        #expect(try Self.error(try await Self.poll(server, deniedCode)) == "invalid_grant")

        // Allowed, then the person signs out everywhere before the device polls: the approval went with the session.
        let withdrawn = try await Self.start(server)
        _ = try await Self.decide(server, userCode: try #require(withdrawn["user_code"] as? String), approve: true)
        let demo = try #require(try await server.server.user(username: "demo@example.com"))
        try await server.server.store.revokeUserSessions(userId: demo.id, keepingSession: nil, keepingFamily: nil, reason: "test", now: Date())
        server.advanceClock(6)
        #expect(try Self.error(try await Self.poll(server, try #require(withdrawn["device_code"] as? String))) == "access_denied")

        let other = try await Self.start(server)
        let otherCode = try #require(other["device_code"] as? String)
        #expect(try Self.error(try await Self.poll(server, otherCode, clientId: "tv-app")) == "invalid_grant", "another client's device code")
        #expect(try Self.error(try await Self.poll(server, otherCode)) == "authorization_pending", "…left untouched")

        let late = try await Self.start(server)
        server.advanceClock(601)
        #expect(try Self.error(try await Self.poll(server, try #require(late["device_code"] as? String))) == "expired_token")

        let browser = TestBrowser()
        let entry = try await browser.get(server.base + "/device")
        let csrf = try #require(TestBrowser.hiddenField("csrf", in: entry.text))
        let wrong = try await browser.postForm(server.base + "/device", ["csrf": csrf, "user_code": "BCDF-GHJK"])
        #expect(wrong.status == 400 && wrong.text.contains("not valid or has expired"))
        // Every page sets a fresh CSRF cookie: the next form carries the token of the page it was shown on.
        let nextCSRF = try #require(TestBrowser.hiddenField("csrf", in: wrong.text))
        #expect(try await browser.postForm(server.base + "/device", ["csrf": csrf, "user_code": "BCDF-GHJK"]).status == 403, "a stale token")
        let malformed = try await browser.postForm(server.base + "/device", ["csrf": nextCSRF, "user_code": "AEIO-0000"])
        #expect(malformed.status == 400)
        let noCSRF = try await TestBrowser().postForm(server.base + "/device", ["user_code": "BCDF-GHJK"])
        #expect(noCSRF.status == 403)

        let refused = try await TestBrowser().postForm(server.base + "/oauth2/device_authorization", ["client_id": "web-only"])
        #expect(try refused.status == 400 && Self.error(refused) == "unauthorized_client")
    }

    @Test("guessing codes from one address is stopped (429)")
    func throttled() async throws {
        let server = try await TestServer.start { $0.loginPolicy.maxChallengesPerAddress = 3 }
        defer { Task { await server.stop() } }
        let browser = TestBrowser()
        let entry = try await browser.get(server.base + "/device")
        var csrf = try #require(TestBrowser.hiddenField("csrf", in: entry.text))
        var statuses: [Int] = []
        for guess in ["BCDF-GHJK", "BCDF-GHJL", "BCDF-GHJM", "BCDF-GHJN"] {
            let page = try await browser.postForm(server.base + "/device", ["csrf": csrf, "user_code": guess])
            statuses.append(page.status)
            csrf = try #require(TestBrowser.hiddenField("csrf", in: page.text))
        }
        #expect(statuses == [400, 400, 400, 429])
    }

    /// One clock for the server and the SDK: the server's, standing still, moved by the SDK's waits between polls. A
    /// poll then comes exactly `interval` seconds after the last as far as both can tell, and no test waits for one.
    static func sharedClock(_ server: TestServer) -> LatchkeyClock {
        LatchkeyClock(
            now: { server.server.clock.now },
            sleep: { seconds in
                try Task.checkCancellation()
                server.advanceClock(seconds)
                await Task.yield()
            })
    }

    @Test("the SDK: start, show the code, poll until allowed; the session is stored; denial, expiry and cancellation are reported")
    func sdk() async throws {
        let server = try await TestServer.start(frozenClock: true) { config in
            config.lifetimes.devicePollingInterval = 1
            config.lifetimes.deviceCode = 60  // the shortest: the unanswered request below polls through it
        }
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(clock: Self.sharedClock(server))
        try await client.initialize(config: server.sdkConfig())
        let authorization = try await client.startDeviceAuthorization()
        #expect(authorization.userCode.range(of: Self.userCodePattern, options: .regularExpression) != nil && authorization.interval == 1)
        #expect(authorization.verificationUri.absoluteString == server.issuer + "/device")
        #expect(authorization.expiresAt == server.server.clock.now.addingTimeInterval(60), "the code's life on the client's clock")
        _ = try await Self.decide(server, userCode: authorization.userCode, approve: true)
        let user = try await client.completeDeviceAuthorization(authorization)
        let signedIn = try await client.isSignedIn()
        #expect(user.email == "demo@example.com" && signedIn)

        let refused = try await client.startDeviceAuthorization()
        _ = try await Self.decide(server, userCode: refused.userCode, approve: false)
        await #expect { _ = try await client.completeDeviceAuthorization(refused, sessionId: "tv") } throws: {
            ($0 as? LatchkeyError)?.code == .authenticationFailed && ($0 as? LatchkeyError)?.serverCode == "access_denied"
        }

        // Nobody answers: the client polls (each poll a second later) until the code's minute is over, then stops.
        let unanswered = try await client.startDeviceAuthorization()
        let started = server.server.clock.now
        await #expect { _ = try await client.completeDeviceAuthorization(unanswered, sessionId: "tv") } throws: {
            ($0 as? LatchkeyError)?.code == .sessionExpired
        }
        #expect(server.server.clock.now.timeIntervalSince(started) >= 60, "it waited out the code's life, no less")

        let abandoned = try await client.startDeviceAuthorization()
        let waiting = Task { try await client.completeDeviceAuthorization(abandoned, sessionId: "abandoned") }
        // Cancelled wherever it is (before its first poll, waiting between polls, or in a poll): `.canceled` each time.
        waiting.cancel()
        await #expect { _ = try await waiting.value } throws: { ($0 as? LatchkeyError)?.code == .canceled }
    }

    @Test("the SDK slows down when told to: after slow_down the next poll waits five seconds more")
    func sdkHonoursSlowDown() async throws {
        let server = try await TestServer.start(frozenClock: true) { $0.lifetimes.devicePollingInterval = 1 }
        defer { Task { await server.stop() } }
        // The first device-code poll is answered slow_down (as a server would); each poll's time is recorded.
        let isPoll: @Sendable (HTTPRequest) -> Bool = { request in
            request.body.map {
                String(decoding: $0, as: UTF8.self).contains("device_code") && String(decoding: $0, as: UTF8.self).contains("grant_type")
            } ?? false
        }
        let http = ProgrammableHTTPClient(now: { server.server.clock.now })
        http.answer(where: isPoll, times: 1) { _ in
            HTTPResponse(status: 400, headers: ["Content-Type": "application/json"], body: Data(#"{"error":"slow_down"}"#.utf8))
        }
        let client = LatchkeyClient(http: http, clock: Self.sharedClock(server))
        try await client.initialize(config: server.sdkConfig())
        let authorization = try await client.startDeviceAuthorization()
        let asked = server.server.clock.now
        // The person approves at once: the first poll is answered slow_down whatever the server would say.
        _ = try await Self.decide(server, userCode: authorization.userCode, approve: true)
        _ = try await client.completeDeviceAuthorization(authorization)
        let polls = http.sent.filter { isPoll($0.request) }.map(\.date)
        #expect(polls.count == 2, "slow_down, then the tokens")
        if polls.count == 2 {
            #expect(abs(polls[0].timeIntervalSince(asked) - 1) < 0.001, "the first poll after the interval")
            #expect(abs(polls[1].timeIntervalSince(polls[0]) - 6) < 0.001, "1 s interval + 5 s after slow_down")
        }
    }
}
