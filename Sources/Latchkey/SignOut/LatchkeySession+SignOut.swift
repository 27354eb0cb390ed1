import Foundation

/// Signing a session out: forgotten here first, then its tokens revoked and the provider's session ended.
extension LatchkeySession {
    /// Signs out and says what happened: the local session is always forgotten first; then the refresh token and the
    /// access token are revoked (RFC 7009) and the provider's session is ended (RP-Initiated Logout 1.0), each step
    /// reported as done, not needed, not possible with this provider (no endpoint published), failed (refused,
    /// unreachable) or unconfirmed (the answer does not show it happened). Each step that did not settle is also a
    /// warning on the client's logger. How the provider's session is ended: `SignOutOptions.ProviderSession`.
    ///
    /// The post-sign-out URL (the configured `afterSignOutUrl`, or "/") is the report's `afterSignOutUrl`.
    @discardableResult
    public func signOut(options: SignOutOptions? = nil) async throws -> SignOutReport {
        let client = self.client
        return try await client.loading {
            let context = try client.context()
            let tokens = try await context.tokens.tokens(name)
            try await context.tokens.clear(name)
            let metadata = await context.metadata()
            var report = SignOutReport(
                refreshToken: .notNeeded("the session had no refresh token"),
                accessToken: .notNeeded("the session had no access token"),
                providerSession: .notNeeded("the session had no ID token to name it by"),
                afterSignOutUrl: context.config.afterSignOutUrl ?? "/")
            if let refresh = tokens?.refreshToken {
                report.refreshToken = await context.revocationStep(
                    refresh, hint: "refresh_token", metadata: metadata,
                    accessToken: tokens?.accessToken, dpopKey: tokens?.dpopKey)
            }
            if let access = tokens?.accessToken {
                report.accessToken = await context.revocationStep(
                    access, hint: "access_token", metadata: metadata,
                    accessToken: access, dpopKey: tokens?.dpopKey)
                // A provider that revokes the whole grant with the refresh token refuses the access token's revocation
                // when it wants that token as the credential (the bearer fallback): it may well be dead already.
                if report.refreshToken == .done, case .failed(let why) = report.accessToken, why.contains("HTTP 401") {
                    report.accessToken = .unconfirmed(
                        "the provider refused to revoke it after revoking the refresh token, which may have revoked it too")
                }
            }
            if options?.providerSession == .keep {
                report.providerSession = .notNeeded("kept, as the app asked")
            } else if let hint = options?.idTokenHint ?? tokens?.idToken {
                report.providerSession = await endProviderSession(
                    context, idTokenHint: hint, metadata: metadata, options: options,
                    browser: tokens?.browser)
            } else if tokens != nil, tokens?.browser != .withoutBrowser {
                // A browser sign-in without an ID token (no `openid` scope) still left a session in that browser.
                report.providerSession = .unconfirmed(
                    "the session has no ID token to name it by, so the provider's session in the browser that signed in was not ended")
            }
            for (what, step) in [
                ("refresh token", report.refreshToken), ("access token", report.accessToken),
                ("provider session", report.providerSession)
            ] where !step.isSettled {
                client.logger.warning("sign-out: \(what) not ended at the provider: \(step.explanation); local session cleared anyway")
            }
            return report
        }
    }

    /// Ends the provider's session as `options` ask: in the browser, by a request, or not at all.
    private func endProviderSession(
        _ context: OAuthClient, idTokenHint: String, metadata: ProviderMetadata?, options: SignOutOptions?,
        browser: SignInBrowser?
    ) async -> SignOutReport.Step {
        let choice = options?.providerSession ?? .automatic
        if choice == .inBrowser || (choice == .automatic && browser == .userAgent && client.userAgent.keepsProviderSession),
            let inBrowser = await endSessionInBrowser(
                context, idTokenHint: idTokenHint, metadata: metadata,
                presentation: options?.presentationContext)
        {
            return inBrowser
        }
        // A redirect URI to name, so that a provider that ends the session can say so by redirecting (not followed).
        let prepared = context.config.afterSignOutUrl == nil ? try? await client.userAgent.prepareSignOutRedirectURI() : nil
        defer { if let prepared { client.userAgent.release(redirectURI: prepared) } }
        // A session stored before the SDK recorded how it signed in (nil) may have a browser session: not confirmed.
        return await context.endSessionStep(
            idTokenHint: idTokenHint, metadata: metadata,
            postLogoutRedirectURI: context.config.afterSignOutUrl ?? prepared,
            signedInWithBrowser: browser != .withoutBrowser, namesPreparedURI: prepared != nil)
    }

    /// RP-Initiated Logout 1.0 in the user agent: the browser that holds the provider's session cookie is sent to
    /// `end_session_endpoint` with `id_token_hint`, `client_id`, `post_logout_redirect_uri` and a fresh `state`, and the
    /// step is done when the provider redirects back with that state. Nil when no page can be shown here (no
    /// presentation context, no redirect URI to come back to): the caller then asks by a request.
    private func endSessionInBrowser(
        _ context: OAuthClient, idTokenHint: String, metadata: ProviderMetadata?,
        presentation: PresentationContextProviderBox?
    ) async -> SignOutReport.Step? {
        guard let metadata else { return .failed("the provider could not be reached (discovery failed)") }
        guard let endpoint = metadata.endSessionEndpoint else {
            return .unsupported("the provider publishes no end_session_endpoint: its session (in the browser) stays open until it expires")
        }
        let prepared: String?
        do { prepared = try await client.userAgent.prepareSignOutRedirectURI() } catch { return nil }
        guard let redirect = prepared ?? context.config.afterSignOutUrl else { return nil }  // nowhere to come back to
        let state = AuthorizationRequests.randomValue()
        var parameters = [
            ("id_token_hint", idTokenHint), ("client_id", context.config.clientId),
            ("post_logout_redirect_uri", redirect), ("state", state)
        ]
        let locales = context.config.languageTags
        if !locales.isEmpty { parameters.append(("ui_locales", locales.joined(separator: " "))) }
        guard let url = FormCoding.url(endpoint, adding: parameters) else {
            if let prepared { client.userAgent.release(redirectURI: prepared) }
            return nil
        }
        do {
            let back = try await client.userAgent.authorize(
                url: url,
                presentation: AuthorizationPresentation(
                    redirectURI: redirect, contextProvider: presentation, state: state))
            let returned = URLComponents(url: back, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value
            guard let returned, constantTimeEquals(returned, state) else {
                return .failed("the browser came back without this sign-out's state: the provider's session may still be open")
            }
            return .done
        } catch let error as LatchkeyError where error.code == .canceled {
            // Closed, or timed out; and some providers end their session on a page of their own and never come back.
            return .unconfirmed("the browser did not come back from the provider (closed, or timed out): its session may or may not have ended")
        } catch {
            // No page could be shown here (no browser to open, no presentation context, a callback the system cannot
            // take, another sheet showing, the app in the background): ask by a request instead.
            // (The message, not the error: a system error's description may carry the URL, and with it the ID token.)
            client.logger.notice(
                "sign-out: the provider's page could not be shown (\(OAuthClient.describe(error))); ending its session by a request instead")
            return nil
        }
    }
}
