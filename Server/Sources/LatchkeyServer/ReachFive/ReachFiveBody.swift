import Foundation
import Hummingbird
import LatchkeyJOSE

/// A reachFive-dialect JSON request body (`/identity/v1/…`), read with a size limit; a malformed body is a 400
/// `ApiError`, never a 500, and a body not declared `application/json` a 415 (`JSONMediaType`).
struct ReachFiveBody {
    let fields: [String: JSONValue]

    static func read(_ request: Request) async throws -> ReachFiveBody {
        let buffer = try await request.boundedBody()
        guard buffer.readableBytes > 0 else { return ReachFiveBody(fields: [:]) }
        guard JSONMediaType.accepts(request, body: buffer) else {
            throw APIError(
                status: .unsupportedMediaType, code: "SSE-415", error: "invalid_request", messageKey: "error.request",
                userMessage: "The request could not be processed.", technical: "the body must be sent as application/json")
        }
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: buffer)) else {
            throw Self.invalid("the body must be a JSON object")
        }
        return ReachFiveBody(fields: fields)
    }

    func string(_ name: String) -> String? { fields[name]?.stringValue?.nonEmpty }

    func required(_ name: String) throws -> String {
        guard let value = string(name) else { throw Self.invalid("\(name) is required") }
        return value
    }

    func object(_ name: String) -> [String: JSONValue]? {
        if case .object(let o)? = fields[name] { o } else { nil }
    }

    static func invalid(_ why: String) -> APIError {
        APIError(
            status: .badRequest, code: "SSE-400", error: "invalid_request", messageKey: "error.request",
            userMessage: "The request could not be processed.", technical: why)
    }
}

/// A `PublicKeyCredential` as the reachFive SDK posts it: `{id, raw_id, type, response:{…}}`, binary as base64url.
struct ReachFiveCredential {
    let credentialId: Data
    let response: [String: JSONValue]

    init(_ fields: [String: JSONValue]) throws {
        guard let id = fields["id"]?.stringValue, let raw = Base64URL.decode(id), !raw.isEmpty else {
            throw ReachFiveBody.invalid("public key credential id is missing or not base64url")
        }
        if let rawId = fields["raw_id"]?.stringValue ?? fields["rawId"]?.stringValue, rawId != id {
            throw ReachFiveBody.invalid("raw_id differs from id")
        }
        if let type = fields["type"]?.stringValue, type != "public-key" { throw ReachFiveBody.invalid("type must be public-key") }
        guard case .object(let response)? = fields["response"] else { throw ReachFiveBody.invalid("response is missing") }
        credentialId = raw
        self.response = response
    }

    /// Binary member by its reachFive (snake_case) or W3C (camelCase) name.
    func binary(_ snake: String, _ camel: String, required: Bool = true) throws -> Data? {
        guard let text = response[snake]?.stringValue ?? response[camel]?.stringValue, !text.isEmpty else {
            if required { throw ReachFiveBody.invalid("response.\(snake) is required") }
            return nil
        }
        guard let data = Base64URL.decode(text) else { throw ReachFiveBody.invalid("response.\(snake) is not base64url") }
        return data
    }

    var registration: PasskeyRegistrationResponse {
        get throws {
            PasskeyRegistrationResponse(
                credentialId: credentialId,
                clientDataJSON: try binary("client_data_json", "clientDataJSON") ?? Data(),
                attestationObject: try binary("attestation_object", "attestationObject") ?? Data())
        }
    }

    var assertion: PasskeyAssertionResponse {
        get throws {
            PasskeyAssertionResponse(
                credentialId: credentialId,
                clientDataJSON: try binary("client_data_json", "clientDataJSON") ?? Data(),
                authenticatorData: try binary("authenticator_data", "authenticatorData") ?? Data(),
                signature: try binary("signature", "signature") ?? Data(),
                userHandle: try binary("user_handle", "userHandle", required: false))
        }
    }
}

/// `{"tkn": "…"}` (plus `mfa_required` after a password that still needs a second factor).
struct TicketBody: Encodable {
    var tkn: String
    var mfaRequired: Bool?
    enum CodingKeys: String, CodingKey { case tkn, mfaRequired = "mfa_required" }
}
