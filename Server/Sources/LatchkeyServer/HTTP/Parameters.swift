import Foundation
import Hummingbird

/// Request parameters from a query string, an `application/x-www-form-urlencoded` body or a flat JSON object.
/// RFC 6749 §3.1: parameters sent without a value are treated as omitted, and none may appear more than once.
struct Parameters: Sendable {
    private(set) var values: [String: [String]] = [:]

    init(_ values: [String: [String]] = [:]) { self.values = values }

    /// Parses `a=b&c=d` with `+` as space and percent-decoding.
    init(formEncoded text: String) throws(OAuthError) {
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else {
                throw OAuthError(.invalidRequest, "malformed percent-encoding in the request")
            }
            guard !value.isEmpty else { continue }
            values[name, default: []].append(value)
        }
    }

    /// A JSON object whose members are strings (numbers and booleans are accepted and stringified).
    init(json data: Data) throws(OAuthError) {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw OAuthError(.invalidRequest, "the body is not a JSON object")
        }
        for (key, value) in object {
            switch value {
            case let s as String where !s.isEmpty: values[key] = [s]
            case let n as NSNumber: values[key] = [n.stringValue]
            case is NSNull, is String: continue
            default: throw OAuthError(.invalidRequest, "parameter \(key) must be a string")
            }
        }
    }

    private static func decode(_ s: Substring) -> String? {
        s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// The single value of `name`; a repeated parameter is an `invalid_request`.
    func single(_ name: String) throws(OAuthError) -> String? {
        guard let all = values[name] else { return nil }
        guard all.count == 1 else { throw OAuthError(.invalidRequest, "parameter \(name) was sent more than once") }
        return all[0]
    }

    func required(_ name: String) throws(OAuthError) -> String {
        guard let value = try single(name) else { throw OAuthError(.invalidRequest, "missing parameter \(name)") }
        return value
    }

    /// Parses the body of a POST: form-encoded, or JSON when `allowJSON` (the reachFive dialect's `/oauth/token`).
    static func body(of request: Request, allowJSON: Bool = false) async throws -> Parameters {
        let buffer = try await request.boundedBody()
        let data = Data(buffer: buffer)
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        if contentType.hasPrefix("application/x-www-form-urlencoded") {
            return try Parameters(formEncoded: String(decoding: data, as: UTF8.self))
        }
        if allowJSON && contentType.hasPrefix("application/json") {
            return try Parameters(json: data)
        }
        if data.isEmpty { return Parameters() }
        throw OAuthError(.invalidRequest, "the body must be application/x-www-form-urlencoded\(allowJSON ? " or application/json" : "")")
    }

    static func query(of request: Request) throws(OAuthError) -> Parameters {
        try Parameters(formEncoded: request.uri.query ?? "")
    }
}
