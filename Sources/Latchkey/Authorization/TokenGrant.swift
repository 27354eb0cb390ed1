import Foundation

/// One request to the token endpoint, as a value: the grant and what it carries. The only place the SDK spells the
/// endpoint's parameter names (RFC 6749 §4.1.3 and §6, RFC 7636 §4.5, RFC 8628 §3.4, RFC 8693 §2.1); every caller
/// builds one of these and `OAuthClient.tokenRequest(_:proof:)` sends it as a public client (`client_id`, no secret).
enum TokenGrant: Sendable, Equatable {
    /// Redeems an authorization code with the PKCE verifier of the request that obtained it.
    case authorizationCode(code: String, redirectURI: String, codeVerifier: String)
    /// Rotates a refresh token.
    case refreshToken(String)
    /// Polls for a device authorization's tokens.
    case deviceCode(String)
    /// Exchanges a token for others (RFC 8693).
    case tokenExchange(TokenExchange)

    /// What a token exchange sends besides the grant type.
    struct TokenExchange: Sendable, Equatable {
        var subjectToken: String
        var subjectTokenType: String
        var audience: String? = nil
        var scope: [String]? = nil
        var requestedTokenType: String? = nil
    }

    /// RFC 8693's grant type, and its token type for a JWT subject (an app-native flow's assertion).
    static let tokenExchangeGrantType = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let jwtTokenType = "urn:ietf:params:oauth:token-type:jwt"

    /// The form parameters, in the order they are sent, for the public client `clientId`.
    func parameters(clientId: String) -> [(String, String)] {
        switch self {
        case .authorizationCode(let code, let redirectURI, let verifier):
            return [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("client_id", clientId),
                ("code_verifier", verifier)
            ]
        case .refreshToken(let token):
            return [("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", clientId)]
        case .deviceCode(let code):
            return [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", code), ("client_id", clientId)]
        case .tokenExchange(let exchange):
            var parameters = [
                ("grant_type", Self.tokenExchangeGrantType), ("client_id", clientId), ("subject_token", exchange.subjectToken),
                ("subject_token_type", exchange.subjectTokenType)
            ]
            if let audience = exchange.audience { parameters.append(("audience", audience)) }
            if let scope = exchange.scope { parameters.append(("scope", scope.joined(separator: " "))) }
            if let requested = exchange.requestedTokenType { parameters.append(("requested_token_type", requested)) }
            return parameters
        }
    }
}
