import Foundation

/// Request objects by reference (RFC 9101 §5.2, OpenID Connect Core §6.2): an authorization request's `request_uri`
/// (other than a pushed request's) names where the client published its signed request object. It is fetched only
/// when it is one of the client's registered `request_uris` (OpenID Connect Registration §2; the comparison ignores
/// the fragment, which a client may change to tell versions apart, §6.2); any other is refused unfetched with
/// `invalid_request_uri` (RFC 9101 §7: a server-side fetch of a URL anyone chooses is an SSRF surface), as is one that
/// cannot be fetched (`ClientDocumentFetcher`: 5 s, 64 KiB, no redirect). The body is then the `request` value and
/// passes the same checks (`RequestObject`: signed, never `none`).
///
/// A client that requires pushed authorization requests (FAPI 2.0) cannot send one: the authorization endpoint checks
/// that before fetching anything, and such a client cannot register `request_uris`.
struct RequestObjectReference: Sendable {
    let fetcher: ClientDocumentFetcher

    /// The request object `client` published at `reference`.
    func object(at reference: String, client: ClientConfiguration) async throws(OAuthError) -> String {
        guard Self.isRegistered(reference, in: client.requestURIs), let url = URL(string: reference) else {
            throw OAuthError(.invalidRequestURI, "request_uri is not one of the client's registered request_uris")
        }
        let body: Data
        do { body = try await fetcher.fetch(url, accept: "application/oauth-authz-req+jwt, application/jwt", client: client.clientId) } catch {
            // The fetcher logged why; the redirect URI learns only that it failed (`ClientDocumentFetcher.Failure`).
            throw OAuthError(.invalidRequestURI, "the request object at request_uri could not be fetched")
        }
        guard let text = String(data: body, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            throw OAuthError(.invalidRequestURI, "the answer at request_uri is not a request object")
        }
        return text
    }

    /// Whether `reference` is one of `registered`, fragments aside on both sides.
    static func isRegistered(_ reference: String, in registered: [String]) -> Bool {
        let wanted = withoutFragment(reference)
        return registered.contains { withoutFragment($0) == wanted }
    }

    private static func withoutFragment(_ uri: String) -> Substring {
        uri.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? Substring(uri)
    }
}
