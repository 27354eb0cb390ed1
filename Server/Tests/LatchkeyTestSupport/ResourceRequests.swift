import Foundation
import LatchkeyServer
import Testing

/// Helpers for the self-service and SCIM suites: a server with an administrator scope and a second user, tokens
/// for any user and scope, and JSON requests with a bearer token.
extension TestServer {
    package static let adaPassword = "ada's analytical engine"

    /// The usual test server plus: `scim.admin` allowed for `latchkey-demo` (users) and `backend` (client
    /// credentials); the demo user holds the `admin` role (the scope alone administers nothing); users
    /// `ada@example.com` and `grace+ops@example.com` (no role).
    package static func startForProfiles(_ more: (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        try await start { configuration in
            more(&configuration)
            configuration.clients = configuration.clients.map { client in
                var client = client
                if ["latchkey-demo", "backend"].contains(client.clientId) { client.scopes.append("scim.admin") }
                return client
            }
            configuration.users = configuration.users.map { user in
                var user = user
                if user.username == "demo@example.com" { user.roles = ["admin"] }
                return user
            }
            configuration.users.append(
                UserSeed(
                    username: "ada@example.com", password: adaPassword,
                    claims: [
                        "email": "ada@example.com", "given_name": "Ada", "family_name": "Lovelace", "name": "Ada Lovelace"
                    ]))
            configuration.users.append(
                UserSeed(
                    username: "grace+ops@example.com", password: "grace's compiler password",
                    claims: ["email": "grace+ops@example.com"]))
        }
    }

    /// Signs `username` in through the hosted form and redeems the code, asking for `scope`.
    package func userTokens(
        username: String = "demo@example.com", password: String = "correct horse battery staple",
        scope: String = "openid profile email offline_access"
    ) async throws -> IssuedTokens {
        var options = AuthorizeOptions()
        options.scope = scope
        return try await tokens(TestBrowser(), options, username: username, password: password)
    }

    /// A client-credentials token of the confidential `backend` client.
    package func clientToken(scope: String) async throws -> String {
        let response = try await TestBrowser().postForm(
            base + "/oauth2/token", ["grant_type": "client_credentials", "scope": scope],
            headers: ["Authorization": basicAuth("backend", "backend-secret-0123456789")])
        #expect(response.status == 200, "client credentials failed: \(response.text)")
        return try #require(try response.json()["access_token"] as? String)
    }

    /// Revokes an access token as its public client would.
    package func revoke(_ token: String) async throws {
        let response = try await TestBrowser().postForm(base + "/oauth2/revoke", ["token": token, "client_id": "latchkey-demo"])
        #expect(response.status == 200)
    }

    /// One request with an optional bearer token and JSON body (any method, over real loopback HTTP).
    package func call(
        _ method: String, _ path: String, token: String?, json: Any? = nil, body: Data? = nil,
        contentType: String = "application/scim+json", headers: [String: String] = [:]
    ) async throws -> HTTPResult {
        var fields = headers
        if let token { fields["Authorization"] = "Bearer \(token)" }
        var data = body
        if let json { data = try JSONSerialization.data(withJSONObject: json) }
        if data != nil { fields["Content-Type"] = contentType }
        return try await TestBrowser().send(base + path, method: method, body: data, headers: fields)
    }
}

extension HTTPResult {
    /// A member of the JSON body by path (`"name.givenName"`, `"emails.0.value"`).
    package func value(_ path: String) throws -> Any? {
        var current: Any? = try json()
        for part in path.split(separator: ".") {
            if let index = Int(part), let array = current as? [Any] {
                current = index < array.count ? array[index] : nil
            } else {
                current = (current as? [String: Any])?[String(part)]
            }
        }
        return current
    }

    package func string(_ path: String) throws -> String? { try value(path) as? String }
}
