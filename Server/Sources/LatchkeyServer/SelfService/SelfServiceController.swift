import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// Self-service profile in the thunderID dialect (`thunderid-wire.md` §2.7): `/users/me`, `/users/me/meta`,
/// `/users/me/update-credentials`. Errors are thunderID `{code, message, description}` bodies.
///
/// Differences from the thunderID server, on purpose: only access tokens are accepted (not flow assertions or ID
/// tokens), a client's own token (client credentials) is refused with 403 `AUTH-4030`, and changing the password
/// requires the current one.
struct SelfServiceController: Sendable {
    let store: any UserStore & TokenStore
    let clock: ServerClock
    let accounts: Accounts
    let deletions: AccountDeletions
    let export: AccountExport
    let admission: Admission
    let audit: AuditTrail

    private var userSchema: UserSchema { accounts.userSchema }
    private var profileChanges: ProfileChanges { ProfileChanges(store: store, clock: clock, accounts: accounts, audit: audit, channel: .api) }

    /// The `/users/me` routes, on a group whose `ResourceAuthenticationMiddleware` has authenticated the caller
    /// (answering a refused token with `refusal`).
    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get { _, context in
            try await self.selfUserResponse(try context.caller.me(), caller: context.caller)
        }
        group.put { request, context in
            try await self.replaceSelfAttributes(request, try context.caller.me(), caller: context.caller, origin: context.auditOrigin)
        }
        group.delete { request, context in
            try await self.deleteAccount(request, try context.caller.me(), caller: context.caller, origin: context.auditOrigin)
        }
        group.get("export") { _, context in
            try await self.exportAccount(try context.caller.me(), caller: context.caller, origin: context.auditOrigin)
        }
        group.get("meta") { _, context in
            _ = try context.caller.me()
            return try Responses.json(["schema": self.userSchema.jsonSchema()], noStore: true)
        }
        group.post("update-credentials") { request, context in
            try await self.updateSelfCredentials(
                request, try context.caller.me(), caller: context.caller, origin: context.auditOrigin)
        }
        group.post("email") { request, context in
            try await admission.admitChallenge(address: context.clientAddress)  // each request sends an email
            return try await self.requestEmailChange(request, try context.caller.me(), caller: context.caller, origin: context.auditOrigin)
        }
        group.post("email/verify") { request, context in
            try await self.verifyEmailChange(request, try context.caller.me(), caller: context.caller, origin: context.auditOrigin)
        }
    }

    /// `DELETE /users/me`: the person deletes their account (App Store Review Guideline 5.1.1(v)). Needs a recent
    /// sign-in, as any change that cannot be undone by the token's holder alone. `204` when the account is gone;
    /// `202 {"deletionDueAt": "<RFC 3339>"}` when `account_deletion_grace_days` keeps it until then (signing in again
    /// restores it). Either way every session has ended and every token is revoked, the caller's own included.
    private func deleteAccount(_ request: Request, _ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        switch try await deletions.request(user, locale: request.locale(), origin: origin) {
        case .deleted:
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        case .scheduled(let due):
            return try Responses.json(["deletionDueAt": ISO8601DateFormatter().string(from: due)], status: .accepted, noStore: true)
        }
    }

    /// `GET /users/me/export`: the account's data as one JSON document (`AccountExport`), served as an attachment.
    /// Needs a recent sign-in: it holds the account's history (addresses it signed in from), more than a token that
    /// leaked should reveal.
    private func exportAccount(_ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        return try await export.attachment(for: user, caller: caller, audit: audit, origin: origin)
    }

    /// `{id, type, attributes, pendingEmail?}`: the username and every claim. Verification flags are booleans, as
    /// thunderID types them; `PUT` accepts them back unchanged. `pendingEmail` (our addition) is a new address
    /// waiting for its code (`POST /users/me/email/verify`); `attributes.email` is still the current one.
    ///
    /// A third-party application's token (`latchkey.account` without being first-party) reads only the claims of its
    /// scopes (`ScopeClaims.byScope`; the username with `profile`), as userinfo would release them.
    func selfUserResponse(_ user: UserRecord, caller: ResourceCaller) async throws -> Response {
        let scoped = Set(caller.claims.scopes.flatMap { ScopeClaims.byScope[$0] ?? [] })
        func releases(_ claim: String) -> Bool { caller.trust == .firstParty || scoped.contains(claim) }
        var attributes: [String: JSONValue] = [:]
        if releases("preferred_username") { attributes["username"] = .string(user.username) }
        for (name, value) in user.claims where releases(name) {
            attributes[name] = ScopeClaims.booleanClaims.contains(name) ? .bool(value == "true") : .string(value)
        }
        let pending = releases("email") ? try await store.emailChange(userId: user.id).flatMap { $0.expiresAt > clock.now ? $0.email : nil } : nil
        // `id` is the token's subject, so an application of pairwise subjects reads here what its ID token says.
        return try Responses.json(
            SelfUserBody(id: caller.claims.subjectAsPublished, type: "default", attributes: attributes, pendingEmail: pending), noStore: true)
    }

    /// `PUT /users/me`: the attributes replace the profile. A schema attribute left out is removed (and a required
    /// one left out is a validation error); claims outside the schema (`email_verified`) can only be sent back as
    /// they are. The password is not an attribute here: it has its own endpoint that asks for the current one.
    ///
    /// Changing the username or the email needs a recent sign-in (`requireRecentAuthentication`). A new email is not
    /// applied here: a code goes to it and `POST /users/me/email/verify` applies it; the response names it as
    /// `pendingEmail`. A stale write (the account changed since this request read it) is `409 USR-1021`.
    private func replaceSelfAttributes(_ request: Request, _ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws
        -> Response
    {
        let attributes = try await Self.selfServiceAttributes(request)
        if attributes["password"] != nil {
            throw SelfServiceErrors.invalidRequest("change the password with POST /users/me/update-credentials")
        }
        var changes: [String: String?] = [:]
        var problems: [UserSchema.Problem] = []
        for attribute in userSchema.attributes { changes[attribute.name] = .some(nil) }
        for (name, value) in attributes {
            switch value {
            case .null: changes[name] = .some(nil)
            case .string(let s): changes[name] = s
            case .bool(let b): changes[name] = b ? "true" : "false"
            case .number(let n): changes[name] = n.rounded() == n && abs(n) < 1e15 ? String(Int64(n)) : String(n)
            case .array, .object:
                problems.append(
                    .init(
                        attribute: name, key: "validation.type.invalid", message: "\(name) must be a single value",
                        arguments: userSchema.attribute(name).map { userSchema.fieldArguments($0) } ?? ["field": name]))
            }
        }
        if !problems.isEmpty { throw SelfServiceErrors.schemaValidation(problems) }
        let updated = try await profileChanges.replaceAttributes(changes, of: user, caller: caller, locale: request.locale(), origin: origin)
        return try await selfUserResponse(updated, caller: caller)
    }

    /// `POST /users/me/email` with `{"email": "new@example.com"}` → `202 {"pendingEmail": …}`: sends a code to the
    /// address (also the current one, while it is unverified), applied by `/users/me/email/verify`. Needs a recent
    /// sign-in, like any change of the address codes go to.
    private func requestEmailChange(_ request: Request, _ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws
        -> Response
    {
        let body = try await Self.jsonObject(request)
        guard case .string(let raw)? = body["email"] else { throw SelfServiceErrors.invalidRequest("expected {\"email\": \"…\"}") }
        let email = try await profileChanges.requestEmailChange(to: raw, of: user, caller: caller, locale: request.locale(), origin: origin)
        return try Responses.json(["pendingEmail": email], status: .accepted, noStore: true)
    }

    /// `POST /users/me/email/verify` with `{"code": "123456"}` → the profile with the new address, verified. A wrong
    /// code is `400 USR-1030` (five tries), no pending change or an expired one `400 USR-1031`.
    private func verifyEmailChange(_ request: Request, _ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws -> Response {
        let body = try await Self.jsonObject(request)
        guard case .string(let code)? = body["code"], !code.isEmpty else { throw SelfServiceErrors.invalidRequest("expected {\"code\": \"…\"}") }
        return try await selfUserResponse(try await profileChanges.confirmEmailChange(code: code, of: user, origin: origin), caller: caller)
    }

    /// A JSON object body (at most 64 KiB) declared as JSON: 415 for any other declared type (a cross-site form can
    /// send `text/plain`), `400 USR-1001` for anything but an object.
    private static func jsonObject(_ request: Request) async throws -> [String: JSONValue] {
        let buffer = try await request.boundedBody()
        guard JSONMediaType.accepts(request, body: buffer) else {
            var error = SelfServiceErrors.invalidRequest("the body must be sent as application/json")
            error.status = .unsupportedMediaType
            throw error
        }
        guard case .object(let body)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: buffer)) else {
            throw SelfServiceErrors.invalidRequest("expected a JSON object")
        }
        return body
    }

    /// `POST /users/me/update-credentials` with `{"attributes":{"password":"new","currentPassword":"old"}}` → 204.
    ///
    /// The current password is required: an access token can leak (a log, a compromised front end), and it must
    /// not be enough to take the account over. Wrong guesses count towards the account lockout like sign-in failures.
    private func updateSelfCredentials(_ request: Request, _ user: UserRecord, caller: ResourceCaller, origin: AuditOrigin) async throws
        -> Response
    {
        let attributes = try await Self.selfServiceAttributes(request)
        guard case .string(let password)? = attributes["password"], !password.isEmpty else {
            throw SelfServiceErrors.credentials("missing_credentials", "Missing credentials", "attributes.password (the new password) is required")
        }
        guard case .string(let currentPassword)? = attributes["currentPassword"], !currentPassword.isEmpty else {
            throw SelfServiceErrors.credentials(
                "missing_credentials", "Missing credentials",
                "attributes.currentPassword (the current password) is required")
        }
        try await profileChanges.changePassword(
            current: currentPassword, new: password, of: user, caller: caller, locale: request.locale(), origin: origin)
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    /// The `attributes` object of a `{"attributes": {…}}` JSON body, or `400 USR-1001`.
    private static func selfServiceAttributes(_ request: Request) async throws -> [String: JSONValue] {
        guard case .object(let attributes)? = try await jsonObject(request)["attributes"] else {
            throw SelfServiceErrors.invalidRequest("expected a JSON object {\"attributes\": {…}}")
        }
        return attributes
    }
}

/// `GET /users/me` body (thunderID `User`). There are no organization units, so no `ouId`.
private struct SelfUserBody: Encodable {
    var id: String
    var type: String
    var attributes: [String: JSONValue]
    var pendingEmail: String?
}

/// The thunderID user-service errors this dialect answers (`thunderid-api/user.yaml`).
enum SelfServiceErrors {
    /// A route for administrators (or a client acting for itself), called with another token.
    static let administratorsOnly = APIError(
        status: .forbidden, code: "AUTH-4030", error: "access_denied", messageKey: "error.forbidden", userMessage: "Forbidden",
        technical:
            "this API needs an administrator's access token: the \(ResourceCaller.adminScope) scope and the admin role, or a client's own token")

    static func unauthorized(_ why: String) -> APIError {
        APIError(
            status: .unauthorized, code: "AUTH-4010", error: "invalid_token", messageKey: "error.unauthorized",
            userMessage: "Unauthorized", technical: "Authentication is required to access this resource: \(why)")
    }

    static let notAUser = APIError(
        status: .forbidden, code: "AUTH-4030", error: "access_denied", messageKey: "error.forbidden", userMessage: "Forbidden",
        technical: "The access token was issued to a client for itself; this resource needs a user's token")

    static let userNotFound = APIError(
        status: .notFound, code: "USR-1003", error: "not_found", messageKey: "error.userservice.user_not_found",
        userMessage: "User not found", technical: "The user with the specified id does not exist")

    static func invalidRequest(_ why: String) -> APIError {
        APIError(
            status: .badRequest, code: "USR-1001", error: "invalid_request", messageKey: "error.userservice.invalid_request_format",
            userMessage: "Invalid request format", technical: "The request body is malformed or contains invalid data: \(why)")
    }

    /// Every problem, by attribute, in the description (and as field errors for dialects that render them).
    static func schemaValidation(_ problems: [UserSchema.Problem]) -> APIError {
        APIError(
            status: .badRequest, code: "USR-1019", error: "invalid_request", messageKey: "error.userservice.schema_validation_failed",
            userMessage: "Schema validation failed",
            technical: "User attributes do not conform to the required schema: "
                + problems.map { "\($0.attribute): \($0.message)" }.joined(separator: "; "),
            fieldErrors: problems.map(\.fieldError))
    }

    static func conflict(_ problem: UserSchema.Problem) -> APIError {
        APIError(
            status: .conflict, code: "USR-1014", error: "conflict", messageKey: "error.userservice.attribute_conflict",
            userMessage: "Attribute conflict", technical: "A user with the same unique attribute value already exists: \(problem.attribute)",
            fieldErrors: [problem.fieldError])
    }

    /// The account changed between this request's read and its write (optimistic concurrency).
    static let staleUpdate = APIError(
        status: .conflict, code: "USR-1021", error: "conflict", messageKey: "error.userservice.concurrent_update",
        userMessage: "Your account was changed in the meantime. Reload it and try again.",
        technical: "the account changed since this request read it; read it again and retry")

    static func code(_ code: String, _ key: String, _ userMessage: String, _ why: String) -> APIError {
        APIError(status: .badRequest, code: code, error: "invalid_grant", messageKey: key, userMessage: userMessage, technical: why)
    }

    static func credentials(_ key: String, _ userMessage: String, _ why: String) -> APIError {
        APIError(
            status: .badRequest, code: "USR-1017", error: "invalid_request", messageKey: "error.userservice.\(key)",
            userMessage: userMessage, technical: why)
    }
}
