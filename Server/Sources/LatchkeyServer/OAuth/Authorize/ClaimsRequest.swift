import Foundation
import LatchkeyJOSE

/// The `claims` request parameter (OpenID Connect Core §5.5): which claims the client wants in the ID token and at
/// userinfo, each voluntary or essential, `acr` with the values it accepts. `acr_values` (§3.1.2.1) is the voluntary
/// form of an `acr` request and is folded in here.
///
/// Claims are released from the account's standard claims (`ScopeClaims`) whatever the scopes; a claim the account
/// does not have is left out, essential or not (§5.5.1: not an error). An essential `acr` the sign-in cannot meet is a
/// failed sign-in (§5.5.1.1): the hosted page asks for the second factor, or refuses an account without one.
struct ClaimsRequest: Sendable, Equatable, Codable {
    struct Member: Sendable, Equatable, Codable {
        var essential: Bool?
        var value: String?
        var values: [String]?

        var accepted: [String] { values ?? value.map { [$0] } ?? [] }
    }

    var idToken: [String: Member] = [:]
    var userinfo: [String: Member] = [:]

    enum CodingKeys: String, CodingKey { case idToken = "id_token", userinfo }

    static let maxLength = 4096

    init() {}

    /// The parameter as sent (a JSON object with `id_token` and/or `userinfo` objects); anything else is
    /// `invalid_request`.
    init(parameter text: String) throws(OAuthError) {
        guard text.utf8.count <= Self.maxLength, let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        else { throw OAuthError(.invalidRequest, "claims must be a JSON object of at most \(Self.maxLength) bytes (OpenID Connect Core 5.5)") }
        idToken = try Self.members(object["id_token"], "id_token")
        userinfo = try Self.members(object["userinfo"], "userinfo")
    }

    private static func members(_ raw: Any?, _ target: String) throws(OAuthError) -> [String: Member] {
        guard let raw, !(raw is NSNull) else { return [:] }
        guard let object = raw as? [String: Any] else { throw OAuthError(.invalidRequest, "claims.\(target) must be an object") }
        var members: [String: Member] = [:]
        for (name, value) in object {
            guard name.count <= 100 else { throw OAuthError(.invalidRequest, "claims.\(target): a claim name is too long") }
            if value is NSNull {
                members[name] = Member()
                continue
            }
            guard let spec = value as? [String: Any] else {
                throw OAuthError(.invalidRequest, "claims.\(target).\(name) must be null or an object")
            }
            var member = Member()
            if let essential = spec["essential"] {
                guard let flag = essential as? NSNumber, type(of: flag) == type(of: NSNumber(value: true)) else {
                    throw OAuthError(.invalidRequest, "claims.\(target).\(name).essential must be true or false")
                }
                member.essential = flag.boolValue
            }
            member.value = spec["value"] as? String
            member.values = (spec["values"] as? [Any])?.compactMap { $0 as? String }
            members[name] = member
        }
        return members
    }

    /// Folds `acr_values` in as a voluntary `acr` request, unless `claims` asked for `acr` itself.
    mutating func add(acrValues: [String]) {
        guard !acrValues.isEmpty, idToken["acr"] == nil else { return }
        idToken["acr"] = Member(essential: false, value: nil, values: acrValues)
    }

    /// Drops the user claims that none of `scopes` (the application's allowed scopes) releases: asking by name is
    /// another way to ask for a scope's claims, not a way around the scopes an operator allowed the application.
    mutating func restrict(toScopes scopes: [String]) {
        let userClaims = Set(ScopeClaims.byScope.values.flatMap { $0 })
        let allowed = Set(scopes.flatMap { ScopeClaims.byScope[$0] ?? [] })
        idToken = idToken.filter { !userClaims.contains($0.key) || allowed.contains($0.key) }
        userinfo = userinfo.filter { !userClaims.contains($0.key) || allowed.contains($0.key) }
    }

    var isEmpty: Bool { idToken.isEmpty && userinfo.isEmpty }

    /// The stored form (canonical JSON).
    var stored: String? {
        guard !isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func from(stored: String?) -> ClaimsRequest? {
        guard let stored else { return nil }
        return try? JSONDecoder().decode(ClaimsRequest.self, from: Data(stored.utf8))
    }

    /// The request needs a multi-factor sign-in: `acr` essential, and the multi-factor value the only one accepted.
    var requiresMultiFactor: Bool {
        guard let acr = idToken["acr"], acr.essential == true else { return false }
        let accepted = acr.accepted
        return !accepted.isEmpty && accepted.allSatisfy { $0 == AuthenticationMethods.multiFactorACR }
    }

    /// Whether the ID token must say `acr` (it was asked for).
    var wantsACR: Bool { idToken["acr"] != nil }

    /// The standard user claims asked for `target`, as `ScopeClaims` releases them.
    static func userClaims(_ members: [String: Member], of user: UserRecord) -> [String: JSONValue] {
        let names = Set(members.keys).intersection(ScopeClaims.byScope.values.flatMap { $0 })
        let all = ScopeClaims.claims(of: user, scopes: Array(ScopeClaims.byScope.keys))
        return all.filter { names.contains($0.key) }
    }
}

extension AuthorizationRequest {
    /// The request made a multi-factor `acr` essential (`ClaimsRequest.requiresMultiFactor`, OpenID Connect Core
    /// §5.5.1.1): no single-factor sign-in answers it.
    var requiresMultiFactor: Bool { ClaimsRequest.from(stored: claims)?.requiresMultiFactor == true }
}
