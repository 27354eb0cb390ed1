import Foundation
#if canImport(AuthenticationServices)
import AuthenticationServices
#elseif canImport(AppleFrameworkStandIns)
import AppleFrameworkStandIns  // Linux: the stand-in declares Apple's types so ReachFive-style code compiles and is type-checked
#endif

/// The window a system sheet attaches to: `ASPresentationAnchor` (`UIWindow` / `NSWindow`). On Linux it is the
/// stand-in's `ASPresentationAnchor`; nothing is ever presented there.
public typealias PresentationAnchor = ASPresentationAnchor

/// Carries the presentation anchor inside `Sendable` requests.
///
/// Windows are main-actor UI objects and not `Sendable`, while requests travel through the SDK's actors. The box
/// keeps a **weak** reference (an SDK call must not keep a closed window alive) that can only be read through the
/// `@MainActor` `anchor` accessor — so the reference crosses concurrency domains but is never dereferenced off the
/// main actor. That invariant is what the `@unchecked Sendable` states; the Apple `CredentialProvider` is the only
/// reader.
public final class PresentationAnchorBox: @unchecked Sendable {
    private weak var object: AnyObject?

    /// Boxes `anchor` (weakly).
    public init(_ anchor: PresentationAnchor) { object = anchor }

    /// The window, while it still exists. Main actor only.
    @MainActor public var anchor: PresentationAnchor? { object as? PresentationAnchor }
}

/// Credential types the system sheet may offer (ReachFive's `ModalAuthorization`). Listed order is the order shown.
public enum ModalAuthorization: Sendable, Hashable, CaseIterable {
    case Password
    case SignInWithApple
    case Passkey
}

/// Credential types for a username-first sign-in (ReachFive's `NonDiscoverableAuthorization`).
public enum NonDiscoverableAuthorization: Sendable, Hashable, CaseIterable {
    case Passkey
}

/// What happens when no credential is immediately available (ReachFive's `Mode`).
public enum Mode: Sendable, Hashable, CaseIterable {
    /// Show UI anyway: a passkey QR code for a nearby device, the Apple sign-up sheet; a password-only request
    /// shows nothing. With nothing usable the call fails (`PASSKEY_NO_CREDENTIAL` when a passkey was asked for).
    case Always
    /// Show nothing and fail with `.canceled` (ReachFive `AuthCanceled`) — for sign-in attempted at app launch.
    case IfImmediatelyAvailableCredentials
}

/// A username for a username-first passkey sign-in (ReachFive's `Username`).
public enum Username: Sendable, Hashable {
    /// Classified on the wire: contains "@" → `email`; only digits, spaces, "+", "-", "(", ")" → `phone_number`;
    /// anything else → `username`.
    case Unspecified(String)
    case Email(String)
    case PhoneNumber(String)

    /// The identifier's wire member (`email`, `phone_number` or `username`) and value.
    var wire: (key: String, value: String) {
        switch self {
        case .Email(let v): return ("email", v)
        case .PhoneNumber(let v): return ("phone_number", v)
        case .Unspecified(let v): return (Self.classify(v), v)
        }
    }

    static func classify(_ v: String) -> String {
        if v.contains("@") { return "email" }
        let phoneCharacters = CharacterSet(charactersIn: "0123456789+-() ")
        if v.contains(where: \.isNumber), v.unicodeScalars.allSatisfy(phoneCharacters.contains) { return "phone_number" }
        return "username"
    }
}

/// ReachFive's `NativeLoginRequest`.
public struct NativeLoginRequest: Sendable {
    /// Where the credential sheet attaches (Apple platforms); ignored elsewhere.
    public var anchor: PresentationAnchorBox?
    /// Overrides the configured WebAuthn origin (`scheme://host[:port]`).
    public var originWebAuthn: String?
    /// Scopes to request; nil uses the configuration's.
    public var scopes: [String]?
    /// ReachFive's analytics tag for the call (`origin` on the wire), not a WebAuthn origin.
    public var origin: String?

    /// A request; every member is optional.
    public init(anchor: PresentationAnchor? = nil, originWebAuthn: String? = nil, scopes: [String]? = nil, origin: String? = nil) {
        self.anchor = anchor.map(PresentationAnchorBox.init); self.originWebAuthn = originWebAuthn; self.scopes = scopes; self.origin = origin
    }
}

/// The profile of a passkey sign-up (ReachFive `ProfilePasskeySignupRequest`); nil members are left out of the
/// request. Sent snake_case (`given_name`, `phone_number`, `profile_url` …).
public struct ProfilePasskeySignupRequest: Sendable, Equatable {
    /// `email` on the wire.
    public var email: String?
    /// `phone_number` on the wire.
    public var phoneNumber: String?
    /// `custom_identifier` on the wire.
    public var customIdentifier: String?
    /// `given_name` on the wire.
    public var givenName: String?
    /// `middle_name` on the wire.
    public var middleName: String?
    /// `family_name` on the wire.
    public var familyName: String?
    /// `name` on the wire.
    public var name: String?
    /// `nickname` on the wire.
    public var nickname: String?
    /// `YYYY-MM-DD`.
    public var birthdate: String?
    /// `profile_url` on the wire.
    public var profileURL: String?
    /// `picture` on the wire.
    public var picture: String?
    /// `username` on the wire.
    public var username: String?
    /// `gender` on the wire.
    public var gender: String?
    /// `locale` on the wire.
    public var locale: String?
    /// `bio` on the wire.
    public var bio: String?
    /// `company` on the wire.
    public var company: String?
    /// Further members, sent as given (`custom_fields`, `consents`, `addresses` …).
    public var extra: [String: JSONValue]

    /// A profile; every member is optional.
    public init(
        email: String? = nil, phoneNumber: String? = nil, customIdentifier: String? = nil, givenName: String? = nil,
        middleName: String? = nil, familyName: String? = nil, name: String? = nil, nickname: String? = nil, birthdate: String? = nil,
        profileURL: String? = nil, picture: String? = nil, username: String? = nil, gender: String? = nil, locale: String? = nil,
        bio: String? = nil, company: String? = nil, extra: [String: JSONValue] = [:]
    ) {
        self.email = email; self.phoneNumber = phoneNumber; self.customIdentifier = customIdentifier; self.givenName = givenName
        self.middleName = middleName; self.familyName = familyName; self.name = name; self.nickname = nickname; self.birthdate = birthdate
        self.profileURL = profileURL; self.picture = picture; self.username = username; self.gender = gender; self.locale = locale
        self.bio = bio; self.company = company; self.extra = extra
    }

    /// The wire object: snake_case, nil members omitted.
    public var wire: JSONValue {
        var o = extra
        let members: [(String, String?)] = [
            ("email", email), ("phone_number", phoneNumber), ("custom_identifier", customIdentifier), ("given_name", givenName),
            ("middle_name", middleName), ("family_name", familyName), ("name", name), ("nickname", nickname), ("birthdate", birthdate),
            ("profile_url", profileURL), ("picture", picture), ("username", username), ("gender", gender), ("locale", locale),
            ("bio", bio), ("company", company)
        ]
        for (key, value) in members { if let value { o[key] = .string(value) } }
        return .object(o)
    }
}

/// ReachFive's `PasskeySignupRequest`.
public struct PasskeySignupRequest: Sendable {
    /// The new account's profile.
    public var passkeyProfile: ProfilePasskeySignupRequest
    /// The name the system shows for the passkey (sent as `friendly_name`, and used as the credential's user name).
    public var friendlyName: String
    /// Where the system sheet attaches (Apple platforms); ignored elsewhere.
    public var anchor: PresentationAnchorBox?
    /// Overrides the configured WebAuthn origin (`scheme://host[:port]`).
    public var originWebAuthn: String?
    /// Scopes to request; nil uses the configuration's.
    public var scopes: [String]?
    /// Analytics tag (`origin` on the wire).
    public var origin: String?

    /// A sign-up request (ReachFive's labels).
    public init(
        passkeyProfile: ProfilePasskeySignupRequest, friendlyName: String, anchor: PresentationAnchor? = nil,
        originWebAuthn: String? = nil, scopes: [String]? = nil, origin: String? = nil
    ) {
        self.passkeyProfile = passkeyProfile; self.friendlyName = friendlyName; self.anchor = anchor.map(PresentationAnchorBox.init)
        self.originWebAuthn = originWebAuthn; self.scopes = scopes; self.origin = origin
    }

    /// The spelling of ReachFive's documentation (`passkeyPofile:`), so code copied from it compiles.
    public init(
        passkeyPofile: ProfilePasskeySignupRequest, friendlyName: String, anchor: PresentationAnchor? = nil,
        originWebAuthn: String? = nil, scopes: [String]? = nil, origin: String? = nil
    ) {
        self.init(
            passkeyProfile: passkeyPofile, friendlyName: friendlyName, anchor: anchor, originWebAuthn: originWebAuthn,
            scopes: scopes, origin: origin)
    }
}

/// Adds a passkey to the signed-in account (ReachFive `NewPasskeyRequest`).
public struct NewPasskeyRequest: Sendable {
    /// Where the system sheet attaches (Apple platforms); ignored elsewhere.
    public var anchor: PresentationAnchorBox?
    /// The passkey's name (`friendly_name` on the wire).
    public var friendlyName: String
    /// Overrides the configured WebAuthn origin (`scheme://host[:port]`).
    public var originWebAuthn: String?
    /// Analytics tag (`origin` on the wire).
    public var origin: String?

    /// A request to add a passkey.
    public init(anchor: PresentationAnchor? = nil, friendlyName: String, originWebAuthn: String? = nil, origin: String? = nil) {
        self.anchor = anchor.map(PresentationAnchorBox.init); self.friendlyName = friendlyName; self.originWebAuthn = originWebAuthn
        self.origin = origin
    }
}

/// A passkey registered on the account (`GET /identity/v1/webauthn/registration`).
public struct DeviceCredential: Sendable, Equatable, Identifiable {
    /// The passkey's name (`friendly_name` on the wire).
    public var friendlyName: String
    /// The server's registration id (use it to delete or rename).
    public var id: String
    /// When it was registered (as the server formats it).
    public var createdAt: String?
    /// When it was last used, if ever.
    public var lastUsedAt: String?

    /// A registered passkey.
    public init(friendlyName: String, id: String, createdAt: String? = nil, lastUsedAt: String? = nil) {
        self.friendlyName = friendlyName; self.id = id; self.createdAt = createdAt; self.lastUsedAt = lastUsedAt
    }

    /// ``createdAt`` read as a date; nil when absent or not an RFC 3339 time.
    public var createdDate: Date? { createdAt.flatMap(RFC3339.date) }
    /// ``lastUsedAt`` read as a date; nil when never used or not an RFC 3339 time.
    public var lastUsedDate: Date? { lastUsedAt.flatMap(RFC3339.date) }
}

/// The second factor a password sign-in needs (ReachFive `OngoingStepUp`), carried by `LatchkeyError.mfaStepUp`.
public struct MfaStepUp: Sendable, Equatable, CustomStringConvertible {
    /// The step-up token to continue with (a secret: never logged).
    public var token: String
    /// Methods the server offers (`email`, `sms`, `totp` …).
    public var amr: [String]
    /// The PKCE verifier whose challenge the step-up request carried; the code that ends the step-up is redeemed with it.
    let codeVerifier: String?
    /// The name of the session the sign-in was for (nil: the default), where the step-up's tokens are stored.
    let sessionName: String?

    /// A step-up (without the PKCE verifier, e.g. for tests).
    public init(token: String, amr: [String]) { self.init(token: token, amr: amr, codeVerifier: nil, sessionName: nil) }
    init(token: String, amr: [String], codeVerifier: String?, sessionName: String?) {
        self.token = token; self.amr = amr; self.codeVerifier = codeVerifier; self.sessionName = sessionName
    }

    /// Never shows the token.
    public var description: String { "MfaStepUp(amr: \(amr))" }
}

/// Scopes a Sign in with Apple request can ask for.
public enum AppleIDScope: String, Sendable, Hashable {
    case email
    case fullName
}
