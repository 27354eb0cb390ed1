import Foundation
import Logging

/// Documents an application registered by URL, fetched by the server: its key set (`jwks_uri`, RFC 7591 §2) and its
/// request objects (`request_uris`, RFC 9101 §5.2, OpenID Connect Core §6.2). Each fetch is a GET with a
/// `timeoutSeconds` bound on the whole exchange (the lookup included), a body of at most `maximumBytes` (the transfer is
/// cut past them), no redirect followed and no cookie (the server's `OutboundHTTPClient`); only a 200 is a document.
///
/// Only URLs the application registered are fetched, never one a request names (`RequestObjectReference` matches a
/// request's `request_uri` against the registered ones first): a server-side fetch of a URL anyone chooses is an SSRF
/// surface. What may be registered is `ClientDocumentURL`'s rule; where a registered URL may lead is checked again at
/// every fetch, on the addresses its host resolves to then (`OutboundReach`).
///
/// Why a fetch failed is written to the server's log, never told to the application: the status, size or network
/// error of whatever answered at a URL would tell a registrant which ports are open behind the server.
struct ClientDocumentFetcher: Sendable {
    static let maximumBytes = 64 * 1024

    /// A document could not be fetched. `detail` (technical English, naming the host but neither the path nor the
    /// query: a request URI may carry a token of the client's) is for the server's log; the application is told only
    /// `publicReason`, the same for every failure.
    struct Failure: Error, Sendable, Equatable {
        let detail: String
        static let publicReason = "see the server's log"
    }

    private let http: OutboundHTTPClient
    private let reach: OutboundReach
    private let timeoutSeconds: Int
    private let logger: Logger

    init(http: OutboundHTTPClient, reach: OutboundReach, timeoutSeconds: Int, logger: Logger) {
        self.http = http
        self.reach = reach
        self.timeoutSeconds = timeoutSeconds
        self.logger = logger
    }

    /// The body of a 200 answer to a GET of `url`, which `client` registered.
    func fetch(_ url: URL, accept: String, client: String) async throws(Failure) -> Data {
        let host = ClientMetadata.printable(url.host ?? "")
        let detail: String
        switch await http.send(
            .GET, url, headers: [("Accept", accept), ("User-Agent", "Latchkey")],
            limits: .init(timeoutSeconds: timeoutSeconds, maximumBytes: Self.maximumBytes, reach: reach.of(client: client)))
        {
        case .response(200, let body): return body
        case .response(let status, _) where (300..<400).contains(status): detail = "\(host) answered \(status) (redirects are not followed)"
        case .response(let status, _): detail = "\(host) answered \(status)"
        case .tooLarge: detail = "\(host) answered more than \(Self.maximumBytes / 1024) KiB"
        case .failed(let why): detail = why
        }
        logger.warning(
            "an application's document could not be fetched", metadata: ["client": .string(client), "reason": .string(detail)])
        throw Failure(detail: detail)
    }
}

/// Where the server's requests for an application may go (`OutboundHTTPClient.Reach`): anywhere for an application of
/// the configuration file (the operator may name a loopback or internal service on purpose), public addresses only for
/// one registered through the API.
struct OutboundReach: Sendable {
    /// The ids of the applications of the configuration file.
    let operatorClients: Set<String>

    func of(client: String) -> OutboundHTTPClient.Reach { operatorClients.contains(client) ? .any : .publicOnly }
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
        // Through registration, not the server's own network by address: a loopback or private address literal, in
        // any spelling a resolver reads (`InternetAddress`), would let anyone who may register aim the server's
        // requests at services behind it. A name is checked where it matters, on the addresses it resolves to at
        // each fetch (`OutboundHTTPClient`).
        if !operatorSet, InternetAddress.isInternal(host: host) {
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
