import Foundation
import Logging

/// An authorization request until its client and redirect URI are known good (OpenID Connect Core §3.1.2.1,
/// RFC 9126, RFC 9101): the pushed request its `request_uri` names, a request object by reference or by value
/// (verified with the client's keys), the client's PAR requirement, and the redirect URI registered for the client.
///
/// Until then nothing may be sent to the redirect URI (an unregistered one must not receive anything), so every refusal
/// here is an error page, except the one case where the request's own redirect URI is registered already (a
/// `request_uri` that could not be fetched).
struct AuthorizationRequestResolver: Sendable {
    let store: any ClientStore & PushedRequestStore
    let clock: ServerClock
    /// The issuer in force, the audience of request objects.
    let issuer: @Sendable () -> String
    /// The keys request objects are verified with.
    let clientKeys: ClientKeySets
    /// Request objects published at a client's registered `request_uris`.
    let references: RequestObjectReference

    /// A request whose client and redirect URI are known good: what it says is validated next, and errors go back to
    /// `redirectUri`.
    struct Resolved {
        var parameters: Parameters
        var client: ClientConfiguration
        var redirectUri: String
    }

    enum Resolution {
        case resolved(Resolved)
        /// Refused before the redirect URI was known good: an error page (`page.authorize_invalid.*`) showing what was
        /// asked (`shown`).
        case errorPage(key: String, shown: Parameters)
        /// A request object by reference that could not be had, for a redirect URI the client registered: the error goes
        /// back there.
        case errorRedirect(OAuthError, redirectUri: String, state: String?)
    }

    func resolve(_ pushedOrGiven: Parameters, logger: Logger) async throws -> Resolution {
        guard let resolved = try await parameters(of: pushedOrGiven) else {
            return .errorPage(key: "page.authorize_invalid.malformed", shown: pushedOrGiven)
        }
        var params = resolved.parameters
        let pushed = resolved.pushed
        let clientId: String?
        var redirectUri: String?
        do {
            clientId = try params.single("client_id")
            redirectUri = try params.single("redirect_uri")
        } catch {
            return .errorPage(key: "page.authorize_invalid.malformed", shown: params)
        }
        guard let clientId, let client = try await store.client(id: clientId)?.configuration else {
            return .errorPage(key: "page.authorize_invalid.client", shown: params)
        }
        // A request object by reference (RFC 9101 §5.2): fetched only from a URL the client registered, and never for a
        // client that requires PAR (FAPI 2.0), whose requests must be pushed.
        if !pushed, let reference = (try? params.single("request_uri")) ?? nil {
            guard !client.requirePushedAuthorizationRequests, (try? params.single("request")) == nil else {
                logger.notice(
                    "request_uri by reference refused", metadata: ["client": .string(clientId), "reason": "PAR required or request sent too"])
                return .errorPage(key: "page.authorize_invalid.malformed", shown: params)
            }
            do {
                var values = params.values
                values["request"] = [try await references.object(at: reference, client: client)]
                values["request_uri"] = nil
                params = Parameters(values)
            } catch {
                logger.notice("request_uri refused", metadata: ["client": .string(clientId), "reason": .string(error.description)])
                // The error goes back to the request's own redirect URI when the client registered it; else a page.
                guard let redirectUri, RedirectURIMatcher.isRegistered(redirectUri, in: client.redirectUris) else {
                    return .errorPage(key: "page.authorize_invalid.malformed", shown: params)
                }
                return .errorRedirect(error, redirectUri: redirectUri, state: (try? params.single("state")) ?? nil)
            }
        }
        // A signed request object (RFC 9101) is the request. Until it verifies, its redirect URI is not trusted: a
        // refusal is a page.
        if let object = (try? params.single("request")) ?? nil {
            do {
                params = try await RequestObject.parameters(
                    object, client: client, outerClientId: clientId, issuer: issuer(), now: clock.now, keys: clientKeys)
                redirectUri = try params.single("redirect_uri")
            } catch {
                logger.notice("request object refused", metadata: ["client": .string(clientId), "reason": .string(error.description)])
                return .errorPage(key: "page.authorize_invalid.malformed", shown: pushedOrGiven)
            }
        }
        guard pushed || !client.requirePushedAuthorizationRequests else {
            logger.notice("authorization request without request_uri for an application that requires PAR", metadata: ["client": .string(clientId)])
            return .errorPage(key: "page.authorize_invalid.malformed", shown: params)
        }
        guard let redirectUri, RedirectURIMatcher.isRegistered(redirectUri, in: client.redirectUris) else {
            return .errorPage(key: "page.authorize_invalid.redirect", shown: params)
        }
        return .resolved(Resolved(parameters: params, client: client, redirectUri: redirectUri))
    }

    /// The parameters of an authorization request: those pushed under its `request_uri` (single use, this client's
    /// only; `pushed` true), else its own (with a `request_uri` that is not a pushed request's, which is resolved by
    /// reference: `RequestObjectReference`). Nil: show the error page.
    private func parameters(of params: Parameters) async throws -> (parameters: Parameters, pushed: Bool)? {
        guard let requestURI = try? params.single("request_uri") else { return (params, false) }
        guard requestURI.hasPrefix(PushedAuthorizationController.requestURIPrefix) else { return (params, false) }
        guard let clientId = try? params.single("client_id"),
            // Taken only with its own client_id: presented with another, it stays for its client.
            let pushed = try await store.takePushedRequest(uriHash: Secrets.digest(requestURI), clientId: clientId, now: clock.now),
            Secrets.constantTimeEquals(pushed.clientId, clientId)
        else {
            return nil  // unknown, used, expired, or pushed by another client
        }
        return (Parameters(pushed.parameters), true)
    }
}
