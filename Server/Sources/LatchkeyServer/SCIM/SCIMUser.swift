import Crypto
import Foundation
import LatchkeyJOSE

/// The SCIM User (RFC 7643 §4.1) view of an account, limited to what Latchkey stores. Each SCIM attribute maps to
/// one OpenID Connect claim, so SCIM and `/users/me` edit the same data:
///
/// | SCIM                                   | claim          |
/// |----------------------------------------|----------------|
/// | `userName`                             | username       |
/// | `name.givenName` / `name.familyName`   | given_name / family_name |
/// | `displayName` and `name.formatted`     | name           |
/// | `emails[type eq "work"]` (primary)     | email          |
/// | `phoneNumbers[type eq "mobile"]`       | phone_number   |
/// | `photos[type eq "photo"]`              | picture        |
/// | `locale`                               | locale         |
/// | `active`                               | not `disabled` |
/// | `roles[].value`                        | the operator-granted roles (`UserRoles`), shown to administrators only |
///
/// An account holds one value of each multi-valued attribute but `roles`.
struct SCIMUser: Equatable, Sendable {
    static let schemaURN = "urn:ietf:params:scim:schemas:core:2.0:User"

    var userName: String
    var givenName: String?
    var familyName: String?
    /// The OIDC `name` claim, shown both as `displayName` and as `name.formatted`.
    var fullName: String?
    var email: String?
    var phone: String?
    var photo: String?
    var locale: String?
    var active: Bool
    /// Sorted, without duplicates.
    var roles: [String]

    /// A new account's starting point (`POST /Users`): active, nothing else set.
    init(userName: String = "") {
        self.userName = userName
        active = true
        roles = []
    }

    init(_ user: UserRecord) {
        userName = user.username
        givenName = user.claims["given_name"]
        familyName = user.claims["family_name"]
        fullName = user.claims["name"]
        email = user.claims["email"]
        phone = user.claims["phone_number"]
        photo = user.claims["picture"]
        locale = user.claims["locale"]
        active = !user.disabled
        roles = UserRoles.of(user).sorted()
    }

    /// The claims the attributes hold (non-empty values only), as a new account takes them.
    var claims: [String: String] {
        let values: [String: String?] = [
            "given_name": givenName, "family_name": familyName, "name": fullName, "email": email, "phone_number": phone,
            "picture": photo, "locale": locale
        ]
        return values.compactMapValues { $0.flatMap { $0.isEmpty ? nil : $0 } }
    }

    /// The SCIM path that shows each claim, to name attributes in SCIM errors.
    static let pathOfClaim = [
        "username": "userName", "given_name": "name.givenName", "family_name": "name.familyName",
        "name": "displayName", "email": "emails", "phone_number": "phoneNumbers", "picture": "photos",
        "locale": "locale", "active": "active", UserRoles.claim: "roles"
    ]

    /// The claims whose values differ from `original`, as `updateProfile(of:changes:)` takes them (nil removes).
    func changes(from original: SCIMUser) -> [String: String?] {
        var changes: [String: String?] = [:]
        func note(_ claim: String, _ new: String?, _ old: String?) {
            if (new ?? "") != (old ?? "") { changes[claim] = .some(new) }
        }
        note("username", userName, original.userName)
        note("given_name", givenName, original.givenName)
        note("family_name", familyName, original.familyName)
        note("name", fullName, original.fullName)
        note("email", email, original.email)
        note("phone_number", phone, original.phone)
        note("picture", photo, original.photo)
        note("locale", locale, original.locale)
        return changes
    }

    // MARK: Multi-valued attributes

    /// The three multi-valued attributes; each holds at most one value, of a fixed `type`.
    enum MultiValued: String, Sendable, CaseIterable {
        case emails, phoneNumbers, photos

        /// The `type` of the one value (RFC 7643 §4.1.2 canonical values).
        var type: String {
            switch self {
            case .emails: "work"
            case .phoneNumbers: "mobile"
            case .photos: "photo"
            }
        }

        /// Only the email address is flagged primary: it is the account's address for sign-in and mail.
        var primary: Bool? { self == .emails ? true : nil }
    }

    subscript(_ attribute: MultiValued) -> String? {
        get {
            switch attribute {
            case .emails: email
            case .phoneNumbers: phone
            case .photos: photo
            }
        }
        set {
            switch attribute {
            case .emails: email = newValue
            case .phoneNumbers: phone = newValue
            case .photos: photo = newValue
            }
        }
    }

    // MARK: Representation

    /// The resource as RFC 7643 §4.1 shapes it; `meta.location` is absolute, under `baseURL` (the issuer). `roles` is
    /// shown only `withRoles` (to administrators). `pairwiseId`: the caller's own account read with a pairwise
    /// application's token (`SubjectIdentifiers`), shown by the subject that application knows, at `/scim2/Me`.
    static func representation(of user: UserRecord, baseURL: String, withRoles: Bool = false, pairwiseId: String? = nil) -> JSONValue {
        let view = SCIMUser(user)
        var resource: [String: JSONValue] = [
            "schemas": .array([.string(schemaURN)]),
            "id": .string(pairwiseId ?? user.id),
            "userName": .string(view.userName),
            "active": .bool(view.active)
        ]
        var name: [String: JSONValue] = [:]
        if let v = view.givenName { name["givenName"] = .string(v) }
        if let v = view.familyName { name["familyName"] = .string(v) }
        if let v = view.fullName {
            name["formatted"] = .string(v)
            resource["displayName"] = .string(v)
        }
        if !name.isEmpty { resource["name"] = .object(name) }
        for attribute in MultiValued.allCases {
            guard let value = view[attribute] else { continue }
            var entry: [String: JSONValue] = ["value": .string(value), "type": .string(attribute.type)]
            if let primary = attribute.primary { entry["primary"] = .bool(primary) }
            resource[attribute.rawValue] = .array([.object(entry)])
        }
        if let v = view.locale { resource["locale"] = .string(v) }
        if withRoles, !view.roles.isEmpty {
            resource["roles"] = .array(view.roles.map { .object(["value": .string($0)]) })
        }
        resource["meta"] = .object([
            "resourceType": .string("User"),
            "created": .string(user.createdAt.formatted(.iso8601)),
            "lastModified": .string((user.updatedAt ?? user.createdAt).formatted(.iso8601)),
            "location": .string(pairwiseId == nil ? location(of: user, baseURL: baseURL) : baseURL + "/scim2/Me"),
            "version": .string(version(of: user))
        ])
        return .object(resource)
    }

    static func location(of user: UserRecord, baseURL: String) -> String {
        baseURL + "/scim2/Users/" + (user.id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? user.id)
    }

    /// A weak entity tag (RFC 7644 §3.14) over everything the representation shows, so any visible change — by
    /// SCIM, `/users/me` or a sign-up flow — changes it, while sign-in bookkeeping (failed logins) does not.
    static func version(of user: UserRecord) -> String {
        struct Fingerprint: Encodable {
            var id: String, username: String, claims: [String: String], disabled: Bool, updatedAt: Double?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data =
            (try? encoder.encode(
                Fingerprint(
                    id: user.id, username: user.username, claims: user.claims,
                    disabled: user.disabled, updatedAt: user.updatedAt?.timeIntervalSince1970))) ?? Data()
        let digest = SHA256.hash(data: data).prefix(12).map { String(format: "%02x", $0) }.joined()
        return "W/\"\(digest)\""
    }
}
