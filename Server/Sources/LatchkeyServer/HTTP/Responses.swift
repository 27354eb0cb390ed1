import Foundation
import HTTPTypes
import Hummingbird

/// Response builders. Every response that carries a credential is marked `no-store` (RFC 6749 §5.1).
enum Responses {
    /// The page for a link or form that is no longer good (a used or expired consent or offer).
    static func expiredPage(_ locale: SupportedLocale) -> Response {
        Responses.html(Pages.message(titleKey: "page.expired.title", bodyKey: "page.expired.body", locale: locale), status: .badRequest)
    }

    static func json(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, noStore: Bool = false,
        headers: HTTPFields = [:]
    ) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        if noStore {
            fields[.cacheControl] = "no-store"
            fields[.pragma] = "no-cache"
        }
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// `sameOriginScripts`: the page loads our own script files (the passkey button) and may call our own
    /// endpoints; inline scripts stay forbidden either way.
    /// `frameSources`: origins the page may frame (front-channel logout's hidden frames); none otherwise.
    /// `imageSources`: origins images may come from besides this server (an application's logo).
    static func html(
        _ page: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:], sameOriginScripts: Bool = false,
        frameSources: [String] = [], imageSources: [String] = []
    ) -> Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        fields[.cacheControl] = "no-store"
        // Inline styles only; no inline script ever; never framed (clickjacking of the password form).
        let scripts = sameOriginScripts ? "script-src 'self'; connect-src 'self'; " : ""
        let images = imageSources.isEmpty ? "" : " " + Array(Set(imageSources)).sorted().joined(separator: " ")
        let frames = frameSources.isEmpty ? "" : "frame-src \(Array(Set(frameSources)).sorted().joined(separator: " ")); "
        fields[.contentSecurityPolicy] =
            "default-src 'none'; \(scripts)\(frames)style-src 'unsafe-inline'; img-src 'self' data:\(images); frame-ancestors 'none'; base-uri 'none'"
        fields[.xFrameOptions] = "DENY"
        fields[.referrerPolicy] = "no-referrer"
        fields[.xContentTypeOptions] = "nosniff"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// 302 for GET flows, 303 after a POST so the browser does not re-post the form to the client.
    static func redirect(to location: String, afterPost: Bool = false, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.location] = location
        fields[.cacheControl] = "no-store"
        return Response(status: afterPost ? .seeOther : .found, headers: fields)
    }

    static func empty(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers)
    }
}

extension HTTPField.Name {
    static let pragma = Self("Pragma")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}

/// Appends query parameters to a redirect URI that may already have a query (RFC 6749 §3.1.2: keep it).
enum RedirectURL {
    static func appending(_ parameters: [(String, String?)], to base: String) -> String {
        var components = URLComponents(string: base) ?? URLComponents()
        var items = components.percentEncodedQueryItems ?? []
        for (name, value) in parameters {
            guard let value else { continue }
            items.append(URLQueryItem(name: name, value: FormEncoding.encode(value)))
        }
        components.percentEncodedQueryItems = items
        return components.string ?? base
    }

    /// `base` with `parameters` form-encoded in its fragment (OAuth 2.0 Multiple Response Type Encoding Practices §2.1):
    /// a registered redirect URI has no fragment of its own (`ClientConfiguration.validate`).
    static func appendingFragment(_ parameters: [(String, String?)], to base: String) -> String {
        let encoded = parameters.compactMap { name, value in value.map { FormEncoding.encode(name) + "=" + FormEncoding.encode($0) } }
        let withoutFragment = base.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? base
        return withoutFragment + "#" + encoded.joined(separator: "&")
    }
}

/// Strict percent-encoding for query values (only unreserved characters are left as they are).
enum FormEncoding {
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    static func encode(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
}

extension HTTPResponse.Status {
    /// 423 (RFC 4918): the account is locked.
    static let locked = HTTPResponse.Status(code: 423, reasonPhrase: "Locked")
}

/// Sources named in a page's Content-Security-Policy.
enum CSPSource {
    /// `scheme://host[:port]` of a URI, for `frame-src` or `img-src`.
    static func origin(of uri: String) -> String? {
        guard var components = URLComponents(string: uri), components.scheme != nil, components.host != nil else { return nil }
        components.path = ""
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        // Only what an origin is made of reaches the CSP header: no separator could smuggle in another directive.
        guard let origin = components.string,
            origin.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ":/.-[]".unicodeScalars.contains($0)) })
        else { return nil }
        return origin
    }
}
