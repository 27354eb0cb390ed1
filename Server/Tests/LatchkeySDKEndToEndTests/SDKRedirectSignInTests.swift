import LatchkeyTestSupport
import Foundation
@testable import Latchkey
import Testing

@Suite("SDK ↔ server: redirect sign-in, tokens, sign-out")
struct SDKRedirectSignInTests {
    @Test func buildSignInURLAndHandleRedirectCallback() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        #expect(try await client.initialize(config: server.sdkConfig()))
        let url = try client.buildSignInURL(options: SignInOptions(loginHint: "demo@example.com", extra: ["client_id": "evil", "ui_locales": "fr"]))
        let query = Dictionary(
            uniqueKeysWithValues: (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        #expect(url.absoluteString.hasPrefix(server.issuer + "/oauth2/authorize?"))
        #expect(query["code_challenge_method"] == "S256" && query["code_challenge"]?.count == 43)
        #expect(query["state"] != nil && query["nonce"] != nil && query["client_id"] == "latchkey-demo", "extra never overrides")
        #expect(query["ui_locales"] == "fr" && query["login_hint"] == "demo@example.com")

        let user = try await client.handleRedirectCallback(url: try await server.browse(url))
        #expect(user.email == "demo@example.com" && user.displayName == "Demo User" && !user.sub.isEmpty)
        #expect(try await client.isSignedIn())
        #expect(!client.isLoading())
        let token = try await client.getAccessToken()
        #expect(try await server.userinfo(token).status == 200)
        let fromUserinfo = try await client.getUser(options: ["source": "userinfo"])
        #expect(fromUserinfo.sub == user.sub && fromUserinfo.email == user.email)
        struct Claims: Decodable { var sub: String; var client_id: String }
        let claims: Claims = try client.decodeJwtToken(token)
        #expect(claims.sub == user.sub && claims.client_id == "latchkey-demo")
    }

    @Test func initializationRules() async throws {
        let client = LatchkeyClient(http: productionHTTPClient())
        #expect { try client.getConfiguration() } throws: { ($0 as? LatchkeyError)?.code == .sdkNotInitialized }
        await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .sdkNotInitialized }
        for bad in ["", "http://id.example.com", "ftp://localhost", "not a url"] {
            await #expect {
                try await LatchkeyClient(http: productionHTTPClient()).initialize(config: LatchkeyConfig(baseUrl: bad, clientId: "x"))
            } throws: {
                ($0 as? LatchkeyError)?.code == .invalidConfiguration
            }
        }
        try await client.initialize(config: LatchkeyConfig(baseUrl: "http://127.0.0.1:9", clientId: "a", afterSignInUrl: "app:/cb"))
        await #expect { try await client.initialize(config: LatchkeyConfig(baseUrl: "https://id.example.com", clientId: "b")) } throws: {
            ($0 as? LatchkeyError)?.code == .alreadyInitialized
        }
        try await client.reInitialize(clientId: "c")
        #expect(try client.getConfiguration().clientId == "c")
        #expect(try client.getConfiguration().afterSignInUrl == "app:/cb", "reInitialize keeps the rest")
    }

    @Test func callbackChecksStateIssAndErrors() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig())
        let callback = try await server.browse(try client.buildSignInURL())
        func variant(_ change: (inout [URLQueryItem]) -> Void) -> URL {
            var c = URLComponents(url: callback, resolvingAgainstBaseURL: false)!
            var items = c.queryItems ?? []
            change(&items)
            c.queryItems = items
            return c.url!
        }
        await #expect { try await client.handleRedirectCallback(url: variant { $0.removeAll { $0.name == "state" } }) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidGrant && "\($0)".contains("no state")
        }
        await #expect {
            try await client.handleRedirectCallback(
                url: variant { items in
                    items = items.map { $0.name == "state" ? URLQueryItem(name: "state", value: "forged") : $0 }
                })
        } throws: {
            ($0 as? LatchkeyError)?.code == .invalidGrant && "\($0)".contains("does not match")
        }
        // A wrong iss (mix-up attack) is refused, and the pending request is consumed.
        await #expect {
            try await client.handleRedirectCallback(
                url: variant { items in
                    items = items.map { $0.name == "iss" ? URLQueryItem(name: "iss", value: "https://evil.example") : $0 }
                })
        } throws: {
            ($0 as? LatchkeyError)?.code == .invalidGrant && "\($0)".contains("iss")
        }
        // A callback delivered somewhere else than the request's redirect URI (another path or port) is refused.
        let misdirected = try client.buildSignInURL()
        let misState = URLComponents(url: misdirected, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value ?? ""
        await #expect {
            try await client.handleRedirectCallback(url: URL(string: "http://127.0.0.1:7778/callback?code=x&state=\(misState)")!)
        } throws: {
            ($0 as? LatchkeyError)?.code == .invalidRedirectUri
        }
        // access_denied is an authentication failure, not a technical error.
        let denied = try client.buildSignInURL()
        let state = URLComponents(url: denied, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value ?? ""
        let deniedCallback = URL(
            string: "http://127.0.0.1:7777/callback?error=access_denied&error_description=no&state=\(state)&iss=\(FormCoding.escape(server.issuer))")!
        await #expect { try await client.handleRedirectCallback(url: deniedCallback) } throws: {
            let e = $0 as? LatchkeyError
            return e?.code == .authenticationFailed && e?.category == .authFailure
        }
        #expect(try await !client.isSignedIn())
    }

    @Test func concurrentCallersOnAnExpiredTokenShareOneRefresh() async throws {
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }  // inside the SDK's 30 s refresh skew
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let client = try await server.signedInClient(http: http)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await client.getAccessToken() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(http.refreshCount == 1, "exactly one refresh request for 50 concurrent callers")
        #expect(tokens.count == 1, "all callers got the same fresh token")
        #expect(try await server.userinfo(tokens.first!).status == 200)
        // The family was not revoked: the rotated refresh token still works.
        _ = try await client.getAccessToken()
        #expect(http.refreshCount == 2)
        #expect(try await client.isSignedIn())
    }

    @Test func refreshFinishingAfterSignOutIsDiscarded() async throws {
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let client = try await server.signedInClient(http: http)
        http.hold(.afterAnswer, where: { $0.isRefreshGrant })
        let answered = http.statuses(pathEndingWith: "/oauth2/token").count
        let starter = Task { try await client.getAccessToken() }
        // Once the server has answered the refresh, its answer is held back from the SDK: the refresh is in flight for
        // the joiner and the sign-out for as long as the test needs, however slow the machine.
        try await eventually("the server answering the refresh") { http.statuses(pathEndingWith: "/oauth2/token").count > answered }
        let joiner = Task { try await client.getAccessToken() }  // joins the refresh in flight (or, if it starts after
        // the sign-out, finds no session: the same error)
        await Task.yield()
        let after = try await client.signOut()
        http.release()
        #expect(after == "http://127.0.0.1:7777/logout")
        await #expect { try await starter.value } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
        await #expect { try await joiner.value } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
        #expect(http.refreshCount == 1, "the joiner shared the first request")
        #expect(http.statuses(pathEndingWith: "/oauth2/token").last == 200, "the server did answer the refresh: it was the SDK that discarded it")
        #expect(try await !client.isSignedIn(), "the late refresh did not resurrect the session")
    }

    /// Storage whose writes of the default session wait while it is gated: a Keychain write that takes its time.
    actor GatedStorage: StorageAdapter {
        private var items: [String: Data] = [:]
        private var gated = false
        private var waiting: [CheckedContinuation<Void, Never>] = []
        var writesWaiting: Int { waiting.count }
        func gate() { gated = true }
        func release() {
            gated = false
            waiting.forEach { $0.resume() }
            waiting = []
        }
        func get(_ key: String) -> Data? { items[key] }
        func set(_ key: String, _ value: Data) async {
            if gated, key == "latchkey.session.default" { await withCheckedContinuation { waiting.append($0) } }
            items[key] = value
        }
        func remove(_ key: String) { items[key] = nil }
    }

    @Test func signOutWhileTheRefreshedTokensAreWrittenDiscardsThem() async throws {
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }
        defer { Task { await server.stop() } }
        let storage = GatedStorage()
        let client = try await server.signedInClient(storage: storage)
        await storage.gate()
        let caller = Task { try await client.getAccessToken() }  // refreshes: the token is within the skew of expiry
        try await eventually("the refreshed set being written") { await storage.writesWaiting == 1 }
        _ = try await client.signOut()
        await storage.release()  // the write lands after the sign-out removed the session
        await #expect { try await caller.value } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
        #expect(try await !client.isSignedIn())
        await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
        try await eventually("the late write taken back") { await storage.get("latchkey.session.default") == nil }
    }

    @Test func signOutRevokesAndEndsTheServerSession() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        let http = ProgrammableHTTPClient()
        let client = try await server.signedInClient(http: http, storage: storage)
        let stored = try #require(await storage.get("latchkey.session.default"))
        let tokens = try StoredSession.decode(stored)
        #expect(try await client.signOut() == "http://127.0.0.1:7777/logout")
        #expect(http.statuses(pathEndingWith: "/oauth2/revoke") == [200, 200], "the refresh token, then the access token")
        // POST (the ID token stays out of URLs and logs), answered with 303 See Other to the registered address.
        #expect(http.statuses(pathEndingWith: "/oauth2/logout") == [303], "end-session accepted the hint and redirected")
        #expect(await storage.get("latchkey.session.default") == nil)
        #expect(try await server.refresh(try #require(tokens.refreshToken)).status == 400, "refresh token revoked")
        #expect(try await server.userinfo(tokens.accessToken).status == 401, "and the family's access tokens")
        await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .sessionExpired }
    }

    @Test func clearSessionForgetsLocallyButDoesNotRevoke() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        let client = try await server.signedInClient(storage: storage)
        let tokens = try StoredSession.decode(try #require(await storage.get("latchkey.session.default")))
        client.clearSession()
        try await client.clearSessionAndWait()
        #expect(try await !client.isSignedIn())
        #expect(await storage.get("latchkey.session.default") == nil)
        #expect(try await server.refresh(try #require(tokens.refreshToken)).status == 200, "the server still honours the grant")
    }

    @Test func sessionsAreIndependent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig())
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL(options: nil, sessionId: "work")))
        #expect(try await client.isSignedIn(sessionId: "work"))
        #expect(try await !client.isSignedIn(), "the default session is untouched")
        _ = try await client.signOut(sessionId: "work")
        #expect(try await !client.isSignedIn(sessionId: "work"))
    }

    @Test func exchangeTokenLeavesTheSessionAlone() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await server.signedInClient()
        let before = try await client.getAccessToken()
        let exchanged = try await client.exchangeToken(config: TokenExchangeRequestConfig(scope: ["openid"]))
        #expect(exchanged.issuedTokenType == "urn:ietf:params:oauth:token-type:access_token")
        #expect(exchanged.accessToken != before)
        #expect(try await client.getAccessToken() == before)
    }

    @Test func fileStorageSurvivesANewClientAndIs0600() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-sdk-\(UUID().uuidString)")
        _ = try await server.signedInClient(storage: try FileStorageAdapter(directory: dir))
        let file = dir.appendingPathComponent("latchkey_session_default.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let again = LatchkeyClient(http: productionHTTPClient())
        try await again.initialize(config: server.sdkConfig(), storage: try FileStorageAdapter(directory: dir))
        #expect(try await again.isSignedIn())
        #expect(try await server.userinfo(try await again.getAccessToken()).status == 200)
    }
}
