import Foundation

/// The ReachFive identity API (`/identity/v1/…`): JSON bodies and answers, `ApiError` bodies on failure.
enum IdentityAPI {
    /// The calls that start a sign-in or sign-up without a browser: a server applies the application's attestation
    /// policy to them, so they carry the app's `Attestation-Token` when the configuration supplies one.
    static let nativeSignInPaths: Set<String> = [
        "/identity/v1/password/login", "/identity/v1/webauthn/authentication-options", "/identity/v1/webauthn/signup-options",
        "/identity/v1/native-nonce"
    ]

    /// A JSON request body (sorted keys, slashes unescaped) and its `Content-Type`; nil and no header without a body.
    static func jsonBody(_ body: JSONValue?, headers: inout [String: String]) throws -> Data? {
        guard let body else { return nil }
        headers["Content-Type"] = "application/json"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(body)
    }

    /// Sends one request and returns the answer when it is 2xx; otherwise throws the mapped `ApiError`.
    static func send(
        _ context: OAuthClient, _ method: String, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil,
        bearer: String? = nil
    ) async throws -> HTTPResponse {
        var headers = ["Accept": "application/json"]
        if nativeSignInPaths.contains(path), let provider = context.config.attestationTokenProvider {
            headers["Attestation-Token"] = try await provider()
        }
        let data = try jsonBody(body, headers: &headers)
        var url = context.endpoint(path)
        if !query.isEmpty {
            guard let withQuery = FormCoding.url(url, adding: query) else {
                throw LatchkeyError(.invalidConfiguration, "cannot build the URL of \(path)")
            }
            url = withQuery
        }
        let request = HTTPRequest(method: method, url: url, headers: headers, body: data)
        let response: HTTPResponse
        if let bearer {
            // A token of one of this client's sessions is presented as that session requires (DPoP with a proof).
            let tokens =
                await context.tokens.session(holding: bearer)
                ?? TokenSet(accessToken: bearer, refreshToken: nil, idToken: nil, expiresAt: .distantFuture, scope: nil, nonce: nil)
            response = try await context.sendAuthorized(request, tokens: tokens)
        } else {
            response = try await context.http.send(request)
        }
        guard (200..<300).contains(response.status) else { throw IdentityErrorMapping.error(from: response) }
        return response
    }

    /// A 2xx answer's JSON object.
    static func object(_ response: HTTPResponse, _ what: String) throws -> [String: JSONValue] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: response.body), case .object(let o) = value else {
            throw LatchkeyError(.serverError, "the \(what) answer is not a JSON object", statusCode: response.status)
        }
        return o
    }

    /// The one-time `tkn` of a successful identity call.
    static func tkn(_ o: [String: JSONValue], _ what: String) throws -> String {
        guard let tkn = o["tkn"]?.stringValue, !tkn.isEmpty else { throw LatchkeyError(.serverError, "the \(what) answer has no tkn") }
        return tkn
    }
}

/// ReachFive `ApiError` answers → `LatchkeyError`. The code comes from `error_message_key` when the server sent a
/// known one, else from the status; the category from the status alone (400 request error, 401 auth failure,
/// anything else technical), as ReachFive's SDK does. The `ApiError`, status and key are kept.
enum IdentityErrorMapping {
    static func code(messageKey: String?, status: Int) -> LatchkeyError.Code {
        switch messageKey ?? "" {
        case "passkey.failed", "passkey.expired", "passkey.registration_failed", "passkey.already_registered": return .passkeyFailed
        case "passkey.unknown", "passkey.not_found", "passkey.none": return .passkeyNoCredential
        case "apple.failed", "apple.expired", "login.invalid_credentials", "login.throttled": return .authenticationFailed
        case "login.locked": return .userAccountLocked
        case "login.disabled": return .userAccountDisabled
        case "signup.identifier_taken": return .userAlreadyExists
        case "login.expired": return .sessionExpired
        case "login.mfa_not_enrolled": return .mfaRequired
        case "flows.executor.errors.invalid_otp": return .confirmationCodeInvalid
        case "flows.executor.errors.otp_expired": return .confirmationCodeExpired
        case "flows.executor.errors.otp_attempts": return .mfaFailed
        case let key where key.hasPrefix("passkey."): return .passkeyFailed
        case let key where key.hasPrefix("login.") || key.hasPrefix("apple."): return .authenticationFailed
        default:
            switch status {
            case 400: return .invalidInput
            case 401, 403: return .authenticationFailed
            case 500...: return .serverError
            default: return .unknownError
            }
        }
    }

    static func category(status: Int) -> LatchkeyError.Category {
        status == 400 ? .requestError : status == 401 ? .authFailure : .technicalError
    }

    static func error(from response: HTTPResponse) -> LatchkeyError {
        guard let api = try? JSONDecoder().decode(LatchkeyError.ApiError.self, from: response.body),
            api.error != nil || api.errorMessageKey != nil
        else {
            var error = OAuthClient.errorFrom(response)
            error.statusCategory = category(status: response.status)
            return error
        }
        let detail = api.errorDescription ?? api.errorUserMsg ?? "HTTP \(response.status)"
        let mapped =
            LatchkeyError.needsReauthentication(api.error)
            ? .reauthenticationRequired : code(messageKey: api.errorMessageKey, status: response.status)
        var error = LatchkeyError(
            mapped, "\(api.error ?? "error"): \(detail)",
            statusCode: response.status, serverCode: api.errorMessageKey ?? api.error, apiError: api)
        error.statusCategory = category(status: response.status)
        return error
    }
}

/// WebAuthn origins: `scheme://host[:port]`, https (http only on loopback hosts, as browsers allow).
enum WebAuthnOrigin {
    /// Validates and serialises an origin: lowercase scheme and host, default port dropped.
    /// - Parameter stripPath: drop a path (used for the issuer fallback); an explicit origin must not have one.
    static func serialise(_ value: String, stripPath: Bool = false) throws -> String {
        func reject(_ why: String) -> LatchkeyError {
            LatchkeyError(.invalidConfiguration, "originWebAuthn \"\(value)\" is not a valid WebAuthn origin: \(why)")
        }
        guard !value.isEmpty, let c = URLComponents(string: value), let rawScheme = c.scheme else { throw reject("expected scheme://host[:port]") }
        let scheme = rawScheme.lowercased()
        guard scheme == "https" || scheme == "http" else { throw reject("the scheme must be https (or http on a loopback host)") }
        guard var host = c.host?.lowercased(), !host.isEmpty else { throw reject("there is no host") }
        guard c.user == nil, c.password == nil else { throw reject("user information is not allowed") }
        if !stripPath {
            guard c.path.isEmpty || c.path == "/" else { throw reject("an origin has no path") }
            guard c.query == nil, c.fragment == nil else { throw reject("an origin has no query or fragment") }
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let loopback = host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host.hasPrefix("127.")
        guard scheme == "https" || loopback else { throw reject("plain http is allowed only for loopback hosts") }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" }) else {
            throw reject("the host has invalid characters")
        }
        var out = scheme + "://" + (host.contains(":") ? "[\(host)]" : host)
        if let port = c.port {
            guard (1...65535).contains(port) else { throw reject("the port is out of range") }
            if !((scheme == "https" && port == 443) || (scheme == "http" && port == 80)) { out += ":\(port)" }
        }
        return out
    }
}
