import Foundation

/// The two JSON spellings of WebAuthn options the SDK meets: ReachFive's snake_case (`pub_key_cred_params`,
/// `rp_id`, `display_name`) and the W3C / thunderID camelCase (`pubKeyCredParams`, `rpId`, `displayName`).
public enum WebAuthnJSONStyle: Sendable, Equatable {
    case reachFive
    case w3c

    /// The member name in this style for a W3C (camelCase) name.
    func key(_ camel: String) -> String {
        guard self == .reachFive else { return camel }
        var out = ""
        for ch in camel {
            if ch.isUppercase { out += "_" + ch.lowercased() } else { out.append(ch) }
        }
        return out
    }
}

/// The relying party (`rp`).
public struct PublicKeyCredentialRpEntity: Sendable, Equatable {
    /// The RP ID (a domain); nil means "the origin's effective domain".
    public var id: String?
    /// Human-readable name.
    public var name: String
    /// A relying party.
    public init(id: String?, name: String) { self.id = id; self.name = name }
}

/// The account the credential is for (`user`).
public struct PublicKeyCredentialUserEntity: Sendable, Equatable {
    /// The user handle, decoded.
    public var id: Data
    /// The user handle exactly as the server sent it (ReachFive's `webauthn_id` must echo it unchanged).
    public var encodedId: String
    /// Human-readable name.
    public var name: String
    /// The name shown for the account.
    public var displayName: String
    /// A user; `encodedId` defaults to the base64url of `id`.
    public init(id: Data, encodedId: String? = nil, name: String, displayName: String) {
        self.id = id; self.encodedId = encodedId ?? Base64URL.encode(id); self.name = name; self.displayName = displayName
    }
}

/// One acceptable key type (`pubKeyCredParams[]`); `alg` is a COSE algorithm identifier (-7 is ES256).
public struct PublicKeyCredentialParameters: Sendable, Equatable {
    /// Always `public-key` today.
    public var type: String
    /// COSE algorithm identifier.
    public var alg: Int
    /// An acceptable key type.
    public init(type: String = "public-key", alg: Int) { self.type = type; self.alg = alg }
}

/// A credential named by the relying party (`allowCredentials[]`, `excludeCredentials[]`).
public struct PublicKeyCredentialDescriptor: Sendable, Equatable {
    /// Always `public-key` today.
    public var type: String
    /// The credential ID, decoded.
    public var id: Data
    /// Transport hints (`internal`, `usb`, `hybrid` …).
    public var transports: [String]?
    /// A credential descriptor.
    public init(type: String = "public-key", id: Data, transports: [String]? = nil) { self.type = type; self.id = id; self.transports = transports }
}

/// `authenticatorSelection`.
public struct AuthenticatorSelectionCriteria: Sendable, Equatable {
    /// `platform` or `cross-platform`.
    public var authenticatorAttachment: String?
    /// Level 1 spelling of `residentKey == "required"`.
    public var requireResidentKey: Bool?
    /// `discouraged`, `preferred` or `required`.
    public var residentKey: String?
    /// `discouraged`, `preferred` or `required`.
    public var userVerification: String?
    /// Selection criteria.
    public init(authenticatorAttachment: String? = nil, requireResidentKey: Bool? = nil, residentKey: String? = nil, userVerification: String? = nil)
    {
        self.authenticatorAttachment = authenticatorAttachment; self.requireResidentKey = requireResidentKey
        self.residentKey = residentKey; self.userVerification = userVerification
    }
}

/// What the relying party asks for when a passkey is created (`PublicKeyCredentialCreationOptions`).
public struct PublicKeyCredentialCreationOptions: Sendable, Equatable {
    /// The relying party.
    public var rp: PublicKeyCredentialRpEntity
    /// The account.
    public var user: PublicKeyCredentialUserEntity
    /// The challenge, decoded.
    public var challenge: Data
    /// Acceptable key types, most preferred first.
    public var pubKeyCredParams: [PublicKeyCredentialParameters]
    /// Milliseconds.
    public var timeout: Int?
    /// Credentials the account already has: an authenticator holding one must refuse.
    public var excludeCredentials: [PublicKeyCredentialDescriptor]
    /// Requirements on the authenticator.
    public var authenticatorSelection: AuthenticatorSelectionCriteria?
    /// `none`, `indirect`, `direct` or `enterprise`.
    public var attestation: String?

    /// Creation options (ES256 by default).
    public init(
        rp: PublicKeyCredentialRpEntity, user: PublicKeyCredentialUserEntity, challenge: Data,
        pubKeyCredParams: [PublicKeyCredentialParameters] = [.init(alg: -7)], timeout: Int? = nil,
        excludeCredentials: [PublicKeyCredentialDescriptor] = [], authenticatorSelection: AuthenticatorSelectionCriteria? = nil,
        attestation: String? = nil
    ) {
        self.rp = rp; self.user = user; self.challenge = challenge; self.pubKeyCredParams = pubKeyCredParams; self.timeout = timeout
        self.excludeCredentials = excludeCredentials; self.authenticatorSelection = authenticatorSelection; self.attestation = attestation
    }

    /// Parses creation options in either style. Accepted wrappers: ReachFive's `{"friendly_name", "options":
    /// {"public_key": {…}}}` and `{"public_key": {…}}`, W3C's `{"publicKey": {…}}`, or the bare options object.
    /// - Throws: `LatchkeyError(.invalidInput)` naming the missing or malformed member.
    public init(json: Data, style: WebAuthnJSONStyle) throws {
        let object = try WebAuthnJSON.unwrap(try WebAuthnJSON.object(json), style: style)
        try self.init(object: object, style: style)
    }

    /// As `init(json:style:)` from a JSON string (thunderID's `additionalData.passkeyCreationOptions`).
    public init(jsonString: String, style: WebAuthnJSONStyle = .w3c) throws {
        try self.init(json: Data(jsonString.utf8), style: style)
    }

    init(object o: [String: JSONValue], style s: WebAuthnJSONStyle) throws {
        let r = WebAuthnJSON.Reader(o, style: s, context: "creation options")
        let rp = try r.object("rp")
        let rpReader = WebAuthnJSON.Reader(rp, style: s, context: "rp")
        let user = try r.object("user")
        let userReader = WebAuthnJSON.Reader(user, style: s, context: "user")
        let encodedUserId = try userReader.string("id")
        guard let userId = Base64URL.decode(encodedUserId), !userId.isEmpty, userId.count <= 64 else {
            throw LatchkeyError(.invalidInput, "passkey options: user.id is not base64url of 1 to 64 bytes")
        }
        let params = try r.array("pubKeyCredParams").enumerated().map { index, value -> PublicKeyCredentialParameters in
            guard case .object(let p) = value, let alg = p["alg"]?.doubleValue, alg.rounded() == alg, abs(alg) < 1e9 else {
                throw LatchkeyError(.invalidInput, "passkey options: \(s.key("pubKeyCredParams"))[\(index)] needs a numeric alg")
            }
            return PublicKeyCredentialParameters(type: p["type"]?.stringValue ?? "public-key", alg: Int(alg))
        }
        var selection: AuthenticatorSelectionCriteria?
        if let sel = try r.optionalObject("authenticatorSelection") {
            let sr = WebAuthnJSON.Reader(sel, style: s, context: "authenticatorSelection")
            selection = AuthenticatorSelectionCriteria(
                authenticatorAttachment: try sr.optionalString("authenticatorAttachment"),
                requireResidentKey: try sr.optionalBool("requireResidentKey"),
                residentKey: try sr.optionalString("residentKey"), userVerification: try sr.optionalString("userVerification"))
        }
        self.init(
            rp: PublicKeyCredentialRpEntity(id: try rpReader.optionalString("id"), name: try rpReader.optionalString("name") ?? ""),
            user: PublicKeyCredentialUserEntity(
                id: userId, encodedId: encodedUserId, name: try userReader.optionalString("name") ?? "",
                displayName: try userReader.optionalString("displayName") ?? ""),
            challenge: try r.binary("challenge"), pubKeyCredParams: params, timeout: try r.optionalInt("timeout"),
            excludeCredentials: try r.descriptors("excludeCredentials"), authenticatorSelection: selection,
            attestation: try r.optionalString("attestation"))
    }
}

/// What the relying party asks for when signing in with a passkey (`PublicKeyCredentialRequestOptions`).
public struct PublicKeyCredentialRequestOptions: Sendable, Equatable {
    /// The challenge, decoded.
    public var challenge: Data
    /// Milliseconds.
    public var timeout: Int?
    /// The relying party ID; nil means the origin's host.
    public var rpId: String?
    /// Empty for a discoverable (usernameless) request.
    public var allowCredentials: [PublicKeyCredentialDescriptor]
    /// `discouraged`, `preferred` or `required`.
    public var userVerification: String?

    /// Request options.
    public init(
        challenge: Data, timeout: Int? = nil, rpId: String?, allowCredentials: [PublicKeyCredentialDescriptor] = [],
        userVerification: String? = nil
    ) {
        self.challenge = challenge; self.timeout = timeout; self.rpId = rpId; self.allowCredentials = allowCredentials
        self.userVerification = userVerification
    }

    /// Parses request options in either style: ReachFive's `{"public_key": {…}}`, W3C's `{"publicKey": {…}}`, or bare.
    /// - Throws: `LatchkeyError(.invalidInput)` naming the missing or malformed member.
    public init(json: Data, style: WebAuthnJSONStyle) throws {
        let object = try WebAuthnJSON.unwrap(try WebAuthnJSON.object(json), style: style)
        let r = WebAuthnJSON.Reader(object, style: style, context: "request options")
        self.init(
            challenge: try r.binary("challenge"), timeout: try r.optionalInt("timeout"), rpId: try r.optionalString("rpId"),
            allowCredentials: try r.descriptors("allowCredentials"), userVerification: try r.optionalString("userVerification"))
    }

    /// As `init(json:style:)` from a JSON string (thunderID's `additionalData.passkeyChallenge`).
    public init(jsonString: String, style: WebAuthnJSONStyle = .w3c) throws {
        try self.init(json: Data(jsonString.utf8), style: style)
    }
}

/// ReachFive's answer to `signup-options` and `registration-options`: `{"friendly_name", "options": {"public_key": {…}}}`.
public struct RegistrationOptions: Sendable, Equatable {
    /// The passkey name the server echoed.
    public var friendlyName: String?
    /// The creation options.
    public var options: PublicKeyCredentialCreationOptions

    /// Registration options.
    public init(friendlyName: String?, options: PublicKeyCredentialCreationOptions) { self.friendlyName = friendlyName; self.options = options }

    /// Parses the ReachFive body.
    public init(json: Data) throws {
        let object = try WebAuthnJSON.object(json)
        friendlyName = object["friendly_name"]?.stringValue
        options = try PublicKeyCredentialCreationOptions(object: try WebAuthnJSON.unwrap(object, style: .reachFive), style: .reachFive)
    }
}

/// Tolerant-where-harmless, strict-where-it-matters JSON reading for the option parsers.
enum WebAuthnJSON {
    static func object(_ data: Data) throws -> [String: JSONValue] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: data), case .object(let o) = value else {
            throw LatchkeyError(.invalidInput, "passkey options are not a JSON object")
        }
        return o
    }

    /// Strips `options`, `public_key` / `publicKey` wrappers.
    static func unwrap(_ object: [String: JSONValue], style: WebAuthnJSONStyle) throws -> [String: JSONValue] {
        var o = object
        if case .object(let inner)? = o["options"] { o = inner }
        if case .object(let inner)? = o[style.key("publicKey")] { o = inner }
        return o
    }

    struct Reader {
        let o: [String: JSONValue]
        let style: WebAuthnJSONStyle
        let context: String
        init(_ o: [String: JSONValue], style: WebAuthnJSONStyle, context: String) { self.o = o; self.style = style; self.context = context }

        private func value(_ camel: String) -> JSONValue? {
            let v = o[style.key(camel)]
            return v == .null ? nil : v
        }
        private func fail(_ camel: String, _ problem: String) -> LatchkeyError {
            LatchkeyError(.invalidInput, "passkey \(context): \(style.key(camel))\(problem.hasPrefix("[") ? "" : " ")\(problem)")
        }

        func string(_ k: String) throws -> String {
            guard let v = value(k) else { throw fail(k, "is missing") }
            guard let s = v.stringValue else { throw fail(k, "is not a string") }
            return s
        }
        func optionalString(_ k: String) throws -> String? {
            guard let v = value(k) else { return nil }
            guard let s = v.stringValue else { throw fail(k, "is not a string") }
            return s
        }
        func optionalBool(_ k: String) throws -> Bool? {
            guard let v = value(k) else { return nil }
            guard let b = v.boolValue else { throw fail(k, "is not a boolean") }
            return b
        }
        func optionalInt(_ k: String) throws -> Int? {
            guard let v = value(k) else { return nil }
            guard let n = v.doubleValue, n.rounded() == n, n >= 0, n < 1e12 else { throw fail(k, "is not a non-negative integer") }
            return Int(n)
        }
        func binary(_ k: String) throws -> Data {
            let s = try string(k)
            guard let d = Base64URL.decode(s), !d.isEmpty else { throw fail(k, "is not unpadded base64url") }
            return d
        }
        func object(_ k: String) throws -> [String: JSONValue] {
            guard let v = value(k) else { throw fail(k, "is missing") }
            guard case .object(let inner) = v else { throw fail(k, "is not an object") }
            return inner
        }
        func optionalObject(_ k: String) throws -> [String: JSONValue]? {
            guard value(k) != nil else { return nil }
            return try object(k)
        }
        func array(_ k: String) throws -> [JSONValue] {
            guard let v = value(k) else { throw fail(k, "is missing") }
            guard case .array(let a) = v else { throw fail(k, "is not an array") }
            return a
        }
        func descriptors(_ k: String) throws -> [PublicKeyCredentialDescriptor] {
            guard value(k) != nil else { return [] }
            return try array(k).enumerated().map { index, item in
                guard case .object(let d) = item, let id = d["id"]?.stringValue else { throw fail(k, "[\(index)] has no id") }
                guard let raw = Base64URL.decode(id), !raw.isEmpty else { throw fail(k, "[\(index)].id is not unpadded base64url") }
                var transports: [String]?
                if case .array(let list)? = d["transports"] { transports = list.compactMap(\.stringValue) }
                return PublicKeyCredentialDescriptor(type: d["type"]?.stringValue ?? "public-key", id: raw, transports: transports)
            }
        }
    }
}
