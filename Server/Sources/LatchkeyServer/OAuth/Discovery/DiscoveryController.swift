import Hummingbird
import LatchkeyJOSE

/// OpenID Provider Metadata (OIDC Discovery 1.0 §3, RFC 8414).
struct ProviderMetadata: Encodable {
    var issuer: String
    var authorizationEndpoint: String
    var tokenEndpoint: String
    var userinfoEndpoint: String
    var jwksUri: String
    var revocationEndpoint: String
    var introspectionEndpoint: String
    var endSessionEndpoint: String
    var scopesSupported = ["openid", "profile", "email", "phone", "address", "offline_access"]
    var responseTypesSupported = ["code"]
    var responseModesSupported = [ResponseMode.query, ResponseMode.formPost]
    var grantTypesSupported = GrantType.allCases.map(\.rawValue)
    /// Both, always: any application may be given pairwise subjects (`subject_type`), in the file or by registration.
    var subjectTypesSupported = SubjectType.allCases.map(\.rawValue)
    var idTokenSigningAlgValuesSupported = ["RS256", "ES256"]
    /// Signed UserInfo answers (`userinfo_signed_response_alg`).
    var userinfoSigningAlgValuesSupported = ["RS256", "ES256"]
    var tokenEndpointAuthMethodsSupported = ClientAuthMethod.allCases.map(\.rawValue)
    var revocationEndpointAuthMethodsSupported = ClientAuthMethod.allCases.map(\.rawValue)
    var introspectionEndpointAuthMethodsSupported = ClientAuthMethod.allCases.map(\.rawValue)
    /// `private_key_jwt` assertions (RFC 8414 §2): what `ClientAssertion` verifies, at every endpoint that
    /// authenticates clients.
    var tokenEndpointAuthSigningAlgValuesSupported = ClientAssertion.algorithmNames
    var revocationEndpointAuthSigningAlgValuesSupported = ClientAssertion.algorithmNames
    var introspectionEndpointAuthSigningAlgValuesSupported = ClientAssertion.algorithmNames
    var codeChallengeMethodsSupported = ["S256"]
    var claimsSupported =
        ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "c_hash", "azp", "sid", "amr", "acr"]
        + ScopeClaims.byScope.values.flatMap { $0 }.sorted()
    var acrValuesSupported = [AuthenticationMethods.multiFactorACR, AuthenticationMethods.singleFactorACR]
    var promptValuesSupported = ["none", "login"]
    var uiLocalesSupported = SupportedLocale.allCases.map(\.tag)
    var authorizationResponseIssParameterSupported = true
    var requestParameterSupported = true
    /// RFC 9101: request objects are signed with the client's keys (`jwks` or `jwks_uri`).
    var requestObjectSigningAlgValuesSupported = RequestObject.algorithms.map(\.rawValue)
    /// OpenID Connect Discovery §3: `request_uri` by reference (`RequestObjectReference`), only to a URL the client
    /// registered in `request_uris` (`require_request_uri_registration`), besides PAR's.
    var requestUriParameterSupported = true
    var requireRequestUriRegistration = true
    var claimsParameterSupported = true
    /// OpenID Connect Front-Channel Logout 1.0 §3 (`FrontChannelLogout`): frames get `iss` and `sid`.
    var frontchannelLogoutSupported = true
    var frontchannelLogoutSessionSupported = true
    /// OpenID Connect Back-Channel Logout 1.0 §2.1 (`BackChannelLogout`): logout tokens carry `sid`.
    var backchannelLogoutSupported = true
    var backchannelLogoutSessionSupported = true
    /// RFC 9449 §5.1.
    var dpopSigningAlgValuesSupported = DPoP.algorithms
    /// RFC 9126 §5.
    var pushedAuthorizationRequestEndpoint: String
    /// RFC 8628 §4.
    var deviceAuthorizationEndpoint: String
    /// RFC 7591 §3 (RFC 8414 §2): registration needs an initial access token unless the operator opened it.
    var registrationEndpoint: String

    /// `responseTypes`: every response type at least one application may use — those of the configuration file's
    /// applications and those registration may give (OpenID Connect Discovery §3); the `implicit` grant and the
    /// `fragment` mode are listed only beside a front-channel one.
    init(issuer: String, responseTypes: [ResponseType] = [.code]) {
        self.issuer = issuer
        let types = ResponseType.allCases.filter { $0 == .code || responseTypes.contains($0) }
        responseTypesSupported = types.map(\.rawValue)
        if types.contains(where: \.isFrontChannel) {
            responseModesSupported = [ResponseMode.query, ResponseMode.fragment, ResponseMode.formPost]
        } else {
            grantTypesSupported.removeAll { $0 == GrantType.implicit.rawValue }
        }
        authorizationEndpoint = issuer + "/oauth2/authorize"
        tokenEndpoint = issuer + "/oauth2/token"
        userinfoEndpoint = issuer + "/oauth2/userinfo"
        jwksUri = issuer + "/oauth2/jwks"
        revocationEndpoint = issuer + "/oauth2/revoke"
        introspectionEndpoint = issuer + "/oauth2/introspect"
        endSessionEndpoint = issuer + "/oauth2/logout"
        pushedAuthorizationRequestEndpoint = issuer + "/oauth2/par"
        deviceAuthorizationEndpoint = issuer + "/oauth2/device_authorization"
        registrationEndpoint = issuer + "/oauth2/register"
    }

    enum CodingKeys: String, CodingKey {
        case issuer, authorizationEndpoint = "authorization_endpoint", tokenEndpoint = "token_endpoint"
        case userinfoEndpoint = "userinfo_endpoint", jwksUri = "jwks_uri", revocationEndpoint = "revocation_endpoint"
        case introspectionEndpoint = "introspection_endpoint", endSessionEndpoint = "end_session_endpoint"
        case scopesSupported = "scopes_supported", responseTypesSupported = "response_types_supported"
        case responseModesSupported = "response_modes_supported", grantTypesSupported = "grant_types_supported"
        case subjectTypesSupported = "subject_types_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case userinfoSigningAlgValuesSupported = "userinfo_signing_alg_values_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case revocationEndpointAuthMethodsSupported = "revocation_endpoint_auth_methods_supported"
        case introspectionEndpointAuthMethodsSupported = "introspection_endpoint_auth_methods_supported"
        case tokenEndpointAuthSigningAlgValuesSupported = "token_endpoint_auth_signing_alg_values_supported"
        case revocationEndpointAuthSigningAlgValuesSupported = "revocation_endpoint_auth_signing_alg_values_supported"
        case introspectionEndpointAuthSigningAlgValuesSupported = "introspection_endpoint_auth_signing_alg_values_supported"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported", claimsSupported = "claims_supported"
        case acrValuesSupported = "acr_values_supported"
        case promptValuesSupported = "prompt_values_supported", uiLocalesSupported = "ui_locales_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case requestObjectSigningAlgValuesSupported = "request_object_signing_alg_values_supported"
        case requestParameterSupported = "request_parameter_supported", requestUriParameterSupported = "request_uri_parameter_supported"
        case requireRequestUriRegistration = "require_request_uri_registration"
        case claimsParameterSupported = "claims_parameter_supported", frontchannelLogoutSupported = "frontchannel_logout_supported"
        case frontchannelLogoutSessionSupported = "frontchannel_logout_session_supported"
        case backchannelLogoutSupported = "backchannel_logout_supported"
        case backchannelLogoutSessionSupported = "backchannel_logout_session_supported"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint", registrationEndpoint = "registration_endpoint"
    }
}

/// Discovery (OpenID Connect Discovery 1.0, RFC 8414) and the signing keys (`jwks`, RFC 7517): what a client reads
/// before anything else. Holds the issuer in force and the key ring, nothing more.
struct DiscoveryController {
    /// The issuer in force (completed with the bound port at start when the configuration says port 0).
    let issuer: @Sendable () -> String
    let keys: KeyRing
    /// The response types applications may use (`ProviderMetadata.init(issuer:responseTypes:)`).
    var responseTypes: [ResponseType] = [.code]

    func addRoutes(to wellKnown: RouterGroup<LatchkeyRequestContext>) {
        for path in ["openid-configuration", "oauth-authorization-server"] {
            wellKnown.get(RouterPath(path)) { _, _ in try Responses.json(ProviderMetadata(issuer: issuer(), responseTypes: responseTypes)) }
        }
        wellKnown.get("jwks.json") { _, _ in try await jwks() }
    }

    /// `jwks` in the OAuth family.
    func addRoutes(to mount: OAuthMount) {
        mount.routes.get("jwks") { _, _ in try await jwks() }
        mount.refuseMethods(at: "jwks", allowing: .get)
    }

    private func jwks() async throws -> Response {
        try Responses.json(try await keys.jwks(), headers: [.cacheControl: "public, max-age=300"])
    }
}
