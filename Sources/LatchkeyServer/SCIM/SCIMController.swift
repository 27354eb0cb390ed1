import Foundation
import HTTPTypes
import Hummingbird
import Logging
import LatchkeyJOSE

/// SCIM 2.0 (RFC 7643/7644): `/scim2/Me` for the token's user and, with the `scim.admin` scope,
/// `/scim2/Users/{id}` and `/scim2/Users?filter=…`. Reads, PUT and PATCH; no creation or deletion (accounts are
/// created by sign-up flows and seeds). Every write goes through `accounts.updateProfile(of:changes:, logger: logger)`, so the user schema's
/// validation and uniqueness rules are the same here as in `/users/me` and the flows.
struct SCIMController: Sendable {
    let issuerInForce: @Sendable () -> String
    let store: any UserStore
    let accounts: Accounts
    let audit: AuditTrail

    var issuer: String { issuerInForce() }
    private var userSchema: UserSchema { accounts.userSchema }

    /// The account resources (`/Me`, `/Users`), on a group whose `ResourceAuthenticationMiddleware` has authenticated
    /// the caller; the discovery resources on a public group (`addDiscoveryRoutes`).
    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("Me") { request, context in try await self.scimRead(request, context.caller, target: .me) }
        group.put("Me") { request, context in
            try await self.scimWrite(request, context.caller, target: .me, replace: true, origin: context.auditOrigin)
        }
        group.patch("Me") { request, context in
            try await self.scimWrite(request, context.caller, target: .me, replace: false, origin: context.auditOrigin)
        }
        group.get("Users") { request, context in try await self.scimList(request, context.caller) }
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
            switch caller.subject {
            case .user(let user): return (caller, user)
            case .client: throw SCIMError(status: .forbidden, detail: "the access token was issued to a client for itself; /Me needs a user's token")
            case .missingUser: throw SCIMError(status: .notFound, detail: "the token's user no longer exists")
            }
        case .user(let id):
            guard caller.isAdmin else {
                throw SCIMError(status: .forbidden, detail: "/Users needs an access token with the \(ResourceCaller.adminScope) scope")
            }
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
        return try scimUserResponse(user)
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
        // Nothing to save: answer with the resource as it is, without touching lastModified or the version.
        if changes.isEmpty && disabled == nil { return try scimUserResponse(user) }
        var isMe = false
        if case .me = target { isMe = true }
        // One's own identifiers (the addresses codes go to) need a recent sign-in, and a new email its code first.
        if isMe, accounts.changesIdentifiers(of: user, changes) { try accounts.requireRecentAuthentication(caller.claims) }
        switch try await accounts.updateProfile(
            of: user, changes: changes, disabled: disabled, byAdministrator: caller.isAdmin,
            verifyingNewEmail: isMe || !caller.isAdmin, logger: logger)
        {
        case .success(let update):
            // Attribute names only: values are personal data.
            logger.info(
                "profile updated through SCIM",
                metadata: [
                    "user": .string(update.user.id), "by": .string(caller.claims.sub),
                    "attributes": .string((changes.keys.sorted() + (disabled == nil ? [] : ["active"])).joined(separator: ","))
                ])
            // Who changed which account, and which attributes (names only); a user's own change through `/Me` too.
            let attributes = (changes.keys.sorted() + (disabled == nil ? [] : ["active"])).joined(separator: ",")
            await audit.record(
                .userUpdated, subject: update.user.id, actor: caller.auditActor,
                details: ["attributes": attributes, "via": "scim", "administrator": isMe ? "false" : String(caller.isAdmin)], origin: origin)
            try await accounts.afterSelfUpdate(update, before: user, locale: request.locale(), origin: origin)
            return try scimUserResponse(update.user)
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

    private func scimUserResponse(_ user: UserRecord) throws -> Response {
        try SCIMResponse.json(
            SCIMUser.representation(of: user, baseURL: issuer),
            headers: [.eTag: SCIMUser.version(of: user), .location: SCIMUser.location(of: user, baseURL: issuer)])
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

    /// `GET /scim2/Users?filter=…` (RFC 7644 §3.4.2): one `eq` comparison on `userName`, `emails`/`emails.value` or
    /// `id`. Without a filter the answer is `tooMany`: the store is not built for listing every account.
    private func scimList(_ request: Request, _ caller: ResourceCaller) async throws -> Response {
        guard caller.isAdmin else {
            throw SCIMError(status: .forbidden, detail: "/Users needs an access token with the \(ResourceCaller.adminScope) scope")
        }
        let query = request.uri.query ?? ""
        guard let filterText = Self.queryValue("filter", in: query), !filterText.isEmpty else {
            throw SCIMError.badRequest(.tooMany, "a filter is required: userName eq \"…\", emails.value eq \"…\" or id eq \"…\"")
        }
        let filter = try SCIMFilter.parse(filterText)
        guard filter.comparisons.count == 1, let comparison = filter.comparisons.first, let value = comparison.value.stringValue else {
            throw SCIMError.badRequest(.invalidFilter, "one comparison with a string value is supported")
        }
        var users: [UserRecord]
        switch comparison.attribute.lowercased() {
        case "username": users = try await store.user(username: value).map { [$0] } ?? []
        case "emails", "emails.value": users = try await store.users(claim: "email", equals: value)
        case "id": users = try await store.user(id: value).map { [$0] } ?? []
        default: throw SCIMError.badRequest(.invalidFilter, "users can be filtered by userName, emails.value or id")
        }
        users.sort { $0.username.lowercased() < $1.username.lowercased() }
        // §3.4.2.4: startIndex is 1-based; values below 1 mean 1, a negative count means 0.
        let startIndex = max(1, Self.queryValue("startIndex", in: query).flatMap { Int($0) } ?? 1)
        let count = min(Self.scimMaxResults, max(0, Self.queryValue("count", in: query).flatMap { Int($0) } ?? Self.scimMaxResults))
        let page = users.dropFirst(startIndex - 1).prefix(count)
        return try SCIMResponse.json(
            JSONValue.object([
                "schemas": .array([.string(Self.scimListResponseURN)]),
                "totalResults": .number(Double(users.count)),
                "startIndex": .number(Double(startIndex)),
                "itemsPerPage": .number(Double(page.count)),
                "Resources": .array(page.map { SCIMUser.representation(of: $0, baseURL: issuer) })
            ]))
    }

    static let scimListResponseURN = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
    static let scimMaxResults = 100

    /// One query parameter, percent-decoded. A `+` outside a quoted string is a space (form encoding, which many
    /// clients use for `userName+eq+"x"`), inside one it is itself: email addresses contain `+` far more often
    /// than user names contain spaces, and clients rarely escape it.
    static func queryValue(_ name: String, in query: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0].removingPercentEncoding == name else { continue }
            guard parts.count == 2 else { return "" }
            var bytes: [UInt8] = []
            var inString = false, escaped = false
            var raw = Array(parts[1].utf8)[...]
            while let byte = raw.popFirst() {
                var decoded = byte
                if byte == UInt8(ascii: "%"), raw.count >= 2,
                    let value = UInt8(String(decoding: raw.prefix(2), as: UTF8.self), radix: 16)
                {
                    decoded = value
                    raw = raw.dropFirst(2)
                } else if byte == UInt8(ascii: "+") {
                    decoded = inString ? byte : UInt8(ascii: " ")
                }
                if inString {
                    if escaped {
                        escaped = false
                    } else if decoded == UInt8(ascii: "\\") {
                        escaped = true
                    } else if decoded == UInt8(ascii: "\"") {
                        inString = false
                    }
                } else if decoded == UInt8(ascii: "\"") {
                    inString = true
                }
                bytes.append(decoded)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }
}
