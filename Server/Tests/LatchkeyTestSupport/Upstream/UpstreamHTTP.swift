import Foundation
import Hummingbird
import LatchkeyJOSE

/// The HTTP pieces of the upstream double's answers: forms, redirects, JSON, pages.
enum UpstreamHTTP {
    /// The characters left as they are in a form-urlencoded value (RFC 3986's unreserved ones).
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A query or an `application/x-www-form-urlencoded` body as a dictionary (`+` is a space; the first of repeated
    /// names wins).
    static func decodeForm(_ text: String) -> [String: String] {
        var form: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map { formUnescape(String($0)) }
            if parts.count == 2, form[parts[0]] == nil { form[parts[0]] = parts[1] }
        }
        return form
    }

    static func formUnescape(_ text: String) -> String {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text
    }

    static func formEncode(_ parameters: [(String, String)]) -> String {
        parameters.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    private static func escape(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text }

    /// A 302 to `location` with `parameters` added to its query.
    static func redirect(_ location: String, _ parameters: [(String, String)]) -> Response {
        let separator = location.contains("?") ? "&" : "?"
        return Response(status: .found, headers: [.location: location + separator + formEncode(parameters)])
    }

    /// A page that posts `parameters` to `action` as soon as it loads (response_mode=form_post).
    static func formPostPage(action: String, _ parameters: [(String, String)]) -> Response {
        let inputs = parameters.map { "<input type=\"hidden\" name=\"\(htmlEscape($0.0))\" value=\"\(htmlEscape($0.1))\">" }
        let html = """
            <!DOCTYPE html>
            <html><head><title>Signing in…</title></head>
            <body onload="document.forms[0].submit()">
            <form method="post" action="\(htmlEscape(action))">
            \(inputs.joined(separator: "\n"))
            <noscript><button type="submit">Continue</button></noscript>
            </form>
            </body></html>
            """
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func page(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: "<!DOCTYPE html><p class=\"error\">\(htmlEscape(message))</p>")))
    }

    static func json(_ object: Any, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func formEncoded(_ parameters: [(String, String)]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/x-www-form-urlencoded; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: formEncode(parameters))))
    }

    static func oauthError(_ code: String, _ description: String, status: HTTPResponse.Status = .badRequest) -> Response {
        json(["error": code, "error_description": description], status: status)
    }

    static func htmlEscape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    static func htmlUnescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func randomToken() -> String {
        Base64URL.encode(Data((0..<24).map { _ in UInt8.random(in: 0...255) }))
    }
}
