import Foundation
import Latchkey
import LatchkeyServer

/// The checks of `latchkey doctor`, in the order a device meets a deployment: the discovery document and its keys,
/// the passkeys' RP ID, the association files at the RP ID's host (fetched as Apple's CDN and browsers fetch them: no
/// redirect followed), and the app's redirect URIs. Every request goes through `http`, which never follows redirects.
struct DeploymentDoctor: Sendable {
    let issuer: URL
    let appId: String?
    let clientId: String?
    let redirectURIs: [String]
    let rpId: String?
    let http: any HTTPClient

    func examine() async -> DoctorReport {
        var report = DoctorReport()
        checkIssuerScheme(&report)
        if let appId, !AppleAppID.isValid(appId) {
            report.add(
                .failed(
                    "app-id", "\(appId) is not TEAMID.bundle.id", fix: "pass the app id as its entitlements name it, e.g. ABCDE12345.com.example.app")
            )
        }
        guard let metadata = await discovery(&report) else { return report }
        await keys(metadata, &report)
        let rp = await relyingParty(&report)
        var associations = AssociationFiles(doctor: self)
        await appleAssociation(rpId: rp, files: &associations, &report)
        await relatedOrigins(rpId: rp, &report)
        for uri in redirectURIs { await redirect(uri, metadata: metadata, files: &associations, &report) }
        return report
    }

    // MARK: Issuer and discovery

    private var issuerString: String { issuer.absoluteString }
    /// The issuer without a trailing slash, for appending paths.
    private var issuerBase: String { issuerString.hasSuffix("/") ? String(issuerString.dropLast()) : issuerString }
    private var issuerHost: String { issuer.host?.lowercased() ?? "" }
    private var isDevelopmentIssuer: Bool { issuer.scheme == "http" && LoopbackHost.isLoopback(issuerHost) }

    private func checkIssuerScheme(_ report: inout DoctorReport) {
        if issuer.scheme == "https" { return report.add(.passed("issuer", "https")) }
        if isDevelopmentIssuer {
            return report.add(
                .warning(
                    "issuer", "plain http on a loopback host: fine on this machine and in the simulator, unreachable from a device",
                    fix: "serve an https issuer for devices"))
        }
        report.add(
            .failed(
                "issuer", "plain http off loopback: App Transport Security refuses it and tokens travel in clear", fix: "serve the issuer over https")
        )
    }

    private func discovery(_ report: inout DoctorReport) async -> [String: Any]? {
        guard let url = URL(string: issuerBase + "/.well-known/openid-configuration") else {
            report.add(.failed("discovery", "\(issuerString) gives no discovery URL", fix: "pass the issuer as an absolute URL"))
            return nil
        }
        guard let object = await jsonObject("discovery", url, &report) else { return nil }
        let announced = object["issuer"] as? String
        guard announced == issuerString else {
            report.add(
                .failed(
                    "discovery", "the document announces issuer \(announced ?? "(none)"), not \(issuerString); ID tokens will fail the iss check",
                    fix: "configure the apps with exactly \(announced ?? "the server's issuer"), or set the server's issuer to \(issuerString)"))
            return nil
        }
        let missing = ["authorization_endpoint", "token_endpoint", "jwks_uri"].filter { object[$0] as? String == nil }
        guard missing.isEmpty else {
            report.add(.failed("discovery", "missing \(missing.joined(separator: ", "))", fix: "serve a complete OpenID Provider Metadata document"))
            return nil
        }
        for name in ["authorization_endpoint", "token_endpoint", "jwks_uri"] {
            guard let endpoint = (object[name] as? String).flatMap(URL.init(string:)) else { continue }
            if endpoint.scheme != "https" && !(endpoint.scheme == "http" && LoopbackHost.isLoopback(endpoint.host ?? "")) {
                report.add(.failed("discovery", "\(name) \(endpoint.absoluteString) is not https", fix: "serve every endpoint over https"))
            }
        }
        report.add(.passed("discovery", "issuer matches, endpoints present"))
        return object
    }

    // MARK: Keys

    private func keys(_ metadata: [String: Any], _ report: inout DoctorReport) async {
        guard let url = (metadata["jwks_uri"] as? String).flatMap(URL.init(string:)), let jwks = await jsonObject("jwks", url, &report) else {
            return
        }
        guard let keys = jwks["keys"] as? [[String: Any]], !keys.isEmpty else {
            return report.add(.failed("jwks", "the key set has no keys", fix: "publish the signing keys' public halves"))
        }
        let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "k"]
        if keys.contains(where: { key in privateMembers.contains { key[$0] != nil } }) {
            report.add(
                .failed(
                    "jwks", "the key set publishes private key material",
                    fix: "replace the signing keys at once (the private halves are exposed) and publish public keys only"))
        }
        let kids = keys.compactMap { $0["kid"] as? String }
        if Set(kids).count != kids.count {
            report.add(.failed("jwks", "two keys share a kid; a verifier cannot tell them apart", fix: "give each key its own kid"))
        } else if kids.count != keys.count {
            report.add(.warning("jwks", "a key has no kid", fix: "give every key a kid, so verifiers pick it without trying each"))
        }
        let algorithms = metadata["id_token_signing_alg_values_supported"] as? [String] ?? ["RS256"]
        let unverifiable = algorithms.filter { alg in !keys.contains { Self.key($0, fits: alg) } }
        if unverifiable.isEmpty {
            report.add(.passed("jwks", "\(keys.count) keys; a key for each ID token algorithm (\(algorithms.joined(separator: ", ")))"))
        } else {
            report.add(
                .failed(
                    "jwks", "no key verifies ID tokens signed with \(unverifiable.joined(separator: ", ")), which discovery announces",
                    fix: "publish a key for each announced algorithm, or stop announcing the algorithm"))
        }
    }

    private static func key(_ key: [String: Any], fits alg: String) -> Bool {
        if let declared = key["alg"] as? String, declared != alg { return false }
        if let use = key["use"] as? String, use != "sig" { return false }
        switch alg.prefix(2) {
        case "RS", "PS": return key["kty"] as? String == "RSA"
        case "ES":
            let curve = ["ES256": "P-256", "ES384": "P-384", "ES512": "P-521"][alg]
            return key["kty"] as? String == "EC" && key["crv"] as? String == curve
        case "Ed": return key["kty"] as? String == "OKP"
        default: return false
        }
    }

    // MARK: Relying party

    /// The RP ID: the server's answer for the app's client when one is named, else `--rp-id`, else the issuer's host.
    private func relyingParty(_ report: inout DoctorReport) async -> String {
        var rp = rpId?.lowercased() ?? issuerHost
        if let clientId {
            switch await passkeyOptions(clientId: clientId, origin: originString(issuer)) {
            case .success(let answered):
                rp = answered
                report.add(.passed("rp-id", "the server's RP ID for \(clientId) is \(answered)"))
                // iOS signs with origin https://<RP ID>: the application must accept it.
                if case .failure(let why) = await passkeyOptions(clientId: clientId, origin: "https://\(answered)") {
                    report.add(
                        .failed(
                            "rp-id", "\(clientId) refuses the origin https://\(answered), which iOS puts in every passkey answer (\(why))",
                            fix: "add https://\(answered) to the application's passkey_allowed_origins"))
                }
            case .failure(let why):
                report.add(
                    .warning(
                        "rp-id", "the server gives \(clientId) no passkey options (\(why)); assuming RP ID \(rp)",
                        fix: "let the application use passkeys (passkey_allowed_origins), or pass --rp-id"))
            }
        } else {
            report.add(.info("rp-id", "\(rp) (\(rpId == nil ? "the issuer's host; --client-id asks the server" : "--rp-id"))"))
        }
        if Self.isIPAddress(rp) && !LoopbackHost.isLoopback(rp) {
            report.add(.failed("rp-id", "\(rp) is an IP address; passkeys need a domain name", fix: "set webauthn.rp_id to a domain"))
        }
        if issuerHost != rp && !issuerHost.hasSuffix("." + rp) {
            report.add(
                .warning(
                    "rp-id", "the issuer's host \(issuerHost) is outside the RP ID \(rp): its hosted pages cannot use these passkeys",
                    fix: "add \(originString(issuer)) to associations.related_origins, or choose an RP ID that covers \(issuerHost)"))
        }
        return rp
    }

    private func passkeyOptions(clientId: String, origin: String) async -> Result<String, DoctorFailure> {
        guard let url = URL(string: issuerBase + "/identity/v1/webauthn/authentication-options"),
            let body = try? JSONSerialization.data(withJSONObject: ["client_id": clientId, "origin": origin])
        else { return .failure(DoctorFailure("no options URL")) }
        let request = HTTPRequest(method: "POST", url: url, headers: ["Content-Type": "application/json", "Accept": "application/json"], body: body)
        guard let response = try? await http.send(request) else { return .failure(DoctorFailure("the server cannot be reached")) }
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard response.status == 200, let rp = (object?["public_key"] as? [String: Any])?["rp_id"] as? String else {
            let why = object?["error_description"] as? String ?? object?["error"] as? String ?? "HTTP \(response.status)"
            return .failure(DoctorFailure(why))
        }
        return .success(rp.lowercased())
    }

    // MARK: Association files

    private func appleAssociation(rpId: String, files: inout AssociationFiles, _ report: inout DoctorReport) async {
        guard let document = await files.apple(host: rpId, &report) else { return }
        let apps = (document["webcredentials"] as? [String: Any])?["apps"] as? [String] ?? []
        guard let appId else {
            if apps.isEmpty {
                report.add(
                    .failed(
                        "webcredentials", "the file at \(rpId) names no app under webcredentials: no app can use these passkeys",
                        fix: "list the apps in associations.apple_app_ids"))
            } else {
                report.add(.info("webcredentials", "apps: \(apps.joined(separator: ", ")) (--app-id checks yours)"))
            }
            return
        }
        if apps.contains(appId) {
            report.add(.passed("webcredentials", "\(appId) may use the passkeys of \(rpId)"))
        } else {
            report.add(
                .failed(
                    "webcredentials",
                    "\(appId) is not listed under webcredentials at \(rpId) (listed: \(apps.isEmpty ? "none" : apps.joined(separator: ", ")))",
                    fix:
                        "add \(appId) to associations.apple_app_ids in the server's configuration, and webcredentials:\(rpId) to the app's Associated Domains"
                ))
        }
    }

    private func relatedOrigins(rpId: String, _ report: inout DoctorReport) async {
        guard let url = URL(string: associationBase(host: rpId) + "/.well-known/webauthn") else { return }
        guard let response = try? await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"])) else {
            return report.add(.info("related-origins", "\(url.absoluteString) cannot be reached (only needed for web origins outside \(rpId))"))
        }
        if response.status == 404 {
            return report.add(.info("related-origins", "none (only needed for web origins outside \(rpId))"))
        }
        if (300..<400).contains(response.status) {
            return report.add(
                .failed(
                    "related-origins", "\(url.absoluteString) answers a redirect; browsers do not follow it",
                    fix: "serve /.well-known/webauthn at \(rpId) itself"))
        }
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard response.status == 200, let origins = object?["origins"] as? [String] else {
            return report.add(
                .failed(
                    "related-origins", "\(url.absoluteString) is not {\"origins\": [...]} (HTTP \(response.status))",
                    fix: "serve the related origins as JSON (associations.related_origins)"))
        }
        let bad = origins.filter { !$0.hasPrefix("https://") }
        if bad.isEmpty {
            report.add(.passed("related-origins", "\(origins.count) origin\(origins.count == 1 ? "" : "s") may use the passkeys of \(rpId)"))
        } else {
            report.add(.failed("related-origins", "not https: \(bad.joined(separator: ", "))", fix: "list https origins only"))
        }
    }

    // MARK: Redirect URIs

    private func redirect(_ uri: String, metadata: [String: Any], files: inout AssociationFiles, _ report: inout DoctorReport) async {
        guard let clientId, let endpoint = metadata["authorization_endpoint"] as? String, var components = URLComponents(string: endpoint),
            let redirect = URLComponents(string: uri), let scheme = redirect.scheme?.lowercased()
        else { return report.add(.failed("redirect-uri", "\(uri) is not an absolute URI", fix: "pass the redirect URI the app uses")) }
        let pkce = PKCEPair()
        components.queryItems =
            (components.queryItems ?? []) + [
                URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientId),
                URLQueryItem(name: "redirect_uri", value: uri), URLQueryItem(name: "scope", value: "openid"),
                URLQueryItem(name: "state", value: "latchkey-doctor"), URLQueryItem(name: "code_challenge", value: pkce.challenge),
                URLQueryItem(name: "code_challenge_method", value: pkce.method)
            ]
        guard let url = components.url, let response = try? await http.send(HTTPRequest(url: url)) else {
            return report.add(.failed("redirect-uri", "the authorization endpoint cannot be reached", fix: "check the issuer's endpoints"))
        }
        if let location = response.location, location.hasPrefix(uri),
            let error = URLComponents(string: location)?.queryItems?.first(where: { $0.name == "error" })?.value
        {
            report.add(
                .warning(
                    "redirect-uri", "\(uri) is registered for \(clientId), but the server refused the request: \(error)",
                    fix: "check the application's grant types and scopes"))
        } else if response.status == 200 || (300..<400).contains(response.status) {
            report.add(.passed("redirect-uri", "\(uri) is registered for \(clientId)"))
        } else {
            let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
            let why = object?["error_description"] as? String ?? "HTTP \(response.status)"
            return report.add(
                .failed(
                    "redirect-uri", "the server refuses \(uri) for \(clientId): \(why)", fix: "register \(uri) in the application's redirect_uris"))
        }
        switch scheme {
        case "https":
            await universalLink(redirect, uri: uri, files: &files, &report)
        case "http":
            report.add(.info("redirect-uri", "\(uri) is a loopback redirect (development and desktop apps only)"))
        default:
            report.add(
                .info(
                    "redirect-uri",
                    "\(uri): the app must declare the URL scheme \(scheme) (CFBundleURLTypes) and pass it as ASWebAuthenticationSession's callback scheme"
                ))
        }
    }

    /// An https redirect URI reaches the app only as a universal link: the host's `applinks` must name the app and the path.
    private func universalLink(_ redirect: URLComponents, uri: String, files: inout AssociationFiles, _ report: inout DoctorReport) async {
        guard let appId else {
            return report.add(
                .warning("applinks", "\(uri) is an https redirect; pass --app-id to check it opens the app", fix: "rerun with --app-id"))
        }
        guard let host = redirect.host?.lowercased(), let document = await files.apple(host: host, &report) else { return }
        let path = redirect.percentEncodedPath.isEmpty ? "/" : redirect.percentEncodedPath
        let details = (document["applinks"] as? [String: Any])?["details"] as? [[String: Any]] ?? []
        let opens = details.contains { detail in
            let ids = (detail["appIDs"] as? [String] ?? []) + [detail["appID"] as? String].compactMap { $0 }
            guard ids.contains(appId) else { return false }
            let components = detail["components"] as? [[String: Any]] ?? []
            let paths = detail["paths"] as? [String] ?? []
            return components.contains { Self.pattern($0["/"] as? String, matches: path) } || paths.contains { Self.pattern($0, matches: path) }
        }
        if opens {
            report.add(.passed("applinks", "\(uri) opens \(appId)"))
        } else {
            report.add(
                .failed(
                    "applinks", "\(path) at \(host) is not an applinks path of \(appId): the redirect would open Safari, not the app",
                    fix: host == issuerHost
                        ? "add \(appId) to associations.apple_app_ids (the server lists its https redirect URIs), and applinks:\(host) to the app's Associated Domains"
                        : "add \(path) for \(appId) to the applinks of https://\(host)/.well-known/apple-app-site-association"))
        }
    }

    /// Apple's component pattern: `*` any run of characters, `?` one character.
    static func pattern(_ pattern: String?, matches path: String) -> Bool {
        guard let pattern else { return false }
        let p = Array(pattern)
        let s = Array(path)
        func match(_ i: Int, _ j: Int) -> Bool {
            if i == p.count { return j == s.count }
            switch p[i] {
            case "*": return (j...s.count).contains { match(i + 1, $0) }
            case "?": return j < s.count && match(i + 1, j + 1)
            default: return j < s.count && p[i] == s[j] && match(i + 1, j + 1)
            }
        }
        return match(0, 0)
    }

    // MARK: Fetching

    /// Where the association files of `host` are read: `https://host`, except the development issuer's own host,
    /// read over its loopback http origin (a device would need https).
    func associationBase(host: String) -> String {
        host == issuerHost && isDevelopmentIssuer ? originString(issuer) : "https://\(host)"
    }

    /// A JSON object at `url`, or a failure finding saying why not (unreachable, a redirect, a status, not JSON).
    func jsonObject(_ check: String, _ url: URL, requireJSONType: Bool = false, _ report: inout DoctorReport) async -> [String: Any]? {
        let response: HTTPResponse
        do { response = try await http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"])) } catch {
            report.add(
                .failed(check, "\(url.absoluteString) cannot be reached (\(error))", fix: "check the address, DNS, TLS and that the server runs"))
            return nil
        }
        if (300..<400).contains(response.status) {
            report.add(
                .failed(
                    check,
                    "\(url.absoluteString) answers a redirect (to \(response.location ?? "?")), which Apple's CDN, browsers and the SDK do not follow",
                    fix: "serve it at this address directly"))
            return nil
        }
        guard response.status == 200 else {
            report.add(.failed(check, "\(url.absoluteString) answers HTTP \(response.status)", fix: Self.fixForStatus(check, response.status)))
            return nil
        }
        let type = response.headers.first { $0.key.lowercased() == "content-type" }?.value.lowercased() ?? ""
        if requireJSONType && !type.hasPrefix("application/json") {
            report.add(.failed(check, "\(url.absoluteString) is served as \(type.isEmpty ? "no type" : type)", fix: "serve it as application/json"))
            return nil
        }
        guard let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] else {
            report.add(.failed(check, "\(url.absoluteString) is not a JSON object", fix: "serve valid JSON"))
            return nil
        }
        return object
    }

    private static func fixForStatus(_ check: String, _ status: Int) -> String {
        check == "apple-app-site-association" && status == 404
            ? "list the apps in associations.apple_app_ids in the server's configuration (or serve the file at this host)"
            : "make the address answer 200 with the document"
    }

    // MARK: Small rules

    private func originString(_ url: URL) -> String {
        let port = url.port.map { ":\($0)" } ?? ""
        return "\(url.scheme ?? "https")://\(url.host ?? "")\(port)"
    }

    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }
}

/// The apple-app-site-association files read in one run, one fetch per host.
struct AssociationFiles {
    let doctor: DeploymentDoctor
    private var byHost: [String: [String: Any]?] = [:]

    init(doctor: DeploymentDoctor) { self.doctor = doctor }

    mutating func apple(host: String, _ report: inout DoctorReport) async -> [String: Any]? {
        if let known = byHost[host] { return known }
        var document: [String: Any]?
        if let url = URL(string: doctor.associationBase(host: host) + "/.well-known/apple-app-site-association") {
            document = await doctor.jsonObject("apple-app-site-association", url, requireJSONType: true, &report)
            if document != nil { report.add(.passed("apple-app-site-association", "served at \(url.absoluteString) as JSON, no redirect")) }
        }
        byHost[host] = .some(document)
        return document
    }
}

/// Why a probe got no usable answer (a sentence for a finding).
struct DoctorFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
