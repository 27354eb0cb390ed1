import Foundation
import LatchkeyJOSE

/// One setting of an application, named once for every place that spells it: the configuration file and the stored
/// row (`ClientConfiguration`'s key), dynamic registration (the member `ClientMetadata` reads and `ClientInformation`
/// answers, both from this table), the audit trail's list of what an update changed (from this table too), and the
/// console's form (its fields are the rows' `ConsoleField`s). `ClientSettingsAgreementTests` fails when a setting is readable in one of these places, or in the
/// OpenAPI description (`api/openapi.json`), and not in the others it should be.
///
/// The OpenAPI description's `ClientMetadata` properties are generated from the rows too (`openAPIProperties`: each
/// member's JSON type, the values its rule allows from the enum the rule checks, the reader's list limit, and the row's
/// format, example and description); `api/openapi.json` holds that output, and the agreement test fails when it differs.
///
/// A new setting is one row here plus its behaviour: its property on `ClientConfiguration` (file key, default and
/// `validate()` rule) and on `ClientMetadata` (with `init(describing:)` and the rule in `ClientMetadataRules.swift`).
struct ClientSetting: Sendable {
    /// The key in the configuration file and the stored row (`ClientConfiguration.CodingKeys`); nil for a registration
    /// member that is no setting of its own (`application_type`, OpenID Connect's coarser `latchkey_app_type`).
    let file: String?
    let registration: Registration
    let console: Console
    /// How the OpenAPI description shows the member; nil for an update's credentials (`client_id`, `client_secret`),
    /// which the update's body describes.
    let schema: Schema?

    enum Registration: Sendable {
        /// Read from a registration or an update, and answered.
        case member(ClientMetadata.Member)
        /// Not a registration member, for the reason given: an update keeps the application's value, a registration gets
        /// the default (or the server's value, `ClientMetadata.settings`).
        case fileOnly(why: String)
    }

    enum Console: Sendable {
        /// A field of the console's form: its control, its place, and how it reads and writes the metadata
        /// (`ConsoleField`).
        case field(ConsoleField)
        /// Not on the form: an edit keeps it (`ClientMetadata(describing:)`).
        case kept
    }

    /// What the OpenAPI description says of a member beyond what the member's case and its rule give.
    struct Schema: Sendable {
        /// Each value's format (`uri`).
        var format: String? = nil
        /// The values the rule allows, read from the enum it checks against.
        var values: [String]? = nil
        /// One example: a string member's value, or a list member's values.
        var example: [String]? = nil
        var description: String? = nil
    }

    /// The registration member, if the setting is one.
    var member: ClientMetadata.Member? {
        if case .member(let member) = registration { member } else { nil }
    }
}

extension ClientSetting {
    private static func member(
        _ file: String?, _ member: ClientMetadata.Member, console: Console = .kept, schema: Schema? = nil
    ) -> ClientSetting {
        ClientSetting(file: file, registration: .member(member), console: console, schema: schema)
    }

    private static func fileOnly(_ file: String, why: String) -> ClientSetting {
        ClientSetting(file: file, registration: .fileOnly(why: why), console: .kept, schema: nil)
    }

    /// Every setting, registration members first in the order they are read (which decides the error a body with
    /// several wrong members gets), then the configuration file's own.
    static let all: [ClientSetting] = [
        member(
            "redirect_uris", .strings("redirect_uris", \.redirectUris),
            console: .field(
                .lines("redirect_uris", position: 3, label: "console.apps.redirects", hint: "console.apps.redirects.hint", \.redirectUris)),
            schema: .init(format: "uri", example: ["com.example.app:/callback", "http://127.0.0.1/callback"])),
        member(
            "grant_types", .strings("grant_types", \.grantTypes), console: .field(.grants),
            schema: .init(values: GrantType.allCases.map(\.rawValue))),
        member(
            "response_types", .strings("response_types", \.responseTypes),
            schema: .init(
                values: ResponseType.allCases.map(\.rawValue),
                description:
                    """
                    What the authorization endpoint may return (`code` by default). The implicit and hybrid types are offered only where the \
                    operator's `client_registration.response_types` lists them, bring the `implicit` grant, and are refused for a public \
                    application unless `allow_implicit_for_public_clients` is set. Values are sets: `token id_token` is `id_token token`.
                    """
            )),
        // The form's `confidential` box chooses between `none` and `client_secret_basic`.
        member(
            "token_endpoint_auth_method", .string("token_endpoint_auth_method", \.tokenEndpointAuthMethod), console: .field(.confidential),
            schema: .init(
                values: ClientAuthMethod.allCases.map(\.rawValue),
                description:
                    """
                    `none`: a public client (no secret). `private_key_jwt`: no secret either; the application signs client assertions with a key \
                    it registers in `jwks`.
                    """
            )),
        member(
            "scopes", .string("scope", \.scope),
            console: .field(
                .text("scope", position: 6, label: "console.apps.scope", \.scope, leftToRight: true, blank: "openid profile email offline_access")),
            schema: .init(
                example: ["openid profile email offline_access"],
                description:
                    """
                    Space-separated scopes the client may ask for. Registration never grants `scim.admin`, `registration` or `latchkey.account` \
                    (they are trimmed: `latchkey_trimmed`).
                    """
            )),
        member(
            "name", .string("client_name", \.clientName),
            console: .field(.text("name", position: 0, label: "console.apps.name", \.clientName, required: true)), schema: .init()),
        member(
            "post_logout_redirect_uris", .strings("post_logout_redirect_uris", \.postLogoutRedirectUris),
            console: .field(.lines("post_logout_redirect_uris", position: 4, label: "console.apps.logout_redirects", \.postLogoutRedirectUris)),
            schema: .init(format: "uri")),
        member(
            "id_token_signed_response_alg", .string("id_token_signed_response_alg", \.idTokenSignedResponseAlg),
            schema: .init(values: ClientMetadata.serverSigningAlgorithms.map(\.rawValue))),
        member(
            "userinfo_signed_response_alg", .string("userinfo_signed_response_alg", \.userinfoSignedResponseAlg),
            schema: .init(
                values: ClientMetadata.serverSigningAlgorithms.map(\.rawValue),
                description:
                    "UserInfo answered as a JWT signed with this algorithm (OIDC Registration).")),
        member(nil, .string("application_type", \.applicationType), schema: .init(values: ["web", "native"])),
        member(
            "require_dpop", .bool("dpop_bound_access_tokens", \.dpopBoundAccessTokens),
            schema: .init(
                description:
                    "RFC 9449 §5.2: the client's access tokens must be DPoP-bound.")),
        member(
            "require_pushed_authorization_requests", .bool("require_pushed_authorization_requests", \.requirePushedAuthorizationRequests),
            schema: .init(
                description:
                    "RFC 9126 §6: authorization requests only through `/oauth2/par`.")),
        member(
            "app_type", .string("latchkey_app_type", \.appType), console: .field(.appType),
            schema: .init(
                values: ClientConfiguration.AppType.allCases.map(\.rawValue),
                description:
                    "A `browser` app cannot be signed into natively; a `mobile` one needs the app's attestation on every native sign-in endpoint.")),
        member("require_pkce", .bool("latchkey_require_pkce", \.requirePKCE), schema: .init()),
        member(
            "registration", .string("latchkey_registration", \.userRegistration),
            schema: .init(
                values: ClientConfiguration.RegistrationPolicy.allCases.map(\.rawValue),
                description:
                    "Whether people may sign up through this application.")),
        member("recovery_enabled", .bool("latchkey_recovery_enabled", \.recoveryEnabled), schema: .init()),
        member(
            "require_mfa", .bool("latchkey_require_mfa", \.requireMFA),
            console: .field(.flag("require_mfa", position: 7, label: "console.apps.require_mfa", \.requireMFA)), schema: .init()),
        member(
            "passkey_allowed_origins", .strings("latchkey_passkey_allowed_origins", \.passkeyOrigins),
            schema: .init(
                description:
                    "Exact origins a passkey response may come from (`https://example.com`, `android:apk-key-hash:…`, or `self`).")),
        member(
            "identity_providers", .strings("latchkey_identity_providers", \.identityProviders),
            schema: .init(
                description:
                    "The ids of the identity providers the application offers.")),
        member(
            "allowed_audiences", .strings("latchkey_allowed_audiences", \.allowedAudiences),
            schema: .init(
                description:
                    "Audiences the client may ask tokens for (token exchange).")),
        member(
            "token_endpoint_auth_signing_alg", .string("token_endpoint_auth_signing_alg", \.tokenEndpointAuthSigningAlg),
            schema: .init(
                values: ClientAssertion.algorithms.map(\.rawValue),
                description:
                    "`private_key_jwt`: the one algorithm the application's assertions use (unset: any of these its keys are for).")),
        member(
            "jwks", .keySet("jwks", \.jwks),
            schema: .init(
                description:
                    """
                    `private_key_jwt`: the application's public keys, a JWK Set (RFC 7517 §5) of 1 to 10 keys: RSA (2048 bits or more), EC P-256 \
                    or OKP Ed25519, at least one for signatures, `kid`s distinct. A private member (`d`, `p`, `k` …) is refused. Register `jwks` \
                    or `jwks_uri`, not both.
                    """
            )),
        member(
            "backchannel_logout_uri", .string("backchannel_logout_uri", \.backchannelLogoutUri),
            schema: .init(
                format: "uri",
                description:
                    """
                    OpenID Connect Back-Channel Logout: where a logout_token is POSTed when a session the application took part in ends (https; \
                    registration refuses loopback hosts).
                    """
            )),
        member(
            "backchannel_logout_session_required", .bool("backchannel_logout_session_required", \.backchannelLogoutSessionRequired), schema: .init()),
        member(
            "frontchannel_logout_uri", .string("frontchannel_logout_uri", \.frontchannelLogoutUri),
            schema: .init(
                format: "uri",
                description:
                    "OpenID Connect Front-Channel Logout: framed by the signed-out page with iss and sid.")),
        member(
            "frontchannel_logout_session_required", .bool("frontchannel_logout_session_required", \.frontchannelLogoutSessionRequired),
            schema: .init()),
        member(
            "security_profile", .string("latchkey_security_profile", \.securityProfile),
            schema: .init(
                values: ClientConfiguration.SecurityProfile.allCases.map(\.rawValue),
                description:
                    "The FAPI 2.0 Security Profile: its settings become the defaults; contradicting members are refused.")),
        member(
            "logo_uri", .string("logo_uri", \.logoUri),
            schema: .init(
                format: "uri",
                description:
                    "Shown on the hosted sign-in page (https).")),
        member(
            "policy_uri", .string("policy_uri", \.policyUri),
            schema: .init(
                format: "uri",
                description:
                    "Linked from the hosted sign-in page (https).")),
        member(
            "tos_uri", .string("tos_uri", \.tosUri),
            schema: .init(
                format: "uri",
                description:
                    "Linked from the hosted sign-in page (https).")),
        member(
            "client_uri", .string("client_uri", \.clientUri),
            schema: .init(
                format: "uri",
                description:
                    "The logo links to it (https).")),
        member(
            "jwks_uri", .string("jwks_uri", \.jwksURI),
            schema: .init(
                format: "uri", example: ["https://client.example.com/jwks.json"],
                description:
                    """
                    `private_key_jwt`: where the application publishes its JWK Set instead of `jwks` (RFC 7591 §2): an `https` URL without user \
                    information or fragment, fetched by the server (5 s, 64 KiB, no redirect followed), kept 5 minutes and fetched again for an \
                    unknown `kid` (at most every 30 s); the set is checked as `jwks` is.
                    """
            )),
        member(
            "request_uris", .strings("request_uris", \.requestURIs),
            schema: .init(
                format: "uri",
                description:
                    """
                    OpenID Connect Registration §2: `https` URLs where the application publishes signed request objects; an authorization \
                    request's `request_uri` is fetched only when it is one of them (its fragment aside), else refused with \
                    `invalid_request_uri`. Needs the application's keys (`jwks` or `jwks_uri`); not with \
                    `require_pushed_authorization_requests`.
                    """
            )),
        member(
            "subject_type", .string("subject_type", \.subjectType),
            schema: .init(
                values: SubjectType.allCases.map(\.rawValue),
                description:
                    """
                    OpenID Connect Core §8: public (the account id) or pairwise (one value per account and sector). Absent: \
                    client_registration.subject_type, pairwise unless the operator changed it. The sector of a pairwise application cannot \
                    change by an update.
                    """
            )),
        member(
            "sector_identifier_uri", .string("sector_identifier_uri", \.sectorIdentifierURI),
            schema: .init(
                format: "uri",
                description:
                    """
                    OpenID Connect Core §8.1: an https URL of a JSON array of URIs, fetched at registration and at each update; every redirect \
                    URI must be listed there, and its host is the sector. Without it the sector is the redirect URIs' one host (loopback URIs \
                    name none). Refused when it cannot be fetched.
                    """
            )),
        // An update's: the application's own id (RFC 7592 §2.2) and its current secret.
        member("client_id", .string("client_id", \.clientId)),
        member("client_secret", .string("client_secret", \.clientSecret)),
        fileOnly("flows", why: "client metadata cannot express a flow graph"),
        fileOnly("apple_bundle_ids", why: "an app's bundle id is vouched for by the operator: the apps whose Apple tokens sign people in"),
        fileOnly(
            "device_verification_uri_complete",
            why: "a link that approves in one step is a phishing lure: the operator turns it on for devices it knows"),
        fileOnly("third_party", why: "registered applications are third-party whatever they say"),
        fileOnly("introspection", why: "the operator's grant: registering an application does not buy a validity oracle")
    ]
}

extension ClientSetting {
    /// `components.schemas.ClientMetadata.properties` of the OpenAPI description: every member with a schema.
    static var openAPIProperties: [String: JSONValue] {
        var properties: [String: JSONValue] = [:]
        for setting in all {
            guard let member = setting.member, let schema = setting.schema else { continue }
            properties[member.name] = .object(schema.property(of: member))
        }
        return properties
    }
}

extension ClientSetting.Schema {
    /// The member's JSON Schema: its type from the member's case, then this schema's details.
    func property(of member: ClientMetadata.Member) -> [String: JSONValue] {
        var value: [String: JSONValue] = ["type": .string("string")]
        if let format { value["format"] = .string(format) }
        if let values { value["enum"] = .array(values.map(JSONValue.string)) }
        var property: [String: JSONValue]
        switch member {
        case .string:
            property = value
            if let example { property["examples"] = .array(example.map(JSONValue.string)) }
        case .strings:
            property = ["type": .string("array"), "items": .object(value), "maxItems": .number(Double(ClientMetadata.maxListLength))]
            if let example { property["examples"] = .array([.array(example.map(JSONValue.string))]) }
        case .bool:
            property = ["type": .string("boolean")]
        case .keySet:
            let key: [String: JSONValue] = [
                "type": .string("object"), "required": .array([.string("kty")]),
                "properties": .object(
                    Dictionary(uniqueKeysWithValues: ["kty", "kid", "use", "alg"].map { ($0, JSONValue.object(["type": .string("string")])) }))
            ]
            let keys: [String: JSONValue] = [
                "type": .string("array"), "minItems": .number(1), "maxItems": .number(Double(ClientKeys.maximumKeys)), "items": .object(key)
            ]
            property = ["type": .string("object"), "required": .array([.string("keys")]), "properties": .object(["keys": .object(keys)])]
        }
        if let description { property["description"] = .string(description) }
        return property
    }
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
