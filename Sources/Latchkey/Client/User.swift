import Foundation

/// The signed-in user (ThunderID's `User`).
public struct User: Sendable, Equatable {
    public var sub: String
    public var username: String?
    public var email: String?
    public var displayName: String?
    public var profilePicture: String?
    /// Every claim, as received.
    public var claims: [String: JSONValue]

    /// A user from its claims (`sub`, `preferred_username`, `email`, `name` or `given_name`/`family_name`,
    /// `picture`): what the SDK reads from an ID token or userinfo; an app makes one for previews and tests.
    public init(claims: [String: JSONValue]) {
        self.claims = claims
        sub = claims["sub"]?.stringValue ?? ""
        username = claims["preferred_username"]?.stringValue ?? claims["username"]?.stringValue
        email = claims["email"]?.stringValue
        displayName =
            claims["name"]?.stringValue
            ?? [claims["given_name"]?.stringValue, claims["family_name"]?.stringValue].compactMap { $0 }.joined(separator: " ").nilIfEmpty
        profilePicture = claims["picture"]?.stringValue
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
