import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeyJOSE
@testable import LatchkeyServer
import Testing

/// `id_token_signed_response_alg`: an application may take ES256 ID tokens (cheaper to sign) instead of RS256.
@Suite("ID tokens signed with the application's algorithm")
struct IDTokenAlgorithmTests {
    @Test("an ES256 application gets ES256 ID tokens from the code and refresh grants, which the SDK's validator accepts")
    func es256() async throws {
        let server = try await TestServer.start { $0.clients[0].idTokenSignedResponseAlg = .es256 }
        defer { Task { await server.stop() } }
        let tokens = try await server.tokens()
        let idToken = try #require(tokens.idToken)
        #expect(try CompactJWS(parsing: idToken).header.alg == "ES256")
        let refreshed = try await server.refresh(try #require(tokens.refreshToken)).json()
        let second = try #require(refreshed["id_token"] as? String)
        #expect(try CompactJWS(parsing: second).header.alg == "ES256")

        let validator = IDTokenValidator(jwks: JWKSCache(url: try #require(URL(string: server.base + "/oauth2/jwks")), http: productionHTTPClient()))
        let claims = try await validator.validate(
            second,
            .init(
                issuer: server.issuer, clientId: "latchkey-demo", nonce: nil,
                accessToken: refreshed["access_token"] as? String))
        #expect(claims["sub"]?.stringValue != nil)
        let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(discovery["id_token_signing_alg_values_supported"] as? [String] == ["RS256", "ES256"])
    }

    @Test("RS256 stays the default; anything but RS256 or ES256 is refused in the configuration")
    func defaultsAndRefusals() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        #expect(try CompactJWS(parsing: try #require(try await server.tokens().idToken)).header.alg == "RS256")
        for alg in ["HS256", "none", "EdDSA", "PS256"] {
            let json = #"{"client_id": "x", "redirect_uris": ["http://127.0.0.1/callback"], "id_token_signed_response_alg": "\#(alg)"}"#
            #expect(throws: DecodingError.self, "\(alg)") { try JSONDecoder().decode(ClientConfiguration.self, from: Data(json.utf8)) }
        }
        let es = try JSONDecoder().decode(ClientConfiguration.self, from: Data(#"{"client_id": "x", "id_token_signed_response_alg": "ES256"}"#.utf8))
        #expect(es.idTokenSignedResponseAlg == .es256)
    }
}
