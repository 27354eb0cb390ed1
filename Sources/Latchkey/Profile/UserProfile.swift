import Foundation

/// Which profile API `getUserProfile`/`updateUserProfile` talk to.
public enum ProfileEndpoint: String, Sendable, Equatable, CaseIterable {
    /// SCIM 2.0 (RFC 7644): `GET`/`PATCH /scim2/Me`, `/scim2/Users/{id}` for administrators. The default.
    case scim = "scim2/Me"
    /// thunderID self-service: `GET`/`PUT /users/me`. The default with `Dialect.thunderID`, whose servers have no SCIM.
    case usersMe = "users/me"

    /// `options["endpoint"]` (`"users/me"`, `"scim2/Me"`, `"scim"`; a leading `/` is allowed) wins over the dialect.
    static func resolve(_ requested: String?, dialect: Dialect) throws -> ProfileEndpoint {
        guard let requested else { return dialect == .thunderID ? .usersMe : .scim }
        let name = requested.hasPrefix("/") ? String(requested.dropFirst()) : requested
        if name.caseInsensitiveCompare("scim") == .orderedSame { return .scim }
        guard let endpoint = allCases.first(where: { $0.rawValue.caseInsensitiveCompare(name) == .orderedSame }) else {
            throw LatchkeyError(.invalidInput, "unknown profile endpoint \(requested); use \"scim2/Me\" or \"users/me\"")
        }
        return endpoint
    }
}

/// The signed-in user's full profile (ThunderID's `UserProfile`).
public struct UserProfile: Sendable, Equatable {
    /// The account id (`sub` of the user's tokens).
    public var id: String
    /// Every attribute as the server sent it: the SCIM resource's members (`userName`, `name`, `emails`, `meta` …),
    /// or the `/users/me` attributes (`username`, `email`, `given_name` …).
    public var claims: [String: JSONValue]
    /// The sign-in name (SCIM `userName`, thunderID `username`).
    public var userName: String?
    /// The primary email address.
    public var email: String?
    /// The full name for display (SCIM `displayName`, OIDC `name`).
    public var displayName: String?
    /// First name (SCIM `name.givenName`, OIDC `given_name`).
    public var givenName: String?
    /// Last name (SCIM `name.familyName`, OIDC `family_name`).
    public var familyName: String?
    /// Phone number (SCIM `phoneNumbers`, OIDC `phone_number`).
    public var phoneNumber: String?
    /// Picture URL (SCIM `photos`, OIDC `picture`).
    public var picture: String?
    /// Language tag (`fr`, `en-US`).
    public var locale: String?
    /// Whether the account is enabled; SCIM only.
    public var active: Bool?
    /// SCIM `meta.version` (a weak entity tag); nil from `/users/me`.
    public var version: String?
    /// The API the profile came from.
    public var endpoint: ProfileEndpoint

    /// A profile from a SCIM User resource (RFC 7643 §4.1).
    package init(scim resource: [String: JSONValue]) {
        claims = resource
        endpoint = .scim
        id = resource["id"]?.stringValue ?? ""
        userName = resource["userName"]?.stringValue
        let name = resource["name"]?.objectMembers ?? [:]
        givenName = name["givenName"]?.stringValue
        familyName = name["familyName"]?.stringValue
        displayName = resource["displayName"]?.stringValue ?? name["formatted"]?.stringValue
        email = Self.primaryValue(resource["emails"])
        phoneNumber = Self.primaryValue(resource["phoneNumbers"])
        picture = Self.primaryValue(resource["photos"])
        locale = resource["locale"]?.stringValue
        active = resource["active"]?.boolValue
        version = resource["meta"]?.objectMembers?["version"]?.stringValue
    }

    /// A profile from a thunderID `/users/me` body `{id, type, attributes}`.
    init(usersMe body: [String: JSONValue]) {
        let attributes = body["attributes"]?.objectMembers ?? [:]
        claims = attributes
        endpoint = .usersMe
        id = body["id"]?.stringValue ?? ""
        userName = attributes["username"]?.stringValue
        givenName = attributes["given_name"]?.stringValue
        familyName = attributes["family_name"]?.stringValue
        displayName =
            attributes["name"]?.stringValue
            ?? [givenName, familyName].compactMap { $0 }.joined(separator: " ").nilIfEmpty
        email = attributes["email"]?.stringValue
        phoneNumber = attributes["phone_number"]?.stringValue
        picture = attributes["picture"]?.stringValue
        locale = attributes["locale"]?.stringValue
        active = nil
        version = nil
    }

    /// The profile as OpenID Connect claims (`sub`, `email`, `given_name` …), the shape `User` is built from.
    var oidcClaims: [String: JSONValue] {
        guard endpoint == .scim else {
            var out = claims
            out["sub"] = .string(id)
            return out
        }
        var out: [String: JSONValue] = ["sub": .string(id)]
        let pairs: [(String, String?)] = [
            ("username", userName), ("email", email), ("name", displayName),
            ("given_name", givenName), ("family_name", familyName),
            ("phone_number", phoneNumber), ("picture", picture), ("locale", locale)
        ]
        for (claim, value) in pairs { if let value { out[claim] = .string(value) } }
        return out
    }

    /// The primary value of a SCIM multi-valued attribute, else the first.
    private static func primaryValue(_ attribute: JSONValue?) -> String? {
        guard case .array(let entries)? = attribute else { return nil }
        let objects = entries.compactMap(\.objectMembers)
        let chosen = objects.first { $0["primary"]?.boolValue == true } ?? objects.first
        return chosen?["value"]?.stringValue
    }
}

extension JSONValue {
    /// The members of an object value.
    var objectMembers: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
}
