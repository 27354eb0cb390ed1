import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyJOSE

/// A SCIM protocol error (RFC 7644 §3.12), rendered by `ErrorMiddleware` as `application/scim+json`.
struct SCIMError: Error, Sendable {
    static let errorURN = "urn:ietf:params:scim:api:messages:2.0:Error"

    /// RFC 7644 §3.12 table 9 (only the ones this server produces).
    enum ScimType: String, Sendable {
        case invalidFilter, tooMany, uniqueness, mutability, invalidSyntax, invalidPath, noTarget, invalidValue
    }

    var status: HTTPResponse.Status
    var scimType: ScimType?
    /// Technical English; never contains a credential or another user's data.
    var detail: String
    var headers: HTTPFields = [:]

    init(status: HTTPResponse.Status, _ scimType: ScimType? = nil, detail: String, headers: HTTPFields = [:]) {
        self.status = status; self.scimType = scimType; self.detail = detail; self.headers = headers
    }

    static func badRequest(_ type: ScimType, _ detail: String) -> SCIMError { SCIMError(status: .badRequest, type, detail: detail) }

    func response() throws -> Response {
        try SCIMResponse.json(
            SCIMErrorBody(status: String(status.code), scimType: scimType?.rawValue, detail: detail),
            status: status, headers: headers)
    }
}

/// SCIM responses: `application/scim+json` (RFC 7644 §3.1), never cached (they carry personal data).
enum SCIMResponse {
    static let contentType = "application/scim+json; charset=utf-8"

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var response = try Responses.json(value, status: status, noStore: true, headers: headers)
        response.headers[.contentType] = contentType
        return response
    }

    /// The request's JSON object. RFC 7644 §3.1 names `application/scim+json`; plain `application/json` is accepted
    /// too because most HTTP libraries send it by default.
    static func body(of request: Request) async throws -> [String: JSONValue] {
        let buffer = try await request.boundedBody()
        // A missing type is refused too: an untyped body is what a cross-site page can send without a preflight.
        guard JSONMediaType.accepts(request, body: buffer, ["application/scim+json", "application/json"]) else {
            throw SCIMError(status: .unsupportedMediaType, detail: "the body must be application/scim+json or application/json")
        }
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: buffer)) else {
            throw SCIMError.badRequest(.invalidSyntax, "the body is not a JSON object")
        }
        return object
    }
}
