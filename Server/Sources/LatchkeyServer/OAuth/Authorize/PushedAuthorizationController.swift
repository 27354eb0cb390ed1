import Foundation
import Hummingbird

/// Pushed authorization requests (RFC 9126): the client posts its authorization request to the server directly
/// (authenticated as at the token endpoint), and the browser carries only an opaque, short-lived, single-use
/// `request_uri` — no parameter of the request travels in its address, history or logs.
struct PushedAuthorizationController: Sendable {
    let store: any PushedRequestStore
    let clock: ServerClock
    let admission: Admission
    let clientAuthentication: ClientAuthentication
    let dpop: DPoPVerifier
    let issuer: @Sendable () -> String
    /// The keys request objects are verified with.
    let keys: ClientKeySets

    static let requestURIPrefix = "urn:ietf:params:oauth:request_uri:"
    /// How long a `request_uri` may wait for the browser (RFC 9126 §2.2 suggests a short time).
    static let pushedRequestLifetime = 60
    /// Client credentials are checked here and never stored with the request.
    private static let credentialParameters: Set<String> = ["client_secret", "client_assertion", "client_assertion_type"]

    func addRoutes(to mount: OAuthMount) {
        mount.routes.post("par") { request, context in
            // Each pushed request is stored until it is used or expires: counted per address like authorize.
            try await admission.admitStart(address: context.clientAddress)
            return try await self.pushAuthorizationRequest(request, try await Parameters.body(of: request), context: context)
        }
        // RFC 9126 §2: requests are POSTed; any other method is 405 with the method that is allowed.
        mount.refuseMethodsOtherThanPost(at: "par")
    }

    private func pushAuthorizationRequest(_ request: Request, _ given: Parameters, context: LatchkeyRequestContext) async throws -> Response {
        let client = try await clientAuthentication.authenticate(request, given, context: context)
        // A signed request object (RFC 9101 with RFC 9126 §3) is the request; client credentials stay outside it.
        var params = given
        if let object = try given.single("request") {
            var resolved = try await RequestObject.parameters(
                object, client: client, outerClientId: try given.single("client_id") ?? client.clientId, issuer: issuer(), now: clock.now,
                keys: keys)
            if resolved.values["client_id"] == nil { resolved = Parameters(resolved.values.merging(["client_id": [client.clientId]]) { $1 }) }
            params = resolved
        }
        if try params.single("request_uri") != nil { throw OAuthError(.invalidRequest, "a pushed request cannot itself carry request_uri") }
        // One-time sign-in proofs go to the authorization endpoint directly; they are never kept in a pushed request.
        for proof in ["tkn", "id_token"] where try params.single(proof) != nil {
            throw OAuthError(.invalidRequest, "\(proof) is not accepted in a pushed request")
        }
        guard let redirectUri = try params.single("redirect_uri"), RedirectURIMatcher.isRegistered(redirectUri, in: client.redirectUris) else {
            throw OAuthError(.invalidRequest, "redirect_uri is missing or not registered for this client")
        }
        // The same checks as at the authorization endpoint, answered here (the client can still fix its request).
        let validated = try AuthorizationRequest(validating: params, client: client, redirectUri: redirectUri, state: try params.single("state"))
        // RFC 9449 §10.1: a pushed request made with a DPoP proof binds the code to the proof's key; a dpop_jkt sent
        // too must name that key.
        var boundKey = validated.dpopJkt
        if let proof = try dpop.proof(request, challenge: nil) {
            let proved = try await dpop.verifyProof(proof, request: request, accessToken: nil, challenge: nil)
            if let named = validated.dpopJkt, !Secrets.constantTimeEquals(named, proved) {
                throw OAuthError(.invalidDPoPProof, "dpop_jkt does not name the key of the request's DPoP proof")
            }
            boundKey = proved
        }
        let requestURI = Self.requestURIPrefix + Secrets.token()
        var stored = params.values.filter { !Self.credentialParameters.contains($0.key) }
        stored["client_id"] = [client.clientId]  // a client that authenticated with HTTP Basic may not have sent it
        if let boundKey { stored["dpop_jkt"] = [boundKey] }
        try await store.insertPushedRequest(
            PushedRequestRecord(
                uriHash: Secrets.digest(requestURI), clientId: client.clientId, parameters: stored,
                expiresAt: clock.now.addingTimeInterval(TimeInterval(Self.pushedRequestLifetime))))
        struct Pushed: Encodable {
            var requestURI: String
            var expiresIn: Int
            enum CodingKeys: String, CodingKey { case requestURI = "request_uri", expiresIn = "expires_in" }
        }
        return try Responses.json(Pushed(requestURI: requestURI, expiresIn: Self.pushedRequestLifetime), status: .created, noStore: true)
    }
}
