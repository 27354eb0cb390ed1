import Foundation
import HTTPTypes
import Hummingbird

/// Serves the association files under `/.well-known/`, from the configuration (`AssociationSettings`): answered
/// directly (never a redirect: Apple's CDN and browsers do not follow one), `Content-Type: application/json`, and 404
/// when the configuration names nothing for a file.
///
/// Both documents are built once, here: they depend on the configuration only, so an unauthenticated request for them
/// costs no store read however often it comes.
struct AssociationController: Sendable {
    private let apple: AppleAppSiteAssociation?
    private let webauthn: RelatedOrigins?

    /// - Parameters:
    ///   - settings: the app ids and related origins.
    ///   - issuerHost: the issuer's host: the https redirect URIs on it of the configuration file's native and mobile
    ///     applications are the `applinks` paths (a browser application's callback must stay a web page).
    ///   - clients: the configuration file's applications.
    init(settings: AssociationSettings, issuerHost: String, clients: [ClientConfiguration]) {
        let redirectURIs = clients.filter { $0.appType != .browser }.flatMap(\.redirectUris)
        apple =
            settings.appleAppIds.isEmpty
            ? nil : AppleAppSiteAssociation(appIds: settings.appleAppIds, redirectURIs: redirectURIs, host: issuerHost)
        webauthn = settings.relatedOrigins.isEmpty ? nil : RelatedOrigins(origins: settings.relatedOrigins)
    }

    func addRoutes(to wellKnown: RouterGroup<LatchkeyRequestContext>) {
        wellKnown.get("apple-app-site-association") { _, _ in
            guard let apple else { return try Self.notConfigured("associations.apple_app_ids") }
            return try Self.json(apple)
        }
        wellKnown.get("webauthn") { _, _ in
            guard let webauthn else { return try Self.notConfigured("associations.related_origins") }
            return try Self.json(webauthn)
        }
    }

    /// 404 that says which setting would fill the file (unlike an unknown path's "No route for").
    private static func notConfigured(_ setting: String) throws -> Response {
        try Responses.json(
            ["error": "not_found", "error_description": "this server's configuration lists nothing for this file (\(setting))"], status: .notFound)
    }

    /// `application/json` exactly (Apple documents that type; no charset parameter to trip a strict reader), cached
    /// for an hour like Apple's CDN does.
    private static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=3600"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}

/// `/.well-known/apple-app-site-association`: the apps may use the RP ID's passkeys (`webcredentials`) and open the
/// https redirect URIs on this host (`applinks`, one exact-path component per URI).
struct AppleAppSiteAssociation: Encodable, Equatable {
    struct WebCredentials: Encodable, Equatable { var apps: [String] }
    struct AppLinks: Encodable, Equatable { var details: [Detail] }
    struct Detail: Encodable, Equatable {
        var appIDs: [String]
        var components: [Component]
    }
    struct Component: Encodable, Equatable {
        var path: String
        enum CodingKeys: String, CodingKey { case path = "/" }
    }

    var webcredentials: WebCredentials
    var applinks: AppLinks?

    /// - Parameters:
    ///   - redirectURIs: every application's redirect URIs; the https ones on `host` become paths.
    ///   - host: the host this file is served at.
    init(appIds: [String], redirectURIs: [String], host: String) {
        webcredentials = WebCredentials(apps: appIds)
        var paths: [String] = []
        for uri in redirectURIs {
            guard let url = URLComponents(string: uri), url.scheme == "https", url.host?.lowercased() == host.lowercased() else { continue }
            let path = url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath
            // `*` and `?` are wildcards in a component's pattern: a path holding them would match more than itself.
            guard !path.contains("*"), !path.contains("?"), !paths.contains(path) else { continue }
            paths.append(path)
        }
        applinks = paths.isEmpty ? nil : AppLinks(details: [Detail(appIDs: appIds, components: paths.sorted().map(Component.init))])
    }
}

/// `/.well-known/webauthn` (WebAuthn Level 3 §5.11, related origin requests).
struct RelatedOrigins: Encodable, Equatable {
    var origins: [String]
}
