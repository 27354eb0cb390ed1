import Foundation

/// The result of one HTTP exchange.
package struct HTTPResult: Sendable {
    package let status: Int
    package let headers: [String: String]
    package let body: Data

    package init(status: Int, headers: [String: String], body: Data) {
        self.status = status; self.headers = headers; self.body = body
    }

    package var text: String { String(decoding: body, as: UTF8.self) }
    package var location: String? { header("Location") }
    package func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    package func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else { throw TestFailure("not a JSON object: \(text)") }
        return object
    }
    /// Query parameters of the `Location` header.
    package var locationQuery: [String: String] {
        guard let location, let items = URLComponents(string: location)?.queryItems else { return [:] }
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
    }
}

/// A minimal browser for tests: keeps cookies, never follows redirects (each hop is asserted), talks real HTTP/1.1
/// over loopback through SwiftNIO. (Not URLSession: on Linux a 401 carrying `WWW-Authenticate` leaves its task
/// waiting forever, and the server must send that header on `invalid_client`.)
package final class TestBrowser: @unchecked Sendable {
    private let lock = NSLock()
    private var jar: [String: String] = [:]
    private let retriesOfDroppedConnections: Int

    /// - Parameter retriesOfDroppedConnections: how many times to resend a request whose connection the server closed
    ///   before answering. Zero for our own server (a dropped connection there is a bug the test must see); a few for
    ///   third-party servers that shed connections when the machine is saturated by the parallel suites.
    package init(retriesOfDroppedConnections: Int = 0) {
        self.retriesOfDroppedConnections = retriesOfDroppedConnections
    }

    package var cookies: [String: String] { lock.withLock { jar } }
    package func setCookie(_ name: String, _ value: String?) { lock.withLock { jar[name] = value } }

    package func get(_ url: String, headers: [String: String] = [:]) async throws -> HTTPResult {
        try await send(url, method: "GET", body: nil, headers: headers)
    }

    package func postForm(_ url: String, _ form: [String: String], headers: [String: String] = [:]) async throws -> HTTPResult {
        var h = headers
        h["Content-Type"] = "application/x-www-form-urlencoded"
        return try await send(url, method: "POST", body: Data(Self.formEncode(form).utf8), headers: h)
    }

    package func postJSON(_ url: String, _ object: [String: Any], headers: [String: String] = [:]) async throws -> HTTPResult {
        var h = headers
        h["Content-Type"] = "application/json"
        return try await send(url, method: "POST", body: try JSONSerialization.data(withJSONObject: object), headers: h)
    }

    package func send(_ url: String, method: String, body: Data?, headers: [String: String]) async throws -> HTTPResult {
        guard let target = URLComponents(string: url), let host = target.host, let port = target.port else { throw TestFailure("bad URL \(url)") }
        var fields = headers
        fields["Host"] = "\(host):\(port)"
        fields["Connection"] = "close"
        fields["Content-Length"] = String(body?.count ?? 0)
        let cookieHeader = cookies.filter { !$0.value.isEmpty }.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
        if !cookieHeader.isEmpty { fields["Cookie"] = cookieHeader }
        let path = (target.percentEncodedPath.isEmpty ? "/" : target.percentEncodedPath) + (target.percentEncodedQuery.map { "?" + $0 } ?? "")
        let trace = ProcessInfo.processInfo.environment["LATCHKEY_TEST_TRACE"] != nil
        if trace { FileHandle.standardError.write(Data("→ \(method) \(url.prefix(80))\n".utf8)) }
        var attempt = 0
        let result: RawHTTP.Result
        while true {
            do {
                result = try await RawHTTP.exchange(host: host, port: port, method: method, path: path, headers: fields, body: body)
                break
            } catch let error where attempt < retriesOfDroppedConnections && RawHTTP.isDroppedConnection(error) {
                attempt += 1
                if trace { FileHandle.standardError.write(Data("↻ \(error) — resending \(url.prefix(80))\n".utf8)) }
                try await Task.sleep(for: .milliseconds(250 * attempt))
            }
        }
        if trace { FileHandle.standardError.write(Data("← \(result.status) \(url.prefix(80))\n".utf8)) }
        for cookie in result.setCookies { absorb(cookie) }
        return result.response
    }

    private func absorb(_ header: String) {
        for cookie in [header] {
            let attributes = cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let pair = attributes.first, let eq = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<eq]), value = String(pair[pair.index(after: eq)...])
            let expired = attributes.contains { $0.lowercased() == "max-age=0" }
            setCookie(name, expired || value.isEmpty ? nil : value)
        }
    }

    package static func formEncode(_ form: [String: String]) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return form.map {
            "\($0.key.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }
        .sorted().joined(separator: "&")
    }

    /// The `value` of `<input name="NAME" value="…">` in a page.
    package static func hiddenField(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = html[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end]).replacingOccurrences(of: "&amp;", with: "&")
    }
}
