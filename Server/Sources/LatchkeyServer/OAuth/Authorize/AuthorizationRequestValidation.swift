import Foundation

extension AuthorizationRequest {
    /// What an authorization request asks, checked against its client once the client and redirect URI are known good
    /// (`AuthorizationRequestResolver`): the response type and mode, the grants they need, scope, PKCE S256, prompt,
    /// nonce, `state`, `max_age`, `dpop_jkt` and the `claims` request. Used by the authorization endpoint and by PAR,
    /// which validates a request when it is pushed.
    init(validating params: Parameters, client: ClientConfiguration, redirectUri: String, state: String?) throws(OAuthError) {
        if try params.single("request") != nil { throw OAuthError(.invalidRequestObject, "a request object is resolved before it is validated") }
        if try params.single("request_uri") != nil {
            throw OAuthError(.requestURINotSupported, "request_uri is resolved before the request is validated")
        }
        guard let typeName = try params.single("response_type") else {
            throw OAuthError(.invalidRequest, "response_type is missing (RFC 6749 §4.1.1)")
        }
        guard let type = ResponseType(parameter: typeName) else {
            throw OAuthError(
                .unsupportedResponseType,
                "response_type must be one of \(ResponseType.listed())")
        }
        guard client.responseTypes.contains(type) else {
            throw OAuthError(
                .unauthorizedClient,
                type == .code
                    ? "the client may not use the authorization code grant"
                    : "the client may not use response_type \(type.rawValue) (its response_types: \(ResponseType.listed(client.responseTypes)))")
        }
        let responseMode = try params.single("response_mode") ?? type.defaultResponseMode
        switch responseMode {
        case ResponseMode.query:
            // OAuth 2.0 Multiple Response Type Encoding Practices §5: tokens never go in the query.
            if type.isFrontChannel { throw OAuthError(.invalidRequest, "response_mode=query cannot carry tokens: use fragment or form_post") }
        case ResponseMode.fragment:
            break
        case ResponseMode.formPost:
            guard FormPostResponse.accepts(redirectUri: redirectUri) else {
                throw OAuthError(.invalidRequest, "response_mode=form_post needs an http(s) redirect_uri")
            }
        default:
            throw OAuthError(.invalidRequest, "response_mode must be query, fragment or form_post")
        }
        if let missing = type.grantTypes.first(where: { !client.grantTypes.contains($0) }) {
            throw OAuthError(
                .unauthorizedClient,
                missing == .authorizationCode ? "the client may not use the authorization code grant" : "the client may not use the implicit grant")
        }
        let requested = (try params.single("scope"))?.split(separator: " ").map(String.init) ?? client.scopes
        let unknown = requested.filter { !client.scopes.contains($0) }
        guard unknown.isEmpty else { throw OAuthError(.invalidScope, "scope not allowed for this client: \(unknown.joined(separator: " "))") }

        let challenge = try params.single("code_challenge")
        let method = try params.single("code_challenge_method")
        if let challenge {
            guard (method ?? "plain") == "S256" else { throw OAuthError(.invalidRequest, "code_challenge_method must be S256") }
            guard PKCE.isValidChallenge(challenge) else { throw OAuthError(.invalidRequest, "code_challenge is not a base64url SHA-256 value") }
        } else {
            if method != nil { throw OAuthError(.invalidRequest, "code_challenge_method without code_challenge") }
            // No code, nothing to prove: the implicit flow's tokens come back in the response itself.
            if type.issuesCode, client.isPublic || client.requirePKCE {
                throw OAuthError(.invalidRequest, "PKCE is required: send code_challenge with code_challenge_method=S256")
            }
        }
        let prompt = (try params.single("prompt"))?.split(separator: " ").map(String.init) ?? []
        if prompt.contains("none") && prompt.count > 1 { throw OAuthError(.invalidRequest, "prompt=none cannot be combined") }
        if let unsupported = prompt.first(where: { !["none", "login", "consent", "select_account"].contains($0) }) {
            throw OAuthError(.invalidRequest, "unsupported prompt value \(unsupported)")
        }
        let nonce = try params.single("nonce")
        if let nonce, nonce.utf8.count > 255 { throw OAuthError(.invalidRequest, "nonce is longer than 255 characters") }
        if type.isFrontChannel {
            // OpenID Connect Core §3.2.2.1 and §3.3.2.11: an ID token in the front channel is replayable without a
            // nonce, and these flows are OpenID Connect's.
            guard requested.contains("openid") else {
                throw OAuthError(.invalidRequest, "response_type \(type.rawValue) is OpenID Connect's: the scope must contain openid")
            }
            guard nonce != nil else { throw OAuthError(.invalidRequest, "response_type \(type.rawValue) requires a nonce") }
        }
        if let state, state.utf8.count > 1024 { throw OAuthError(.invalidRequest, "state is longer than 1024 characters") }
        var maxAge: Int?
        if let raw = try params.single("max_age") {
            guard let value = Int(raw), value >= 0 else { throw OAuthError(.invalidRequest, "max_age must be a non-negative integer") }
            maxAge = value
        }
        // RFC 9449 §10: the code is bound to this DPoP key; the token request must be proved by it.
        let dpopJkt = try params.single("dpop_jkt")
        if let dpopJkt, !DPoP.isThumbprint(dpopJkt) {
            throw OAuthError(.invalidRequest, "dpop_jkt is not a base64url SHA-256 JWK thumbprint (RFC 7638)")
        }
        var authorization = AuthorizationRequest(
            clientId: client.clientId, redirectUri: redirectUri, scope: requested, state: state, nonce: nonce,
            codeChallenge: challenge, loginHint: try params.single("login_hint"),
            uiLocales: try params.single("ui_locales"), maxAge: maxAge, prompt: prompt)
        authorization.dpopJkt = dpopJkt
        authorization.responseMode = responseMode == ResponseMode.query ? nil : responseMode
        authorization.responseType = type == .code ? nil : type
        // OpenID Connect Core §5.5 and §3.1.2.1: the claims asked for, `acr_values` as a voluntary `acr` request.
        var claims = try params.single("claims").map { text throws(OAuthError) in try ClaimsRequest(parameter: text) } ?? ClaimsRequest()
        claims.add(acrValues: (try params.single("acr_values"))?.split(separator: " ").map(String.init) ?? [])
        claims.restrict(toScopes: client.scopes)
        authorization.claims = claims.stored
        self = authorization
    }
}
