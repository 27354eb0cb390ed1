import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// UserInfo as a signed JWT for an application that registered `userinfo_signed_response_alg` (OpenID Connect Core
/// §5.3.2; the conformance suite's `oidcc-userinfo-signed` in the Dynamic plan), over loopback HTTP.
@Suite("Signed UserInfo answers")
struct SignedUserInfoTests {
    @Test("oidcc-userinfo-signed: application/jwt signed with the server's key, with iss and aud; others keep JSON")
    func signedUserInfo() async throws {
        let server = try await TestServer.start { configuration in
            for index in configuration.clients.indices where configuration.clients[index].clientId == "latchkey-demo" {
                configuration.clients[index].userinfoSignedResponseAlg = .es256
            }
        }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let answer = try await server.userinfo(tokens.accessToken)
        #expect(answer.status == 200 && answer.header("Content-Type") == "application/jwt")
        let jws = try CompactJWS(parsing: answer.text)
        #expect(jws.header.alg == "ES256")
        let claims = try await server.verifiedClaims(answer.text)
        #expect(claims["iss"]?.stringValue == server.issuer)
        #expect(claims["aud"]?.stringArray == ["latchkey-demo"])
        #expect(claims["sub"]?.stringValue?.isEmpty == false && claims["email"]?.stringValue == "demo@example.com")

        // reachFive's identity API keeps its JSON dialect.
        let identity = try await TestBrowser().get(
            server.base + "/identity/v1/userinfo", headers: ["Authorization": "Bearer \(tokens.accessToken)"])
        #expect(identity.status == 200 && identity.header("Content-Type")?.hasPrefix("application/json") == true)

        let metadata = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(metadata["userinfo_signing_alg_values_supported"] as? [String] == ["RS256", "ES256"])

        var client = ClientConfiguration(clientId: "c", redirectUris: ["http://127.0.0.1/cb"])
        try client.validate()
        client.userinfoSignedResponseAlg = .edDSA
        #expect { try client.validate() } throws: { ($0 as? ConfigurationError)?.description.contains("userinfo_signed_response_alg") == true }
    }
}
