import Foundation

/// Which apps and web origins may use this server's passkeys and links, as the two association files say it:
/// `/.well-known/apple-app-site-association` (Apple's devices read it before an app may use the RP ID's passkeys or
/// open an https redirect URI) and `/.well-known/webauthn` (WebAuthn Level 3 related origins: browsers read it before a
/// site outside the RP ID may use its passkeys).
///
/// Configuration file: `"associations": {"apple_app_ids": ["ABCDE12345.com.example.app"], "related_origins":
/// ["https://example.co.uk"]}`.
public struct AssociationSettings: Sendable, Equatable {
    /// Apple app identifiers, `TEAMID.bundle.id` (the ten-character team id, a dot, the bundle id): listed under
    /// `webcredentials` (the app may use the RP ID's passkeys) and `applinks` (the https redirect URIs on this host
    /// open the app).
    public var appleAppIds: [String] = []
    /// Web origins outside the RP ID that may use its passkeys (`https://host[:port]`).
    public var relatedOrigins: [String] = []

    public init(appleAppIds: [String] = [], relatedOrigins: [String] = []) {
        self.appleAppIds = appleAppIds
        self.relatedOrigins = relatedOrigins
    }

    /// Refuses identifiers Apple would not match and origins a browser would not accept, each with the fix.
    /// - Parameters:
    ///   - rpId: the passkeys' RP ID in force.
    ///   - development: `http://` loopback origins are accepted in development mode only.
    func validate(rpId: String, development: Bool) throws {
        var seen = Set<String>()
        for appId in appleAppIds {
            guard AppleAppID.isValid(appId) else {
                throw ConfigurationError.invalid(
                    "associations.apple_app_ids: \(appId) is not TEAMID.bundle.id (ten capital letters or digits, a dot, the bundle identifier), e.g. ABCDE12345.com.example.app"
                )
            }
            guard seen.insert(appId).inserted else { throw ConfigurationError.invalid("associations.apple_app_ids lists \(appId) twice") }
        }
        seen = []
        for origin in relatedOrigins {
            let serialised = try RelatedOrigin.serialise(origin, development: development)
            guard serialised == origin else {
                throw ConfigurationError.invalid("associations.related_origins: write \(origin) as \(serialised) (what browsers compare)")
            }
            if let host = URLComponents(string: origin)?.host, RelyingPartyDomain.covers(rpId: rpId, host: host) {
                throw ConfigurationError.invalid(
                    "associations.related_origins: \(origin) is already inside the RP ID \(rpId); list only origins outside it")
            }
            guard seen.insert(origin).inserted else { throw ConfigurationError.invalid("associations.related_origins lists \(origin) twice") }
        }
    }

    /// What is allowed but will not work as the operator probably expects; logged at start.
    /// - Parameters:
    ///   - issuer: the issuer (the host these files are served at).
    ///   - rpId: the passkeys' RP ID in force.
    ///   - clients: the configured applications (their passkey origins).
    func warnings(issuer: URL, rpId: String, clients: [ClientConfiguration]) -> [String] {
        var warnings: [String] = []
        let host = issuer.host ?? ""
        if (!appleAppIds.isEmpty || !relatedOrigins.isEmpty) && host.lowercased() != rpId.lowercased() {
            warnings.append(
                "the association files are served at \(host), but Apple's devices and browsers read them at https://\(rpId)/.well-known/: serve them at \(rpId) too (proxy /.well-known/apple-app-site-association and /.well-known/webauthn to this server)"
            )
        }
        for client in clients {
            for origin in client.passkeyOrigins where origin.hasPrefix("https://") || origin.hasPrefix("http://") {
                guard let originHost = URLComponents(string: origin)?.host, !RelyingPartyDomain.covers(rpId: rpId, host: originHost),
                    !relatedOrigins.contains(origin)
                else { continue }
                warnings.append(
                    "client \(client.clientId): passkey origin \(origin) is outside the RP ID \(rpId) and not in associations.related_origins, so browsers refuse passkeys there; add it to associations.related_origins"
                )
            }
        }
        return warnings
    }
}

/// `TEAMID.bundle.id`, as Apple writes app identifiers in `webcredentials` and `applinks` (also `latchkey doctor`'s rule).
package enum AppleAppID {
    package static func isValid(_ value: String) -> Bool {
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 10, parts[0].allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else { return false }
        let bundle = parts[1]
        // A bundle identifier: reverse-DNS labels of letters, digits and hyphens.
        return !bundle.isEmpty
            && bundle.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
                !label.isEmpty && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            }
    }
}

/// A WebAuthn related origin, serialised as browsers compare it.
enum RelatedOrigin {
    /// `scheme://host[:port]`, the host lowercased and a default port dropped.
    /// - Throws: `ConfigurationError` naming what is wrong (a path, a query, plain http off loopback …).
    static func serialise(_ origin: String, development: Bool) throws -> String {
        func refuse(_ why: String) -> ConfigurationError { .invalid("associations.related_origins: \(origin) \(why)") }
        guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { throw refuse("is not an origin (https://host[:port])") }
        guard components.user == nil, components.password == nil, components.query == nil, components.fragment == nil,
            components.path.isEmpty
        else { throw refuse("must be scheme://host[:port] only (no path, query, fragment or user)") }
        switch scheme {
        case "https": break
        case "http" where development && LoopbackHost.isLoopback(host): break
        default: throw refuse("must be https (http only for loopback hosts in development)")
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)"
    }
}

/// Whether a host is the RP ID or inside it (WebAuthn §5.1.4.1: the RP ID is a registrable suffix of the origin's host).
enum RelyingPartyDomain {
    static func covers(rpId: String, host: String) -> Bool {
        let rp = rpId.lowercased()
        let h = host.lowercased()
        return h == rp || h.hasSuffix("." + rp)
    }
}
