import Foundation
import LatchkeyJOSE

/// The client metadata of a registration or an update (RFC 7591 §2; OpenID Connect Registration §2 for
/// `application_type`, `post_logout_redirect_uris`, `id_token_signed_response_alg`; RFC 9449 §5.2
/// `dpop_bound_access_tokens`; RFC 9126 §6 `require_pushed_authorization_requests`; OpenID Connect Back-Channel and
/// Front-Channel Logout `*_logout_uri` and `*_logout_session_required`), and Latchkey's own settings under
/// names that say so (`latchkey_…`).
///
/// Read strictly: a member of the wrong type is `invalid_client_metadata` naming it. Members this server does not
/// know are ignored, as RFC 7591 §2 asks (`contacts`, `software_id` …: nothing here would use them).
struct ClientMetadata: Sendable, Equatable {
    var redirectUris: [String]?
    var grantTypes: [String]?
    var responseTypes: [String]?
    var tokenEndpointAuthMethod: String?
    var scope: String?
    var clientName: String?
    var postLogoutRedirectUris: [String]?
    var idTokenSignedResponseAlg: String?
    var userinfoSignedResponseAlg: String?
    var applicationType: String?
    var dpopBoundAccessTokens: Bool?
    var requirePushedAuthorizationRequests: Bool?
    var appType: String?
    var requirePKCE: Bool?
    var userRegistration: String?
    var recoveryEnabled: Bool?
    var requireMFA: Bool?
    var passkeyOrigins: [String]?
    var identityProviders: [String]?
    var allowedAudiences: [String]?
    /// A `private_key_jwt` application's public keys (RFC 7591 §2 `jwks`), read by `ClientKeys.parse`.
    var jwks: JWKSet?
    /// Where it publishes them instead (RFC 7591 §2 `jwks_uri`), and its request objects (OpenID Connect Registration
    /// §2 `request_uris`): `https` only through registration (`ClientDocumentURL`).
    var jwksURI: String?
    var requestURIs: [String]?
    var tokenEndpointAuthSigningAlg: String?
    /// OpenID Connect Back-Channel Logout §2.2 and Front-Channel Logout §2 (https only when registered this way: the
    /// server itself POSTs to the back-channel URI).
    var backchannelLogoutUri: String?
    var backchannelLogoutSessionRequired: Bool?
    var frontchannelLogoutUri: String?
    var frontchannelLogoutSessionRequired: Bool?
    /// Shown on the sign-in page (OpenID Connect Registration §2; `https`).
    var logoUri: String?
    var policyUri: String?
    var tosUri: String?
    var clientUri: String?
    /// OpenID Connect Registration §2 `subject_type` (`public` or `pairwise`) and `sector_identifier_uri`.
    var subjectType: String?
    var sectorIdentifierURI: String?
    /// `latchkey_security_profile`: `fapi2` (`ClientConfiguration.securityProfile`).
    var securityProfile: String?
    /// An update's `client_id` (RFC 7592 §2.2: must be the client's own) and `client_secret` (must be its current one).
    var clientId: String?
    var clientSecret: String?

    /// At most this many redirect URIs (and post-logout ones), scopes, providers, origins or audiences each.
    static let maxListLength = 20
    static let maxURILength = 2048
    static let maxNameLength = 200

    init() {}

    /// The metadata that describe `c` as it is: the starting point of a partial change (the console's form), so that
    /// what the change does not name stays as it was (an RFC 7592 update replaces everything).
    init(describing c: ClientConfiguration) {
        redirectUris = c.redirectUris
        grantTypes = c.grantTypes.map(\.rawValue)
        responseTypes = c.responseTypes.map(\.rawValue)
        tokenEndpointAuthMethod = c.tokenEndpointAuthMethod.rawValue
        scope = c.scopes.joined(separator: " ")
        clientName = c.name
        postLogoutRedirectUris = c.postLogoutRedirectUris
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
        logoUri = c.logoUri
        policyUri = c.policyUri
        tosUri = c.tosUri
        clientUri = c.clientUri
        securityProfile = c.securityProfile?.rawValue
        subjectType = c.subjectType.rawValue
        sectorIdentifierURI = c.sectorIdentifierURI
        clientId = c.clientId
    }

    init(json data: Data) throws(OAuthError) {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw OAuthError(.invalidClientMetadata, "the body must be a JSON object of client metadata")
        }
        try self.init(object)
    }

    /// Reads the members in `ClientMetadata.members`' order (`ClientSetting.all`), so that a body with several wrong
    /// members is refused for the first of them.
    init(_ object: [String: Any]) throws(OAuthError) {
        for member in Self.members {
            switch member {
            case .string(let name, let path): self[keyPath: path] = try Self.string(object, name)
            case .strings(let name, let path): self[keyPath: path] = try Self.strings(object, name)
            case .bool(let name, let path): self[keyPath: path] = try Self.bool(object, name)
            case .keySet(let name, let path): self[keyPath: path] = try Self.keySet(object, name)
            }
        }
    }

    private static func string(_ object: [String: Any], _ name: String) throws(OAuthError) -> String? {
        guard let value = object[name], !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw OAuthError(.invalidClientMetadata, "\(name) must be a string") }
        return text
    }

    private static func strings(_ object: [String: Any], _ name: String) throws(OAuthError) -> [String]? {
        guard let value = object[name], !(value is NSNull) else { return nil }
        guard let list = value as? [Any], let texts = list as? [String] else {
            throw OAuthError(name == "redirect_uris" ? .invalidRedirectURI : .invalidClientMetadata, "\(name) must be an array of strings")
        }
        guard texts.count <= maxListLength else {
            throw OAuthError(.invalidClientMetadata, "\(name) may hold at most \(maxListLength) values")
        }
        return texts
    }

    /// A JWK Set, public keys only (`ClientKeys.parse`); each problem is `invalid_client_metadata` naming the key.
    private static func keySet(_ object: [String: Any], _ name: String) throws(OAuthError) -> JWKSet? {
        guard let value = object[name], !(value is NSNull) else { return nil }
        guard JSONSerialization.isValidJSONObject(value), let data = try? JSONSerialization.data(withJSONObject: value),
            let json = try? JSONValue.parse(data)
        else { throw OAuthError(.invalidClientMetadata, "\(name) must be a JWK Set, an object {\"keys\": [...]}") }
        do { return try ClientKeys.parse(json) } catch { throw OAuthError(.invalidClientMetadata, "\(name): \(error.reason)") }
    }

    private static func bool(_ object: [String: Any], _ name: String) throws(OAuthError) -> Bool? {
        guard let value = object[name], !(value is NSNull) else { return nil }
        // JSONSerialization gives NSNumber for both numbers and booleans (and `1 as? Bool` succeeds): only a JSON
        // true/false, which decodes to the boolean subclass, is a boolean here.
        guard let number = value as? NSNumber, type(of: number) == type(of: NSNumber(value: true)) else {
            throw OAuthError(.invalidClientMetadata, "\(name) must be true or false")
        }
        return number.boolValue
    }
}

/// The members written under their registration names (`ClientInformation`), absent ones left out.
extension ClientMetadata: Encodable {
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: MemberKey.self)
        for member in Self.members {
            let key = MemberKey(stringValue: member.name)
            switch member {
            case .string(_, let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            case .strings(_, let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            case .bool(_, let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            case .keySet(_, let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            }
        }
    }
}
