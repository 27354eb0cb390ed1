import Foundation
import LatchkeyJOSE

/// The client information response (RFC 7591 §3.2.1, RFC 7592 §3): the registered metadata, with the credentials
/// only where they were just made (`client_secret` at registration, at an update that made the application
/// confidential and at a rotation; `registration_access_token` at registration). Secrets are stored hashed, so a read
/// cannot show them again.
struct ClientInformation: Encodable, Sendable {
    var clientId: String
    var clientSecret: String?
    var clientIdIssuedAt: Int?
    var clientSecretExpiresAt: Int?
    var registrationAccessToken: String?
    var registrationClientURI: String?
    var clientName: String
    var redirectUris: [String]
    var postLogoutRedirectUris: [String]
    var grantTypes: [String]
    var responseTypes: [String]
    var tokenEndpointAuthMethod: String
    var scope: String
    var applicationType: String
    var idTokenSignedResponseAlg: String
    var userinfoSignedResponseAlg: String?
    var dpopBoundAccessTokens: Bool
    var requirePushedAuthorizationRequests: Bool
    var appType: String
    var requirePKCE: Bool
    var userRegistration: String
    var recoveryEnabled: Bool
    var requireMFA: Bool
    var passkeyOrigins: [String]
    var identityProviders: [String]
    var allowedAudiences: [String]
    /// A `private_key_jwt` application's public keys and, when it chose one, its assertions' algorithm.
    var jwks: JWKSet?
    var jwksURI: String?
    /// OpenID Connect Registration §2; absent when there are none.
    var requestURIs: [String]?
    var tokenEndpointAuthSigningAlg: String?
    var backchannelLogoutUri: String?
    var backchannelLogoutSessionRequired: Bool
    var frontchannelLogoutUri: String?
    var frontchannelLogoutSessionRequired: Bool
    var securityProfile: String?
    var logoUri: String?
    var policyUri: String?
    var tosUri: String?
    var clientUri: String?
    var subjectType: String
    var sectorIdentifierURI: String?
    /// What the registration policy removed from the request (absent when nothing was).
    var trimmed: [String: [String]]?
    /// `configuration` or `registration`: in the administrators' list only.
    var origin: String?

    init(_ record: ClientRecord, registrationClientURI: String?) {
        let c = record.configuration
        clientId = c.clientId
        clientIdIssuedAt = record.issuedAt.map { Int($0.timeIntervalSince1970) }
        clientSecretExpiresAt = c.usesSecret ? 0 : nil  // RFC 7591 §3.2.1: 0, the secret does not expire
        self.registrationClientURI = registrationClientURI
        clientName = c.name
        redirectUris = c.redirectUris
        postLogoutRedirectUris = c.postLogoutRedirectUris
        grantTypes = c.grantTypes.map(\.rawValue)
        responseTypes = c.responseTypes.map(\.rawValue)
        tokenEndpointAuthMethod = c.tokenEndpointAuthMethod.rawValue
        scope = c.scopes.joined(separator: " ")
        applicationType = c.appType == .browser ? "web" : "native"
        idTokenSignedResponseAlg = c.idTokenSignedResponseAlg.rawValue
        userinfoSignedResponseAlg = c.userinfoSignedResponseAlg?.rawValue
        dpopBoundAccessTokens = c.requireDPoP
        requirePushedAuthorizationRequests = c.requirePushedAuthorizationRequests
        appType = c.appType.rawValue
        requirePKCE = c.requirePKCE
        userRegistration = c.registration.rawValue
        recoveryEnabled = c.recoveryEnabled
        requireMFA = c.requireMFA
        passkeyOrigins = c.passkeyOrigins
        identityProviders = c.identityProviders
        allowedAudiences = c.allowedAudiences
        jwks = c.jwks
        jwksURI = c.jwksURI
        requestURIs = c.requestURIs.isEmpty ? nil : c.requestURIs
        tokenEndpointAuthSigningAlg = c.tokenEndpointAuthSigningAlg?.rawValue
        backchannelLogoutUri = c.backchannelLogoutUri
        backchannelLogoutSessionRequired = c.backchannelLogoutSessionRequired
        frontchannelLogoutUri = c.frontchannelLogoutUri
        frontchannelLogoutSessionRequired = c.frontchannelLogoutSessionRequired
        securityProfile = c.securityProfile?.rawValue
        logoUri = c.logoUri
        policyUri = c.policyUri
        tosUri = c.tosUri
        clientUri = c.clientUri
        subjectType = c.subjectType.rawValue
        sectorIdentifierURI = c.sectorIdentifierURI
    }

    enum CodingKeys: String, CodingKey {
        case clientId = "client_id", clientSecret = "client_secret", clientIdIssuedAt = "client_id_issued_at"
        case clientSecretExpiresAt = "client_secret_expires_at", registrationAccessToken = "registration_access_token"
        case registrationClientURI = "registration_client_uri", clientName = "client_name", redirectUris = "redirect_uris"
        case postLogoutRedirectUris = "post_logout_redirect_uris", grantTypes = "grant_types", responseTypes = "response_types"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method", scope, applicationType = "application_type"
        case userinfoSignedResponseAlg = "userinfo_signed_response_alg"
        case idTokenSignedResponseAlg = "id_token_signed_response_alg", dpopBoundAccessTokens = "dpop_bound_access_tokens"
        case requirePushedAuthorizationRequests = "require_pushed_authorization_requests", appType = "latchkey_app_type"
        case requirePKCE = "latchkey_require_pkce", userRegistration = "latchkey_registration"
        case recoveryEnabled = "latchkey_recovery_enabled", requireMFA = "latchkey_require_mfa"
        case passkeyOrigins = "latchkey_passkey_allowed_origins", identityProviders = "latchkey_identity_providers"
        case jwks, tokenEndpointAuthSigningAlg = "token_endpoint_auth_signing_alg"
        case jwksURI = "jwks_uri", requestURIs = "request_uris"
        case allowedAudiences = "latchkey_allowed_audiences", trimmed = "latchkey_trimmed", origin = "latchkey_origin"
        case backchannelLogoutUri = "backchannel_logout_uri", backchannelLogoutSessionRequired = "backchannel_logout_session_required"
        case frontchannelLogoutUri = "frontchannel_logout_uri", frontchannelLogoutSessionRequired = "frontchannel_logout_session_required"
        case securityProfile = "latchkey_security_profile"
        case subjectType = "subject_type", sectorIdentifierURI = "sector_identifier_uri"
        case logoUri = "logo_uri", policyUri = "policy_uri", tosUri = "tos_uri", clientUri = "client_uri"
    }
}

/// The answer to a secret rotation (`POST /oauth2/register/{client_id}/secret`).
struct RotatedSecret: Encodable, Sendable {
    var clientId: String
    var clientSecret: String
    var clientSecretExpiresAt = 0
    /// Until when the previous secret is still accepted (seconds since 1970; now when the grace period is 0).
    var previousSecretExpiresAt: Int

    enum CodingKeys: String, CodingKey {
        case clientId = "client_id", clientSecret = "client_secret", clientSecretExpiresAt = "client_secret_expires_at"
        case previousSecretExpiresAt = "previous_secret_expires_at"
    }
}
