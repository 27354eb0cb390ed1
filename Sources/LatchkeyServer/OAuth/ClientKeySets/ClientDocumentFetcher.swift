import Foundation

/// Documents an application registered by URL, fetched by the server: its key set (`jwks_uri`, RFC 7591 §2) and its
/// request objects (`request_uris`, RFC 9101 §5.2, OpenID Connect Core §6.2). Each fetch is a GET with a
/// `timeoutSeconds` bound on the whole exchange, a body of at most `maximumBytes` (the transfer is cut past them), no
/// redirect followed and no cookie (`OutboundHTTP`); only a 200 is a document.
///
/// Only URLs the application registered are fetched, never one a request names (`RequestObjectReference` matches a
/// request's `request_uri` against the registered ones first): a server-side fetch of a URL anyone chooses is an SSRF
/// surface. What may be registered is `ClientDocumentURL`'s rule.
struct ClientDocumentFetcher: Sendable {
    static let maximumBytes = 64 * 1024
    static let timeoutSeconds = 5

    /// Why a document could not be fetched: technical English, naming the host but neither the path nor the query
    /// (a request URI may carry a token of the client's).
    struct Failure: Error, Sendable, Equatable {
        let reason: String
    }

    private let http: OutboundHTTP

    init(timeoutSeconds: Int = timeoutSeconds) {
        http = OutboundHTTP(timeoutSeconds: timeoutSeconds)
    }

    /// The body of a 200 answer to a GET of `url`.
    func fetch(_ url: URL, accept: String) async throws(Failure) -> Data {
        let host = ClientMetadata.printable(url.host ?? "")
        switch await http.get(url, accept: accept, maximumBytes: Self.maximumBytes) {
        case .answer(200, let body): return body
        case .answer(let status, _) where (300..<400).contains(status):
            throw Failure(reason: "\(host) answered \(status) (redirects are not followed)")
        case .answer(let status, _): throw Failure(reason: "\(host) answered \(status)")
        case .tooLarge: throw Failure(reason: "\(host) answered more than \(Self.maximumBytes / 1024) KiB")
        case .unreachable(let why): throw Failure(reason: "\(host) \(why)")
        }
    }
}

/// What a URL the server itself contacts may be (a fetched document, a back-channel logout URI): absolute, `https`, or `http` to a loopback host only when the operator set
/// it (the configuration file; dynamic registration takes `https` only), with a host, no user information, at most
/// 2048 characters, and no fragment where one has no meaning (`jwks_uri`; a request URI's fragment is ignored when it
/// is matched).
enum ClientDocumentURL {
    static let maximumLength = 2048

    /// Nil when `uri` is acceptable, else why not (for `member`'s error).
    static func refusal(_ uri: String, member: String, operatorSet: Bool, fragmentAllowed: Bool) -> String? {
        let shown = ClientMetadata.printable(uri)
        guard uri.count <= maximumLength, let url = URL(string: uri), let scheme = url.scheme?.lowercased(),
            let host = url.host, !host.isEmpty
        else {
            return "\(member): \(shown) is not an absolute URL"
        }
        guard url.user == nil, url.password == nil else { return "\(member): \(shown) carries user information" }
        if !fragmentAllowed, url.fragment != nil { return "\(member): \(shown) has a fragment" }
        // Through registration, not the server's own network by address: a loopback or private address literal would
        // let anyone who may register aim the server's requests (and its error messages) at services behind it.
        // (A public name that resolves to such an address is not caught here: deployments that open registration
        // to strangers keep the server's egress firewalled.)
        if !operatorSet, LoopbackHost.isLoopback(host) || PrivateAddress.isPrivateLiteral(host) {
            return "\(member): \(shown) names a loopback or private address"
        }
        switch scheme {
        case "https": return nil
        case "http" where operatorSet && LoopbackHost.isLoopback(host): return nil
        case "http" where operatorSet: return "\(member): \(shown) uses http to a host that is not loopback (use https)"
        default: return "\(member): \(shown) must be an https URL"
        }
    }
}

/// IP address literals of private, link-local and unique-local ranges (RFC 1918, RFC 3927, RFC 4193, RFC 4291 §2.5.6),
/// and the unspecified address.
enum PrivateAddress {
    static func isPrivateLiteral(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let octets = h.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
        if octets.count == 4, h.split(separator: ".").count == 4 {
            switch (octets[0], octets[1]) {
            case (10, _), (0, _), (127, _), (169, 254), (192, 168): return true
            case (172, let second): return (16...31).contains(second)
            default: return false
            }
        }
        guard h.contains(":") else { return false }
        return h == "::" || h == "::1" || h.hasPrefix("fc") || h.hasPrefix("fd") || h.hasPrefix("fe8") || h.hasPrefix("fe9")
            || h.hasPrefix("fea") || h.hasPrefix("feb") || h.hasPrefix("::ffff:")
    }
}
