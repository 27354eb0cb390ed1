import Foundation
import LatchkeyJOSE

/// One setting of an application, named once for every place that spells it: the configuration file and the stored
/// row (`ClientConfiguration`'s key), dynamic registration (the member `ClientMetadata` reads and `ClientInformation`
/// answers, both from this table), the audit trail's list of what an update changed (from this table too), and the
/// console's form. `ClientSettingsAgreementTests` fails when a setting is readable in one of these places, or in the
/// OpenAPI description (`api/openapi.json`), and not in the others it should be.
///
/// A new setting is one row here plus its behaviour: its property on `ClientConfiguration` (file key, default and
/// `validate()` rule), on `ClientMetadata` (with `init(describing:)` and the rule in `ClientMetadataRules.swift`), and
/// its OpenAPI property.
struct ClientSetting: Sendable {
    /// The key in the configuration file and the stored row (`ClientConfiguration.CodingKeys`); nil for a registration
    /// member that is no setting of its own (`application_type`, OpenID Connect's coarser `latchkey_app_type`).
    let file: String?
    let registration: Registration
    let console: Console

    enum Registration: Sendable {
        /// Read from a registration or an update, and answered.
        case member(ClientMetadata.Member)
        /// Not a registration member, for the reason given: an update keeps the application's value, a registration gets
        /// the default (or the server's value, `ClientMetadata.settings`).
        case fileOnly(why: String)
    }

    enum Console: Sendable {
        /// A field of the console's form, under this name (`ConsoleApplications.FormValues`).
        case field(String)
        /// Not on the form: an edit keeps it (`ClientMetadata(describing:)`).
        case kept
    }

    /// The registration member, if the setting is one.
    var member: ClientMetadata.Member? {
        if case .member(let member) = registration { member } else { nil }
    }
}

extension ClientSetting {
    private static func member(
        _ file: String?, _ member: ClientMetadata.Member, console: Console = .kept
    ) -> ClientSetting {
        ClientSetting(file: file, registration: .member(member), console: console)
    }

    /// Every setting, registration members first in the order they are read (which decides the error a body with
    /// several wrong members gets), then the configuration file's own.
    static let all: [ClientSetting] = [
        member("redirect_uris", .strings("redirect_uris", \.redirectUris), console: .field("redirect_uris")),
        member("grant_types", .strings("grant_types", \.grantTypes), console: .field("grant_types")),
        member("response_types", .strings("response_types", \.responseTypes)),
        // The form's `confidential` box chooses between `none` and `client_secret_basic`.
        member("token_endpoint_auth_method", .string("token_endpoint_auth_method", \.tokenEndpointAuthMethod), console: .field("confidential")),
        member("scopes", .string("scope", \.scope), console: .field("scope")),
        member("name", .string("client_name", \.clientName), console: .field("name")),
        member(
            "post_logout_redirect_uris", .strings("post_logout_redirect_uris", \.postLogoutRedirectUris), console: .field("post_logout_redirect_uris")
        ),
        member("id_token_signed_response_alg", .string("id_token_signed_response_alg", \.idTokenSignedResponseAlg)),
        member("userinfo_signed_response_alg", .string("userinfo_signed_response_alg", \.userinfoSignedResponseAlg)),
        member(nil, .string("application_type", \.applicationType)),
        member("require_dpop", .bool("dpop_bound_access_tokens", \.dpopBoundAccessTokens)),
        member("require_pushed_authorization_requests", .bool("require_pushed_authorization_requests", \.requirePushedAuthorizationRequests)),
        member("app_type", .string("latchkey_app_type", \.appType), console: .field("app_type")),
        member("require_pkce", .bool("latchkey_require_pkce", \.requirePKCE)),
        member("registration", .string("latchkey_registration", \.userRegistration)),
        member("recovery_enabled", .bool("latchkey_recovery_enabled", \.recoveryEnabled)),
        member("require_mfa", .bool("latchkey_require_mfa", \.requireMFA), console: .field("require_mfa")),
        member("passkey_allowed_origins", .strings("latchkey_passkey_allowed_origins", \.passkeyOrigins)),
        member("identity_providers", .strings("latchkey_identity_providers", \.identityProviders)),
        member("allowed_audiences", .strings("latchkey_allowed_audiences", \.allowedAudiences)),
        member("token_endpoint_auth_signing_alg", .string("token_endpoint_auth_signing_alg", \.tokenEndpointAuthSigningAlg)),
        member("jwks", .keySet("jwks", \.jwks)),
        member("backchannel_logout_uri", .string("backchannel_logout_uri", \.backchannelLogoutUri)),
        member("backchannel_logout_session_required", .bool("backchannel_logout_session_required", \.backchannelLogoutSessionRequired)),
        member("frontchannel_logout_uri", .string("frontchannel_logout_uri", \.frontchannelLogoutUri)),
        member("frontchannel_logout_session_required", .bool("frontchannel_logout_session_required", \.frontchannelLogoutSessionRequired)),
        member("security_profile", .string("latchkey_security_profile", \.securityProfile)),
        member("logo_uri", .string("logo_uri", \.logoUri)),
        member("policy_uri", .string("policy_uri", \.policyUri)),
        member("tos_uri", .string("tos_uri", \.tosUri)),
        member("client_uri", .string("client_uri", \.clientUri)),
        member("jwks_uri", .string("jwks_uri", \.jwksURI)),
        member("request_uris", .strings("request_uris", \.requestURIs)),
        member("subject_type", .string("subject_type", \.subjectType)),
        member("sector_identifier_uri", .string("sector_identifier_uri", \.sectorIdentifierURI)),
        // An update's: the application's own id (RFC 7592 §2.2) and its current secret.
        member("client_id", .string("client_id", \.clientId)),
        member("client_secret", .string("client_secret", \.clientSecret)),
        ClientSetting(file: "flows", registration: .fileOnly(why: "client metadata cannot express a flow graph"), console: .kept),
        ClientSetting(
            file: "apple_bundle_ids",
            registration: .fileOnly(why: "an app's bundle id is vouched for by the operator: the apps whose Apple tokens sign people in"),
            console: .kept),
        ClientSetting(
            file: "device_verification_uri_complete",
            registration: .fileOnly(why: "a link that approves in one step is a phishing lure: the operator turns it on for devices it knows"),
            console: .kept),
        ClientSetting(
            file: "third_party", registration: .fileOnly(why: "registered applications are third-party whatever they say"), console: .kept),
        ClientSetting(
            file: "introspection",
            registration: .fileOnly(why: "the operator's grant: registering an application does not buy a validity oracle"), console: .kept)
    ]
}

extension ClientMetadata {
    /// A registration member: its name and where `ClientMetadata` holds it, by its JSON type.
    enum Member: Sendable {
        case string(String, any WritableKeyPath<ClientMetadata, String?> & Sendable)
        case strings(String, any WritableKeyPath<ClientMetadata, [String]?> & Sendable)
        case bool(String, any WritableKeyPath<ClientMetadata, Bool?> & Sendable)
        case keySet(String, any WritableKeyPath<ClientMetadata, JWKSet?> & Sendable)

        var name: String {
            switch self {
            case .string(let name, _), .strings(let name, _), .bool(let name, _), .keySet(let name, _): name
            }
        }

        /// Whether `a` and `b` hold the same value of this member.
        func same(_ a: ClientMetadata, _ b: ClientMetadata) -> Bool {
            switch self {
            case .string(_, let path): a[keyPath: path] == b[keyPath: path]
            case .strings(_, let path): a[keyPath: path] == b[keyPath: path]
            case .bool(_, let path): a[keyPath: path] == b[keyPath: path]
            case .keySet(_, let path): a[keyPath: path] == b[keyPath: path]
            }
        }
    }

    /// The members registration reads and answers, in reading order (`ClientSetting.all`).
    static let members: [Member] = ClientSetting.all.compactMap(\.member)
}
