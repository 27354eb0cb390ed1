import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// RFC 9449 §10: an authorization code bound to a DPoP key, by `dpop_jkt` at the authorization endpoint or by the
/// DPoP proof of a pushed request, is redeemed only with a proof by that key. Follows the OpenID conformance suite's
/// FAPI 2.0 modules `fapi2-security-profile-final-par-attempt-to-use-request-uri-with-dpop-jkt-mismatch`-style checks
/// (a code pushed with one key's proof redeemed with another key's proof is refused) and RFC 9126's method rule.
@Suite("DPoP: authorization codes bound to a key (RFC 9449 §10)")
struct DPoPCodeBindingTests {
    static func thumbprint(_ key: SigningKey) throws -> String { try key.publicJWK().thumbprint() }

    /// The code of a sign-in whose authorization request carried `extra`, and its options.
    static func code(_ server: TestServer, extra: [String: String] = [:]) async throws -> (String, AuthorizeOptions) {
        var o = AuthorizeOptions()
        o.extra = extra
        let query = try await server.signIn(TestBrowser(), o)
        return (try #require(query["code"]), o)
    }

    /// The token request for `code`, proved by `key` (none: no proof).
    static func redeem(_ server: TestServer, _ code: String, _ o: AuthorizeOptions, key: SigningKey?) async throws -> HTTPResult {
        var headers: [String: String] = [:]
        if let key { headers["DPoP"] = try DPoPTests.proof(key, method: "POST", url: server.issuer + "/oauth2/token") }
        var form = ["grant_type": "authorization_code", "code": code, "redirect_uri": o.redirectUri, "client_id": o.clientId]
        form["code_verifier"] = o.pkce?.verifier
        return try await TestBrowser().postForm(server.base + "/oauth2/token", form, headers: headers)
    }

    @Test func dpopJktAtTheAuthorizationEndpointBindsTheCode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try SigningKey.generate(.es256), other = try SigningKey.generate(.es256)
        let jkt = try Self.thumbprint(key)

        let (first, o1) = try await Self.code(server, extra: ["dpop_jkt": jkt])
        let wrongKey = try await Self.redeem(server, first, o1, key: other)
        #expect(try wrongKey.status == 400 && wrongKey.json()["error"] as? String == "invalid_dpop_proof", "\(wrongKey.text)")

        let (second, o2) = try await Self.code(server, extra: ["dpop_jkt": jkt])
        let noProof = try await Self.redeem(server, second, o2, key: nil)
        #expect(try noProof.status == 400 && noProof.json()["error"] as? String == "invalid_dpop_proof")

        let (third, o3) = try await Self.code(server, extra: ["dpop_jkt": jkt])
        let right = try await Self.redeem(server, third, o3, key: key)
        #expect(right.status == 200, "\(right.text)")
        #expect(try right.json()["token_type"] as? String == "DPoP")
        let claims = try CompactJWS(parsing: try #require(try right.json()["access_token"] as? String)).claims(as: [String: JSONValue].self)
        guard case .object(let cnf)? = claims["cnf"] else { Issue.record("no cnf"); return }
        #expect(cnf["jkt"]?.stringValue == jkt)

        // A malformed dpop_jkt is refused at the authorization endpoint (back to the redirect URI).
        var bad = AuthorizeOptions()
        bad.extra = ["dpop_jkt": "not-a-thumbprint"]
        let refused = try await TestBrowser().get(server.authorizeURL(bad))
        #expect(refused.location?.contains("error=invalid_request") == true, "\(refused.status) \(refused.location ?? "")")
    }

    @Test func aPushedRequestWithAProofBindsTheCodeToItsKey() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try SigningKey.generate(.es256), other = try SigningKey.generate(.es256)
        let par = server.issuer + "/oauth2/par"
        func push(_ o: AuthorizeOptions, proofKey: SigningKey?, extra: [String: String] = [:]) async throws -> HTTPResult {
            var headers: [String: String] = [:]
            if let proofKey { headers["DPoP"] = try DPoPTests.proof(proofKey, method: "POST", url: par) }
            return try await PushedAuthorizationTests.push(server, PushedAuthorizationTests.form(o).merging(extra) { $1 }, headers: headers)
        }
        func signIn(_ pushed: HTTPResult) async throws -> String {
            let requestURI = try #require(try pushed.json()["request_uri"] as? String)
            let callback = try await server.browse(URL(string: PushedAuthorizationTests.authorizeURL(server, requestURI: requestURI))!)
            return try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "code" }?.value)
        }
        // Pushed with one key's proof, redeemed with another key's proof: refused (it was 200 before).
        let o1 = AuthorizeOptions()
        let code1 = try await signIn(try await push(o1, proofKey: key))
        let stolen = try await Self.redeem(server, code1, o1, key: other)
        #expect(try stolen.status == 400 && stolen.json()["error"] as? String == "invalid_dpop_proof", "\(stolen.text)")
        // With the same key: tokens bound to it.
        let o2 = AuthorizeOptions()
        let code2 = try await signIn(try await push(o2, proofKey: key))
        #expect(try await Self.redeem(server, code2, o2, key: key).status == 200)
        // A dpop_jkt that contradicts the proof is refused at PAR.
        let contradicting = try await push(AuthorizeOptions(), proofKey: key, extra: ["dpop_jkt": try Self.thumbprint(other)])
        #expect(try contradicting.status == 400 && contradicting.json()["error"] as? String == "invalid_dpop_proof")
        // A proof for another endpoint is refused at PAR.
        let elsewhere = try await PushedAuthorizationTests.push(
            server, PushedAuthorizationTests.form(AuthorizeOptions()),
            headers: ["DPoP": try DPoPTests.proof(key, method: "POST", url: server.issuer + "/oauth2/token")])
        #expect(elsewhere.status == 400)
        // Without a proof and without dpop_jkt the code is not bound (DPoP stays optional for this client).
        let o3 = AuthorizeOptions()
        let code3 = try await signIn(try await push(o3, proofKey: nil))
        #expect(try await Self.redeem(server, code3, o3, key: nil).status == 200)
    }

    @Test func parAnswersOtherMethodsWith405() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for method in ["GET", "PUT", "DELETE"] {
            let answer = try await TestBrowser().send(server.base + "/oauth2/par", method: method, body: nil, headers: [:])
            #expect(answer.status == 405, "\(method)")
            #expect(answer.header("Allow") == "POST", "\(method)")
        }
    }
}
