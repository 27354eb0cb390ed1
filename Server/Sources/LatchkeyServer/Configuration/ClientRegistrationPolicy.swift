import Foundation

/// What an application registered through the API (RFC 7591, `POST /oauth2/register`) may be: the operator's
/// ceiling, `client_registration` in the configuration file.
///
/// Registration is not a way up. A request for a scope outside `scopes` (and always for an administrative scope) is
/// trimmed, and the answer's `latchkey_trimmed` names what was removed (RFC 7591 §3.2.1 lets the server register
/// other values than those asked for). A request for a grant type, an authentication method or an application type
/// outside the policy, or to switch PKCE off when `allow_without_pkce` is false, is refused with
/// `invalid_client_metadata`: those change what the application is, so registering something else would surprise
/// its developer.
public struct ClientRegistrationPolicy: Sendable, Equatable, Codable {
    /// The scope of an access token that may register applications (the initial access token of RFC 7591 §3),
    /// obtained by an application the operator configured with it.
    static let registrationScope = "registration"
    /// Scopes no registration gets, whatever the policy says: only the operator grants them, in the file.
    static let administrativeScopes: Set<String> = [ResourceCaller.adminScope, registrationScope, ApplicationTrust.accountScope]

    /// Registration without an initial access token, by anyone who can reach the server (throttled per address like
    /// account registration). Off by default.
    public var open = false
    /// The grant types a registration may ask for. `client_credentials` is not among them unless the operator adds it.
    public var grantTypes: [GrantType] = [.authorizationCode, .refreshToken]
    /// The scopes a registered application may be given.
    public var scopes: [String] = ["openid", "profile", "email", "phone", "address", "offline_access"]
    public var tokenEndpointAuthMethods: [ClientAuthMethod] = ClientAuthMethod.allCases
    public var appTypes: [ClientConfiguration.AppType] = [.native, .mobile, .browser]
    /// Whether a registration may switch PKCE off (`latchkey_require_pkce: false`) for a confidential application.
    public var allowWithoutPKCE = false
    /// Whether a confidential application registered without `latchkey_require_pkce` may leave PKCE out
    /// (`pkce_optional_for_confidential`, off): its code requests are then checked with PKCE when they send it and
    /// accepted without it, as OpenID Connect Core has them — what the conformance suite's Dynamic plan sends. A public
    /// application always needs PKCE, and `latchkey_require_pkce: true` still asks for it.
    public var pkceOptionalForConfidential = false
    /// The response types a registration may ask for (`response_types`; `code` only by default). The implicit and hybrid
    /// ones (`ResponseType`) bring the `implicit` grant with them.
    public var responseTypes: [ResponseType] = [.code]
    /// `ServerConfiguration.allowImplicitForPublicClients`, copied in by the server (not a member of
    /// `client_registration`: it rules the file's applications too).
    var publicClientsMayUseImplicit = false
    /// Whether registered applications may let people create accounts (the REGISTRATION flow); false registers every
    /// one with `disabled`.
    public var userRegistration = true
    /// The identity providers a registered application may offer; unset, any the server has.
    public var identityProviders: [String]?
    /// Audiences a registered application may exchange tokens for (`latchkey_allowed_audiences`).
    public var allowedAudiences: [String] = []
    /// Passkey origins a registered application may name (`latchkey_passkey_allowed_origins`); `self` is the server's
    /// own pages. An origin claims the right to sign in with this server's passkeys, so only those the operator lists.
    public var passkeyOrigins: [String] = ["self"]
    /// The subject type of a registration that names none (`subject_type`; OpenID Connect Registration §2 leaves the
    /// default to the server): `pairwise`, since a registered application is a third party, whose `sub` should not
    /// let it find the same person in another sector's data. A registration may still ask for `public`.
    public var subjectType: SubjectType = .pairwise

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case open, grantTypes = "grant_types", scopes, tokenEndpointAuthMethods = "token_endpoint_auth_methods"
        case appTypes = "app_types", allowWithoutPKCE = "allow_without_pkce", userRegistration = "user_registration"
        case identityProviders = "identity_providers", allowedAudiences = "allowed_audiences"
        case passkeyOrigins = "passkey_allowed_origins"
        case pkceOptionalForConfidential = "pkce_optional_for_confidential", responseTypes = "response_types"
        case subjectType = "subject_type"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = ClientRegistrationPolicy()
        open = try c.decodeIfPresent(Bool.self, forKey: .open) ?? defaults.open
        grantTypes = try c.decodeIfPresent([GrantType].self, forKey: .grantTypes) ?? defaults.grantTypes
        scopes = try c.decodeIfPresent([String].self, forKey: .scopes) ?? defaults.scopes
        tokenEndpointAuthMethods =
            try c.decodeIfPresent([ClientAuthMethod].self, forKey: .tokenEndpointAuthMethods) ?? defaults.tokenEndpointAuthMethods
        appTypes = try c.decodeIfPresent([ClientConfiguration.AppType].self, forKey: .appTypes) ?? defaults.appTypes
        allowWithoutPKCE = try c.decodeIfPresent(Bool.self, forKey: .allowWithoutPKCE) ?? defaults.allowWithoutPKCE
        userRegistration = try c.decodeIfPresent(Bool.self, forKey: .userRegistration) ?? defaults.userRegistration
        identityProviders = try c.decodeIfPresent([String].self, forKey: .identityProviders)
        allowedAudiences = try c.decodeIfPresent([String].self, forKey: .allowedAudiences) ?? defaults.allowedAudiences
        passkeyOrigins = try c.decodeIfPresent([String].self, forKey: .passkeyOrigins) ?? defaults.passkeyOrigins
        pkceOptionalForConfidential = try c.decodeIfPresent(Bool.self, forKey: .pkceOptionalForConfidential) ?? defaults.pkceOptionalForConfidential
        responseTypes = try c.decodeIfPresent([ResponseType].self, forKey: .responseTypes) ?? defaults.responseTypes
        subjectType = try c.decodeIfPresent(SubjectType.self, forKey: .subjectType) ?? defaults.subjectType
    }

    /// Refuses a policy that would hand out what only the operator grants, or names providers the server lacks.
    func validate(providers: Set<String>) throws {
        let administrative = Set(scopes).intersection(Self.administrativeScopes)
        guard administrative.isEmpty else {
            throw ConfigurationError.invalid(
                "client_registration.scopes must not contain \(administrative.sorted().joined(separator: ", ")): only the operator grants administrative scopes, in the configuration file"
            )
        }
        for scope in scopes where !Self.isScopeToken(scope) {
            throw ConfigurationError.invalid("client_registration.scopes: \(scope) is not a scope (RFC 6749 §3.3)")
        }
        for id in identityProviders ?? [] where !providers.contains(id) {
            throw ConfigurationError.invalid("client_registration.identity_providers: \(id) is not in identity_providers")
        }
        guard !grantTypes.isEmpty, !tokenEndpointAuthMethods.isEmpty, !appTypes.isEmpty else {
            throw ConfigurationError.invalid("client_registration: grant_types, token_endpoint_auth_methods and app_types must not be empty")
        }
    }

    /// RFC 6749 §3.3 `scope-token`: printable ASCII without space, `"` or `\`.
    static func isScopeToken(_ scope: String) -> Bool {
        !scope.isEmpty && scope.unicodeScalars.allSatisfy { $0.value == 0x21 || (0x23...0x5B).contains($0.value) || (0x5D...0x7E).contains($0.value) }
    }
}
