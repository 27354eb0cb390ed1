import Foundation
import Hummingbird
import HummingbirdOTP
import Logging

/// The signed-in person's own second factors as JSON (`/users/me/factors`): list them, add an authenticator app (TOTP)
/// or emailed codes, generate recovery codes, remove one. The rules, mails and audit events are `SecondFactorChanges`,
/// shared with the account page.
///
/// An authenticator is added in two steps: `POST /users/me/factors/totp` answers the secret (once) with its
/// `otpauth://` URI and a sealed `enrollment`; `POST /users/me/factors/totp/verify` with that `enrollment` and the app's
/// first code turns it on. Recovery codes (`POST /users/me/factors/recovery-codes`) are shown once.
struct SecondFactorsController: Sendable {
    let changes: SecondFactorChanges

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("factors") { _, context in
            try await self.list(try context.caller.me(), caller: context.caller)
        }
        group.post("factors/totp") { _, context in
            let started = try changes.startTOTP(for: try context.caller.me(), caller: context.caller)
            return try Responses.json(
                StartedBody(
                    secret: started.secret, uri: started.uri, enrollment: started.enrollment,
                    expiresAt: ISO8601DateFormatter().string(from: started.expiresAt)),
                status: .created, noStore: true)
        }
        group.post("factors/totp/verify") { request, context in
            let user = try context.caller.me()
            // A stale sign-in is told so before anything about the body (`401 AUTH-4011`).
            try changes.accounts.requireRecentAuthentication(context.caller.claims)
            let body = try await SelfServiceHTTP.body(ConfirmBody.self, request)
            let factor = try await changes.confirmTOTP(
                enrollment: body.enrollment, code: body.code, of: user, caller: context.caller, locale: request.locale(),
                origin: context.auditOrigin)
            return try Responses.json(Self.factorBody(factor, of: user), status: .created, noStore: true)
        }
        group.post("factors/email") { request, context in
            let user = try context.caller.me()
            let (factor, created) = try await changes.enrollEmail(user, caller: context.caller, locale: request.locale(), origin: context.auditOrigin)
            return try Responses.json(Self.factorBody(factor, of: user), status: created ? .created : .ok, noStore: true)
        }
        group.post("factors/recovery-codes") { request, context in
            let (codes, summary) = try await changes.generateRecoveryCodes(
                try context.caller.me(), caller: context.caller, locale: request.locale(), origin: context.auditOrigin)
            return try Responses.json(
                GeneratedCodesBody(
                    codes: codes, createdAt: ISO8601DateFormatter().string(from: summary.createdAt), remaining: summary.remaining,
                    total: summary.total),
                status: .created, noStore: true)
        }
        // Each kind by name: the router matches `factors/email` (a POST route) before a `factors/:kind` parameter.
        for name in SecondFactorChanges.FactorKind.allCases.map(\.rawValue) + [":kind"] {
            group.delete(RouterPath("factors/\(name)")) { request, context in
                try await changes.remove(
                    context.parameters.get("kind") ?? name, of: try context.caller.me(), caller: context.caller,
                    locale: request.locale(), origin: context.auditOrigin)
                return Responses.empty(status: .noContent)
            }
        }
    }

    private struct FactorsBody: Encodable {
        var factors: [FactorBody]
        /// The account's recovery codes, counted (absent when it has none).
        var recoveryCodes: RecoveryCodesBody?
        /// Whether an application requires a second factor (the calling one, or one the account is signed in to): the
        /// last one cannot be removed.
        var mfaRequired: Bool
    }

    private struct FactorBody: Encodable {
        var kind: String
        var createdAt: String
        /// False for emailed codes while the account has no verified email address (they cannot be sent).
        var usable: Bool
    }

    private struct RecoveryCodesBody: Encodable {
        var createdAt: String
        var remaining: Int
        var total: Int

        init(_ summary: RecoveryCodeSummary) {
            createdAt = ISO8601DateFormatter().string(from: summary.createdAt)
            remaining = summary.remaining
            total = summary.total
        }
    }

    private struct StartedBody: Encodable {
        var secret: String
        var uri: String
        var enrollment: String
        var expiresAt: String
    }

    private struct ConfirmBody: Decodable {
        var enrollment: String
        var code: String
    }

    private struct GeneratedCodesBody: Encodable {
        var codes: [String]
        var createdAt: String
        var remaining: Int
        var total: Int
    }

    /// `GET /users/me/factors`: the kinds and dates, never a secret. Reading needs no recent sign-in.
    private func list(_ user: UserRecord, caller: ResourceCaller) async throws -> Response {
        try Responses.json(
            FactorsBody(
                factors: try await changes.factors(of: user).map { Self.factorBody($0, of: user) },
                recoveryCodes: try await changes.store.recoveryCodes(userId: user.id).map(RecoveryCodesBody.init),
                mfaRequired: !(try await changes.applicationsRequiringMFA(user, caller: caller).isEmpty)),
            noStore: true)
    }

    private static func factorBody(_ factor: UserFactorRecord, of user: UserRecord) -> FactorBody {
        FactorBody(
            kind: SecondFactorChanges.FactorKind(factor.kind).rawValue, createdAt: ISO8601DateFormatter().string(from: factor.createdAt),
            usable: SecondFactorChanges.usable(factor, of: user))
    }
}
