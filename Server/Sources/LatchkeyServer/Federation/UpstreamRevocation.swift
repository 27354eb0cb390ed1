import Foundation
import Logging

/// What a link keeps, sealed, to revoke the person's Apple authorization later: the refresh token and the Apple
/// client it was issued to (the Services ID of the web flow, or the app's bundle id of a native sign-in), which
/// `auth/revoke` must name.
struct UpstreamRefreshGrant: Codable, Sendable, Equatable {
    var clientId: String
    var token: String
}

/// Telling a provider that the account it signed in to is gone: Sign in with Apple's `auth/revoke` (RFC 7009, with
/// the client secret JWT), which Apple asks of every app that deletes an account (App Store Review Guideline
/// 5.1.1(v)); the person's Apple ID then no longer lists the app.
extension Federation {
    /// The link id of a native Sign in with Apple (`NativeAppleSignIn`).
    static let nativeAppleLink = "apple"

    /// Which providers were told, by link provider id.
    struct Revocations: Equatable, Sendable {
        var revoked: [String] = []
        var failed: [String] = []

        /// `details` with what was revoked (`upstream_revoked`) and what could not be (`upstream_not_revoked`).
        func auditDetails(_ details: [String: String]) -> [String: String] {
            var details = details
            if !revoked.isEmpty { details["upstream_revoked"] = revoked.joined(separator: " ") }
            if !failed.isEmpty { details["upstream_not_revoked"] = failed.joined(separator: " ") }
            return details
        }
    }

    /// `grant` sealed for the link (provider, subject): moved to another link, it does not open.
    func sealRefreshToken(_ grant: UpstreamRefreshGrant, provider: String, subject: String) -> String? {
        guard let data = try? JSONEncoder().encode(grant) else { return nil }
        return try? sealer.seal(String(decoding: data, as: UTF8.self), context: Self.refreshTokenContext(provider: provider, subject: subject))
    }

    /// What a sealed refresh token is bound to: its link.
    private static func refreshTokenContext(provider: String, subject: String) -> String { "upstream-refresh:\(provider):\(subject)" }

    private func openRefreshToken(_ sealed: String, provider: String, subject: String) throws -> UpstreamRefreshGrant {
        let opened = try sealer.open(sealed, context: Self.refreshTokenContext(provider: provider, subject: subject))
        return try JSONDecoder().decode(UpstreamRefreshGrant.self, from: Data(opened.utf8))
    }

    /// The Apple provider whose team key speaks for `link` (its own; for a native sign-in, the first `apple` provider).
    private func appleProvider(for link: String) -> IdentityProviderConfiguration? {
        providers.first { $0.id == link && $0.kind == .apple } ?? (link == Self.nativeAppleLink ? providers.first { $0.kind == .apple } : nil)
    }

    /// A native Sign in with Apple's authorization code (`ASAuthorizationAppleIDCredential.authorizationCode`) turned
    /// into Apple's refresh token for the app `bundleId`, sealed for the link of `subject`; nil when no `apple`
    /// provider (with the team's key) is configured or Apple refused. Never fails the sign-in: it only decides whether
    /// the account's deletion can revoke the app at Apple.
    func nativeAppleRefreshToken(code: String, bundleId: String, subject: String, logger: Logger) async -> String? {
        guard let provider = appleProvider(for: Self.nativeAppleLink) else {
            logger.debug("no apple provider is configured: the native Sign in with Apple code is not exchanged")
            return nil
        }
        do {
            let now = clock.now
            let endpoints = try await directory.endpoints(of: provider, now: now)
            let answer = try await tokenRequest(
                [("grant_type", "authorization_code"), ("code", code)], provider: provider, endpoints: endpoints, clientId: bundleId, now: now)
            guard let refresh = answer.refreshToken else { throw FederationFailure.tokenExchange("Apple sent no refresh token") }
            return sealRefreshToken(UpstreamRefreshGrant(clientId: bundleId, token: refresh), provider: Self.nativeAppleLink, subject: subject)
        } catch {
            logger.warning("the native Sign in with Apple code could not be exchanged", metadata: ["error": .string("\(error)")])
            return nil
        }
    }

    /// Revokes the refresh tokens that `links` keep (only Apple's are kept). Never throws: the account or link is
    /// already gone when this runs, so one attempt is made per link and a failure is logged (and reported for the
    /// audit trail); the person can still remove the app in their Apple ID settings.
    func revokeUpstreamTokens(of links: [FederatedIdentityRecord], logger: Logger) async -> Revocations {
        var result = Revocations()
        for link in links {
            guard let sealed = link.sealedRefreshToken else { continue }
            do {
                try await revoke(sealed, of: link)
                result.revoked.append(link.provider)
                logger.info("the provider's refresh token was revoked", metadata: ["provider": .string(link.provider)])
            } catch {
                result.failed.append(link.provider)
                logger.error(
                    "the provider's refresh token could not be revoked",
                    metadata: ["provider": .string(link.provider), "error": .string("\(error)")])
            }
        }
        return result
    }

    private func revoke(_ sealed: String, of link: FederatedIdentityRecord) async throws {
        guard let provider = appleProvider(for: link.provider) else { throw FederationFailure.unknownProvider(link.provider) }
        let grant = try openRefreshToken(sealed, provider: link.provider, subject: link.subject)
        let now = clock.now
        let endpoints = try await directory.endpoints(of: provider, now: now)
        guard let url = endpoints.revocation else { throw FederationFailure.unavailable("it has no revocation endpoint") }
        let (_, status) = try await authenticatedPost(
            url, [("token", grant.token), ("token_type_hint", "refresh_token")], provider: provider, endpoints: endpoints,
            clientId: grant.clientId, now: now)
        guard status == 200 else { throw FederationFailure.unavailable("its revocation endpoint answered \(status)") }
    }
}
