import LatchkeyTestSupport
import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// The reuse interval of rotated refresh tokens (`refresh_token_reuse_seconds`) end to end: a refresh whose answer was
/// lost, retried, gets the successor it was already given instead of a sign-out; after the interval, from another
/// application or with another DPoP key, a reuse is refused exactly as without it. Time moves only by the test clock.
@Suite("Refresh tokens: the reuse interval of a rotated token")
struct RefreshTokenReuseTests {
    static var productionDefault: Int {
        DevelopmentDefaults.configuration(port: 0, databasePath: "/tmp/unused.sqlite", host: "127.0.0.1").refreshTokenReuseSeconds
    }

    /// A server with the production default (60 s) and a clock that moves only when the test moves it.
    /// `frozen: false` for a test that signs in with the SDK first (its proofs are dated by the server's real `Date`
    /// header) and then calls `freezeClock()`.
    static func start(frozen: Bool = true, _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws
        -> TestServer
    {
        try await TestServer.start(frozenClock: frozen) { config in
            config.refreshTokenReuseSeconds = Self.productionDefault
            configure(&config)
        }
    }

    static func body(_ result: HTTPResult) throws -> (error: String?, description: String?, refreshToken: String?, accessToken: String?) {
        let json = try result.json()
        return (
            json["error"] as? String, json["error_description"] as? String, json["refresh_token"] as? String,
            json["access_token"] as? String
        )
    }

    @Test(
        "a refresh retried within the interval gets the same successor and a working access token; after the successor rotated, the family's newest token; after the interval, a replay"
    )
    func aLostAnswerRetried() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let first = try #require(tokens.refreshToken)
        let lost = try await server.refresh(first)  // the server rotated; the app never heard
        #expect(lost.status == 200)
        let successor = try #require(try Self.body(lost).refreshToken)

        server.advanceClock(TimeInterval(Self.productionDefault - 1))
        let retry = try await server.refresh(first)
        #expect(retry.status == 200, "a retry within the interval is not a replay")
        let retried = try Self.body(retry)
        #expect(retried.refreshToken == successor, "the same successor: the family does not fork")
        #expect(try await server.userinfo(try #require(retried.accessToken)).status == 200)
        let idToken = try #require(try retry.json()["id_token"] as? String)
        #expect(try await server.verifiedClaims(idToken)["sub"] == (try await server.verifiedClaims(try #require(tokens.idToken)))["sub"])

        let next = try await server.refresh(successor)
        #expect(next.status == 200, "the successor is the family's live token")
        let newest = try #require(try Self.body(next).refreshToken)
        // A killed process's request arriving late, after the family rotated on: the live token, not a revocation.
        let late = try Self.body(try await server.refresh(first))
        #expect(late.refreshToken == newest, "the family's one live token: \(late.error ?? "") \(late.description ?? "")")

        server.advanceClock(2)  // the first token's rotation is now more than the interval ago
        let replay = try Self.body(try await server.refresh(first))
        #expect(replay.error == "invalid_grant", "after the interval: a replay")
        #expect(replay.description?.contains("already used") == true)
        #expect(try Self.body(try await server.refresh(newest)).error == "invalid_grant", "and the replay revoked the family")

        let (_, samples) = try await MetricsTests.metrics(server)
        #expect(samples[#"latchkey_refresh_tokens_total{result="rotated"}"#] == 2)
        #expect(samples[#"latchkey_refresh_tokens_total{result="reissued"}"#] == 2)
        #expect(samples[#"latchkey_refresh_tokens_total{result="replayed"}"#] == 1)
    }

    @Test("after the interval a rotated token is a replay that revokes the family, as with strict rotation")
    func afterTheInterval() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let first = try #require(tokens.refreshToken)
        let successor = try #require(try Self.body(try await server.refresh(first)).refreshToken)
        server.advanceClock(TimeInterval(Self.productionDefault + 1))
        let late = try Self.body(try await server.refresh(first))
        #expect(late.error == "invalid_grant")
        #expect(late.description?.contains("already used") == true)
        #expect(try Self.body(try await server.refresh(successor)).error == "invalid_grant", "the family is revoked")
        #expect(try await server.userinfo(tokens.accessToken).status == 401)
    }

    @Test("with refresh_token_reuse_seconds 0 every reuse is a replay")
    func turnedOff() async throws {
        let server = try await Self.start { $0.refreshTokenReuseSeconds = 0 }
        defer { Task { await server.stop() } }
        let first = try #require(try await server.tokens().refreshToken)
        let successor = try #require(try Self.body(try await server.refresh(first)).refreshToken)
        #expect(try Self.body(try await server.refresh(first)).error == "invalid_grant")
        #expect(try Self.body(try await server.refresh(successor)).error == "invalid_grant")
    }

    @Test("another application presenting the rotated token gets nothing and burns nothing")
    func anotherApplication() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let first = try #require(try await server.tokens().refreshToken)
        let successor = try #require(try Self.body(try await server.refresh(first)).refreshToken)
        let foreign = try await TestBrowser().postForm(
            server.base + "/oauth2/token", ["grant_type": "refresh_token", "refresh_token": first],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        let refused = try Self.body(foreign)
        #expect(refused.error == "invalid_grant")
        #expect(refused.refreshToken == nil)
        #expect(try await server.refresh(successor).status == 200, "the owner's family lives on")
    }

    @Test("a DPoP-bound token is handed its successor only with a proof by its key; another key's proof gets nothing and burns nothing")
    func boundToTheKey() async throws {
        let server = try await Self.start(frozen: false)
        defer { Task { await server.stop() } }
        // The SDK signs in by the system's time (its proofs are dated from the server's Date header); then the
        // server's clock stops and the proofs below carry its time.
        let session = try await DPoPTests.signIn(server)
        server.freezeClock()
        let stored = try await session.tokens
        let first = try #require(stored.refreshToken)
        let owner = try SigningKey(algorithm: .es256, pem: try #require(stored.dpopKey))
        let url = server.issuer + "/oauth2/token"
        let form = ["grant_type": "refresh_token", "refresh_token": first, "client_id": "latchkey-demo"]
        func refresh(_ key: SigningKey) async throws -> HTTPResult {
            try await TestBrowser().postForm(
                server.base + "/oauth2/token", form,
                headers: ["DPoP": try DPoPTests.proof(key, method: "POST", url: url, iat: server.clock.now)])
        }
        let rotated = try await refresh(owner)
        #expect(rotated.status == 200)
        let successor = try #require(try Self.body(rotated).refreshToken)

        server.advanceClock(10)
        let thief = try Self.body(try await refresh(try SigningKey.generate(.es256)))
        #expect(thief.error == "invalid_grant")
        #expect(thief.refreshToken == nil)
        let noProof = try Self.body(try await TestBrowser().postForm(server.base + "/oauth2/token", form))
        #expect(noProof.error == "invalid_dpop_proof")
        #expect(noProof.refreshToken == nil)
        let retry = try await refresh(owner)
        #expect(retry.status == 200)
        #expect(try Self.body(retry).refreshToken == successor, "the owner's retry still gets it")
    }

    @Test("the sealed successor opens only for the row of the token it replaced, and nothing is kept with the interval off")
    func sealedSuccessorIsBoundToItsRow() throws {
        let reuse = RefreshTokenReuse(seconds: 30, sealer: try SecretSealer(keyEncryptionKey: Data(repeating: 7, count: 32)))
        let presented = Data("presented".utf8)
        let now = Date(timeIntervalSince1970: 1_000_000)
        let kept = try #require(try reuse.keeping(successor: "the-successor", presented: presented, now: now))
        #expect(!kept.sealedSuccessor.contains("the-successor"), "sealed, not stored in the clear")
        #expect(kept.rotatedSince == now.addingTimeInterval(-30))
        #expect(try reuse.successor(kept.sealedSuccessor, presented: presented) == "the-successor")
        #expect(throws: (any Error).self, "copied to another token's row, it does not open") {
            try reuse.successor(kept.sealedSuccessor, presented: Data("another".utf8))
        }
        let off = RefreshTokenReuse(seconds: 0, sealer: try SecretSealer(keyEncryptionKey: Data(repeating: 7, count: 32)))
        #expect(try off.keeping(successor: "the-successor", presented: presented, now: now) == nil)
    }

    @Test("refresh_token_reuse_seconds is read from the file and bounded to 0–300")
    func configuration() throws {
        var config = DevelopmentDefaults.configuration(port: 0, databasePath: "/tmp/unused.sqlite", host: "127.0.0.1")
        #expect(config.refreshTokenReuseSeconds == 60, "the default: longer than the SDK's 30 s request timeout and its one retry")
        let file = try JSONDecoder().decode(ConfigurationFile.self, from: Data(#"{"refresh_token_reuse_seconds": 0}"#.utf8))
        try file.apply(to: &config)
        #expect(config.refreshTokenReuseSeconds == 0)
        try config.validate()
        for wrong in [-1, 301] {
            config.refreshTokenReuseSeconds = wrong
            #expect(throws: ConfigurationError.self) { try config.validate() }
        }
    }
}
