import Foundation
import LatchkeyJOSE

/// Standard claims released per scope (OpenID Connect Core §5.4).
enum ScopeClaims {
    static let byScope: [String: [String]] = [
        "profile": [
            "name", "family_name", "given_name", "middle_name", "nickname", "preferred_username", "profile",
            "picture", "website", "gender", "birthdate", "zoneinfo", "locale", "updated_at"
        ],
        "email": ["email", "email_verified"],
        "phone": ["phone_number", "phone_number_verified"],
        "address": ["address"]
    ]
    static let booleanClaims: Set<String> = ["email_verified", "phone_number_verified"]

    /// The user's claims that `scopes` release, typed as OIDC expects (booleans, the `address` object).
    static func claims(of user: UserRecord, scopes: [String]) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for scope in scopes {
            for name in byScope[scope] ?? [] {
                guard let value = user.claims[name] else { continue }
                if booleanClaims.contains(name) {
                    out[name] = .bool(value == "true")
                } else if name == "address" {
                    out[name] = .object(["formatted": .string(value)])
                } else if name == "updated_at", let n = Double(value) {
                    out[name] = .number(n)
                } else {
                    out[name] = .string(value)
                }
            }
        }
        // Every account has a sign-in name even when no preferred_username claim was set (self-registered users).
        if scopes.contains("profile"), out["preferred_username"] == nil { out["preferred_username"] = .string(user.username) }
        return out
    }
}

/// RFC 9068 access token claims (`typ: at+jwt`).
struct AccessTokenClaims: Codable, Sendable {
    var iss: String
    var sub: String
    var aud: JSONValue
    var exp: Int
    var iat: Int
    var jti: String
    var clientId: String
    var scope: String
    var authTime: Int?
    var sid: String?
    /// RFC 8693 §4.1: the party acting on behalf of `sub`.
    var act: [String: String]?
    /// RFC 8176 methods of the sign-in behind the token (absent for client credentials).
    var amr: [String]? = nil
    /// `AuthenticationMethods.multiFactorACR` when the sign-in was multi-factor.
    var acr: String? = nil
    /// The identity provider of a federated sign-in (its configured id).
    var idp: String? = nil
    /// RFC 9449 §6.1: the thumbprint of the DPoP key the token is bound to.
    var cnf: Confirmation? = nil
    /// The claims the authorization request asked userinfo for by name (OpenID Connect Core §5.5), carried to
    /// userinfo by the token itself.
    var userinfoClaims: [String]? = nil
    /// True when an SSO session answered for the authorization with no credential shown to this application
    /// (`AuthenticationMethods.reusedMarker`): `auth_time` is then the session's, and the token is not a recent sign-in.
    var reused: Bool? = nil
    /// The `sub` the token itself carries, set by `TokenValidator`, which puts the account id from the token's row in
    /// `sub`: they differ for a pairwise application (`SubjectIdentifiers`). What the application is told (userinfo,
    /// introspection, `/users/me`) is this; what the server looks up is `sub`. Not a claim.
    var publishedSubject: String? = nil

    /// The `cnf` claim (RFC 7800) of a DPoP-bound token.
    struct Confirmation: Codable, Sendable, Equatable {
        var jkt: String
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, jti, scope, sid, act, amr, acr, idp, cnf, clientId = "client_id", authTime = "auth_time"
        case userinfoClaims = "lk_userinfo_claims", reused = "lk_sso"
    }

    var scopes: [String] { scope.split(separator: " ").map(String.init) }
    /// The subject as the token names it to its client (`publishedSubject`, else `sub`).
    var subjectAsPublished: String { publishedSubject ?? sub }
}

/// The fixed claims of every JWT we verify (ID token hints, subject tokens).
struct RegisteredClaims: Decodable {
    var iss: String?
    var sub: String?
    var aud: JSONValue?
    var exp: Double?
    var iat: Double?
    var jti: String?
    var sid: String?
    var scope: String?
    var clientId: String?
    var azp: String?

    enum CodingKeys: String, CodingKey { case iss, sub, aud, exp, iat, jti, sid, scope, azp, clientId = "client_id" }
}
