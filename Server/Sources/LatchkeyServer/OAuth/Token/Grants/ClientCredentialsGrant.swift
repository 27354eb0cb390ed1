import Foundation

/// `client_credentials` (RFC 6749 §4.4): a confidential client acting for itself, within its own scopes (never
/// `openid` or `offline_access`: there is no person and no session).
struct ClientCredentialsGrant: GrantHandler {
    let tokens: GrantTokens

    func tokens(for request: GrantRequest) async throws -> TokenResponse {
        let client = request.client
        guard !client.isPublic else { throw OAuthError(.unauthorizedClient, "client_credentials requires a confidential client") }
        let allowed = client.scopes.filter { !["openid", "offline_access"].contains($0) }
        let requested = try request.parameters.single("scope")?.split(separator: " ").map(String.init) ?? allowed
        guard requested.allSatisfy(allowed.contains) else { throw OAuthError(.invalidScope, "scope not allowed for client_credentials") }
        let access = try await tokens.issuing.accessToken(
            for: .init(user: nil, subject: client.clientId, clientId: client.clientId, scope: requested, dpop: request.dpop), client: client)
        return TokenResponse(accessToken: access.token, expiresIn: access.expiresIn, scope: requested.joined(separator: " "))
    }
}
