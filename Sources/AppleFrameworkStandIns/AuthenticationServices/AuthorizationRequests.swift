#if !canImport(AuthenticationServices)
import Foundation

/// Stand-in for `ASAuthorizationProvider`: what makes requests (password, Apple ID, platform passkeys).
public protocol ASAuthorizationProvider: NSObjectProtocol {}

/// Stand-in for `ASAuthorizationCredential` (Apple's also refines `NSCopying` and `NSSecureCoding`).
public protocol ASAuthorizationCredential: NSObjectProtocol {}

/// Stand-in for `ASAuthorizationRequest`.
open class ASAuthorizationRequest: NSObject {
    /// The provider that made the request.
    public let provider: any ASAuthorizationProvider
    init(provider: any ASAuthorizationProvider) { self.provider = provider; super.init() }
}

/// Stand-in for `ASAuthorization`: the credential the user chose and the provider that made its request.
open class ASAuthorization: NSObject {
    /// The provider of the request the user answered.
    public let provider: any ASAuthorizationProvider
    /// What the user chose.
    public let credential: any ASAuthorizationCredential

    /// Stand-in only (the system builds these).
    public init(provider: any ASAuthorizationProvider, credential: any ASAuthorizationCredential) {
        self.provider = provider; self.credential = credential; super.init()
    }

    /// Stand-in for `ASAuthorization.Scope`.
    public struct Scope: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let email = Scope(rawValue: "email")
        public static let fullName = Scope(rawValue: "full_name")
    }
}

// MARK: Passwords

/// Stand-in for `ASAuthorizationPasswordProvider`.
open class ASAuthorizationPasswordProvider: NSObject, ASAuthorizationProvider {
    public override init() { super.init() }
    /// A request for a saved password.
    open func createRequest() -> ASAuthorizationPasswordRequest { ASAuthorizationPasswordRequest(provider: self) }
}

/// Stand-in for `ASAuthorizationPasswordRequest`.
open class ASAuthorizationPasswordRequest: ASAuthorizationRequest {}

/// Stand-in for `ASPasswordCredential`.
open class ASPasswordCredential: NSObject, ASAuthorizationCredential {
    /// The account name.
    public let user: String
    /// The password.
    public let password: String
    /// A saved password.
    public init(user: String, password: String) { self.user = user; self.password = password; super.init() }
}

// MARK: Sign in with Apple

/// Stand-in for `ASAuthorizationAppleIDProvider`.
open class ASAuthorizationAppleIDProvider: NSObject, ASAuthorizationProvider {
    public override init() { super.init() }
    /// A Sign in with Apple request.
    open func createRequest() -> ASAuthorizationAppleIDRequest { ASAuthorizationAppleIDRequest(provider: self) }
}

/// Stand-in for `ASAuthorizationOpenIDRequest`.
open class ASAuthorizationOpenIDRequest: ASAuthorizationRequest {
    /// The contact information to ask for.
    open var requestedScopes: [ASAuthorization.Scope]?
    /// Returned unchanged in the credential.
    open var state: String?
    /// Put into the identity token's `nonce` claim.
    open var nonce: String?
}

/// Stand-in for `ASAuthorizationAppleIDRequest`.
open class ASAuthorizationAppleIDRequest: ASAuthorizationOpenIDRequest {
    /// A user identifier from an earlier sign-in, to sign in as that user.
    open var user: String?
}

/// Stand-in for `ASUserDetectionStatus`.
public enum ASUserDetectionStatus: Int, Sendable {
    case unsupported = 0
    case unknown = 1
    case likelyReal = 2
}

/// Stand-in for `ASAuthorizationAppleIDCredential`.
open class ASAuthorizationAppleIDCredential: NSObject, ASAuthorizationCredential {
    /// The stable user identifier (the identity token's `sub`).
    public let user: String
    /// The request's `state`.
    public let state: String?
    /// The scopes the user granted.
    public let authorizedScopes: [ASAuthorization.Scope]
    /// A short-lived code for Apple's token endpoint.
    public let authorizationCode: Data?
    /// The identity token (a JWT, UTF-8).
    public let identityToken: Data?
    /// The email, on the first authorization only.
    public let email: String?
    /// The name, on the first authorization only.
    public let fullName: PersonNameComponents?
    /// Whether the user appears to be a real person.
    public let realUserStatus: ASUserDetectionStatus

    /// Stand-in only (the system builds these).
    public init(
        user: String, state: String? = nil, authorizedScopes: [ASAuthorization.Scope] = [], authorizationCode: Data? = nil,
        identityToken: Data?, email: String? = nil, fullName: PersonNameComponents? = nil,
        realUserStatus: ASUserDetectionStatus = .unknown
    ) {
        self.user = user; self.state = state; self.authorizedScopes = authorizedScopes; self.authorizationCode = authorizationCode
        self.identityToken = identityToken; self.email = email; self.fullName = fullName; self.realUserStatus = realUserStatus
        super.init()
    }
}

// MARK: Platform passkeys

/// Stand-in for `ASAuthorizationPublicKeyCredentialUserVerificationPreference`.
public struct ASAuthorizationPublicKeyCredentialUserVerificationPreference: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let preferred = Self(rawValue: "preferred")
    public static let required = Self(rawValue: "required")
    public static let discouraged = Self(rawValue: "discouraged")
}

/// Stand-in for `ASAuthorizationPublicKeyCredentialAttestationKind`.
public struct ASAuthorizationPublicKeyCredentialAttestationKind: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none = Self(rawValue: "none")
    public static let direct = Self(rawValue: "direct")
    public static let indirect = Self(rawValue: "indirect")
    public static let enterprise = Self(rawValue: "enterprise")
}

/// Stand-in for `ASAuthorizationPublicKeyCredentialAttachment`.
public enum ASAuthorizationPublicKeyCredentialAttachment: Int, Sendable {
    case platform = 0
    case crossPlatform = 1
}

/// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialDescriptor`.
open class ASAuthorizationPlatformPublicKeyCredentialDescriptor: NSObject {
    /// The credential ID.
    open var credentialID: Data
    /// A descriptor of the credential `credentialID`.
    public init(credentialID: Data) { self.credentialID = credentialID; super.init() }
}

/// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialProvider`.
open class ASAuthorizationPlatformPublicKeyCredentialProvider: NSObject, ASAuthorizationProvider {
    /// The relying party (a domain associated with the app).
    public let relyingPartyIdentifier: String

    /// A provider for `relyingPartyIdentifier`.
    public init(relyingPartyIdentifier: String) { self.relyingPartyIdentifier = relyingPartyIdentifier; super.init() }

    /// A sign-in request.
    open func createCredentialAssertionRequest(challenge: Data) -> ASAuthorizationPlatformPublicKeyCredentialAssertionRequest {
        ASAuthorizationPlatformPublicKeyCredentialAssertionRequest(
            provider: self, challenge: challenge, relyingPartyIdentifier: relyingPartyIdentifier)
    }

    /// A registration request.
    open func createCredentialRegistrationRequest(challenge: Data, name: String, userID: Data)
        -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest
    {
        ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest(
            provider: self, challenge: challenge, name: name, userID: userID,
            relyingPartyIdentifier: relyingPartyIdentifier)
    }
}

/// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialAssertionRequest`.
open class ASAuthorizationPlatformPublicKeyCredentialAssertionRequest: ASAuthorizationRequest {
    /// The relying party's challenge.
    open var challenge: Data
    /// The relying party.
    open var relyingPartyIdentifier: String
    /// Credentials allowed; empty: any discoverable credential of the relying party.
    open var allowedCredentials: [ASAuthorizationPlatformPublicKeyCredentialDescriptor] = []
    /// Whether to verify the user.
    open var userVerificationPreference: ASAuthorizationPublicKeyCredentialUserVerificationPreference = .preferred

    init(provider: any ASAuthorizationProvider, challenge: Data, relyingPartyIdentifier: String) {
        self.challenge = challenge; self.relyingPartyIdentifier = relyingPartyIdentifier
        super.init(provider: provider)
    }
}

/// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest`.
open class ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest: ASAuthorizationRequest {
    /// The relying party's challenge.
    open var challenge: Data
    /// The account name the passkey is saved under.
    open var name: String
    /// The user handle.
    open var userID: Data
    /// A display name.
    open var displayName: String?
    /// The relying party.
    open var relyingPartyIdentifier: String
    /// Whether to verify the user.
    open var userVerificationPreference: ASAuthorizationPublicKeyCredentialUserVerificationPreference = .preferred
    /// The attestation the relying party wants.
    open var attestationPreference: ASAuthorizationPublicKeyCredentialAttestationKind = .none
    /// Credentials that must not be registered again (iOS 17.4).
    open var excludedCredentials: [ASAuthorizationPlatformPublicKeyCredentialDescriptor] = []
    /// How the request is performed (iOS 18, macOS 15, visionOS 2; on the simulated device see
    /// `StandInDevice.hasConditionalPasskeyRegistration`).
    open var requestStyle: RequestStyle = .standard

    /// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest.RequestStyle`
    /// (`ASAuthorizationPlatformPublicKeyCredentialRegistrationRequestStyle`).
    public enum RequestStyle: Int, Sendable {
        /// A registration sheet (the default).
        case standard = 0
        /// A passkey for an account the credential manager holds a password for, made without UI when its conditions
        /// are met (a recent sign-in with that password, no passkey yet); otherwise an error, also without UI.
        case conditional = 1
    }

    init(provider: any ASAuthorizationProvider, challenge: Data, name: String, userID: Data, relyingPartyIdentifier: String) {
        self.challenge = challenge; self.name = name; self.userID = userID; self.relyingPartyIdentifier = relyingPartyIdentifier
        super.init(provider: provider)
    }
}

/// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialAssertion`.
open class ASAuthorizationPlatformPublicKeyCredentialAssertion: NSObject, ASAuthorizationCredential {
    /// The authenticator data.
    public let rawAuthenticatorData: Data!
    /// The user handle.
    public let userID: Data!
    /// The signature over the authenticator data and the client data hash.
    public let signature: Data!
    /// The client data the system built (its origin is `https://` + the relying party identifier).
    public let rawClientDataJSON: Data
    /// The credential ID.
    public let credentialID: Data
    /// Where the credential lives.
    public let attachment: ASAuthorizationPublicKeyCredentialAttachment

    /// Stand-in only (the system builds these).
    public init(
        rawAuthenticatorData: Data?, userID: Data?, signature: Data?, rawClientDataJSON: Data, credentialID: Data,
        attachment: ASAuthorizationPublicKeyCredentialAttachment = .platform
    ) {
        self.rawAuthenticatorData = rawAuthenticatorData; self.userID = userID; self.signature = signature
        self.rawClientDataJSON = rawClientDataJSON; self.credentialID = credentialID; self.attachment = attachment
        super.init()
    }
}

/// Stand-in for `ASAuthorizationPlatformPublicKeyCredentialRegistration`.
open class ASAuthorizationPlatformPublicKeyCredentialRegistration: NSObject, ASAuthorizationCredential {
    /// The attestation object (CBOR).
    public let rawAttestationObject: Data?
    /// The client data the system built.
    public let rawClientDataJSON: Data
    /// The new credential's ID.
    public let credentialID: Data
    /// Where the credential lives.
    public let attachment: ASAuthorizationPublicKeyCredentialAttachment

    /// Stand-in only (the system builds these).
    public init(
        rawAttestationObject: Data?, rawClientDataJSON: Data, credentialID: Data,
        attachment: ASAuthorizationPublicKeyCredentialAttachment = .platform
    ) {
        self.rawAttestationObject = rawAttestationObject; self.rawClientDataJSON = rawClientDataJSON; self.credentialID = credentialID
        self.attachment = attachment
        super.init()
    }
}
#endif
