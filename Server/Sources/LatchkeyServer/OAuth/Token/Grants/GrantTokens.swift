import Foundation

/// What the grants mint with: the token issuer and validator of the issuer in force at each request, and the refresh
/// tokens a grant that starts a token family hands out first.
struct GrantTokens: Sendable {
    private let kit: TokenKit
    /// Refresh tokens and token families.
    private let store: any TokenStore

    init(kit: TokenKit) {
        self.kit = kit
        self.store = kit.store
    }

    /// The issuer in force (it may change while the server runs).
    var issuer: String { kit.issuer }
    var clock: ServerClock { kit.clock }
    var issuing: TokenIssuer { kit.issuing }
    var validator: TokenValidator { kit.validator }

    /// Access token, ID token (with `openid`) and, when given a family, its first refresh token (for a client allowed
    /// the refresh grant).
    func issue(_ grant: TokenIssuer.Grant, client: ClientConfiguration, newRefreshInFamily familyId: String?) async throws -> TokenResponse {
        let tokens = issuing
        let access = try await tokens.accessToken(for: grant, client: client)
        let idToken = try await tokens.idToken(for: grant, client: client, accessToken: access.token)
        var refresh: String?
        if let familyId, client.grantTypes.contains(.refreshToken) {
            let minted = tokens.refreshToken(for: grant, familyId: familyId)
            try await store.insertRefreshToken(minted.record)
            refresh = minted.token
        }
        return TokenResponse(
            accessToken: access.token, expiresIn: access.expiresIn, refreshToken: refresh, idToken: idToken,
            scope: grant.scope.joined(separator: " "))
    }
}
