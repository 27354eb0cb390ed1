import Foundation
import Hummingbird
import LatchkeyJOSE

/// Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3).
/// The method used must be the one the client registered; a public client may not present a secret.
struct ClientAuthenticator: Sendable {
    let store: any Store

    func authenticate(_ request: Request, _ params: Parameters) async throws -> ClientConfiguration {
        let basic = try Self.basicCredentials(request)
        let postId = try params.single("client_id")
        let postSecret = try params.single("client_secret")
        if basic != nil && postSecret != nil {
            throw OAuthError(.invalidRequest, "use only one client authentication method")
        }
        let method: ClientAuthMethod
        let clientId: String
        let secret: String?
        if let basic {
            method = .clientSecretBasic; clientId = basic.id; secret = basic.secret
            if let postId, postId != basic.id { throw OAuthError(.invalidRequest, "client_id does not match the Authorization header") }
        } else if let postId {
            clientId = postId; secret = postSecret
            method = postSecret == nil ? .none : .clientSecretPost
        } else {
            throw OAuthError(.invalidClient, "client authentication is required")
        }
        guard let record = try await store.client(id: clientId) else {
            throw OAuthError(.invalidClient, "unknown client")
        }
        guard record.configuration.tokenEndpointAuthMethod == method else {
            throw OAuthError(.invalidClient, "the client must authenticate with \(record.configuration.tokenEndpointAuthMethod.rawValue)")
        }
        if method != .none {
            guard let secret, let expected = record.secretHash, try await ClientSecrets.verify(secret, against: expected) else {
                throw OAuthError(.invalidClient, "client authentication failed")
            }
        }
        return record.configuration
    }

    /// `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))`.
    static func basicCredentials(_ request: Request) throws -> (id: String, secret: String)? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic ") else { return nil }
        guard let data = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":"),
              let id = String(text[..<colon]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
              let secret = String(text[text.index(after: colon)...]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
              !id.isEmpty
        else { throw OAuthError(.invalidClient, "malformed Basic credentials") }
        return (id, secret)
    }
}
