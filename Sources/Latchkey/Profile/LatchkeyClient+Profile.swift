import Foundation

/// ThunderID-style profile operations: read and update the signed-in user's profile over SCIM 2.0 (`/scim2/Me`) or,
/// with the thunderID dialect, its self-service API (`/users/me`).
extension LatchkeyClient {
    /// The signed-in user's full profile.
    ///
    /// - Parameters:
    ///   - options: `["endpoint": "users/me"]` or `["endpoint": "scim2/Me"]` chooses the API; without it, SCIM unless
    ///     the configuration's dialect is `.thunderID`.
    ///   - sessionId: the session whose access token is used (multi-session apps).
    /// - Throws: `LatchkeyError` — `.sessionExpired` when not signed in or the token is refused, `.invalidInput` for an
    ///   unknown endpoint option, `.serverError` for 5xx answers, `.networkError` when the server cannot be reached.
    public func getUserProfile(options: [String: String]? = nil, sessionId: String? = nil) async throws -> UserProfile {
        try await session(sessionId).profile(options: options)
    }

    /// Updates profile attributes and returns the user as the server now has them.
    ///
    /// `payload` maps attributes to new values; `.null` removes one. Keys may be SCIM paths (`userName`,
    /// `name.givenName`, `displayName`, `emails[type eq "work"].value`, `active` …) or OpenID Connect claim names
    /// (`given_name`, `family_name`, `name`, `email`, `phone_number`, `picture`, `locale`, `username`), which are
    /// translated for the endpoint in use.
    ///
    /// - SCIM: one `PATCH` of `replace`/`remove` operations to `/scim2/Me`, or to `/scim2/Users/{userId}` when
    ///   `userId` is given (the session's token then needs the server's admin scope, `scim.admin` on Latchkey). The
    ///   operations apply atomically: all or none.
    /// - thunderID dialect (`/users/me`): `PUT` replaces the whole attribute set, so the current attributes are read
    ///   first and the payload merged into them (a concurrent change between the two calls can be lost). `userId` is
    ///   not supported there.
    ///
    /// - Throws: `LatchkeyError` — `.invalidInput` (empty payload, invalid value, unknown attribute: the server's
    ///   detail is in `message`), `.userAlreadyExists` (a unique value such as the email is taken),
    ///   `.authenticationFailed` (403: not allowed, e.g. no admin scope), `.sessionExpired` (401), `.serverError` (5xx).
    public func updateUserProfile(payload: [String: JSONValue], userId: String? = nil, sessionId: String? = nil) async throws -> User {
        try await session(sessionId).updateProfile(payload, userId: userId)
    }

    /// As `updateUserProfile(payload:userId:sessionId:)`, refused when the profile changed since `version` was read.
    ///
    /// - Parameters:
    ///   - payload: attributes and their new values, as for `updateUserProfile(payload:userId:sessionId:)`.
    ///   - userId: another user to update (SCIM, admin scope); nil for the signed-in user.
    ///   - sessionId: the session whose access token is used.
    ///   - version: the `UserProfile.version` the edit was based on (SCIM `meta.version`), sent as `If-Match` so that
    ///     a change made elsewhere in between (another device, an administrator) is not silently overwritten. Nil
    ///     updates unconditionally. The `/users/me` endpoint has no versions: a version there is refused.
    /// - Throws: `.profileConflict` when the server holds a newer version (HTTP 412): read the profile again,
    ///   re-apply the edit and save; otherwise as `updateUserProfile(payload:userId:sessionId:)`.
    public func updateUserProfile(
        payload: [String: JSONValue], userId: String? = nil, sessionId: String? = nil,
        version: String?
    ) async throws -> User {
        try await session(sessionId).updateProfile(payload, userId: userId, version: version)
    }

    // MARK: Transport

    static func fetchProfile(
        _ context: OAuthClient, endpoint: ProfileEndpoint, path: String, tokens: TokenSet,
        selfTarget: Bool
    ) async throws -> UserProfile {
        let response = try await send(context, method: "GET", path: path, tokens: tokens, body: nil, endpoint: endpoint)
        guard response.status == 200 else { throw LatchkeyError.profile(response, selfTarget: selfTarget) }
        return try decodeProfile(response, endpoint: endpoint)
    }

    static func send(
        _ context: OAuthClient, method: String, path: String, tokens: TokenSet, body: JSONValue?,
        endpoint: ProfileEndpoint, ifMatch: String? = nil
    ) async throws -> HTTPResponse {
        let url = context.endpoint(path)
        let mediaType = endpoint == .scim ? "application/scim+json" : "application/json"
        var headers = ["Accept": mediaType]
        if let ifMatch { headers["If-Match"] = ifMatch }
        var data: Data?
        if let body {
            headers["Content-Type"] = mediaType
            do { data = try JSONEncoder().encode(body) } catch {
                throw LatchkeyError(.invalidInput, "the payload cannot be encoded as JSON")
            }
        }
        return try await context.sendAuthorized(HTTPRequest(method: method, url: url, headers: headers, body: data), tokens: tokens)
    }

    static func decodeProfile(_ response: HTTPResponse, endpoint: ProfileEndpoint) throws -> UserProfile {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: response.body) else {
            throw LatchkeyError(
                .serverError, "the profile endpoint answered \(response.status) with a body that is not a JSON object",
                statusCode: response.status)
        }
        let profile = endpoint == .scim ? UserProfile(scim: object) : UserProfile(usersMe: object)
        guard !profile.id.isEmpty else {
            throw LatchkeyError(.serverError, "the profile has no id", statusCode: response.status)
        }
        return profile
    }
}

/// Attribute names between OpenID Connect claims (what apps hold from ID tokens) and the two profile APIs.
enum ProfileAttributes {
    static let patchOpURN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"

    /// Claim → SCIM path (Latchkey's mapping, RFC 7643 §4.1 canonical types).
    static let scimPathOfClaim = [
        "username": "userName", "given_name": "name.givenName", "family_name": "name.familyName",
        "email": "emails[type eq \"work\"].value", "phone_number": "phoneNumbers[type eq \"mobile\"].value",
        "picture": "photos[type eq \"photo\"].value", "locale": "locale"
    ]

    /// SCIM path → claim, for the `/users/me` dialect.
    static let claimOfSCIMPath = [
        "userName": "username", "name.givenName": "given_name", "name.familyName": "family_name", "displayName": "name",
        "name.formatted": "name", "emails": "email", "phoneNumbers": "phone_number", "photos": "picture", "locale": "locale"
    ]

    /// The SCIM path of a payload key. `name` is the OIDC full name (→ `displayName`) when its value is a string, the
    /// SCIM complex attribute otherwise.
    static func scimPath(_ key: String, value: JSONValue) -> String {
        if key == "name" { return value.stringValue != nil ? "displayName" : "name" }
        return scimPathOfClaim[key] ?? key
    }

    /// The `/users/me` attribute name of a payload key (SCIM paths translated; filters dropped: `emails[…].value`).
    static func claimName(_ key: String) -> String {
        let base = key.split(separator: "[").first.map(String.init) ?? key
        return claimOfSCIMPath[key] ?? claimOfSCIMPath[base] ?? key
    }

    /// A value for `/users/me`: SCIM multi-valued arrays (`[{value: …}]`) become their (primary) value.
    static func claimValue(_ value: JSONValue) -> JSONValue {
        guard case .array(let entries) = value else { return value }
        let objects = entries.compactMap(\.objectMembers)
        let chosen = objects.first { $0["primary"]?.boolValue == true } ?? objects.first
        return chosen?["value"] ?? value
    }
}

/// The session's person's profile (the core of `getUserProfile(options:sessionId:)` and `updateUserProfile(payload:userId:sessionId:)`).
extension LatchkeySession {
    /// The signed-in user's full profile.
    ///
    /// - Parameter options: `["endpoint": "users/me"]` or `["endpoint": "scim2/Me"]` chooses the API; without it, SCIM unless
    ///   the configuration's dialect is `.thunderID`.
    /// - Throws: `LatchkeyError` — `.sessionExpired` when not signed in or the token is refused, `.invalidInput` for an
    ///   unknown endpoint option, `.serverError` for 5xx answers, `.networkError` when the server cannot be reached.
    public func profile(options: [String: String]? = nil) async throws -> UserProfile {
        let context = try client.context()
        let endpoint = try ProfileEndpoint.resolve(options?["endpoint"], dialect: context.config.dialect)
        let tokens = try await context.tokens.usableTokens(name)
        return try await LatchkeyClient.fetchProfile(context, endpoint: endpoint, path: "/" + endpoint.rawValue, tokens: tokens, selfTarget: true)
    }

    /// Updates profile attributes and returns the user as the server now has them.
    ///
    /// `payload` maps attributes to new values; `.null` removes one. Keys may be SCIM paths (`userName`,
    /// `name.givenName`, `displayName`, `emails[type eq "work"].value`, `active` …) or OpenID Connect claim names
    /// (`given_name`, `family_name`, `name`, `email`, `phone_number`, `picture`, `locale`, `username`), which are
    /// translated for the endpoint in use.
    ///
    /// - SCIM: one `PATCH` of `replace`/`remove` operations to `/scim2/Me`, or to `/scim2/Users/{userId}` when
    ///   `userId` is given (the session's token then needs the server's admin scope, `scim.admin` on Latchkey). The
    ///   operations apply atomically: all or none.
    /// - thunderID dialect (`/users/me`): `PUT` replaces the whole attribute set, so the current attributes are read
    ///   first and the payload merged into them (a concurrent change between the two calls can be lost). `userId` is
    ///   not supported there.
    ///
    /// - Throws: `LatchkeyError` — `.invalidInput` (empty payload, invalid value, unknown attribute: the server's
    ///   detail is in `message`), `.userAlreadyExists` (a unique value such as the email is taken),
    ///   `.authenticationFailed` (403: not allowed, e.g. no admin scope), `.sessionExpired` (401), `.serverError` (5xx).
    public func updateProfile(_ payload: [String: JSONValue], userId: String? = nil) async throws -> User {
        try await updateProfile(payload, userId: userId, version: nil)
    }

    /// As ``updateProfile(_:userId:)``, refused when the profile changed since `version` was read.
    ///
    /// - Parameters:
    ///   - payload: attributes and their new values, as for ``updateProfile(_:userId:)``.
    ///   - userId: another user to update (SCIM, admin scope); nil for the signed-in user.
    ///   - version: the `UserProfile.version` the edit was based on (SCIM `meta.version`), sent as `If-Match` so that
    ///     a change made elsewhere in between (another device, an administrator) is not silently overwritten. Nil
    ///     updates unconditionally. The `/users/me` endpoint has no versions: a version there is refused.
    /// - Throws: `.profileConflict` when the server holds a newer version (HTTP 412): read the profile again,
    ///   re-apply the edit and save; otherwise as ``updateProfile(_:userId:)``.
    public func updateProfile(_ payload: [String: JSONValue], userId: String? = nil, version: String?) async throws -> User {
        let user = try await performProfileUpdate(payload: payload, userId: userId, version: version)
        // Another account's update (an administrator's `userId`) does not change this session's user.
        if userId == nil { client.authState.publish(AuthStateChange(event: .userUpdated, sessionId: name, isSignedIn: true)) }
        return user
    }

    private func performProfileUpdate(payload: [String: JSONValue], userId: String?, version: String?) async throws -> User {
        guard !payload.isEmpty else { throw LatchkeyError(.invalidInput, "the payload is empty: nothing to update") }
        let context = try client.context()
        let endpoint = try ProfileEndpoint.resolve(nil, dialect: context.config.dialect)
        let tokens = try await context.tokens.usableTokens(name)
        switch endpoint {
        case .scim:
            var path = "/scim2/Me"
            if let userId {
                guard !userId.isEmpty, let escaped = userId.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."])) else {
                    throw LatchkeyError(.invalidInput, "userId is empty")
                }
                path = "/scim2/Users/" + escaped
            }
            let operations: [JSONValue] = payload.sorted { $0.key < $1.key }.map { key, value in
                let target = ProfileAttributes.scimPath(key, value: value)
                return value == .null
                    ? .object(["op": .string("remove"), "path": .string(target)])
                    : .object(["op": .string("replace"), "path": .string(target), "value": value])
            }
            let body = JSONValue.object(["schemas": .array([.string(ProfileAttributes.patchOpURN)]), "Operations": .array(operations)])
            let response = try await LatchkeyClient.send(
                context, method: "PATCH", path: path, tokens: tokens, body: body, endpoint: .scim,
                ifMatch: version)
            let selfTarget = userId == nil
            switch response.status {
            case 200:
                return User(claims: try LatchkeyClient.decodeProfile(response, endpoint: .scim).oidcClaims)
            case 204:
                // RFC 7644 §3.5.2 lets a server answer without the resource: read it back.
                return User(
                    claims: try await LatchkeyClient.fetchProfile(
                        context, endpoint: .scim, path: path, tokens: tokens,
                        selfTarget: selfTarget
                    ).oidcClaims)
            default:
                throw LatchkeyError.profile(response, selfTarget: selfTarget)
            }
        case .usersMe:
            guard userId == nil else {
                throw LatchkeyError(
                    .invalidInput, "updating another user needs SCIM (/scim2/Users/{id}); the users/me endpoint edits the signed-in user only")
            }
            guard version == nil else {
                throw LatchkeyError(.invalidInput, "the users/me endpoint has no versions: a conditional update needs SCIM (/scim2/Me)")
            }
            let current = try await LatchkeyClient.fetchProfile(context, endpoint: .usersMe, path: "/users/me", tokens: tokens, selfTarget: true)
            var attributes = current.claims
            for (key, value) in payload {
                let name = ProfileAttributes.claimName(key)
                attributes[name] = value == .null ? nil : ProfileAttributes.claimValue(value)
            }
            let response = try await LatchkeyClient.send(
                context, method: "PUT", path: "/users/me", tokens: tokens,
                body: .object(["attributes": .object(attributes)]), endpoint: .usersMe)
            guard response.status == 200 else { throw LatchkeyError.profile(response, selfTarget: true) }
            return User(claims: try LatchkeyClient.decodeProfile(response, endpoint: .usersMe).oidcClaims)
        }
    }
}
