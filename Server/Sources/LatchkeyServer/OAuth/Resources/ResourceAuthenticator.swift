import Foundation
import Hummingbird
import LatchkeyJOSE

/// Authenticates requests to protected resources by their access token: Bearer (RFC 6750) or DPoP-bound (RFC 9449
/// §7.1), with the binding enforced.
struct ResourceAuthenticator: Sendable {
    let kit: TokenKit
    let dpop: DPoPVerifier

    private var validator: TokenValidator { kit.validator }
    private var store: any UserStore & ClientStore { kit.store }

    /// How a resource request presents its access token: `Bearer` (RFC 6750: header or form body) or `DPoP` (RFC 9449
    /// §7.1, header only).
    struct PresentedToken {
        var token: String
        var scheme: OAuthError.Challenge
    }

    func presentedAccessToken(_ request: Request, body: Parameters?) throws(OAuthError) -> PresentedToken {
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("dpop ") {
            let token = header.dropFirst(5).trimmingCharacters(in: .whitespaces)
            guard !token.isEmpty else { throw OAuthError(.invalidToken, "expected Authorization: DPoP <access token>", challenge: .dpop) }
            if try body?.single("access_token") != nil { throw OAuthError(.invalidRequest, "send the access token only once") }
            return PresentedToken(token: token, scheme: .dpop)
        }
        return PresentedToken(token: try bearerToken(request, body: body), scheme: .bearer)
    }

    /// The claims of a resource request's access token, with its DPoP binding enforced: a token bound to a key
    /// (`cnf.jkt`) is accepted only as `Authorization: DPoP` with a proof by that key for this request and this token;
    /// an unbound token only as a Bearer token.
    /// Bearer token from the header (RFC 6750 §2.1) or, for POST, the form body (§2.2) — not both.
    func bearerToken(_ request: Request, body: Parameters?) throws(OAuthError) -> String {
        let header = request.headers[.authorization]
        let fromBody = try body?.single("access_token")
        if let header {
            guard fromBody == nil else { throw OAuthError(.invalidRequest, "send the access token only once") }
            guard header.lowercased().hasPrefix("bearer "), case let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces), !token.isEmpty
            else {
                throw OAuthError(.invalidToken, "expected Authorization: Bearer <access token>")
            }
            return token
        }
        guard let fromBody else { throw OAuthError(.invalidToken, "an access token is required") }
        return fromBody
    }

    func authenticateResource(_ request: Request, body: Parameters?) async throws(OAuthError) -> AccessTokenClaims {
        let presented = try presentedAccessToken(request, body: body)
        let claims: AccessTokenClaims
        do { claims = try await validator.resourceAccessToken(presented.token) } catch {
            var refused = error
            if presented.scheme == .dpop { refused.challenge = .dpop }
            throw refused
        }
        try await enforceBinding(presented, claims: claims, request: request)
        return claims
    }

    /// `presented`'s scheme and proof against the token's binding (`cnf.jkt`).
    func enforceBinding(_ presented: PresentedToken, claims: AccessTokenClaims, request: Request) async throws(OAuthError) {
        switch (presented.scheme, claims.cnf?.jkt) {
        case (.bearer, nil):
            return
        case (.bearer, _?):
            throw OAuthError(.invalidToken, "the access token is bound to a DPoP key: send it as Authorization: DPoP with a proof", challenge: .dpop)
        case (.dpop, nil):
            throw OAuthError(.invalidToken, "the access token is not bound to a key: send it as a Bearer token", challenge: .dpop)
        case (.dpop, let bound?):
            guard let proof = try dpop.proof(request, challenge: .dpop) else {
                throw OAuthError(.invalidDPoPProof, "a DPoP proof is required with a DPoP-bound token", challenge: .dpop)
            }
            let key = try await dpop.verifyProof(proof, request: request, accessToken: presented.token, challenge: .dpop)
            guard Secrets.constantTimeEquals(key, bound) else {
                throw OAuthError(.invalidDPoPProof, "the DPoP proof was made with another key than the token is bound to", challenge: .dpop)
            }
        }
    }

    /// Authenticates the bearer access token of a resource request (RFC 6750 §2.1, header only: these endpoints take
    /// JSON bodies, so §2.2 form-body tokens do not apply).
    ///
    /// Only access tokens are accepted. Unlike the thunderID server, which takes any JWT it signed, flow assertions
    /// and ID tokens are refused: they are not meant as API credentials, and an ID token in particular travels to
    /// places (logs, front ends) where an access token would not. The token must also be meant for this server
    /// (`aud`): one obtained by token exchange for another API must not work here. A disabled user's token is dead.
    ///
    /// `resolvingTrust`: also read whose application the token was issued to (`ResourceCaller.trust`), which only the
    /// account-management routes need; elsewhere it stays `.thirdParty` and costs no lookup.
    func resourceCaller(_ request: Request, resolvingTrust: Bool = false) async throws(OAuthError) -> ResourceCaller {
        let claims = try await authenticateResource(request, body: nil)
        let subject: ResourceCaller.Subject
        do {
            if let user = try await store.user(id: claims.sub) {
                guard !user.disabled else { throw OAuthError(.invalidToken, "the user can no longer sign in") }
                subject = .user(user)
            } else if claims.sub == claims.clientId {
                subject = .client  // client credentials put the client id in `sub`
            } else if try await store.client(id: claims.sub) != nil {
                subject = .client  // a client's own token exchanged by another client keeps the first client in `sub`
            } else {
                subject = .missingUser
            }
        } catch let error as OAuthError {
            throw error
        } catch {
            throw OAuthError(.serverError, "could not look up the token's subject")
        }
        var caller = ResourceCaller(claims: claims, subject: subject)
        guard resolvingTrust else { return caller }
        do {
            if let record = try await store.client(id: claims.clientId) { caller.trust = ApplicationTrust(record) }
        } catch {
            throw OAuthError(.serverError, "could not look up the token's application")
        }
        return caller
    }
}
