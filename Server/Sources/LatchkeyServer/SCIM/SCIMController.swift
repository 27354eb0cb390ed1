import Foundation
import HTTPTypes
import Hummingbird
import Logging
import LatchkeyJOSE

/// SCIM 2.0 (RFC 7643/7644): `/scim2/Me` for the token's user and, for administrators (`ResourceCaller.isAdmin`),
/// `/scim2/Users`: create (`POST`), read, list with filters and pages, replace (`PUT`), `PATCH` and `DELETE`. Every
/// write goes through `Accounts` (`updateProfile`, `createAccount`), so the user schema's validation and uniqueness
/// rules are the same here as in `/users/me` and the flows.
///
/// An administrator cannot delete its own account, deactivate it or take its own `admin` role away through SCIM (403):
/// another administrator, or a client with the scope, can.
struct SCIMController: Sendable {
    let issuerInForce: @Sendable () -> String
    let store: any UserStore
    let accounts: Accounts
    /// Deletes accounts and revokes what their links kept at the providers (Sign in with Apple).
    let deletions: AccountDeletions
    let audit: AuditTrail

    var issuer: String { issuerInForce() }
    private var userSchema: UserSchema { accounts.userSchema }

    /// The account resources, on groups whose `ResourceAuthenticationMiddleware` has authenticated the caller: `/Me` on
    /// an account-management group (a first-party token or `latchkey.account`), `/Users` on a plain one (administrators,
    /// each handler checks); the discovery resources on a public group (`addDiscoveryRoutes`).
    func addRoutes(me: RouterGroup<ResourceRequestContext>, users group: RouterGroup<ResourceRequestContext>) {
        me.get("Me") { request, context in try await self.scimRead(request, context.caller, target: .me) }
        me.put("Me") { request, context in
            try await self.scimWrite(request, context.caller, target: .me, replace: true, origin: context.auditOrigin)
        }
        me.patch("Me") { request, context in
            try await self.scimWrite(request, context.caller, target: .me, replace: false, origin: context.auditOrigin)
        }
        group.get("Users") { request, context in try await self.scimList(request, context.caller) }
        group.post("Users") { request, context in try await self.scimCreate(request, context.caller, origin: context.auditOrigin) }
        group.delete("Users/:id") { _, context in
            try await self.scimDelete(context.caller, id: try context.parameters.require("id"), origin: context.auditOrigin)
        }
        group.get("Users/:id") { request, context in
            try await self.scimRead(request, context.caller, target: .user(try context.parameters.require("id")))
        }
        group.put("Users/:id") { request, context in
            try await self.scimWrite(
                request, context.caller, target: .user(try context.parameters.require("id")), replace: true, origin: context.auditOrigin)
        }
        group.patch("Users/:id") { request, context in
            try await self.scimWrite(
                request, context.caller, target: .user(try context.parameters.require("id")), replace: false, origin: context.auditOrigin)
        }
    }

    enum SCIMTarget: Sendable {
        /// The token's own user (RFC 7644 §3.11).
        case me
        /// Any account, by id: administrators only.
        case user(String)
    }

    /// The caller and the account the request addresses.
    private func scimResource(_ caller: ResourceCaller, target: SCIMTarget) async throws -> (ResourceCaller, UserRecord) {
        switch target {
        case .me:
            // A third-party application's token manages no account without `latchkey.account` (R3-2): the group checks
            // it; this holds it should `/Me` ever be mounted on another group (an unread trust refuses).
            try caller.requireAccountManagement()
            switch caller.subject {
            case .user(let user): return (caller, user)
            case .client: throw SCIMError(status: .forbidden, detail: "the access token was issued to a client for itself; /Me needs a user's token")
            case .missingUser: throw SCIMError(status: .notFound, detail: "the token's user no longer exists")
            }
        case .user(let id):
            try Self.requireAdmin(caller)
            guard let user = try await store.user(id: id) else { throw SCIMError(status: .notFound, detail: "no user with that id") }
            return (caller, user)
        }
    }

    private func scimRead(_ request: Request, _ caller: ResourceCaller, target: SCIMTarget) async throws -> Response {
        let (_, user) = try await scimResource(caller, target: target)
        let version = SCIMUser.version(of: user)
        if let condition = request.headers[.ifNoneMatch], Self.entityTag(version, matches: condition) {
            return Response(status: .notModified, headers: [.eTag: version, .cacheControl: "no-store"])
        }
        return try scimUserResponse(user, withRoles: caller.isAdmin, caller: caller)
    }

    private func scimWrite(_ request: Request, _ caller: ResourceCaller, target: SCIMTarget, replace: Bool, origin: AuditOrigin) async throws
        -> Response
    {
        let logger = origin.logger
        let (_, user) = try await scimResource(caller, target: target)
        if let condition = request.headers[.ifMatch], !Self.entityTag(SCIMUser.version(of: user), matches: condition) {
            throw SCIMError(status: .preconditionFailed, detail: "the resource has changed since that version; read it again")
        }
        let body = try await SCIMResponse.body(of: request)
        let current = SCIMUser(user)
        let next = if replace { try SCIMUser.replacing(current, with: body) } else { try SCIMPatch(body: body).apply(to: current) }
        let changes = next.changes(from: current)
        let disabled = next.active == current.active ? nil : !next.active
        let roles = Set(next.roles) == Set(current.roles) ? nil : Set(next.roles)
        // Nothing to save: answer with the resource as it is, without touching lastModified or the version.
        if changes.isEmpty && disabled == nil && roles == nil { return try scimUserResponse(user, withRoles: caller.isAdmin, caller: caller) }
        var isMe = false
        if case .me = target { isMe = true }
        if !isMe { try requireFreshAdministrator(caller) }
        // Roles are granted through /Users only: nobody grants itself anything through /Me.
        if isMe, roles != nil {
            throw SCIMError.badRequest(.mutability, "roles are granted by an administrator through /Users/{id}")
        }
        if caller.isAdmin, caller.user?.id == user.id {
            if disabled == true { throw Self.selfLockout("deactivate") }
            if let roles, !roles.contains(UserRoles.admin) { throw Self.selfLockout("take the admin role from") }
        }
        // One's own identifiers (the addresses codes go to) need a recent sign-in, and a new email its code first.
        if isMe, accounts.changesIdentifiers(of: user, changes) { try accounts.requireRecentAuthentication(caller.claims) }
        switch try await accounts.updateProfile(
            of: user, changes: changes, disabled: disabled, roles: roles, byAdministrator: caller.isAdmin,
            verifyingNewEmail: isMe || !caller.isAdmin, logger: logger)
        {
        case .success(let update):
            // Attribute names only: values are personal data.
            logger.info(
                "profile updated through SCIM",
                metadata: [
                    "user": .string(update.user.id), "by": .string(caller.claims.sub),
                    "attributes": .string(
                        (changes.keys.sorted() + (disabled == nil ? [] : ["active"]) + (roles == nil ? [] : ["roles"])).joined(separator: ","))
                ])
            // Who changed which account, and which attributes (names only); a user's own change through `/Me` too.
            let attributes = (changes.keys.sorted() + (disabled == nil ? [] : ["active"]) + (roles == nil ? [] : ["roles"])).joined(separator: ",")
            await audit.record(
                .userUpdated, subject: update.user.id, actor: caller.auditActor,
                details: ["attributes": attributes, "via": "scim", "administrator": isMe ? "false" : String(caller.isAdmin)], origin: origin)
            try await accounts.afterSelfUpdate(update, before: user, locale: request.locale(), origin: origin)
            return try scimUserResponse(update.user, withRoles: caller.isAdmin, caller: caller)
        case .failure(.stale):
            // Another write came between this request's read and its write: with If-Match that is the version the
            // client named no longer being current (412); without, a plain conflict.
            if request.headers[.ifMatch] != nil {
                throw SCIMError(status: .preconditionFailed, detail: "the resource has changed since that version; read it again")
            }
            throw SCIMError(status: .conflict, detail: "the resource changed while this request was writing it; read it again and retry")
        case .failure(let rejection):
            throw Self.scimError(rejection)
        }
    }

    /// `caller`: who reads, when it may be the account itself; a pairwise application's token then reads its own
    /// subject as the `id` (what its ID token says), at `/scim2/Me`.
    private func scimUserResponse(_ user: UserRecord, withRoles: Bool, status: HTTPResponse.Status = .ok, caller: ResourceCaller? = nil) throws
        -> Response
    {
        let published = caller.flatMap { $0.user?.id == user.id ? $0.claims.subjectAsPublished : nil }
        let pairwiseId = published == user.id ? nil : published
        return try SCIMResponse.json(
            SCIMUser.representation(of: user, baseURL: issuer, withRoles: withRoles, pairwiseId: pairwiseId), status: status,
            headers: [
                .eTag: SCIMUser.version(of: user),
                .location: pairwiseId == nil ? SCIMUser.location(of: user, baseURL: issuer) : issuer + "/scim2/Me"
            ])
    }

    static func selfLockout(_ action: String) -> SCIMError {
        SCIMError(
            status: .forbidden,
            detail: "an administrator cannot \(action) its own account through SCIM; another administrator can")
    }

    /// A change to accounts by an administrator's personal token needs a recent sign-in (`AdministratorFreshness`).
    private func requireFreshAdministrator(_ caller: ResourceCaller) throws {
        try AdministratorFreshness(window: accounts.configuration.recentAuthenticationSeconds, clock: accounts.clock).check(caller)
    }

    static func requireAdmin(_ caller: ResourceCaller) throws(SCIMError) {
        guard caller.isAdmin else {
            throw SCIMError(
                status: .forbidden,
                detail: "/Users needs an access token with the \(ResourceCaller.adminScope) scope, of a client or of a user with the admin role")
        }
    }

    // MARK: Create and delete

    /// `POST /scim2/Users` (RFC 7644 §3.3). `?invite=<client id>` also mails the new address that an account was made
    /// for it at that application and how to choose a password (the application's "Forgot password?"); it needs an
    /// email address and mail delivery, and is checked before anything is created.
    private func scimCreate(_ request: Request, _ caller: ResourceCaller, origin: AuditOrigin) async throws -> Response {
        let logger = origin.logger
        try Self.requireAdmin(caller)
        try requireFreshAdministrator(caller)
        let query = request.uri.query ?? ""
        var application: String?
        if let clientId = SCIMQuery.value("invite", in: query) {
            guard !clientId.isEmpty, !clientId.contains("\u{0}"), let client = try await accounts.store.client(id: clientId) else {
                throw SCIMError.badRequest(.invalidValue, "invite names no application of this server")
            }
            guard accounts.deliversMail else {
                throw SCIMError.badRequest(.invalidValue, "this server delivers no mail, so it cannot send an invitation")
            }
            application = client.configuration.name.isEmpty ? clientId : client.configuration.name
        }
        let body = try await SCIMResponse.body(of: request)
        let (draft, password) = try SCIMUser.creating(from: body)
        if application != nil, draft.email == nil {
            throw SCIMError.badRequest(.invalidValue, "an invitation is mailed to the account's emails value, and there is none")
        }
        let account = Accounts.NewAccount(
            username: draft.userName, claims: draft.claims, password: password, disabled: !draft.active, roles: draft.roles)
        switch try await accounts.createAccount(account, logger: logger) {
        case .success(let user):
            logger.info(
                "user created through SCIM",
                metadata: [
                    "user": .string(user.id), "by": .string(caller.claims.sub), "invited": .string(application == nil ? "no" : "yes")
                ])
            await audit.record(
                .userCreated, subject: user.id, actor: caller.auditActor,
                details: ["via": "scim", "invited": application == nil ? "false" : "true", "password": password == nil ? "false" : "true"],
                origin: origin)
            if let application {
                do {
                    try await accounts.sendAccountCreatedInvitation(to: user, application: application, locale: request.locale())
                } catch {
                    // The account exists: the administrator learns from the log, and can ask the user to recover.
                    logger.error("the invitation to a new account could not be sent", metadata: ["user": .string(user.id)])
                }
            }
            return try scimUserResponse(user, withRoles: true, status: .created)
        case .failure(let rejection):
            throw Self.scimError(rejection)
        }
    }

    /// `DELETE /scim2/Users/{id}` (RFC 7644 §3.6): the account and everything it held (`UserStore.deleteUser`): its
    /// sessions end and its tokens stop working at once, and Sign in with Apple is revoked at Apple.
    private func scimDelete(_ caller: ResourceCaller, id: String, origin: AuditOrigin) async throws -> Response {
        let logger = origin.logger
        try Self.requireAdmin(caller)
        try requireFreshAdministrator(caller)
        if caller.user?.id == id { throw Self.selfLockout("delete") }
        guard let revocations = try await deletions.deleteNow(id: id, logger: logger) else {
            throw SCIMError(status: .notFound, detail: "no user with that id")
        }
        logger.info("user deleted through SCIM", metadata: ["user": .string(id), "by": .string(caller.claims.sub)])
        await audit.record(.userDeleted, subject: id, actor: caller.auditActor, details: revocations.auditDetails(["via": "scim"]), origin: origin)
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    /// `updateProfile` problems, named by their SCIM paths.
    static func scimError(_ rejection: ProfileRejection) -> SCIMError {
        func describe(_ problem: UserSchema.Problem) -> String {
            "\(SCIMUser.pathOfClaim[problem.attribute] ?? problem.attribute): \(problem.message)"
        }
        switch rejection {
        case .conflict(let problem):
            return SCIMError(status: .conflict, .uniqueness, detail: describe(problem))
        case .stale:
            return SCIMError(status: .conflict, detail: "the resource changed while this request was writing it; read it again and retry")
        case .invalid(let problems):
            let type: SCIMError.ScimType =
                problems.contains { $0.key == "validation.attribute.unknown" }
                ? .invalidPath
                : problems.contains { $0.key == "validation.attribute.readOnly" } ? .mutability : .invalidValue
            return .badRequest(type, problems.map(describe).joined(separator: "; "))
        }
    }

    /// Weak comparison (RFC 9110 §8.8.3.2) against a list of entity tags or `*`.
    static func entityTag(_ version: String, matches condition: String) -> Bool {
        func opaque(_ tag: some StringProtocol) -> String {
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
        }
        let wanted = opaque(version)
        return condition.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "*" || opaque($0) == wanted }
    }

    // MARK: Query

    /// `GET /scim2/Users` (RFC 7644 §3.4.2): every account, or those a filter selects, a page at a time.
    ///
    /// Filters are comparisons joined by `and`: `userName eq`, `emails eq` / `emails.value eq`, `id eq`,
    /// `active eq true|false`, and `meta.lastModified` with `gt`, `ge`, `lt` or `le` and an RFC 3339 date-time. Any
    /// other attribute or operator is `400 invalidFilter`. `meta.lastModified` shows whole seconds and is compared at
    /// that precision (`gt` the value a resource shows leaves that resource out; incremental sync should use `ge`).
    ///
    /// Pages: `startIndex` (1-based; below 1 means 1) and `count` (default and maximum `scimMaxResults`; negative
    /// means 0, which answers `totalResults` alone). Accounts are in the order they were created (then by id), so pages
    /// stay put while accounts are added. `sortBy` is not supported and ignored (RFC 7644 §3.4.2.3).
    private func scimList(_ request: Request, _ caller: ResourceCaller) async throws -> Response {
        try Self.requireAdmin(caller)
        let query = request.uri.query ?? ""
        var conditions: [UserQuery.Condition] = []
        if let filterText = SCIMQuery.value("filter", in: query), !filterText.trimmingCharacters(in: .whitespaces).isEmpty {
            conditions = try Self.userConditions(SCIMFilter.parse(filterText))
        }
        let startIndex = max(1, try Self.integerParameter("startIndex", in: query) ?? 1)
        let count = min(Self.scimMaxResults, max(0, try Self.integerParameter("count", in: query) ?? Self.scimMaxResults))
        let page = try await store.users(matching: UserQuery(conditions), offset: startIndex - 1, limit: count)
        return try SCIMResponse.json(
            JSONValue.object([
                "schemas": .array([.string(Self.scimListResponseURN)]),
                "totalResults": .number(Double(page.total)),
                "startIndex": .number(Double(startIndex)),
                "itemsPerPage": .number(Double(page.users.count)),
                "Resources": .array(page.users.map { SCIMUser.representation(of: $0, baseURL: issuer, withRoles: true) })
            ]))
    }

    /// A pagination parameter: absent, or an integer (`400 invalidValue` otherwise).
    static func integerParameter(_ name: String, in query: String) throws(SCIMError) -> Int? {
        guard let text = SCIMQuery.value(name, in: query) else { return nil }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw .badRequest(.invalidValue, "\(name) must be an integer")
        }
        return value
    }

    /// The store conditions a `/Users` filter stands for.
    static func userConditions(_ filter: SCIMFilter) throws(SCIMError) -> [UserQuery.Condition] {
        var conditions: [UserQuery.Condition] = []
        for comparison in filter.comparisons {
            let attribute = comparison.attribute.lowercased()
            if attribute == "meta.lastmodified" {
                guard case .string(let text) = comparison.value, let date = parseDateTime(text) else {
                    throw .badRequest(.invalidFilter, "meta.lastModified compares with a date-time such as \"2024-05-01T00:00:00Z\"")
                }
                // Whole seconds, as the resource shows it: floor(t) > x, ≥ x, < x, ≤ x.
                let x = date.timeIntervalSince1970
                let bound: UserQuery.Condition
                switch comparison.op {
                case .gt: bound = .modifiedFrom(Date(timeIntervalSince1970: x.rounded(.down) + 1))
                case .ge: bound = .modifiedFrom(Date(timeIntervalSince1970: x.rounded(.up)))
                case .lt: bound = .modifiedBefore(Date(timeIntervalSince1970: x.rounded(.up)))
                case .le: bound = .modifiedBefore(Date(timeIntervalSince1970: x.rounded(.down) + 1))
                case .eq: throw .badRequest(.invalidFilter, "meta.lastModified compares with gt, ge, lt or le")
                }
                conditions.append(bound)
                continue
            }
            guard comparison.op == .eq else {
                throw .badRequest(.invalidFilter, "\(comparison.attribute) compares with eq only (gt, ge, lt and le are for meta.lastModified)")
            }
            if attribute == "active" {
                guard let active = try? SCIMUser.bool(comparison.value, "active") else {
                    throw .badRequest(.invalidFilter, "active compares with true or false")
                }
                conditions.append(.disabled(!active))
                continue
            }
            guard let value = comparison.value.stringValue, !value.contains("\u{0}") else {
                throw .badRequest(.invalidFilter, "\(comparison.attribute) compares with a string")
            }
            switch attribute {
            case "username": conditions.append(.username(value))
            case "emails", "emails.value": conditions.append(.email(value))
            case "id": conditions.append(.id(value))
            default:
                throw .badRequest(
                    .invalidFilter, "users can be filtered by userName, emails.value, id, active or meta.lastModified")
            }
        }
        return conditions
    }

    /// An RFC 3339 date-time (xsd:dateTime with a zone), with or without fractional seconds.
    static func parseDateTime(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    static let scimListResponseURN = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
    static let scimMaxResults = 100
}
