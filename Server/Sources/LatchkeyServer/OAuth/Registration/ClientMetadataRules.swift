import Foundation
import LatchkeyJOSE

/// Client metadata turned into an application's settings under the operator's policy: the defaults of RFC 7591 §2
/// where a member is absent, the same checks as the configuration file (`ClientConfiguration.validate`), then the
/// policy, which refuses what would change what the application is and trims what would give it more
/// (`ClientRegistrationPolicy`).
struct RegisteredSettings: Sendable {
    var configuration: ClientConfiguration
    /// What the policy removed from the request, by member name (the answer's `latchkey_trimmed`).
    var trimmed: [String: [String]]
}

extension ClientMetadata {
    /// `previous`: the settings an update replaces (those metadata cannot express, such as flow graphs, are kept).
    func settings(
        clientId: String, policy: ClientRegistrationPolicy, providers: Set<String>, previous: ClientConfiguration? = nil
    ) throws(OAuthError) -> RegisteredSettings {
        var trimmed: [String: [String]] = [:]
        let types = try responseTypesAllowed(policy)
        let grants = try grantTypesAllowed(policy, responseTypes: types)
        let responseTypes = try checkResponseTypes(types, grants: grants)
        let method = try authMethodAllowed(policy)
        if method == .none, !policy.publicClientsMayUseImplicit, let type = responseTypes.first(where: \.isFrontChannel) {
            throw OAuthError(
                .invalidClientMetadata,
                "response type \(type.rawValue) is not available to a public application here (tokens through the browser with nothing to tie them to it)"
            )
        }
        let appType = try appTypeAllowed(policy)
        let redirects = try Self.checkedURIs(redirectUris ?? [], member: "redirect_uris", code: .invalidRedirectURI, web: appType == .browser)
        if let grant = grants.first(where: { $0 == .authorizationCode || $0 == .implicit }), redirects.isEmpty {
            throw OAuthError(.invalidRedirectURI, "redirect_uris must name at least one URI for the \(grant.rawValue) grant")
        }
        let logoutRedirects = try Self.checkedURIs(
            postLogoutRedirectUris ?? [], member: "post_logout_redirect_uris", code: .invalidClientMetadata, web: appType == .browser)

        var configuration = previous ?? ClientConfiguration(clientId: clientId)
        configuration.clientId = clientId
        configuration.name = try checkedName() ?? clientId
        configuration.clientSecret = nil
        // Introspecting other applications' tokens is the operator's to grant (the configuration file), never a
        // registrant's (review 3, R3-9).
        configuration.introspection = false
        configuration.tokenEndpointAuthMethod = method
        configuration.redirectUris = redirects
        configuration.postLogoutRedirectUris = logoutRedirects
        configuration.grantTypes = grants
        configuration.responseTypes = responseTypes
        configuration.appType = appType
        configuration.scopes = try scopesAllowed(policy, trimmed: &trimmed)
        configuration.requirePKCE = try pkceRequirement(policy, isPublic: method == .none)
        configuration.registration = try userRegistrationAllowed(policy, grants: grants, trimmed: &trimmed)
        configuration.recoveryEnabled = recoveryEnabled ?? true
        configuration.requireMFA = requireMFA ?? false
        configuration.requireDPoP = dpopBoundAccessTokens ?? false
        configuration.requirePushedAuthorizationRequests = requirePushedAuthorizationRequests ?? false
        configuration.idTokenSignedResponseAlg = try signingAlgorithm()
        configuration.userinfoSignedResponseAlg = try Self.serverSigningAlgorithm(
            userinfoSignedResponseAlg, member: "userinfo_signed_response_alg")
        configuration.jwks = jwks
        configuration.jwksURI = try Self.checkedDocumentURL(jwksURI, member: "jwks_uri", fragmentAllowed: false)
        for uri in requestURIs ?? [] { _ = try Self.checkedDocumentURL(uri, member: "request_uris", fragmentAllowed: true) }
        configuration.requestURIs = requestURIs ?? []
        configuration.tokenEndpointAuthSigningAlg = try assertionAlgorithm()
        configuration.backchannelLogoutUri = try Self.checkedDocumentURL(
            backchannelLogoutUri, member: "backchannel_logout_uri", fragmentAllowed: false)
        configuration.backchannelLogoutSessionRequired = backchannelLogoutSessionRequired ?? false
        configuration.frontchannelLogoutUri = try Self.checkedDocumentURL(
            frontchannelLogoutUri, member: "frontchannel_logout_uri", fragmentAllowed: false)
        configuration.frontchannelLogoutSessionRequired = frontchannelLogoutSessionRequired ?? false
        try applySecurityProfile(to: &configuration)
        configuration.logoUri = try Self.checkedDocumentURL(logoUri, member: "logo_uri", fragmentAllowed: false)
        configuration.policyUri = try Self.checkedDocumentURL(policyUri, member: "policy_uri", fragmentAllowed: true)
        configuration.tosUri = try Self.checkedDocumentURL(tosUri, member: "tos_uri", fragmentAllowed: true)
        configuration.clientUri = try Self.checkedDocumentURL(clientUri, member: "client_uri", fragmentAllowed: true)
        configuration.passkeyOrigins = Self.allowed(
            passkeyOrigins ?? [], in: policy.passkeyOrigins, member: "latchkey_passkey_allowed_origins", trimmed: &trimmed)
        configuration.allowedAudiences = Self.allowed(
            allowedAudiences ?? [], in: policy.allowedAudiences, member: "latchkey_allowed_audiences", trimmed: &trimmed)
        for id in identityProviders ?? [] where !providers.contains(id) {
            throw OAuthError(.invalidClientMetadata, "latchkey_identity_providers: this server has no identity provider \(Self.printable(id))")
        }
        configuration.identityProviders = Self.allowed(
            identityProviders ?? [], in: policy.identityProviders ?? Array(providers), member: "latchkey_identity_providers", trimmed: &trimmed)
        configuration.subjectType = try subjectTypeAllowed(policy)
        configuration.sectorIdentifierURI = try Self.checkedDocumentURL(
            sectorIdentifierURI, member: "sector_identifier_uri", fragmentAllowed: false)
        if let previous, previous.subjectType == .pairwise, configuration.subjectType == .pairwise,
            let sector = configuration.sectorIdentifier, sector != previous.sectorIdentifier
        {
            // Every subject the application was given would change under it: the accounts it knows would be lost to it.
            throw OAuthError(
                .invalidClientMetadata,
                "the sector of pairwise subjects cannot change (it is \(previous.sectorIdentifier ?? "unset"), this would make it \(sector)): register a sector_identifier_uri on the same host"
            )
        }
        // The same checks as the file's; the secret is the server's to make (after this), so a stand-in of its length
        // takes its place.
        var checked = configuration
        checked.clientSecret = configuration.usesSecret ? String(repeating: "s", count: 43) : nil
        do { try checked.validate() } catch let ConfigurationError.invalid(why) {
            throw OAuthError(.invalidClientMetadata, why)
        } catch {
            throw OAuthError(.invalidClientMetadata, "the metadata do not describe a valid application")
        }
        return RegisteredSettings(configuration: configuration, trimmed: trimmed)
    }

    /// `subject_type`: `public` or `pairwise`; absent, the policy's default.
    private func subjectTypeAllowed(_ policy: ClientRegistrationPolicy) throws(OAuthError) -> SubjectType {
        guard let subjectType else { return policy.subjectType }
        guard let type = SubjectType(rawValue: subjectType) else {
            throw OAuthError(.invalidClientMetadata, "subject_type must be public or pairwise, not \(Self.printable(subjectType))")
        }
        return type
    }

    /// `latchkey_security_profile: fapi2` sets what the profile requires wherever the metadata leave it open (as the
    /// configuration file's `security_profile`); a member contradicting it is refused by the file's checks.
    private func applySecurityProfile(to configuration: inout ClientConfiguration) throws(OAuthError) {
        guard let securityProfile else {
            configuration.securityProfile = nil
            return
        }
        guard securityProfile == ClientConfiguration.SecurityProfile.fapi2.rawValue else {
            throw OAuthError(.invalidClientMetadata, "latchkey_security_profile must be fapi2")
        }
        configuration.securityProfile = .fapi2
        if dpopBoundAccessTokens == nil { configuration.requireDPoP = true }
        if requirePushedAuthorizationRequests == nil { configuration.requirePushedAuthorizationRequests = true }
        if requirePKCE == nil { configuration.requirePKCE = true }
        if idTokenSignedResponseAlg == nil { configuration.idTokenSignedResponseAlg = .es256 }
    }

    /// RFC 7591 §2: `grant_types` defaults to `authorization_code` — or, when `response_types` are given, to the grants
    /// they use. `implicit` comes with the policy's front-channel response types.
    private func grantTypesAllowed(_ policy: ClientRegistrationPolicy, responseTypes types: [ResponseType]?) throws(OAuthError) -> [GrantType] {
        var grants: [GrantType] = []
        let implied = types.map { types in
            GrantType.allCases.filter { grant in types.contains { $0.grantTypes.contains(grant) } }.map(\.rawValue)
        }
        for name in grantTypes ?? implied ?? [GrantType.authorizationCode.rawValue] {
            guard let grant = GrantType(rawValue: name) else {
                throw OAuthError(.invalidClientMetadata, "grant type \(Self.printable(name)) is not supported by this server")
            }
            let implicitAllowed = grant == .implicit && policy.responseTypes.contains(where: \.isFrontChannel)
            guard policy.grantTypes.contains(grant) || implicitAllowed else {
                throw OAuthError(.invalidClientMetadata, "grant type \(name) may not be registered here (client_registration.grant_types)")
            }
            if !grants.contains(grant) { grants.append(grant) }
        }
        guard !grants.isEmpty else { throw OAuthError(.invalidClientMetadata, "grant_types must not be empty") }
        if grants.contains(.refreshToken) && !grants.contains(.authorizationCode) && !grants.contains(.deviceCode) && !grants.contains(.implicit) {
            throw OAuthError(
                .invalidClientMetadata, "refresh_token goes with a grant that signs people in (authorization_code or device_code)")
        }
        return grants
    }

    /// `response_types` as asked (nil when absent), each one the policy allows (`client_registration.response_types`).
    private func responseTypesAllowed(_ policy: ClientRegistrationPolicy) throws(OAuthError) -> [ResponseType]? {
        guard let responseTypes else { return nil }
        var types: [ResponseType] = []
        for name in responseTypes {
            guard let type = ResponseType(parameter: name) else {
                throw OAuthError(
                    .invalidClientMetadata,
                    "response type \(Self.printable(name)) is not supported (\(ResponseType.listed()))")
            }
            guard policy.responseTypes.contains(type) else {
                throw OAuthError(
                    .invalidClientMetadata,
                    "response type \(type.rawValue) may not be registered here (client_registration.response_types: \(ResponseType.listed(policy.responseTypes)))"
                )
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    /// RFC 7591 §2.1: `response_types` and `grant_types` must agree — each response type's grants are registered, and
    /// `authorization_code` or `implicit` only with a response type that uses it. Absent, `code` when the grants have
    /// `authorization_code`.
    private func checkResponseTypes(_ asked: [ResponseType]?, grants: [GrantType]) throws(OAuthError) -> [ResponseType] {
        let types = asked ?? (grants.contains(.authorizationCode) ? [.code] : [])
        for type in types {
            if let missing = type.grantTypes.first(where: { !grants.contains($0) }) {
                throw OAuthError(
                    .invalidClientMetadata, "response type \(type.rawValue) needs grant type \(missing.rawValue) (RFC 7591 §2.1)")
            }
        }
        for grant in [GrantType.authorizationCode, .implicit] where grants.contains(grant) {
            guard types.contains(where: { $0.grantTypes.contains(grant) }) else {
                throw OAuthError(
                    .invalidClientMetadata, "grant type \(grant.rawValue) needs a response type that uses it in response_types (RFC 7591 §2.1)")
            }
        }
        return types
    }

    /// RFC 7591 §2: `token_endpoint_auth_method` defaults to `client_secret_basic`.
    private func authMethodAllowed(_ policy: ClientRegistrationPolicy) throws(OAuthError) -> ClientAuthMethod {
        let name = tokenEndpointAuthMethod ?? ClientAuthMethod.clientSecretBasic.rawValue
        guard let method = ClientAuthMethod(rawValue: name) else {
            throw OAuthError(.invalidClientMetadata, "token_endpoint_auth_method \(Self.printable(name)) is not supported")
        }
        guard policy.tokenEndpointAuthMethods.contains(method) else {
            throw OAuthError(.invalidClientMetadata, "token_endpoint_auth_method \(name) may not be registered here")
        }
        return method
    }

    /// `latchkey_app_type` when given, else OpenID Connect's `application_type` (default `web`): a web application is
    /// a `browser` one, a native one `native`.
    private func appTypeAllowed(_ policy: ClientRegistrationPolicy) throws(OAuthError) -> ClientConfiguration.AppType {
        let type: ClientConfiguration.AppType
        if let appType {
            guard let parsed = ClientConfiguration.AppType(rawValue: appType) else {
                throw OAuthError(.invalidClientMetadata, "latchkey_app_type must be native, mobile or browser")
            }
            type = parsed
        } else {
            switch applicationType ?? "web" {
            case "web": type = .browser
            case "native": type = .native
            default: throw OAuthError(.invalidClientMetadata, "application_type must be web or native")
            }
        }
        guard policy.appTypes.contains(type) else {
            throw OAuthError(.invalidClientMetadata, "applications of type \(type.rawValue) may not be registered here")
        }
        return type
    }

    /// Absolute, no fragment, at most `maxURILength`; http only to a loopback host (`ClientConfiguration.validate`
    /// checks that too); a web application's only https or loopback http (OpenID Connect Registration §2: no custom
    /// schemes for web clients).
    private static func checkedURIs(_ uris: [String], member: String, code: OAuthError.Code, web: Bool) throws(OAuthError) -> [String] {
        for uri in uris {
            guard uri.count <= maxURILength, let url = URL(string: uri), let scheme = url.scheme?.lowercased() else {
                throw OAuthError(code, "\(member): \(printable(uri)) is not an absolute URI")
            }
            guard url.fragment == nil else { throw OAuthError(code, "\(member): \(printable(uri)) has a fragment") }
            if scheme == "http" && !LoopbackHost.isLoopback(url.host ?? "") {
                throw OAuthError(code, "\(member): \(printable(uri)) uses http to a host that is not loopback")
            }
            if web && scheme != "https" && scheme != "http" {
                throw OAuthError(code, "\(member): a web application's URIs are https (\(printable(uri)))")
            }
            if ["javascript", "data", "file", "vbscript"].contains(scheme) {
                throw OAuthError(code, "\(member): the \(scheme) scheme is not a redirect target")
            }
        }
        return uris
    }

    /// A URL the server will contact (`jwks_uri`, `request_uris`, the back-channel logout URI) or the person's browser
    /// will (the front-channel logout URI, the sign-in page's logo and links): through registration `https` only, and
    /// not to a loopback or private address (`ClientDocumentURL`), so a registration cannot point the server at a
    /// service on its own network.
    private static func checkedDocumentURL(_ uri: String?, member: String, fragmentAllowed: Bool) throws(OAuthError) -> String? {
        guard let uri else { return nil }
        if let why = ClientDocumentURL.refusal(uri, member: member, operatorSet: false, fragmentAllowed: fragmentAllowed) {
            throw OAuthError(.invalidClientMetadata, why)
        }
        return uri
    }

    private func checkedName() throws(OAuthError) -> String? {
        guard let clientName else { return nil }
        let trimmedName = clientName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmedName.isEmpty, trimmedName.count <= Self.maxNameLength,
            !trimmedName.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) })
        else {
            throw OAuthError(.invalidClientMetadata, "client_name must be 1 to \(Self.maxNameLength) printable characters")
        }
        return trimmedName
    }

    /// The scopes asked for (default: all the policy allows), less the administrative ones and those outside the policy.
    private func scopesAllowed(_ policy: ClientRegistrationPolicy, trimmed: inout [String: [String]]) throws(OAuthError) -> [String] {
        guard let scope else { return policy.scopes }
        var kept: [String] = [], removed: [String] = []
        for name in scope.split(separator: " ", omittingEmptySubsequences: true).map(String.init) {
            guard ClientRegistrationPolicy.isScopeToken(name) else {
                throw OAuthError(.invalidClientMetadata, "scope: \(Self.printable(name)) is not a scope (RFC 6749 §3.3)")
            }
            if ClientRegistrationPolicy.administrativeScopes.contains(name) || !policy.scopes.contains(name) {
                if !removed.contains(name) { removed.append(name) }
            } else if !kept.contains(name) {
                kept.append(name)
            }
        }
        guard kept.count <= Self.maxListLength else {
            throw OAuthError(.invalidClientMetadata, "scope may hold at most \(Self.maxListLength) values")
        }
        if !removed.isEmpty { trimmed["scope"] = removed }
        return kept
    }

    /// `latchkey_require_pkce`, else required — unless the policy makes PKCE optional for confidential applications
    /// (`pkce_optional_for_confidential`).
    private func pkceRequirement(_ policy: ClientRegistrationPolicy, isPublic: Bool) throws(OAuthError) -> Bool {
        guard let requirePKCE else { return isPublic || !policy.pkceOptionalForConfidential }
        guard requirePKCE == false else { return true }
        guard policy.allowWithoutPKCE, !isPublic else {
            throw OAuthError(
                .invalidClientMetadata,
                isPublic
                    ? "a public application always uses PKCE (latchkey_require_pkce false is refused)"
                    : "latchkey_require_pkce false may not be registered here (client_registration.allow_without_pkce)")
        }
        return false
    }

    private func userRegistrationAllowed(
        _ policy: ClientRegistrationPolicy, grants: [GrantType], trimmed: inout [String: [String]]
    ) throws(OAuthError) -> ClientConfiguration.RegistrationPolicy {
        // Read strictly, as the configuration file reads it: an unknown value is refused, not taken for the default.
        var asked: ClientConfiguration.RegistrationPolicy?
        if let userRegistration {
            guard let known = ClientConfiguration.RegistrationPolicy(rawValue: userRegistration) else {
                throw OAuthError(
                    .invalidClientMetadata, "latchkey_registration must be open, invite_only or disabled, not \(Self.printable(userRegistration))")
            }
            asked = known
        }
        let wanted = asked ?? ClientConfiguration(clientId: "", grantTypes: grants).registration
        guard policy.userRegistration || wanted == .disabled else {
            if let asked { trimmed["latchkey_registration"] = [asked.rawValue] }
            return .disabled
        }
        return wanted
    }

    private func signingAlgorithm() throws(OAuthError) -> JWSAlgorithm {
        try Self.serverSigningAlgorithm(idTokenSignedResponseAlg, member: "id_token_signed_response_alg") ?? .rs256
    }

    /// What the server signs an application's ID tokens and UserInfo answers with; `none` is never one.
    static let serverSigningAlgorithms: [JWSAlgorithm] = [.rs256, .es256]

    /// An algorithm the server signs with (ID tokens, UserInfo): one of `serverSigningAlgorithms`.
    private static func serverSigningAlgorithm(_ name: String?, member: String) throws(OAuthError) -> JWSAlgorithm? {
        guard let name else { return nil }
        guard let algorithm = JWSAlgorithm(rawValue: name), serverSigningAlgorithms.contains(algorithm) else {
            throw OAuthError(.invalidClientMetadata, "\(member) must be RS256 or ES256")
        }
        return algorithm
    }

    /// `token_endpoint_auth_signing_alg`: one of the algorithms client assertions are verified with.
    private func assertionAlgorithm() throws(OAuthError) -> JWSAlgorithm? {
        guard let name = tokenEndpointAuthSigningAlg else { return nil }
        guard let algorithm = JWSAlgorithm(rawValue: name), ClientAssertion.algorithms.contains(algorithm) else {
            throw OAuthError(
                .invalidClientMetadata,
                "token_endpoint_auth_signing_alg must be one of \(ClientAssertion.algorithmNames.joined(separator: ", "))")
        }
        return algorithm
    }

    /// `values` that are in `allowed`; the others are recorded in `trimmed` under `member`.
    private static func allowed(_ values: [String], in allowed: [String], member: String, trimmed: inout [String: [String]]) -> [String] {
        var kept: [String] = [], removed: [String] = []
        for value in values {
            if allowed.contains(value) {
                if !kept.contains(value) { kept.append(value) }
            } else if !removed.contains(value) {
                removed.append(printable(value))
            }
        }
        if !removed.isEmpty { trimmed[member] = removed }
        return kept
    }

    /// A value the caller sent, safe to repeat in an error or a log: printable ASCII, at most 100 characters.
    static func printable(_ value: String) -> String {
        String(
            value.unicodeScalars.filter { (0x20...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\" }.prefix(100).map(Character.init))
    }
}
