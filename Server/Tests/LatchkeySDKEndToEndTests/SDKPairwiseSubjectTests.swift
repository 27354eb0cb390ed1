import Foundation
import Latchkey
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The SDK reads one subject for an application of pairwise subjects (OpenID Connect Core §8.1), wherever it reads
/// it: the ID token's user, userinfo, the profile (SCIM `/Me` and `/users/me`), the access token, and the ID token of
/// a refresh — which the SDK would refuse were its `sub` another (§12.2).
@Suite("SDK ↔ server: pairwise subjects")
struct SDKPairwiseSubjectTests {
    @Test("one subject in the user, userinfo, both profile endpoints, the access token, and after a refresh; never the account id")
    func oneSubject() async throws {
        let server = try await TestServer.start { $0.changeClient("latchkey-demo") { $0.subjectType = .pairwise } }
        defer { Task { await server.stop() } }
        let account = try #require(try await server.server.store.user(username: "demo@example.com")).id
        let time = ManualClock()
        let client = LatchkeyClient(http: productionHTTPClient(), clock: time.clock)
        try await client.initialize(config: server.sdkConfig())
        let user = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL()))
        #expect(!user.sub.isEmpty && user.sub != account, "the pairwise subject, not the account id")

        #expect(try await client.getUser(options: ["source": "userinfo"]).sub == user.sub)
        #expect(try await client.getUserProfile().id == user.sub, "SCIM /Me")
        #expect(try await client.getUserProfile(options: ["endpoint": "users/me"]).id == user.sub, "/users/me")
        struct Claims: Decodable { var sub: String }
        let first = try await client.getAccessToken()
        let claims: Claims = try client.decodeJwtToken(first)
        #expect(claims.sub == user.sub)

        // Past the refresh margin: the refreshed ID token names the same subject, or the SDK would have refused it.
        time.advance(by: 3600)
        let second = try await client.getAccessToken()
        #expect(second != first, "refreshed")
        #expect(try await client.getUser().sub == user.sub)
        let refreshedClaims: Claims = try client.decodeJwtToken(second)
        #expect(refreshedClaims.sub == user.sub)
    }
}
