import Foundation

/// The authentication token of the ReachFive-style API (ReachFive's `AuthToken`).
public struct AuthToken: Sendable, Equatable {
    public var idToken: String?
    public var accessToken: String
    /// Present when the provider issued one (`offline_access`).
    public var refreshToken: String?
    /// Always "Bearer" for Latchkey.
    public var tokenType: String?
    /// Seconds the access token remains valid; ≤ 0 means expired.
    public var expiresIn: Int?
    /// The validated ID token's claims.
    public var user: OpenIdUser?

    /// - Parameter now: the device's time (the client's clock), from which `expiresIn` counts.
    init(_ tokens: TokenSet, now: Date) {
        idToken = tokens.idToken
        accessToken = tokens.accessToken
        refreshToken = tokens.refreshToken
        tokenType = tokens.tokenType
        expiresIn = Int(tokens.expiresAt.timeIntervalSince(now).rounded(.down))
        user = tokens.idToken.flatMap { try? CompactJWS(parsing: $0).claims(as: [String: JSONValue].self) }.map(OpenIdUser.init)
    }
}

/// The user's standard claims, as ReachFive's SDK names them.
public struct OpenIdUser: Sendable, Equatable {
    public var id: String?
    public var name: String?
    public var preferredUsername: String?
    public var givenName: String?
    public var familyName: String?
    public var middleName: String?
    public var nickname: String?
    public var picture: String?
    public var website: String?
    public var email: String?
    public var emailVerified: Bool?
    public var gender: String?
    public var zoneinfo: String?
    public var locale: String?
    public var phoneNumber: String?
    public var phoneNumberVerified: Bool?
    /// The formatted postal address (OIDC's `address.formatted`, or a plain string).
    public var address: String?

    public init(claims c: [String: JSONValue]) {
        id = c["sub"]?.stringValue
        name = c["name"]?.stringValue
        preferredUsername = c["preferred_username"]?.stringValue
        givenName = c["given_name"]?.stringValue
        familyName = c["family_name"]?.stringValue
        middleName = c["middle_name"]?.stringValue
        nickname = c["nickname"]?.stringValue
        picture = c["picture"]?.stringValue
        website = c["website"]?.stringValue
        email = c["email"]?.stringValue
        emailVerified = c["email_verified"]?.boolValue
        gender = c["gender"]?.stringValue
        zoneinfo = c["zoneinfo"]?.stringValue
        locale = c["locale"]?.stringValue
        phoneNumber = c["phone_number"]?.stringValue
        phoneNumberVerified = c["phone_number_verified"]?.boolValue
        if case .object(let a)? = c["address"] { address = a["formatted"]?.stringValue } else { address = c["address"]?.stringValue }
    }
}
