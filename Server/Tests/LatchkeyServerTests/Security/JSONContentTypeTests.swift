import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// JSON endpoints refuse bodies not declared JSON. A cross-site page can POST `<form enctype="text/plain">` (whose
/// body can be valid JSON) or `fetch` an untyped Blob without a CORS preflight; neither may reach an endpoint that acts
/// on JSON (sign in, send codes, start flows, change the profile).
@Suite("Security: JSON endpoints require a JSON Content-Type")
struct JSONContentTypeTests {
    /// The two "simple" shapes a cross-site page can send: `text/plain`, and no type at all.
    static let crossSiteTypes: [String?] = ["text/plain", nil]

    func post(
        _ server: TestServer, _ path: String, _ object: [String: Any], type: String?, method: String = "POST",
        token: String? = nil
    ) async throws -> HTTPResult {
        var headers: [String: String] = [:]
        if let type { headers["Content-Type"] = type }
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try await TestBrowser().send(
            server.base + path, method: method, body: try JSONSerialization.data(withJSONObject: object),
            headers: headers)
    }

    @Test("reachFive: a text/plain (or untyped) JSON password login is 415 and signs nobody in")
    func reachFive() async throws {
        let server = try await TestServer.startForNativeLogin(bundleId: "io.latchkey.demo")
        defer { Task { await server.stop() } }
        let login: [String: Any] = ["email": "demo@example.com", "password": "correct horse battery staple", "client_id": "latchkey-demo"]
        for type in Self.crossSiteTypes {
            let response = try await post(server, "/identity/v1/password/login", login, type: type)
            #expect(response.status == 415, "\(type ?? "no type")")
            #expect(try response.json()["tkn"] == nil)
            #expect(try response.json()["error_message_key"] as? String == "error.request")
        }
        // Declared JSON (with a charset parameter), the same body signs in.
        let json = try await post(server, "/identity/v1/password/login", login, type: "application/json; charset=utf-8")
        #expect(try json.status == 200 && (try json.json()["tkn"] as? String) != nil)
    }

    @Test("flows: a text/plain (or untyped) flow request is 415 and starts nothing")
    func flows() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let start: [String: Any] = ["applicationId": "latchkey-demo", "flowType": "RECOVERY", "inputs": ["username": "demo@example.com"]]
        for type in Self.crossSiteTypes {
            let response = try await post(server, "/flow/execute", start, type: type)
            #expect(response.status == 415, "\(type ?? "no type")")
            #expect(response.flowStatus == nil && (try? response.string("executionId")) == nil)
        }
        #expect(try await server.server.outboxMessages(recipient: "demo@example.com").isEmpty, "no recovery email was sent")
        #expect(try await post(server, "/flow/execute", start, type: "application/json").flowStatus == "INCOMPLETE")
    }

    @Test("self-service and SCIM: a text/plain (or untyped) profile change is 415 and changes nothing")
    func selfService() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let token = try await server.userTokens().accessToken
        for type in Self.crossSiteTypes {
            let me = try await post(
                server, "/users/me", ["attributes": ["username": "demo@example.com", "given_name": "Mallory"]],
                type: type, method: "PUT", token: token)
            #expect(me.status == 415, "\(type ?? "no type")")
            let scim = try await post(
                server, "/scim2/Me",
                [
                    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                    "userName": "demo@example.com", "name": ["givenName": "Mallory"]
                ],
                type: type, method: "PUT", token: token)
            #expect(scim.status == 415, "\(type ?? "no type")")
            // The email-change endpoints (each request mails a code) read the same way.
            let email = try await post(server, "/users/me/email", ["email": "mallory@evil.example"], type: type, method: "POST", token: token)
            #expect(email.status == 415, "\(type ?? "no type")")
        }
        #expect(try await server.server.outboxMessages(recipient: "mallory@evil.example").isEmpty)
        #expect(try await server.call("GET", "/users/me", token: token).string("attributes.given_name") == "Demo")
    }
}
