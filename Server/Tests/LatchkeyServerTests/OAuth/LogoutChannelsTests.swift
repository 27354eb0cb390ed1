import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// OpenID Connect Back-Channel Logout 1.0 and Front-Channel Logout 1.0 against the real server over loopback HTTP, as
/// the OpenID Foundation's conformance suite checks them (`oidcc-backchannel-rp-initiated-logout`,
/// `oidcc-frontchannel-rp-initiated-logout` and the conditions they call: `CheckForValidLogoutToken`-like checks of
/// `iss`/`aud`/`iat`/`jti`/`events`/`sid`, no `nonce`, `typ` `logout+jwt`). Back-channel notices are delivered from
/// the store's queue; each server runs without its loop and the tests run each pass (`deliverBackChannelLogouts`),
/// moving the server's clock for retries.
@Suite("Logout: back-channel tokens and front-channel frames")
struct LogoutChannelsTests {
    static let postLogout = "http://127.0.0.1:7777/logout"
    static let frontChannel = "http://127.0.0.1:7778/frontchannel?app=demo"

    /// The demo application takes part in logout on both channels; `other` registers a back-channel URI but takes
    /// part in no session here.
    /// The clock moves only when a test moves it ("not due again before the 5 s backoff" on a busy machine).
    static func start(_ receiver: WebhookReceiver, frontChannel: Bool = false) async throws -> TestServer {
        try await TestServer.start(frozenClock: true) { configuration in
            for index in configuration.clients.indices where configuration.clients[index].clientId == "latchkey-demo" {
                configuration.clients[index].backchannelLogoutUri = receiver.base + "/hooks/demo"
                configuration.clients[index].backchannelLogoutSessionRequired = true
                if frontChannel { configuration.clients[index].frontchannelLogoutUri = Self.frontChannel }
            }
            // The confidential client is an administrator acting for itself (`clientToken(scope: "scim.admin")`).
            for index in configuration.clients.indices where configuration.clients[index].clientId == "backend" {
                configuration.clients[index].scopes.append("scim.admin")
            }
            var other = ClientConfiguration(clientId: "other", redirectUris: ["http://127.0.0.1:7777/other"])
            other.backchannelLogoutUri = receiver.base + "/hooks/other"
            // An application outside the session, on both channels: never framed, never told.
            if frontChannel { other.frontchannelLogoutUri = "http://127.0.0.1:7779/frontchannel" }
            configuration.clients.append(other)
        }
    }

    static func logout(_ server: TestServer, _ browser: TestBrowser, idToken: String, redirect: Bool = true) async throws -> HTTPResult {
        var query = ["id_token_hint": idToken, "state": "bye"]
        if redirect { query["post_logout_redirect_uri"] = postLogout }
        return try await browser.get(server.base + "/oauth2/logout?" + TestBrowser.formEncode(query))
    }

    /// The logout token a receiver got, verified with the server's keys.
    static func logoutToken(_ received: WebhookReceiver.Received, _ server: TestServer) async throws -> (
        header: JWSHeader, claims: [String: JSONValue]
    ) {
        #expect(received.headers["content-type"] == "application/x-www-form-urlencoded")
        let form = URLComponents(string: "?" + received.text)?.queryItems ?? []
        #expect(form.map(\.name) == ["logout_token"])
        let token = try #require(form.first?.value)
        let claims = try await server.verifiedClaims(token)
        return (try CompactJWS(parsing: token).header, claims)
    }

    @Test("oidcc-backchannel-rp-initiated-logout: signing out at the server sends the application a valid logout token")
    func backChannelLogoutToken() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.start(receiver)
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let idClaims = try await server.verifiedClaims(try #require(tokens.idToken))
        let sid = try #require(idClaims["sid"]?.stringValue)

        await server.server.deliverBackChannelLogouts()
        #expect(receiver.received.isEmpty, "nothing is sent while the session lasts")

        let out = try await Self.logout(server, browser, idToken: try #require(tokens.idToken))
        #expect(out.status == 302)
        await server.server.deliverBackChannelLogouts()
        let sent = receiver.received(at: "/hooks/demo")
        try #require(sent.count == 1)
        #expect(receiver.received(at: "/hooks/other").isEmpty, "an application that took no part in the session is not told")

        let (header, claims) = try await Self.logoutToken(sent[0], server)
        #expect(header.typ == "logout+jwt", "explicitly typed, so it cannot pass for an ID token")
        #expect(header.alg == "RS256", "signed like the application's ID tokens")
        #expect(claims["iss"]?.stringValue == server.issuer)
        #expect(claims["aud"]?.stringArray == ["latchkey-demo"])
        #expect(claims["sub"]?.stringValue == idClaims["sub"]?.stringValue)
        #expect(claims["sid"]?.stringValue == sid)
        #expect(claims["nonce"] == nil, "a logout token never carries a nonce (§2.4)")
        #expect(claims["jti"]?.stringValue?.isEmpty == false)
        let iat = try #require(claims["iat"]?.doubleValue)
        let exp = try #require(claims["exp"]?.doubleValue)
        #expect(exp - iat == 120 && abs(iat - server.server.clock.now.timeIntervalSince1970) < 5)
        guard case .object(let events)? = claims["events"], case .object(let member)? = events[LogoutToken.event] else {
            Issue.record("events must hold the back-channel logout member as an object: \(String(describing: claims["events"]))")
            return
        }
        #expect(member.isEmpty && events.count == 1)

        await server.server.deliverBackChannelLogouts()
        #expect(receiver.received.count == 1, "a delivered notice is not sent again")
    }

    @Test("a refused notice is retried with the same jti and a fresh signature, then given up after the last attempt")
    func retriedWithBackoff() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.start(receiver)
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        receiver.answer(500, 503)
        _ = try await Self.logout(server, browser, idToken: try #require(tokens.idToken))

        await server.server.deliverBackChannelLogouts()
        #expect(receiver.received.count == 1)
        await server.server.deliverBackChannelLogouts()
        #expect(receiver.received.count == 1, "not due again before the backoff")
        server.advanceClock(6)
        await server.server.deliverBackChannelLogouts()
        #expect(receiver.received.count == 2)
        server.advanceClock(11)
        await server.server.deliverBackChannelLogouts()
        let sent = receiver.received
        try #require(sent.count == 3, "the third attempt is answered 200")
        let first = try await Self.logoutToken(sent[0], server).claims
        let third = try await Self.logoutToken(sent[2], server).claims
        #expect(first["jti"] == third["jti"], "the same notice: the application can recognise a retry")
        let firstIssued = try #require(first["iat"]?.doubleValue)
        let thirdIssued = try #require(third["iat"]?.doubleValue)
        #expect(thirdIssued > firstIssued, "signed again at each attempt")
        server.advanceClock(3600)
        await server.server.deliverBackChannelLogouts()
        #expect(receiver.received.count == 3)

        // An application that never answers 2xx: given up after `maximumAttempts`, nothing left in the queue.
        let second = TestBrowser()
        let again = try await server.tokens(second)
        for _ in 0..<(BackChannelLogout.maximumAttempts + 2) { receiver.answer(500) }
        _ = try await Self.logout(server, second, idToken: try #require(again.idToken))
        for _ in 0..<(BackChannelLogout.maximumAttempts + 2) {
            await server.server.deliverBackChannelLogouts()
            server.advanceClock(3601)
        }
        #expect(receiver.received.count == 3 + BackChannelLogout.maximumAttempts)
        #expect(try await server.server.store.deliveryQueueDepths(kind: .backchannelLogout).isEmpty)
        // Counted as every kind of delivery is, under one label for all applications (anyone may register one).
        let exposition = server.server.metrics.exposition()
        let series = #"latchkey_deliveries_total{kind="backchannel_logout",destination="applications",result="#
        #expect(exposition.contains(series + #""delivered"} 1"#), "\(exposition)")
        #expect(exposition.contains(series + #""dropped"} 1"#))
        #expect(exposition.contains(series + "\"failed\"} \(2 + BackChannelLogout.maximumAttempts)"))
        #expect(exposition.contains(#"latchkey_delivery_queue_depth{kind="backchannel_logout",destination="applications"} 0"#))
    }

    @Test("every way a session ends is announced: sign out everywhere, an administrator, a password replaced in the store")
    func everyEndIsAnnounced() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.start(receiver)
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        // Two sessions of the demo user, then "sign out everywhere" from a third (kept).
        var sids: Set<String> = []
        for _ in 0..<2 {
            let tokens = try await server.tokens(TestBrowser())
            sids.insert(try await Self.sid(of: tokens, server))
        }
        let current = try await server.tokens(TestBrowser())
        let everywhere = try await server.call(
            "DELETE", "/users/me/sessions?keep_current=true", token: current.accessToken)
        #expect(everywhere.status == 204)
        await server.server.deliverBackChannelLogouts()
        #expect(Set(try await Self.sids(receiver, server)) == sids, "both ended sessions, not the kept one")

        // The pruner keeps an ended session until its end is announced; "sign out everywhere" without keeping the
        // current session ends that one and the one kept before.
        let pruned = try await server.tokens(TestBrowser())
        let prunedSid = try await Self.sid(of: pruned, server)
        let all = try await server.call("DELETE", "/users/me/sessions", token: pruned.accessToken)
        #expect(all.status == 204)
        try await server.server.pruneExpired()
        await server.server.deliverBackChannelLogouts()
        var seen = try await Self.sids(receiver, server)
        let currentSid = try await Self.sid(of: current, server)
        #expect(seen.count == 4 && seen.suffix(2).sorted() == [currentSid, prunedSid].sorted())

        // An administrator ending every session, then ends inside the store's own transactions: a password replaced, an
        // account deleted. The store records each end; the loop announces it.
        let currentIdToken = try #require(current.idToken)
        let userId = try #require(try await server.verifiedClaims(currentIdToken)["sub"]?.stringValue)
        let byAdmin = try await Self.sid(of: try await server.tokens(TestBrowser()), server)
        let admin = try await server.clientToken(scope: "scim.admin")
        #expect(try await server.call("DELETE", "/admin/v1/users/\(userId)/sessions", token: admin).status == 204)
        let byPassword = try await Self.sid(of: try await server.tokens(TestBrowser()), server)
        try await server.server.store.replacePassword(
            userId: userId, passwordHash: PasswordHasher.noPassword, keepingSession: nil, keepingFamily: nil, now: server.server.clock.now)
        await server.server.deliverBackChannelLogouts()
        seen = try await Self.sids(receiver, server)
        #expect(seen.count == 6 && Set(seen.suffix(2)) == [byAdmin, byPassword])
        #expect(receiver.received(at: "/hooks/other").isEmpty)
    }

    static func sids(_ receiver: WebhookReceiver, _ server: TestServer) async throws -> [String] {
        var sids: [String] = []
        for received in receiver.received(at: "/hooks/demo") {
            sids.append(try #require(try await Self.logoutToken(received, server).claims["sid"]?.stringValue))
        }
        return sids
    }

    @Test("oidcc-frontchannel-rp-initiated-logout: the signed-out page frames the application's URI with iss and sid, then continues")
    func frontChannelFrames() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.start(receiver, frontChannel: true)
        defer {
            Task {
                await server.stop(); await receiver.stop()
            }
        }
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let sid = try await Self.sid(of: tokens, server)

        let page = try await Self.logout(server, browser, idToken: try #require(tokens.idToken))
        #expect(page.status == 200, "a page that runs the frames instead of a redirect")
        #expect(page.header("Set-Cookie")?.contains("lk_session=;") == true)
        let expected = RedirectURL.appending([("iss", server.issuer), ("sid", sid)], to: Self.frontChannel)
        #expect(expected.hasPrefix(Self.frontChannel + "&iss="), "the registered query is kept")
        let uris = try #require(Self.attribute("data-uris", in: page.text))
        #expect(try JSONDecoder().decode([String].self, from: Data(uris.utf8)) == [expected])
        #expect(page.text.contains("<noscript><iframe src=\"\(HTML.escape(expected))\""), "framed without JavaScript too")
        #expect(page.text.contains("href=\"\(HTML.escape(Self.postLogout + "?state=bye"))\""), "then the registered redirect")
        let csp = try #require(page.header("Content-Security-Policy"))
        #expect(csp.contains("frame-src http://127.0.0.1:7778;"), "frames only from the application's origin: \(csp)")
        #expect(csp.contains("script-src 'self';") && csp.contains("frame-ancestors 'none'"), "scripts from this server only: \(csp)")
        #expect(!page.text.contains("<script>"), "no inline script")
        let script = try await TestBrowser().get(server.base + FrontChannelLogout.scriptPath)
        #expect(script.status == 200 && script.header("Content-Type")?.hasPrefix("text/javascript") == true)
        #expect(script.text.contains("addEventListener(\"load\""))

        // Without a session to end, no frames: the plain redirect.
        let second = try await Self.logout(server, TestBrowser(), idToken: try #require(tokens.idToken))
        #expect(second.status == 302 && second.location == Self.postLogout + "?state=bye", "\(second.status)")
        #expect(!second.text.contains("logout-frames"))
    }

    @Test("oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri and -modified-id-token-hint")
    func rpInitiatedLogoutModules() async throws {
        let withQuery = "http://127.0.0.1:7777/logout?from=app"
        let server = try await TestServer.start { configuration in
            for index in configuration.clients.indices where configuration.clients[index].clientId == "latchkey-demo" {
                configuration.clients[index].postLogoutRedirectUris.append(withQuery)
            }
        }
        defer { Task { await server.stop() } }
        // A hint whose signature was changed is refused, and the session stays.
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser)
        let idToken = try #require(tokens.idToken)
        let parts = idToken.split(separator: ".")
        let flipped = parts[2].first == "A" ? "B" : "A"
        let modified = parts[0] + "." + parts[1] + "." + flipped + parts[2].dropFirst()
        let refused = try await browser.get(
            server.base + "/oauth2/logout?" + TestBrowser.formEncode(["id_token_hint": String(modified), "post_logout_redirect_uri": withQuery]))
        #expect(refused.status == 400 && refused.location == nil)
        var none = AuthorizeOptions()
        none.prompt = "none"
        #expect(try await browser.get(server.authorizeURL(none)).locationQuery["code"] != nil, "still signed in")
        // The registered URI's own query is kept, `state` added to it.
        let out = try await browser.get(
            server.base + "/oauth2/logout?"
                + TestBrowser.formEncode(["id_token_hint": idToken, "post_logout_redirect_uri": withQuery, "state": "s9"]))
        #expect(out.status == 302 && out.location == withQuery + "&state=s9")
    }

    @Test("discovery advertises both logout channels with sessions")
    func discovery() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let metadata = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        for member in [
            "backchannel_logout_supported", "backchannel_logout_session_supported", "frontchannel_logout_supported",
            "frontchannel_logout_session_supported"
        ] {
            #expect(metadata[member] as? Bool == true, "\(member)")
        }
    }

    @Test("logout URIs: https or loopback http in the file; through registration https, never a loopback or private address")
    func logoutURIRules() async throws {
        for (uri, accepted) in [
            ("https://app.example/logout", true), ("http://127.0.0.1:9/logout", true), ("http://app.example/logout", false),
            ("https://app.example/logout#frag", false), ("https://user:pw@app.example/logout", false), ("/relative", false)
        ] {
            var client = ClientConfiguration(clientId: "c", redirectUris: ["http://127.0.0.1/cb"])
            client.backchannelLogoutUri = uri
            #expect(((try? client.validate()) != nil) == accepted, "back-channel \(uri)")
            client.backchannelLogoutUri = nil
            client.frontchannelLogoutUri = uri
            #expect(((try? client.validate()) != nil) == accepted, "front-channel \(uri)")
        }

        let server = try await ClientRegistrationTests.start()
        defer { Task { await server.stop() } }
        let token = try await server.clientToken(scope: "registration")
        var app = ClientRegistrationTests.publicApp
        app["backchannel_logout_uri"] = "https://notes.example/logout/back"
        app["backchannel_logout_session_required"] = true
        app["frontchannel_logout_uri"] = "https://notes.example/logout/front"
        let registered = try await ClientRegistrationTests.register(server, app, token: token)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(try registered.string("backchannel_logout_uri") == "https://notes.example/logout/back")
        #expect(try registered.value("backchannel_logout_session_required") as? Bool == true)
        #expect(try registered.string("frontchannel_logout_uri") == "https://notes.example/logout/front")
        for uri in [
            "http://notes.example/logout", "https://127.0.0.1/logout", "https://localhost:8080/x", "notes", "https://10.1.2.3/x",
            "https://172.20.0.1/x", "https://192.168.0.10/x", "https://169.254.169.254/latest", "https://[fd00::1]/x",
            "https://[::ffff:10.0.0.1]/x", "https://0.0.0.0/x"
        ] {
            var refused = ClientRegistrationTests.publicApp
            refused["backchannel_logout_uri"] = uri
            let answer = try await ClientRegistrationTests.register(server, refused, token: token)
            let error = try answer.string("error")
            #expect(answer.status == 400 && error == "invalid_client_metadata", "\(uri): the server would POST there")
            var jwksApp = ClientRegistrationTests.publicApp
            jwksApp["token_endpoint_auth_method"] = "private_key_jwt"
            jwksApp["jwks_uri"] = uri
            let fetched = try await ClientRegistrationTests.register(server, jwksApp, token: token)
            #expect(fetched.status == 400, "\(uri): the server would fetch it")
        }
    }

    @Test("latchkey_security_profile fapi2 through registration: the profile's defaults, and contradictions refused")
    func securityProfileThroughRegistration() async throws {
        let server = try await ClientRegistrationTests.start()
        defer { Task { await server.stop() } }
        let token = try await server.clientToken(scope: "registration")
        let key = try SigningKey.generate(.es256)
        var app: [String: Any] = [
            "client_name": "Bank", "redirect_uris": ["https://bank.example/cb"], "token_endpoint_auth_method": "private_key_jwt",
            "jwks": ["keys": [try JSONSerialization.jsonObject(with: JSONEncoder().encode(try key.publicJWK()))]],
            "latchkey_security_profile": "fapi2"
        ]
        let registered = try await ClientRegistrationTests.register(server, app, token: token)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(try registered.string("latchkey_security_profile") == "fapi2")
        #expect(try registered.value("dpop_bound_access_tokens") as? Bool == true)
        #expect(try registered.value("require_pushed_authorization_requests") as? Bool == true)
        #expect(try registered.string("id_token_signed_response_alg") == "ES256")

        app["dpop_bound_access_tokens"] = false
        let contradicted = try await ClientRegistrationTests.register(server, app, token: token)
        let why = try contradicted.string("error_description")
        #expect(contradicted.status == 400 && why?.contains("require_dpop") == true, "\(contradicted.text)")
        app["dpop_bound_access_tokens"] = nil
        app["latchkey_security_profile"] = "fapi1"
        #expect(try await ClientRegistrationTests.register(server, app, token: token).status == 400)
    }

    static func sid(of tokens: IssuedTokens, _ server: TestServer) async throws -> String {
        let idToken = try #require(tokens.idToken)
        let claims = try await server.verifiedClaims(idToken)
        return try #require(claims["sid"]?.stringValue)
    }

    static func attribute(_ name: String, in html: String) -> String? {
        guard let start = html.range(of: name + "=\"") else { return nil }
        let rest = html[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end]).replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
