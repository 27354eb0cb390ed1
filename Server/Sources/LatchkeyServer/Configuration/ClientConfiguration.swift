import Foundation
import LatchkeyJOSE

/// How a client proves its identity at the token endpoint (RFC 7591 `token_endpoint_auth_method`).
public enum ClientAuthMethod: String, Codable, Sendable, CaseIterable {
    case none
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
    /// A JWT signed with one of the client's registered keys (`jwks` or `jwks_uri`), sent as `client_assertion`
    /// (RFC 7523 §2.2, OpenID Connect Core §9). The client has no secret.
    case privateKeyJWT = "private_key_jwt"

    /// The methods that present a shared secret (`client_secret`).
    public var usesSecret: Bool { self == .clientSecretBasic || self == .clientSecretPost }
}

public enum GrantType: String, Codable, Sendable, CaseIterable {
    case authorizationCode = "authorization_code"
    case refreshToken = "refresh_token"
    case clientCredentials = "client_credentials"
    case tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// RFC 8628: a device without a browser (a terminal, a TV) polls while a person approves it elsewhere.
    case deviceCode = "urn:ietf:params:oauth:grant-type:device_code"
    /// Tokens straight from the authorization endpoint (OpenID Connect Core §3.2, and the hybrid flow's tokens):
    /// never a grant of the token endpoint, it goes with an application's front-channel `response_types`.
    case implicit
}

/// A registered client (also the "application" of the thunderID dialect: `applicationId` == `clientId`).
public struct ClientConfiguration: Sendable, Codable, Equatable {
    public var clientId: String
    public var name: String
    /// Present only for confidential clients. Stored hashed; the plain value lives only in the config file.
    public var clientSecret: String?
    public var tokenEndpointAuthMethod: ClientAuthMethod
    /// Exact redirect URIs; a loopback `http://127.0.0.1/…`, `http://localhost/…` or `http://[::1]/…` entry without a
    /// port matches any port (RFC 8252 §7.3).
    public var redirectUris: [String]
    public var postLogoutRedirectUris: [String]
    public var grantTypes: [GrantType]
    /// What the authorization endpoint may return to the application (`response_types`, `ResponseType`): `code` by
    /// default (for an application with the `authorization_code` grant). The implicit and hybrid types need the
    /// `implicit` grant, are refused with the FAPI 2.0 profile and with `require_dpop` when they return an access
    /// token, and for a public application unless the server allows it (`allow_implicit_for_public_clients`).
    public var responseTypes: [ResponseType]
    public var scopes: [String]
    /// Audiences a token exchange may target besides the issuer itself.
    public var allowedAudiences: [String]
    public var requirePKCE: Bool
    /// What kind of application this is; decides whether app-native flows may start without a browser.
    public var appType: AppType
    /// Self-registration through the REGISTRATION flow. Unset, it is `open` only for clients that sign users in
    /// (authorization-code or token-exchange grant); a back end with `client_credentials` alone gets `disabled`, since
    /// its `client_id` alone would otherwise let anyone create accounts.
    public var registration: RegistrationPolicy
    /// Password recovery through the RECOVERY flow.
    public var recoveryEnabled: Bool
    /// Refuse sign-in (FET-1092) to users without a second factor.
    public var requireMFA: Bool
    /// The application's own flow graphs, by type; the built-in ones (`DefaultFlows`) fill the gaps.
    public var flows: [FlowType: FlowGraph]
    /// Origins a passkey response (`clientDataJSON.origin`) may come from for this application: exact strings such as
    /// `https://example.com` (what iOS and browsers send for that RP ID) or `android:apk-key-hash:…`. The value
    /// `self` stands for the server's own origin (its hosted pages, and clients acting for them).
    public var passkeyOrigins: [String]
    /// Bundle identifiers (Services IDs) accepted as the audience of a Sign in with Apple identity token.
    public var appleBundleIds: [String]
    /// Tokens only with a DPoP proof (RFC 9449): the token endpoint refuses requests without one, so every access
    /// token of the application is bound to a key (`cnf.jkt`), and so are a public client's refresh tokens.
    public var requireDPoP = false
    /// Authorization requests only through `/oauth2/par` (RFC 9126): `/oauth2/authorize` takes a `request_uri` and
    /// nothing else, so no parameter of the request travels in the browser's address.
    public var requirePushedAuthorizationRequests = false
    /// Device grant (RFC 8628): whether the device authorization answer carries `verification_uri_complete` (the page
    /// with the code filled in) and a link with a code leads straight to the confirmation. Off by default: a link that
    /// needs one click to approve is a one-click phishing lure, so the person types the code shown on
    /// the device. Turn it on for devices that show a QR code to a person standing in front of them.
    public var deviceVerificationURIComplete = false
    /// How the application's ID tokens are signed (OIDC Registration `id_token_signed_response_alg`): `RS256`, the
    /// default every OpenID Connect client can verify, or `ES256`, about twenty times cheaper for the server to sign
    /// (an RSA signature is most of a refresh grant's cost) and shorter on the wire.
    public var idTokenSignedResponseAlg: JWSAlgorithm = .rs256
    /// UserInfo answered as a signed JWT (OIDC Registration `userinfo_signed_response_alg`: `RS256` or `ES256`); unset,
    /// plain JSON.
    public var userinfoSignedResponseAlg: JWSAlgorithm?
    /// The identity providers (`ServerConfiguration.identityProviders` ids) this application's users may sign in with:
    /// buttons on the hosted page, actions in the app-native sign-in flow, `idp=` hints, native ID tokens.
    public var identityProviders: [String] = []
    /// The client's public keys (RFC 7591 `jwks`): the keys its request objects and, for a `private_key_jwt` client,
    /// its client assertions may be signed with (a client of another method never authenticates with them). Public
    /// keys only (`ClientKeys` refuses private members when it reads them).
    public var jwks: JWKSet?
    /// Where the client publishes those keys instead (RFC 7591 `jwks_uri`, OpenID Connect Core
    /// §10.1.1; never both): fetched and kept a few minutes (`ClientKeySets`), and checked as `jwks` is. `https`, or
    /// `http` to a loopback host when the configuration file sets it; no user information, no fragment
    /// (`ClientDocumentURL`).
    public var jwksURI: String?
    /// The URLs of request objects the client publishes (OpenID Connect Registration `request_uris`): an
    /// authorization request's `request_uri` naming one of them (its fragment aside) is fetched and is the request
    /// (RFC 9101 §5.2), signed with the client's keys like one sent by value. Any other `request_uri` (but a pushed
    /// request's) is refused without being fetched. Same URL rule as `jwksURI`, fragments allowed.
    public var requestURIs: [String] = []
    /// The one algorithm the client's assertions may use (RFC 7591 `token_endpoint_auth_signing_alg`); unset, any
    /// of `ClientAssertion.algorithms` that one of its keys is for.
    public var tokenEndpointAuthSigningAlg: JWSAlgorithm?
    /// A security profile the application follows as a whole (`security_profile`). `fapi2`: the FAPI 2.0 Security
    /// Profile in one line — authorization requests only through PAR, PKCE S256, tokens only with DPoP (sender
    /// constrained), `private_key_jwt` client authentication with EC or Ed25519 keys, ES256 ID tokens; the defaults of
    /// those settings follow it, and start-up refuses a contradiction (`validateProfile`).
    public var securityProfile: SecurityProfile?
    /// Where the server POSTs a `logout_token` when a sign-in session the application took part in ends (OpenID
    /// Connect Back-Channel Logout 1.0 `backchannel_logout_uri`): however it ends — signing out at the server, from
    /// another application, "sign out everywhere", an administrator, a disabled account. Queued in the store and retried
    /// (`BackChannelLogout`).
    public var backchannelLogoutUri: String?
    /// Whether the application needs `sid` in its logout tokens (`backchannel_logout_session_required`). Latchkey always
    /// sends it when the session is known; the setting is kept for registration's answer.
    public var backchannelLogoutSessionRequired = false
    /// The page the browser loads in a hidden frame when the person signs out at the server (OpenID Connect
    /// Front-Channel Logout 1.0 `frontchannel_logout_uri`), with `iss` and `sid`.
    public var frontchannelLogoutUri: String?
    /// Whether the application needs `iss` and `sid` on its front-channel logout URI
    /// (`frontchannel_logout_session_required`). Latchkey always adds them; the setting is kept for registration's
    /// answer.
    public var frontchannelLogoutSessionRequired = false

    /// What the hosted sign-in page shows of the application besides its name (OpenID Connect Registration
    /// `logo_uri`, `policy_uri`, `tos_uri`, `client_uri`): its logo, and links to its privacy policy and terms. Loaded or
    /// followed by the person's browser, never fetched by the server.
    public var logoUri: String?
    public var policyUri: String?
    public var tosUri: String?
    public var clientUri: String?
    /// An application of the configuration file run by someone else (`third_party`): its sign-ins ask the person's
    /// consent, and its tokens manage no account without the `latchkey.account` scope (`ApplicationTrust`).
    /// Registered applications are third-party whatever this says.
    public var thirdParty = false
    /// Whether the application may introspect (RFC 7662) access tokens issued to other applications: a resource server
    /// the operator trusts with that (`introspection` in the configuration file). Without it an application learns
    /// only about its own tokens and access tokens whose `aud` names it; refresh tokens only ever by their own
    /// client. Never set by registration (`ClientMetadata` has no member for it), so registering an application does
    /// not buy a validity oracle for everyone's tokens.
    public var introspection = false
    /// Which `sub` the application's tokens carry (`subject_type`, OpenID Connect Core §8): `public` (the account id)
    /// or `pairwise` (a value of its sector alone, `SubjectIdentifiers`). In the configuration file the default is
    /// `pairwise` for a `third_party` application and `public` for the others; registration's default is
    /// `client_registration.subject_type`. An application stored before the setting existed reads as `public`, so no
    /// application's subjects change under it.
    public var subjectType: SubjectType = .public
    /// The URL of a JSON array of URIs that names the application's sector (`sector_identifier_uri`, OpenID Connect
    /// Core §8.1): its host is the sector, so the applications listing it share pairwise subjects. Registration fetches
    /// it and requires every redirect URI to be in it; the configuration file's is taken at its word.
    public var sectorIdentifierURI: String?

    public enum SecurityProfile: String, Codable, Sendable, CaseIterable {
        case fapi2
    }

    /// Turns on what the FAPI 2.0 Security Profile requires (what a configuration file's `security_profile` does).
    public mutating func adoptFAPI2() {
        securityProfile = .fapi2
        requireDPoP = true
        requirePushedAuthorizationRequests = true
        requirePKCE = true
        idTokenSignedResponseAlg = .es256
    }

    public enum AppType: String, Codable, Sendable, CaseIterable {
        /// Desktop, CLI or any native app: app-native flows allowed without attestation.
        case native
        /// iOS/Android app: outside development mode, app-native sign-in needs a platform `Attestation-Token`.
        case mobile
        /// Browser app: must use the redirect flow; app-native AUTHENTICATION/SIGNOUT are refused (FES-1010).
        case browser
    }

    public enum RegistrationPolicy: String, Codable, Sendable, CaseIterable {
        case open, inviteOnly = "invite_only", disabled
    }

    public init(
        clientId: String, name: String? = nil, clientSecret: String? = nil,
        tokenEndpointAuthMethod: ClientAuthMethod? = nil, redirectUris: [String] = [],
        postLogoutRedirectUris: [String] = [], grantTypes: [GrantType] = [.authorizationCode, .refreshToken],
        scopes: [String] = ["openid", "profile", "email", "phone", "address", "offline_access"],
        allowedAudiences: [String] = [], requirePKCE: Bool = true, appType: AppType = .native,
        registration: RegistrationPolicy? = nil, recoveryEnabled: Bool = true, requireMFA: Bool = false,
        flows: [FlowType: FlowGraph] = [:], passkeyOrigins: [String] = [], appleBundleIds: [String] = []
    ) {
        self.clientId = clientId
        self.name = name ?? clientId
        self.clientSecret = clientSecret
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod ?? (clientSecret == nil ? .none : .clientSecretBasic)
        self.redirectUris = redirectUris
        self.postLogoutRedirectUris = postLogoutRedirectUris
        self.grantTypes = grantTypes
        self.responseTypes = grantTypes.contains(.authorizationCode) ? [.code] : []
        self.scopes = scopes
        self.allowedAudiences = allowedAudiences
        self.requirePKCE = requirePKCE
        self.appType = appType
        self.registration =
            registration
            ?? ([.authorizationCode, .tokenExchange, .implicit].contains(where: grantTypes.contains) ? .open : .disabled)
        self.recoveryEnabled = recoveryEnabled
        self.requireMFA = requireMFA
        self.flows = flows
        self.passkeyOrigins = passkeyOrigins
        self.appleBundleIds = appleBundleIds
    }

    public var isPublic: Bool { tokenEndpointAuthMethod == .none }

    /// Whether the client authenticates with a shared secret (`client_secret_basic` or `client_secret_post`).
    public var usesSecret: Bool { tokenEndpointAuthMethod.usesSecret }

    func validate() throws {
        guard idTokenSignedResponseAlg == .rs256 || idTokenSignedResponseAlg == .es256 else {
            throw ConfigurationError.invalid("client \(clientId): id_token_signed_response_alg must be RS256 or ES256")
        }
        if let alg = userinfoSignedResponseAlg, alg != .rs256, alg != .es256 {
            throw ConfigurationError.invalid("client \(clientId): userinfo_signed_response_alg must be RS256 or ES256")
        }
        if isPublic && clientSecret != nil {
            throw ConfigurationError.invalid("client \(clientId) is public (auth method none) but has a secret")
        }
        if tokenEndpointAuthMethod == .privateKeyJWT && clientSecret != nil {
            throw ConfigurationError.invalid("client \(clientId) authenticates with private_key_jwt and has no client_secret: remove it")
        }
        if usesSecret && (clientSecret ?? "").count < 16 {
            throw ConfigurationError.invalid("client \(clientId) needs a client_secret of at least 16 characters")
        }
        try validateKeys()
        try validateResponseTypes()
        try validateProfile()
        if isPublic && grantTypes.contains(.clientCredentials) {
            throw ConfigurationError.invalid("public client \(clientId) cannot use client_credentials")
        }
        if isPublic && introspection {
            // Anyone can act as a public client: it would make every token's validity public.
            throw ConfigurationError.invalid("public client \(clientId) cannot be an introspector (introspection)")
        }
        for (type, graph) in flows {
            guard graph.type == type else { throw ConfigurationError.invalid("client \(clientId): flow \(graph.id) is not a \(type.rawValue) flow") }
            try graph.validate()
        }
        for origin in passkeyOrigins where origin != "self" {
            guard origin.contains(":"), !origin.hasSuffix("/") else {
                throw ConfigurationError.invalid("client \(clientId): passkey origin \(origin) must be scheme://host[:port] (no path) or self")
            }
        }
        try validateContactedAndShownURLs()
        if let why = subjectProblem(operatorSet: true) { throw ConfigurationError.invalid("client \(clientId): \(why)") }
        for uri in redirectUris + postLogoutRedirectUris {
            guard let url = URL(string: uri), url.scheme != nil else {
                throw ConfigurationError.invalid("client \(clientId): \(uri) is not an absolute URI")
            }
            if url.fragment != nil { throw ConfigurationError.invalid("client \(clientId): redirect URI \(uri) has a fragment") }
            if url.scheme == "http" && !LoopbackHost.isLoopback(url.host ?? "") {
                throw ConfigurationError.invalid("client \(clientId): http redirect URI \(uri) must be loopback")
            }
        }
    }

    /// FAPI 2.0 Security Profile §5.3 (authorization server): PAR, PKCE, sender-constrained tokens (DPoP; mTLS is not
    /// supported), `private_key_jwt` (the profile's other method is mTLS), and the algorithms it allows (PS256, ES256,
    /// EdDSA: RSA keys would mean RS256 assertions, which it forbids). Codes live at most 60 s
    /// (`ServerConfiguration.validate`).
    private func validateProfile() throws {
        guard securityProfile == .fapi2 else { return }
        func refuse(_ why: String) -> ConfigurationError { .invalid("client \(clientId) (security_profile fapi2): \(why)") }
        guard tokenEndpointAuthMethod == .privateKeyJWT else { throw refuse("token_endpoint_auth_method must be private_key_jwt") }
        guard requireDPoP else { throw refuse("require_dpop cannot be false (tokens must be sender-constrained)") }
        guard requirePushedAuthorizationRequests else { throw refuse("require_pushed_authorization_requests cannot be false") }
        guard requirePKCE else { throw refuse("require_pkce cannot be false") }
        guard idTokenSignedResponseAlg == .es256 else { throw refuse("id_token_signed_response_alg must be ES256 (RS256 is not allowed)") }
        if let alg = tokenEndpointAuthSigningAlg, alg == .rs256 { throw refuse("token_endpoint_auth_signing_alg RS256 is not allowed") }
        // A set at a jwks_uri is checked the same way when it is fetched (`ClientKeys.check(_:for:)`).
        if jwks?.keys.contains(where: { $0.kty == "RSA" }) == true {
            throw refuse("jwks may hold only EC P-256 or Ed25519 keys (RS256 assertions are not allowed)")
        }
        // Without `implicit`, no front-channel response type passes `validateResponseTypes`: code only.
        let allowed: Set<GrantType> = [.authorizationCode, .refreshToken, .clientCredentials]
        if let other = grantTypes.first(where: { !allowed.contains($0) }) { throw refuse("grant type \(other.rawValue) is not allowed") }
    }

    /// Each front-channel response type goes with its grant types (OpenID Connect Registration §2), and the `implicit`
    /// grant with a response type that uses it (`code` is checked by the authorization endpoint against the grants, as
    /// before response types could be listed). An access token from the authorization endpoint cannot be bound to a DPoP key.
    private func validateResponseTypes() throws {
        for type in responseTypes where type.isFrontChannel {
            if let missing = type.grantTypes.first(where: { !grantTypes.contains($0) }) {
                throw ConfigurationError.invalid(
                    "client \(clientId): response type \(type.rawValue) needs the grant type \(missing.rawValue) in grant_types")
            }
            if type.issuesAccessToken, requireDPoP {
                throw ConfigurationError.invalid(
                    "client \(clientId): response type \(type.rawValue) returns an access token that cannot be DPoP-bound (require_dpop)")
            }
        }
        if grantTypes.contains(.implicit), !responseTypes.contains(where: \.isFrontChannel) {
            throw ConfigurationError.invalid(
                "client \(clientId): the implicit grant needs a response type that uses it in response_types (id_token, code id_token, …)")
        }
    }

    /// Logout URIs (OpenID Connect Back-Channel Logout §2.2, Front-Channel Logout §2) and the URLs the sign-in page
    /// shows are absolute `https` URLs (or `http` on a loopback host, for development), without user information:
    /// `ClientDocumentURL`'s rule for a URL the operator set. The logo and the logout URIs take no fragment; the pages a
    /// person follows from the sign-in page (policy, terms, home) may point into a page, as registration lets them.
    private func validateContactedAndShownURLs() throws {
        let links: [(name: String, uri: String?, fragmentAllowed: Bool)] = [
            ("backchannel_logout_uri", backchannelLogoutUri, false), ("frontchannel_logout_uri", frontchannelLogoutUri, false),
            ("logo_uri", logoUri, false), ("policy_uri", policyUri, true), ("tos_uri", tosUri, true), ("client_uri", clientUri, true)
        ]
        for (name, uri, fragmentAllowed) in links {
            guard let uri else { continue }
            if let why = ClientDocumentURL.refusal(uri, member: name, operatorSet: true, fragmentAllowed: fragmentAllowed) {
                throw ConfigurationError.invalid("client \(clientId): \(why)")
            }
        }
    }

    /// Any client may register keys (`jwks` or `jwks_uri`, not both): its request objects are verified with them. A
    /// `private_key_jwt` client must, since its assertions are too; `token_endpoint_auth_signing_alg` is for it alone.
    /// `request_uris` need keys to verify the objects with.
    private func validateKeys() throws {
        try validateRequestURIs()
        if tokenEndpointAuthSigningAlg != nil, tokenEndpointAuthMethod != .privateKeyJWT {
            throw ConfigurationError.invalid("client \(clientId): token_endpoint_auth_signing_alg is for token_endpoint_auth_method private_key_jwt")
        }
        if let alg = tokenEndpointAuthSigningAlg, !ClientAssertion.algorithms.contains(alg) {
            throw ConfigurationError.invalid(
                "client \(clientId): token_endpoint_auth_signing_alg must be one of \(ClientAssertion.algorithmNames.joined(separator: ", "))")
        }
        if let jwksURI {
            guard jwks == nil else {
                throw ConfigurationError.invalid("client \(clientId): register jwks or jwks_uri, not both (RFC 7591 §2)")
            }
            if let why = ClientDocumentURL.refusal(jwksURI, member: "jwks_uri", operatorSet: true, fragmentAllowed: false) {
                throw ConfigurationError.invalid("client \(clientId): \(why)")
            }
        } else if let jwks {
            do { try ClientKeys.check(jwks, algorithm: tokenEndpointAuthSigningAlg) } catch {
                throw ConfigurationError.invalid("client \(clientId): jwks: \(error.reason)")
            }
        } else if tokenEndpointAuthMethod == .privateKeyJWT {
            throw ConfigurationError.invalid(
                "client \(clientId) authenticates with private_key_jwt: register its public keys as jwks ({\"keys\": [...]}) or their URL as jwks_uri"
            )
        }
    }

    /// At most `ClientMetadata.maxListLength` URLs, each `ClientDocumentURL`'s (checked as the file's: the registration
    /// API refuses `http` before), for a client with keys, and not for one that requires PAR (whose authorization
    /// requests take no `request_uri` but a pushed request's: those URLs would never be fetched).
    private func validateRequestURIs() throws {
        guard !requestURIs.isEmpty else { return }
        guard requestURIs.count <= ClientMetadata.maxListLength else {
            throw ConfigurationError.invalid("client \(clientId): request_uris may hold at most \(ClientMetadata.maxListLength) URLs")
        }
        for uri in requestURIs {
            if let why = ClientDocumentURL.refusal(uri, member: "request_uris", operatorSet: true, fragmentAllowed: true) {
                throw ConfigurationError.invalid("client \(clientId): \(why)")
            }
        }
        guard jwks != nil || jwksURI != nil else {
            throw ConfigurationError.invalid(
                "client \(clientId): request_uris need the keys the request objects are signed with (jwks or jwks_uri)")
        }
        guard !requirePushedAuthorizationRequests else {
            throw ConfigurationError.invalid(
                "client \(clientId): request_uris cannot be used with require_pushed_authorization_requests (push the request objects instead)")
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case clientId = "client_id", name, clientSecret = "client_secret"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method", redirectUris = "redirect_uris"
        case postLogoutRedirectUris = "post_logout_redirect_uris", grantTypes = "grant_types", responseTypes = "response_types", scopes
        case allowedAudiences = "allowed_audiences", requirePKCE = "require_pkce", appType = "app_type", registration
        case recoveryEnabled = "recovery_enabled", requireMFA = "require_mfa", flows
        case passkeyOrigins = "passkey_allowed_origins", appleBundleIds = "apple_bundle_ids"
        case requireDPoP = "require_dpop", requirePushedAuthorizationRequests = "require_pushed_authorization_requests"
        case idTokenSignedResponseAlg = "id_token_signed_response_alg", userinfoSignedResponseAlg = "userinfo_signed_response_alg"
        case deviceVerificationURIComplete = "device_verification_uri_complete"
        case identityProviders = "identity_providers"
        case jwks, tokenEndpointAuthSigningAlg = "token_endpoint_auth_signing_alg"
        case securityProfile = "security_profile"
        case backchannelLogoutUri = "backchannel_logout_uri", backchannelLogoutSessionRequired = "backchannel_logout_session_required"
        case frontchannelLogoutUri = "frontchannel_logout_uri", frontchannelLogoutSessionRequired = "frontchannel_logout_session_required"
        case logoUri = "logo_uri", policyUri = "policy_uri", tosUri = "tos_uri", clientUri = "client_uri"
        case jwksURI = "jwks_uri", requestURIs = "request_uris"
        case thirdParty = "third_party"
        case introspection
        case subjectType = "subject_type", sectorIdentifierURI = "sector_identifier_uri"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(clientId, forKey: .clientId)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(clientSecret, forKey: .clientSecret)
        try c.encode(tokenEndpointAuthMethod, forKey: .tokenEndpointAuthMethod)
        try c.encode(redirectUris, forKey: .redirectUris)
        try c.encode(postLogoutRedirectUris, forKey: .postLogoutRedirectUris)
        try c.encode(grantTypes, forKey: .grantTypes)
        try c.encode(responseTypes, forKey: .responseTypes)
        try c.encode(scopes, forKey: .scopes)
        try c.encode(allowedAudiences, forKey: .allowedAudiences)
        try c.encode(requirePKCE, forKey: .requirePKCE)
        try c.encode(appType, forKey: .appType)
        try c.encode(registration, forKey: .registration)
        try c.encode(recoveryEnabled, forKey: .recoveryEnabled)
        try c.encode(requireMFA, forKey: .requireMFA)
        // Keyed by the flow type's raw value so the JSON reads {"AUTHENTICATION": {...}}.
        try c.encode(Dictionary(uniqueKeysWithValues: flows.map { ($0.key.rawValue, $0.value) }), forKey: .flows)
        try c.encode(passkeyOrigins, forKey: .passkeyOrigins)
        try c.encode(appleBundleIds, forKey: .appleBundleIds)
        try c.encode(requireDPoP, forKey: .requireDPoP)
        try c.encode(requirePushedAuthorizationRequests, forKey: .requirePushedAuthorizationRequests)
        try c.encode(deviceVerificationURIComplete, forKey: .deviceVerificationURIComplete)
        try c.encode(idTokenSignedResponseAlg.rawValue, forKey: .idTokenSignedResponseAlg)
        try c.encodeIfPresent(userinfoSignedResponseAlg?.rawValue, forKey: .userinfoSignedResponseAlg)
        try c.encode(identityProviders, forKey: .identityProviders)
        try c.encodeIfPresent(jwks, forKey: .jwks)
        try c.encodeIfPresent(tokenEndpointAuthSigningAlg?.rawValue, forKey: .tokenEndpointAuthSigningAlg)
        try c.encodeIfPresent(securityProfile, forKey: .securityProfile)
        try c.encodeIfPresent(backchannelLogoutUri, forKey: .backchannelLogoutUri)
        try c.encode(backchannelLogoutSessionRequired, forKey: .backchannelLogoutSessionRequired)
        try c.encodeIfPresent(frontchannelLogoutUri, forKey: .frontchannelLogoutUri)
        try c.encode(frontchannelLogoutSessionRequired, forKey: .frontchannelLogoutSessionRequired)
        try c.encodeIfPresent(logoUri, forKey: .logoUri)
        try c.encodeIfPresent(policyUri, forKey: .policyUri)
        try c.encodeIfPresent(tosUri, forKey: .tosUri)
        try c.encodeIfPresent(clientUri, forKey: .clientUri)
        try c.encodeIfPresent(jwksURI, forKey: .jwksURI)
        if !requestURIs.isEmpty { try c.encode(requestURIs, forKey: .requestURIs) }
        if thirdParty { try c.encode(thirdParty, forKey: .thirdParty) }
        if introspection { try c.encode(introspection, forKey: .introspection) }
        // Always written: a stored application without it reads as `public` (`init(from:)`).
        try c.encode(subjectType, forKey: .subjectType)
        try c.encodeIfPresent(sectorIdentifierURI, forKey: .sectorIdentifierURI)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = ClientConfiguration(clientId: "")
        let secret = try c.decodeIfPresent(String.self, forKey: .clientSecret)
        self.init(
            clientId: try c.decode(String.self, forKey: .clientId),
            name: try c.decodeIfPresent(String.self, forKey: .name),
            clientSecret: secret,
            tokenEndpointAuthMethod: try c.decodeIfPresent(ClientAuthMethod.self, forKey: .tokenEndpointAuthMethod),
            redirectUris: try c.decodeIfPresent([String].self, forKey: .redirectUris) ?? [],
            postLogoutRedirectUris: try c.decodeIfPresent([String].self, forKey: .postLogoutRedirectUris) ?? [],
            grantTypes: try c.decodeIfPresent([GrantType].self, forKey: .grantTypes) ?? defaults.grantTypes,
            scopes: try c.decodeIfPresent([String].self, forKey: .scopes) ?? defaults.scopes,
            allowedAudiences: try c.decodeIfPresent([String].self, forKey: .allowedAudiences) ?? [],
            requirePKCE: try c.decodeIfPresent(Bool.self, forKey: .requirePKCE) ?? true,
            appType: try c.decodeIfPresent(AppType.self, forKey: .appType) ?? .native,
            registration: try c.decodeIfPresent(RegistrationPolicy.self, forKey: .registration),
            recoveryEnabled: try c.decodeIfPresent(Bool.self, forKey: .recoveryEnabled) ?? true,
            requireMFA: try c.decodeIfPresent(Bool.self, forKey: .requireMFA) ?? false,
            flows: try Self.decodeFlows(c),
            passkeyOrigins: try c.decodeIfPresent([String].self, forKey: .passkeyOrigins) ?? [],
            appleBundleIds: try c.decodeIfPresent([String].self, forKey: .appleBundleIds) ?? [])
        if let types = try c.decodeIfPresent([ResponseType].self, forKey: .responseTypes) {
            responseTypes = types.reduce(into: []) { kept, type in if !kept.contains(type) { kept.append(type) } }
        }
        requireDPoP = try c.decodeIfPresent(Bool.self, forKey: .requireDPoP) ?? false
        requirePushedAuthorizationRequests = try c.decodeIfPresent(Bool.self, forKey: .requirePushedAuthorizationRequests) ?? false
        deviceVerificationURIComplete = try c.decodeIfPresent(Bool.self, forKey: .deviceVerificationURIComplete) ?? false
        identityProviders = try c.decodeIfPresent([String].self, forKey: .identityProviders) ?? []
        backchannelLogoutUri = try c.decodeIfPresent(String.self, forKey: .backchannelLogoutUri)
        backchannelLogoutSessionRequired = try c.decodeIfPresent(Bool.self, forKey: .backchannelLogoutSessionRequired) ?? false
        frontchannelLogoutUri = try c.decodeIfPresent(String.self, forKey: .frontchannelLogoutUri)
        frontchannelLogoutSessionRequired = try c.decodeIfPresent(Bool.self, forKey: .frontchannelLogoutSessionRequired) ?? false
        logoUri = try c.decodeIfPresent(String.self, forKey: .logoUri)
        policyUri = try c.decodeIfPresent(String.self, forKey: .policyUri)
        tosUri = try c.decodeIfPresent(String.self, forKey: .tosUri)
        clientUri = try c.decodeIfPresent(String.self, forKey: .clientUri)
        if let alg = try c.decodeIfPresent(String.self, forKey: .idTokenSignedResponseAlg) {
            guard let parsed = JWSAlgorithm(rawValue: alg), parsed == .rs256 || parsed == .es256 else {
                throw DecodingError.dataCorruptedError(
                    forKey: .idTokenSignedResponseAlg, in: c,
                    debugDescription: "id_token_signed_response_alg must be RS256 or ES256, got \(alg)")
            }
            idTokenSignedResponseAlg = parsed
        }
        if let alg = try c.decodeIfPresent(String.self, forKey: .userinfoSignedResponseAlg) {
            guard let parsed = JWSAlgorithm(rawValue: alg), parsed == .rs256 || parsed == .es256 else {
                throw DecodingError.dataCorruptedError(
                    forKey: .userinfoSignedResponseAlg, in: c, debugDescription: "userinfo_signed_response_alg must be RS256 or ES256, got \(alg)")
            }
            userinfoSignedResponseAlg = parsed
        }
        if let value = try c.decodeIfPresent(JSONValue.self, forKey: .jwks) {
            do { jwks = try ClientKeys.parse(value) } catch {
                throw DecodingError.dataCorruptedError(forKey: .jwks, in: c, debugDescription: error.reason)
            }
        }
        if let alg = try c.decodeIfPresent(String.self, forKey: .tokenEndpointAuthSigningAlg) {
            guard let parsed = JWSAlgorithm(rawValue: alg), ClientAssertion.algorithms.contains(parsed) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .tokenEndpointAuthSigningAlg, in: c,
                    debugDescription:
                        "token_endpoint_auth_signing_alg must be one of \(ClientAssertion.algorithmNames.joined(separator: ", ")), got \(alg)")
            }
            tokenEndpointAuthSigningAlg = parsed
        }
        jwksURI = try c.decodeIfPresent(String.self, forKey: .jwksURI)
        requestURIs = try c.decodeIfPresent([String].self, forKey: .requestURIs) ?? []
        thirdParty = try c.decodeIfPresent(Bool.self, forKey: .thirdParty) ?? false
        introspection = try c.decodeIfPresent(Bool.self, forKey: .introspection) ?? false
        subjectType = try c.decodeIfPresent(SubjectType.self, forKey: .subjectType) ?? (thirdParty ? .pairwise : .public)
        sectorIdentifierURI = try c.decodeIfPresent(String.self, forKey: .sectorIdentifierURI)
        // The profile sets the defaults of what it requires; a setting written out contradicting it stays, and start-up
        // refuses it (`validateProfile`), so a file never silently means less than it says.
        if let profile = try c.decodeIfPresent(SecurityProfile.self, forKey: .securityProfile) {
            securityProfile = profile
            if !c.contains(.requireDPoP) { requireDPoP = true }
            if !c.contains(.requirePushedAuthorizationRequests) { requirePushedAuthorizationRequests = true }
            if !c.contains(.idTokenSignedResponseAlg) { idTokenSignedResponseAlg = .es256 }
        }
    }

    private static func decodeFlows(_ c: KeyedDecodingContainer<CodingKeys>) throws -> [FlowType: FlowGraph] {
        let raw = try c.decodeIfPresent([String: FlowGraph].self, forKey: .flows) ?? [:]
        var flows: [FlowType: FlowGraph] = [:]
        for (name, graph) in raw {
            guard let type = FlowType(rawValue: name) else {
                throw DecodingError.dataCorruptedError(forKey: .flows, in: c, debugDescription: "unknown flow type \(name)")
            }
            flows[type] = graph
        }
        return flows
    }
}

/// A user to create at start-up if absent (development data, fixtures). Existing users are never overwritten.
public struct UserSeed: Sendable, Codable, Equatable {
    public var username: String
    public var password: String
    /// Standard OpenID Connect claims (`email`, `given_name`, `name`, …).
    public var claims: [String: String]
    public var disabled: Bool
    /// Entitlements of the account (`admin` lets the account use the `scim.admin` scope); only the operator grants them.
    public var roles: [String]
    /// A second factor to enroll when the account is created: `email` (one-time codes sent to its verified `email`),
    /// so that a seeded administrator can sign in to the console, which requires one. An authenticator app or a
    /// passkey is the person's own to add.
    public var secondFactor: SecondFactorSeed?

    public enum SecondFactorSeed: String, Codable, Sendable, Equatable {
        case email
    }

    public init(
        username: String, password: String, claims: [String: String] = [:], disabled: Bool = false, roles: [String] = [],
        secondFactor: SecondFactorSeed? = nil
    ) {
        self.username = username; self.password = password; self.claims = claims; self.disabled = disabled; self.roles = roles
        self.secondFactor = secondFactor
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case username, password, claims, disabled, roles, secondFactor = "second_factor" }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            username: try c.decode(String.self, forKey: .username),
            password: try c.decode(String.self, forKey: .password),
            claims: try c.decodeIfPresent([String: String].self, forKey: .claims) ?? [:],
            disabled: try c.decodeIfPresent(Bool.self, forKey: .disabled) ?? false,
            roles: try c.decodeIfPresent([String].self, forKey: .roles) ?? [],
            secondFactor: try c.decodeIfPresent(SecondFactorSeed.self, forKey: .secondFactor))
    }
}
