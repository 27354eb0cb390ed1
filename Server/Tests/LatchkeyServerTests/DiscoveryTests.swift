import LatchkeyTestSupport
import Foundation
import LatchkeyJOSE
import Testing

@Suite("Discovery, JWKS and error dialects")
struct DiscoveryTests {
    @Test func discoveryDocumentDescribesTheServer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let doc = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(doc["issuer"] as? String == server.issuer)
        #expect(server.issuer == "http://127.0.0.1:\(server.port)")
        #expect(doc["authorization_endpoint"] as? String == server.issuer + "/oauth2/authorize")
        #expect(doc["token_endpoint"] as? String == server.issuer + "/oauth2/token")
        #expect(doc["jwks_uri"] as? String == server.issuer + "/oauth2/jwks")
        #expect(doc["end_session_endpoint"] as? String == server.issuer + "/oauth2/logout")
        #expect(doc["code_challenge_methods_supported"] as? [String] == ["S256"])
        #expect(doc["authorization_response_iss_parameter_supported"] as? Bool == true)
        #expect((doc["grant_types_supported"] as? [String])?.contains("urn:ietf:params:oauth:grant-type:token-exchange") == true)
        let oauthServer = try await TestBrowser().get(server.base + "/.well-known/oauth-authorization-server").json()
        #expect(oauthServer["issuer"] as? String == server.issuer)
    }

    @Test func jwksPublishesAnES256AndAnRS256Key() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for path in ["/oauth2/jwks", "/oauth/jwks", "/.well-known/jwks.json"] {
            let set = try JSONDecoder().decode(JWKSet.self, from: try await TestBrowser().get(server.base + path).body)
            #expect(Set(set.keys.compactMap(\.alg)) == ["ES256", "RS256"], "\(path)")
            #expect(set.keys.allSatisfy { $0.kid != nil && $0.use == "sig" })
            #expect(set.keys.allSatisfy { $0.kid == $0.thumbprint() }, "kid is the RFC 7638 thumbprint")
        }
    }

    @Test func unknownPathsAnswerInTheDialectOfTheirPrefix() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let reachFive = try await TestBrowser().get(server.base + "/identity/v1/nothing")
        #expect(reachFive.status == 404)
        let r5 = try reachFive.json()
        for key in ["error", "error_id", "error_user_msg", "error_message_key", "error_description"] { #expect(r5[key] != nil, "\(key)") }

        let thunder = try await TestBrowser().get(server.base + "/flow/nothing")
        #expect(thunder.status == 404)
        let t = try thunder.json()
        #expect((t["code"] as? String)?.hasPrefix("SSE-") == true)
        #expect((t["message"] as? [String: Any])?["key"] != nil)
        #expect((t["message"] as? [String: Any])?["defaultValue"] != nil)
        #expect((t["description"] as? [String: Any])?["defaultValue"] != nil)

        let oauth = try await TestBrowser().postForm(server.base + "/oauth2/token", ["grant_type": "password", "client_id": "latchkey-demo"])
        #expect(oauth.status == 400)
        let o = try oauth.json()
        #expect(o["error"] as? String == "unauthorized_client" || o["error"] as? String == "unsupported_grant_type")
        #expect(o["error_description"] is String)
        #expect(o["error_user_msg"] == nil, "standard /oauth2 errors carry only the RFC 6749 members")
        #expect(oauth.header("Cache-Control") == "no-store")

        let page = try await TestBrowser().get(server.base + "/no/such/page")
        #expect(page.status == 404)
        #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
    }
}
