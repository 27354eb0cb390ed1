import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyJOSE
import NIOCore

/// Entry points for the `latchkey-fuzz` harness (Tests/fuzz/README.md): each hands untrusted bytes to the server's
/// real decoders and discards what they return or throw. They exist because those decoders are `internal`; `package`
/// access makes them visible to the harness target of this package and to nothing outside it (not public API).
///
/// A thrown error is a correct answer to hostile input; a trap, a sanitizer report, a hang or a memory blow-up is a
/// finding. Nothing here changes what the server does.
package enum LatchkeyServerFuzzEntryPoints {
    // MARK: WebAuthn

    /// CBOR (RFC 8949) as WebAuthn receives it: whole documents, prefixes (authenticator data) and tight limits.
    package static func cbor(_ data: Data) {
        if let value = try? CBORDecoder.decode(data) {
            _ = value.hashValue
            _ = value[1]
            _ = value[-1]
            _ = value["fmt"]
            _ = value.intValue
        }
        _ = try? CBORDecoder.decodePrefix(data)
        _ = try? CBORDecoder.decode(data, limits: CBORLimits(maxDepth: 3, maxItems: 32, maxLength: 64))
    }

    /// The server's CBOR decoder as a value the harness can compare: the SDK's CBOR encoder is checked against it
    /// (decode → SDK encode → decode must give the same value). Nil when the bytes do not decode, or hold something the
    /// SDK's model leaves out (tags, floats, simple values other than booleans and null, `undefined`).
    package static func cborForRoundTrip(_ data: Data) -> FuzzCBOR? {
        guard let value = try? CBORDecoder.decode(data) else { return nil }
        return FuzzCBOR(value)
    }

    /// A COSE key as stored after registration, then used to check a signature.
    package static func coseKey(_ data: Data) {
        guard let key = try? COSEKey(encoded: data) else { return }
        _ = key.isValidSignature(Data(data.suffix(72)), for: data)
    }

    /// Authenticator data (WebAuthn §6.1), as sent at registration and with every assertion.
    package static func authenticatorData(_ data: Data) {
        guard let parsed = try? AuthenticatorData(data) else { return }
        if let credential = parsed.attestedCredential {
            _ = credential.publicKey.isValidSignature(Data(data.prefix(64)), for: parsed.raw)
        }
    }

    /// An attestation object (WebAuthn §6.5) and, when it is `packed`, its statement (signature, `x5c` certificates).
    package static func attestationObject(_ data: Data) async {
        guard let attestation = try? AttestationObject(data) else { return }
        let authData = attestation.authenticatorData
        guard attestation.format == "packed", let credential = authData.attestedCredential else { return }
        _ = try? await PackedAttestation.verify(
            statement: attestation.statement, authenticatorData: authData,
            clientDataHash: Data(repeating: 0x5a, count: 32), credential: credential,
            trustAnchors: [], now: Date(timeIntervalSince1970: 1_750_000_000))
    }

    /// `clientDataJSON` (WebAuthn §5.8.1).
    package static func clientDataJSON(_ data: Data) {
        _ = try? ClientData(data)
    }

    // MARK: JOSE, server side

    /// What the server reads from a compact JWS besides the JOSE parsing: DPoP proof claims and their `htu`, the
    /// flow-assertion peek of the token exchange.
    package static func jws(_ token: String) {
        _ = TokenExchangeGrant.isFlowAssertion(token)
        guard let jws = try? CompactJWS(parsing: token) else { return }
        if let claims = try? jws.claims(as: DPoP.ProofClaims.self), let htu = claims.htu {
            _ = DPoP.normalizedURI(htu)
        }
    }

    // MARK: SCIM

    /// A `GET /scim2/Users?…` query string (the `filter`, `startIndex` and `count` parameters) and the bare filter text.
    package static func scimFilter(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        _ = try? SCIMFilter.parse(text)
        if let filter = SCIMQuery.value("filter", in: text) { _ = try? SCIMFilter.parse(filter) }
        _ = SCIMQuery.value("startIndex", in: text).flatMap { Int($0) }
        _ = SCIMQuery.value("count", in: text).flatMap { Int($0) }
    }

    /// The `path` of a PATCH operation.
    package static func scimPath(_ data: Data) {
        _ = try? SCIMPath.parse(String(decoding: data, as: UTF8.self))
    }

    /// A PATCH (and PUT) body read as the SCIM routes read it, applied to an account.
    package static func scimPatch(_ data: Data) async {
        let request = Request(
            head: HTTPRequest(
                method: .patch, scheme: "https", authority: "id.example.com", path: "/scim2/Me",
                headerFields: [.contentType: "application/scim+json"]),
            body: RequestBody(buffer: ByteBuffer(bytes: data)))
        guard let body = try? await SCIMResponse.body(of: request) else { return }
        let current = SCIMUser(fuzzUser)
        if let patched = try? SCIMPatch(body: body).apply(to: current) { _ = patched.changes(from: current) }
        if let replaced = try? SCIMUser.replacing(current, with: body) { _ = replaced.changes(from: current) }
    }

    private static let fuzzUser = UserRecord(
        id: "user-1", username: "bjensen", passwordHash: "",
        claims: [
            "given_name": "Barbara", "family_name": "Jensen", "name": "Barbara Jensen", "email": "bjensen@example.com",
            "phone_number": "+15555550100", "locale": "en-US"
        ],
        disabled: false, failedLogins: 0, lockedUntil: nil, createdAt: Date(timeIntervalSince1970: 1_750_000_000))

    // MARK: Token endpoint

    /// A token-endpoint body: byte 0 picks the content type and the endpoint (`% 5`: 0 form on `/oauth2/token`, 1 form
    /// on `/oauth/token`, 2 JSON on `/oauth/token`, 3 JSON on `/oauth2/token` (refused), 4 none), the rest is the body. Then what the endpoint reads before it touches the store: client
    /// authentication parameters, `grant_type` and each grant's parameters. The body, read as base64, is also tried
    /// as `Authorization: Basic` credentials.
    package static func tokenBody(_ data: Data) async {
        guard let mode = data.first else { return }
        let body = Data(data.dropFirst())
        let contentType: String?
        switch mode % 5 {
        case 0, 1: contentType = "application/x-www-form-urlencoded"
        case 2, 3: contentType = "application/json; charset=utf-8"
        default: contentType = nil
        }
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        fields[.authorization] = "Basic " + String(decoding: body.prefix(256), as: UTF8.self)
        let request = Request(
            head: HTTPRequest(
                method: .post, scheme: "https", authority: "id.example.com", path: "/oauth/token",
                headerFields: fields),
            body: RequestBody(buffer: ByteBuffer(bytes: body)))
        _ = try? ClientAuthenticator.basicCredentials(request)
        guard let params = try? await Parameters.body(of: request, allowJSON: [1, 2, 4].contains(mode % 5)) else { return }
        for name in [
            "client_id", "client_secret", "code", "redirect_uri", "code_verifier", "refresh_token", "device_code",
            "requested_token_type", "actor_token", "audience"
        ] {
            _ = try? params.single(name)
        }
        _ = try? params.single("scope")?.split(separator: " ").map(String.init)
        if let grant = try? params.required("grant_type") { _ = GrantType(rawValue: grant) }
        if let subject = try? params.required("subject_token"), (try? params.required("subject_token_type")) != nil {
            _ = TokenExchangeGrant.isFlowAssertion(subject)
        }
        _ = try? Parameters(formEncoded: String(decoding: body, as: UTF8.self))
    }
}

/// The server's decoded CBOR in the shape of the SDK's `CBORValue` (see `cborForRoundTrip`). Map entries keep wire order.
package indirect enum FuzzCBOR: Equatable, Sendable {
    case unsigned(UInt64)
    case negative(UInt64)
    case bytes(Data)
    case text(String)
    case array([FuzzCBOR])
    case map([(key: FuzzCBOR, value: FuzzCBOR)])
    case bool(Bool)
    case null

    init?(_ value: CBORValue) {
        switch value {
        case .unsigned(let n): self = .unsigned(n)
        case .negative(let n): self = .negative(n)
        case .bytes(let d): self = .bytes(d)
        case .text(let s): self = .text(s)
        case .array(let items):
            var converted: [FuzzCBOR] = []
            for item in items {
                guard let c = FuzzCBOR(item) else { return nil }
                converted.append(c)
            }
            self = .array(converted)
        case .map(let entries):
            var converted: [(key: FuzzCBOR, value: FuzzCBOR)] = []
            for entry in entries {
                guard let k = FuzzCBOR(entry.key), let v = FuzzCBOR(entry.value) else { return nil }
                converted.append((k, v))
            }
            self = .map(converted)
        case .bool(let b): self = .bool(b)
        case .null: self = .null
        case .tagged, .undefined, .float, .simple: return nil
        }
    }

    package static func == (a: FuzzCBOR, b: FuzzCBOR) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)), (.negative(let x), .negative(let y)): return x == y
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.text(let x), .text(let y)): return Array(x.utf8) == Array(y.utf8)
        case (.array(let x), .array(let y)): return x == y
        case (.map(let x), .map(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }
}
